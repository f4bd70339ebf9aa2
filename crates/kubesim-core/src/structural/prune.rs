//! Pruning: fields a structural schema does not declare are dropped from a
//! custom resource before it is stored, as upstream drops them, unless the
//! schema keeps them with `x-kubernetes-preserve-unknown-fields`.

use serde_json::Value;

use super::{flag, property, MAX_DEPTH};

/// Drops from `obj` what `schema` (a CRD version's openAPIV3Schema) does
/// not declare. apiVersion, kind and metadata of the resource, and of
/// every embedded resource, always stay.
pub fn prune(schema: &Value, obj: &mut Value) {
    walk(schema, obj, true, 0);
}

fn walk(schema: &Value, value: &mut Value, envelope: bool, depth: usize) {
    if depth > MAX_DEPTH || !schema.is_object() {
        return;
    }
    let keep_unknown = flag(schema, "x-kubernetes-preserve-unknown-fields");
    match value {
        Value::Object(o) => {
            let additional = match schema.get("additionalProperties") {
                Some(s @ Value::Object(_)) => Some(s),
                _ => None,
            };
            let open =
                keep_unknown || schema.get("additionalProperties") == Some(&Value::Bool(true));
            o.retain(|k, _| {
                open || additional.is_some()
                    || property(schema, k).is_some()
                    || (envelope && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            });
            for (k, child) in o.iter_mut() {
                if envelope && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(sub) = property(schema, k).or(additional) {
                    let embedded = flag(sub, "x-kubernetes-embedded-resource");
                    walk(sub, child, embedded, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                let embedded = flag(sub, "x-kubernetes-embedded-resource");
                for item in items {
                    walk(sub, item, embedded, depth + 1);
                }
            }
        }
        _ => {}
    }
}
