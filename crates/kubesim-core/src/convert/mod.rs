//! Versions of one stored resource. The real API server keeps a single
//! storage per resource and converts on every read and write; kubesim does
//! the same for the built-ins served under two group versions:
//! HorizontalPodAutoscalers (stored as autoscaling/v2, also served as
//! autoscaling/v1) and Events (stored as core v1, also served as
//! events.k8s.io/v1). Conversions work on JSON and never fail on fields they
//! do not know: those are dropped, as a typed decode would drop them.

mod event;
mod hpa;

use serde_json::{Map, Value};

use crate::{ApiError, ResourceInfo};

/// The (group, version, plural) a resource is stored as, when it is served
/// in a version other than its storage version.
pub fn storage_version(
    group: &str,
    version: &str,
    plural: &str,
) -> Option<(&'static str, &'static str, &'static str)> {
    match (group, version, plural) {
        ("autoscaling", "v1", "horizontalpodautoscalers") => {
            Some(("autoscaling", "v2", "horizontalpodautoscalers"))
        }
        ("events.k8s.io", "v1", "events") => Some(("", "v1", "events")),
        _ => None,
    }
}

/// Whether `resource` is served from another version's storage.
pub fn is_converted(resource: &ResourceInfo) -> bool {
    !resource.is_custom()
        && storage_version(&resource.group, &resource.version, &resource.plural).is_some()
}

/// Converts an object written through `resource` into its storage version.
/// A body the conversion cannot read (a malformed round-trip annotation)
/// is a 400, as upstream's decoder reports it.
pub fn to_storage(resource: &ResourceInfo, obj: Value) -> Result<Value, ApiError> {
    if !is_converted(resource) {
        return Ok(obj);
    }
    match resource.group.as_str() {
        "autoscaling" => hpa::v1_to_v2(obj),
        _ => Ok(event::v1_to_core(obj)),
    }
}

/// Converts a stored object into the version `resource` serves.
pub fn from_storage(resource: &ResourceInfo, obj: Value) -> Value {
    if !is_converted(resource) {
        return obj;
    }
    match resource.group.as_str() {
        "autoscaling" => hpa::v2_to_v1(obj),
        _ => event::core_to_v1(obj),
    }
}

/// Copies `from[key]` into `to[as_key]` when it is present and not null.
pub(crate) fn copy(
    from: &Map<String, Value>,
    key: &str,
    to: &mut Map<String, Value>,
    as_key: &str,
) {
    if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(as_key.to_string(), v.clone());
    }
}

/// The object as a map (an empty one for anything else).
pub(crate) fn into_map(obj: Value) -> Map<String, Value> {
    match obj {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests;
