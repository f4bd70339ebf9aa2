//! Patch engines: JSON patch, merge patch, strategic merge patch and
//! server-side apply, plus managedFields bookkeeping.

pub mod apply;
pub mod fieldpath;
mod fields_v1;
pub mod json;
pub mod managed_fields;
pub mod strategic;
pub mod strategy;
mod track;

use std::borrow::Cow;

use serde_json::Value;

use crate::error::ApiError;
use crate::resource::ResourceInfo;

pub use fieldpath::FieldSet;
pub use managed_fields::ManagedEntry;
pub use strategy::{
    list_map_keys, list_strategy, list_type, map_is_atomic, patch_merge_key, ListStrategy, ListType,
};
pub use track::{track as track_update, track_if_changed as track_update_if_changed};

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

/// The 415 upstream answers for a strategic merge patch on a custom
/// resource: its handler simply does not list that media type.
pub fn strategic_unsupported() -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )
}

/// A patch body: the bytes of a request, or a value a caller in the same
/// process built (what decoding its JSON would give), which need not be
/// serialized only to be parsed again.
#[derive(Debug, Clone, Copy)]
pub enum PatchBody<'a> {
    Bytes(&'a [u8]),
    Value(&'a Value),
}

/// Applies a json, merge or strategic patch body to `current`.
pub fn apply_patch(
    kind: PatchType,
    resource: &ResourceInfo,
    current: &Value,
    body: &[u8],
) -> Result<Value, ApiError> {
    apply_patch_body(kind, resource, current, PatchBody::Bytes(body))
}

/// [`apply_patch`] of a body given as bytes or as a value.
pub fn apply_patch_body(
    kind: PatchType,
    resource: &ResourceInfo,
    current: &Value,
    body: PatchBody<'_>,
) -> Result<Value, ApiError> {
    if kind == PatchType::Strategic && resource.crd.is_some() {
        return Err(strategic_unsupported());
    }
    let patch: Cow<'_, Value> = match body {
        PatchBody::Value(v) => Cow::Borrowed(v),
        PatchBody::Bytes(b) => Cow::Owned(
            serde_json::from_slice(b)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
        ),
    };
    match kind {
        PatchType::Json => json::json_patch(current, patch.into_owned()),
        PatchType::Merge => json::merge_patch(current, &patch),
        PatchType::Strategic => strategic::strategic_merge(resource, current, &patch),
        // Apply bodies go through server_side_apply; treating one as a merge
        // keeps a misrouted call harmless.
        PatchType::Apply => json::merge_patch(current, &patch),
    }
}

/// Server-side apply of `applied` by `manager` onto `current` (None: create).
///
/// Returns the merged object with `metadata.managedFields` updated, or a
/// 409 Conflict listing the fields other managers own (unless `force`).
pub fn server_side_apply(
    resource: &ResourceInfo,
    current: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApiError> {
    apply::apply(resource, current, applied, manager, force, now)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod track_tests;
