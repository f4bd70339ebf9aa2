//! Custom resources against their CRD's structural schema, as upstream's
//! apiextensions server treats them: unknown fields pruned, `default`s
//! filled in, then the value checked (types, enums, bounds, lengths,
//! patterns, formats, list types, embedded resources and
//! `x-kubernetes-validations` CEL rules), each failure a 422 cause worded
//! as upstream words it.
//!
//! The schema is walked as it is stored in the CRD (no copy, no
//! compilation step): custom resources are written far less often than
//! pods, and a CRD can change at any time.

mod cel_rules;
mod defaults;
mod format;
mod prune;
mod validate;

use serde_json::Value;

use crate::error::Cause;

pub use cel_rules::to_cel as json_to_cel;
pub use defaults::apply_defaults;
pub use prune::prune;

/// Guards against absurdly deep objects and schemas.
pub(crate) const MAX_DEPTH: usize = 64;

/// Every cause `obj` fails its schema with (`old`: the object an update
/// replaces, for transition rules).
pub fn validate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    validate::validate(schema, obj, old)
}

/// `schema`'s `properties` entry for `key`, if any.
pub(crate) fn property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema.get("properties")?.get(key)
}

pub(crate) fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests;
