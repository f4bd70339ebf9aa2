//! Strict field checking: which fields of an object its kind's schema does
//! not declare, reported the way the API server's strict decoder does
//! (`spec.containers[0].bogus`).
//!
//! The walk borrows the schemas (the built-in set lives for the process) and
//! never clones them, so it is cheap enough to run on every write.

use serde_json::{Map, Value};

use std::sync::OnceLock;

use super::generate::{self, ref_name, ref_to, OBJECT_META};
use crate::resource::ResourceInfo;

/// Guards against reference cycles and absurdly deep objects.
const MAX_DEPTH: usize = 128;
const MAX_REF_HOPS: usize = 16;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Schemas generated from Go types: an object schema without properties
    /// (RawExtension, FieldsV1, JSON) holds arbitrary content.
    Builtin,
    /// Structural CRD schemas: an object without properties holds nothing
    /// (upstream prunes everything in it) unless it preserves unknown fields.
    Structural,
}

struct Walker<'a> {
    defs: &'a Map<String, Value>,
    out: Vec<String>,
}

/// The schemas `schema` stands for once `$ref`, `allOf`, `oneOf` and `anyOf`
/// are looked through.
fn flatten<'a>(
    defs: &'a Map<String, Value>,
    schema: &'a Value,
    hops: usize,
    out: &mut Vec<&'a Map<String, Value>>,
) {
    let Value::Object(m) = schema else {
        return;
    };
    if hops > MAX_REF_HOPS {
        return;
    }
    if let Some(target) = m
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(ref_name)
        .and_then(|n| defs.get(n))
    {
        flatten(defs, target, hops + 1, out);
    }
    out.push(m);
    for key in ["allOf", "oneOf", "anyOf"] {
        if let Some(Value::Array(subs)) = m.get(key) {
            for s in subs {
                flatten(defs, s, hops + 1, out);
            }
        }
    }
}

fn is_true(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool) == Some(true)
}

/// `{"$ref": ObjectMeta}`, the schema of every envelope's `metadata`.
fn object_meta_ref() -> &'static Value {
    static CELL: OnceLock<Value> = OnceLock::new();
    CELL.get_or_init(|| serde_json::json!({"$ref": ref_to(OBJECT_META)}))
}

/// Whether a schema points into the generated definitions: below it the
/// Go-type rules apply even inside a CRD (its `metadata` is ObjectMeta).
fn refers(schema: &Value) -> bool {
    let Value::Object(m) = schema else {
        return false;
    };
    m.contains_key("$ref")
        || matches!(m.get("allOf"), Some(Value::Array(subs)) if subs.iter().any(|s| s.get("$ref").is_some()))
}

