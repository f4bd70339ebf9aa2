//! Defaulting from a structural schema's `default` values, as upstream
//! applies them to a custom resource on every write: a property that is
//! absent (or null where the schema does not allow null) takes its
//! default, at every level of the object that exists.

use serde_json::Value;

use super::{flag, MAX_DEPTH};

/// Fills in `obj`'s missing fields from `schema`'s defaults.
pub fn apply_defaults(schema: &Value, obj: &mut Value) {
    walk(schema, obj, 0);
}

fn walk(schema: &Value, value: &mut Value, depth: usize) {
    if depth > MAX_DEPTH || !schema.is_object() {
        return;
    }
    match value {
        Value::Object(o) => {
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (k, sub) in props {
                    let Some(d) = sub.get("default") else {
                        continue;
                    };
                    let missing = match o.get(k) {
                        None => true,
                        Some(Value::Null) => !flag(sub, "nullable"),
                        Some(_) => false,
                    };
                    if missing {
                        o.insert(k.clone(), d.clone());
                    }
                }
            }
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (k, child) in o.iter_mut() {
                if let Some(sub) = super::property(schema, k).or(additional) {
                    walk(sub, child, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items") {
                for item in items {
                    walk(sub, item, depth + 1);
                }
            }
        }
        _ => {}
    }
}
