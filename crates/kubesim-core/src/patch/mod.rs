//! Patch engines: JSON patch, merge patch, strategic merge patch and
//! server-side apply, plus managedFields bookkeeping.

use serde_json::Value;

use crate::error::ApiError;
use crate::resource::ResourceInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchType {
    /// From a request's Content-Type (parameters ignored); None means 415.
    pub fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// Applies a json, merge or strategic patch body to `current`.
pub fn apply_patch(
    kind: PatchType,
    _resource: &ResourceInfo,
    current: &Value,
    body: &[u8],
) -> Result<Value, ApiError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let mut out = current.clone();
    match kind {
        PatchType::Json => {
            let p: json_patch::Patch = serde_json::from_value(patch)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(&mut out, &p).map_err(|e| ApiError::invalid("", "", "", vec![crate::Cause::new("FieldValueInvalid", "", e.to_string())]))?;
        }
        _ => json_patch::merge(&mut out, &patch),
    }
    Ok(out)
}

/// Server-side apply of `applied` by `manager` onto `current` (None: create).
pub fn server_side_apply(
    _resource: &ResourceInfo,
    current: Option<&Value>,
    applied: &Value,
    _manager: &str,
    _force: bool,
    _now: &str,
) -> Result<Value, ApiError> {
    let mut out = current.cloned().unwrap_or(Value::Null);
    json_patch::merge(&mut out, applied);
    Ok(out)
}

/// Records in `new.metadata.managedFields` that `manager` wrote the fields
/// that differ from `old` (an Update operation, optionally on a subresource).
pub fn track_update(
    _resource: &ResourceInfo,
    _old: Option<&Value>,
    _new: &mut Value,
    _manager: &str,
    _subresource: Option<&str>,
    _now: &str,
) {
}