impl<'a> Walker<'a> {
    fn walk(
        &mut self,
        schema: &'a Value,
        value: &Value,
        path: &mut String,
        depth: usize,
        mode: Mode,
        envelope: bool,
    ) {
        if depth > MAX_DEPTH {
            return;
        }
        let mode = if refers(schema) { Mode::Builtin } else { mode };
        let mut parts = Vec::new();
        flatten(self.defs, schema, 0, &mut parts);
        if parts.is_empty() {
            return;
        }
        if parts.iter().any(|m| {
            is_true(m, "x-kubernetes-preserve-unknown-fields")
                || is_true(m, "x-kubernetes-int-or-string")
        }) {
            return;
        }
        match value {
            Value::Object(obj) => self.walk_object(&parts, obj, path, depth, mode, envelope),
            Value::Array(items) => {
                let item_schemas: Vec<&'a Value> =
                    parts.iter().filter_map(|m| m.get("items")).collect();
                // No item schema (or a mismatched type): nothing to say.
                let Some(first) = item_schemas.first().copied() else {
                    return;
                };
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push('[');
                    path.push_str(&i.to_string());
                    path.push(']');
                    self.walk(first, item, path, depth + 1, mode, false);
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn walk_object(
        &mut self,
        parts: &[&'a Map<String, Value>],
        obj: &Map<String, Value>,
        path: &mut String,
        depth: usize,
        mode: Mode,
        envelope: bool,
    ) {
        let mut has_props = false;
        let mut additional: Option<&'a Value> = None;
        let mut additional_open = false;
        let mut typed_object = false;
        let mut envelope = envelope;
        for m in parts {
            if let Some(Value::Object(_)) = m.get("properties") {
                has_props = true;
            }
            match m.get("additionalProperties") {
                Some(Value::Bool(true)) => additional_open = true,
                Some(v @ Value::Object(_)) => additional = additional.or(Some(v)),
                _ => {}
            }
            if m.get("type").and_then(Value::as_str) == Some("object") {
                typed_object = true;
            }
            if is_true(m, "x-kubernetes-embedded-resource") {
                envelope = true;
            }
        }
        if additional_open {
            return;
        }
        if !has_props && additional.is_none() {
            // Not an object schema at all: a type mismatch is validation's job.
            if mode == Mode::Builtin || !typed_object {
                return;
            }
        }
        for (key, child) in obj {
            // A resource envelope (the root of a custom resource, or an
            // embedded resource) always has apiVersion, kind and ObjectMeta,
            // whatever its schema declares for them.
            let envelope_field = envelope
                && match key.as_str() {
                    "apiVersion" | "kind" => true,
                    "metadata" => {
                        let len = path.len();
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(key);
                        self.walk(object_meta_ref(), child, path, depth + 1, mode, false);
                        path.truncate(len);
                        true
                    }
                    _ => false,
                };
            if envelope_field {
                continue;
            }
            let prop = parts.iter().find_map(|m| {
                m.get("properties")
                    .and_then(Value::as_object)
                    .and_then(|p| p.get(key))
            });
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            match (prop, additional) {
                (Some(s), _) | (None, Some(s)) => self.walk(s, child, path, depth + 1, mode, false),
                (None, None) => self.out.push(path.clone()),
            }
            path.truncate(len);
        }
    }
}

/// Unknown fields of `obj` against `schema`, resolving refs in `defs`.
fn check(
    defs: &Map<String, Value>,
    schema: &Value,
    obj: &Value,
    mode: Mode,
    envelope: bool,
) -> Vec<String> {
    let mut w = Walker {
        defs,
        out: Vec::new(),
    };
    let mut path = String::new();
    w.walk(schema, obj, &mut path, 0, mode, envelope);
    w.out
}

/// Fields of `obj` the kind's schema does not know, as dotted paths. Kinds
/// without a known schema accept everything.
pub fn unknown_fields(resource: &ResourceInfo, obj: &Value) -> Vec<String> {
    let b = generate::builtin();
    if let Some(crd) = &resource.crd {
        // The CRD's schema is walked as it is (no wrapping, no copy); the
        // root envelope supplies apiVersion, kind and metadata.
        return match &crd.schema {
            Some(schema @ Value::Object(_)) => {
                check(&b.definitions, schema, obj, Mode::Structural, true)
            }
            _ => Vec::new(),
        };
    }
    let Some(schema) = b
        .name_of(&resource.group, &resource.version, &resource.kind)
        .and_then(|n| b.get(n))
    else {
        return Vec::new();
    };
    check(&b.definitions, schema, obj, Mode::Builtin, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Registry;
    use serde_json::json;

    #[test]
    fn nested_unknowns_are_reported_with_indices() {
        let r = Registry::new();
        let pods = r.get("", "v1", "pods").expect("pods");
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "bogusMeta": 1},
            "spec": {"foo": 1, "containers": [
                {"name": "c", "image": "i", "ports": [{"containerPort": 80, "x": 1}]},
                {"name": "d", "image": "i", "bogus": true}
            ]}
        });
        assert_eq!(
            unknown_fields(&pods, &pod),
            vec![
                "metadata.bogusMeta",
                "spec.foo",
                "spec.containers[0].ports[0].x",
                "spec.containers[1].bogus"
            ]
        );
    }

    #[test]
    fn open_objects_and_int_or_string() {
        let r = Registry::new();
        let cr = r.get("apps", "v1", "controllerrevisions").expect("cr");
        let obj = json!({"metadata": {"name": "x", "managedFields": [{"fieldsV1": {"f:spec": {}}}]},
                         "data": {"anything": {"goes": 1}}, "revision": 1});
        assert!(unknown_fields(&cr, &obj).is_empty());
        let svc = r.get("", "v1", "services").expect("svc");
        let obj = json!({"spec": {"ports": [{"port": 80, "targetPort": "http"}]}});
        assert!(unknown_fields(&svc, &obj).is_empty());
    }

    #[test]
    fn type_mismatch_is_not_unknown() {
        let r = Registry::new();
        let pods = r.get("", "v1", "pods").expect("pods");
        let obj = json!({"spec": {"containers": {"name": "x"}, "hostname": {"a": 1}}});
        assert!(unknown_fields(&pods, &obj).is_empty());
    }
}
