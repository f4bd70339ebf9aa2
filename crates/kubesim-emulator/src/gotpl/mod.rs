//! Go `text/template`, as far as kwok's stage templates and common sprig
//! use need it, evaluated over JSON values.

use serde_json::Value;

/// A template error: where and what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {0}")]
pub struct TemplateError(pub String);

/// Functions the caller provides beyond the built-ins (kwok's `Now`,
/// `NodeIP`, `PodIPsWith`, ...). `None` means "no such function".
pub trait Funcs {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>>;
}

/// A parsed template, reusable across renders.
#[derive(Debug, Clone)]
pub struct Template {
    _src: String,
}

impl Template {
    pub fn parse(src: &str) -> Result<Template, TemplateError> {
        Ok(Template {
            _src: src.to_string(),
        })
    }

    /// Renders with `data` as `.` and `funcs` for names the built-ins lack.
    pub fn render(&self, _data: &Value, _funcs: &dyn Funcs) -> Result<String, TemplateError> {
        Err(TemplateError("not implemented yet".into()))
    }
}
