//! Go `text/template`, as far as kwok's Stage templates, ClusterLoader2's
//! configs and common sprig use need it, evaluated over JSON values:
//! `{{ }}` actions with trim markers, fields, variables (`:=` and `=`),
//! pipelines, `if`/`with`/`range` with `else`, `break`/`continue`,
//! `define`/`template`/`block`, Go's predefined functions and a sprig
//! subset. One evaluator serves every caller; what differs between kwok's
//! and ClusterLoader2's templates is only the caller's [`Funcs`].

mod builtins;
pub mod clusterloader2;
mod exec;
pub mod kwok;
mod lexer;
mod parse;
mod sprig;

use std::collections::BTreeMap;

use serde_json::Value;

pub use builtins::show;

/// A template error: where and what.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {0}")]
pub struct TemplateError(pub String);

/// Functions the caller provides beyond the built-ins: each caller's own
/// set (kwok's `Now`, `NodeIP`, `PodIPsWith`, ...; ClusterLoader2's
/// `DefaultParam`, `AddInt`, `Loop`, ...). `None` means "no such
/// function"; they are looked up before the built-ins, so a caller may
/// override those.
pub trait Funcs {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>>;
}

/// No functions beyond the built-ins.
pub struct NoFuncs;

impl Funcs for NoFuncs {
    fn call(&self, _name: &str, _args: &[Value]) -> Option<Result<Value, String>> {
        None
    }
}

/// A parsed template, reusable across renders.
pub struct Template {
    root: Vec<parse::Node>,
    defines: BTreeMap<String, Vec<parse::Node>>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Template({} nodes)", self.root.len())
    }
}

/// Bound on the output, so a template cannot exhaust memory.
const MAX_OUTPUT: usize = 16 << 20;

impl Template {
    pub fn parse(src: &str) -> Result<Template, TemplateError> {
        let p = parse::parse(src)?;
        Ok(Template {
            root: p.root,
            defines: p.defines,
        })
    }

    /// Renders with `data` as `.` and `funcs` for names the built-ins lack.
    pub fn render(&self, data: &Value, funcs: &dyn Funcs) -> Result<String, TemplateError> {
        let mut e = exec::Exec::new(funcs, &self.defines, data);
        e.run(&self.root, data)?;
        if e.out.len() > MAX_OUTPUT {
            return Err(TemplateError("output too large".into()));
        }
        Ok(e.out)
    }
}

#[cfg(test)]
mod tests;
