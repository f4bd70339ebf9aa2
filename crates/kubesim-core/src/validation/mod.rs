//! Validation: names, metadata and per-kind specs; failures become 422 causes.

use serde_json::Value;

use crate::error::Cause;
use crate::resource::ResourceInfo;

/// Validates `obj` (and, on update, its transition from `old`).
pub fn validate(_resource: &ResourceInfo, _obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
    Vec::new()
}
