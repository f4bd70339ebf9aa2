//! Field selectors and the per-kind set of selectable fields.

use serde_json::Value;

use crate::error::ApiError;
use crate::resource::ResourceInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Eq,
    NotEq,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub op: FieldOp,
    pub value: String,
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    pub fn parse(_s: &str) -> Result<Self, ApiError> {
        Ok(FieldSelector::default())
    }
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
    /// 400 `field label not supported: X` for a field the kind does not index.
    pub fn check_supported(&self, _resource: &ResourceInfo) -> Result<(), ApiError> {
        Ok(())
    }
    pub fn matches<'a>(&self, _get: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        true
    }
    /// The value of `field=value` when the selector pins `field` exactly.
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.op == FieldOp::Eq)
            .map(|r| r.value.as_str())
    }
}

/// The selectable field values of an object, `metadata.name` and
/// `metadata.namespace` included, in a fixed order.
pub fn field_values(_resource: &ResourceInfo, obj: &Value) -> Vec<(&'static str, String)> {
    vec![
        ("metadata.name", crate::meta::name(obj).to_string()),
        (
            "metadata.namespace",
            crate::meta::namespace(obj).to_string(),
        ),
    ]
}
