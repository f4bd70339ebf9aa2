//! Schemas of the built-in kinds: the `k8s-openapi` types' schemas, kept
//! as a snapshot in the crate's assets and post-processed once per process
//! into OpenAPI 3.0 component form with kubesim's own annotations.
//!
//! The snapshot spares every build of the binary the `schemars` code of
//! some thousand generated types (docs/decisions/openapi-schemas.md); the
//! `snapshot` tests regenerate it from `k8s-openapi` and fail when it is
//! stale.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::extensions;

/// Where definitions live inside a document; every `$ref` points here.
pub const REF_PREFIX: &str = "#/components/schemas/";

pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

/// The schemas `k8s-openapi` generates for the built-in kinds, before
/// kubesim's post-processing: `assets/builtin-schemas.json`.
pub(super) const SNAPSHOT: &str = include_str!("../../assets/builtin-schemas.json");

/// What the snapshot holds.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Raw {
    /// Where the schemas came from, for whoever reads the file.
    pub generator: String,
    /// The served kinds that have a schema, in the registry's order.
    pub kinds: Vec<RawKind>,
    /// schemars' definitions (OpenAPI 3.0 settings, transforms applied).
    pub definitions: Map<String, Value>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct RawKind {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Its definition's name.
    pub definition: String,
}

/// Every built-in definition plus the index from kinds to definition names.
#[derive(Debug)]
pub struct BuiltinSchemas {
    /// `components.schemas` content: name → OpenAPI 3.0 schema.
    pub definitions: Map<String, Value>,
    /// (group, version, kind) → definition name, for kinds and their lists.
    kinds: HashMap<(String, String, String), String>,
}

impl BuiltinSchemas {
    /// The definition name of a built-in kind (or its `…List`).
    pub fn name_of(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kinds
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
            .map(String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.definitions.get(name)
    }
}

/// The built-in schemas, generated on first use.
pub fn builtin() -> &'static BuiltinSchemas {
    static CELL: OnceLock<BuiltinSchemas> = OnceLock::new();
    CELL.get_or_init(generate)
}

/// `#/components/schemas/<name>`.
pub fn ref_to(name: &str) -> String {
    format!("{REF_PREFIX}{name}")
}

/// The definition name a `$ref` string points at, if it is a local component ref.
pub fn ref_name(reference: &str) -> Option<&str> {
    reference.strip_prefix(REF_PREFIX)
}

/// Kinds that have no collection of their own (subresource bodies and
/// reviews, which are never stored): no List.
fn has_list(kind: &str) -> bool {
    !matches!(
        kind,
        "Binding"
            | "Scale"
            | "Eviction"
            | "TokenRequest"
            | "SelfSubjectReview"
            | "SelfSubjectAccessReview"
            | "SubjectAccessReview"
            | "LocalSubjectAccessReview"
            | "SelfSubjectRulesReview"
    )
}

fn generate() -> BuiltinSchemas {
    let raw: Raw = serde_json::from_str(SNAPSHOT).expect("the schema snapshot is JSON");
    let mut definitions = raw.definitions;
    let mut kinds = HashMap::new();
    let mut lists = Vec::new();
    for k in raw.kinds {
        if has_list(&k.kind) {
            lists.push((
                k.group.clone(),
                k.version.clone(),
                k.kind.clone(),
                k.definition.clone(),
            ));
        }
        kinds.insert((k.group, k.version, k.kind), k.definition);
    }

    for ((group, version, kind), name) in &kinds {
        if let Some(Value::Object(def)) = definitions.get_mut(name) {
            add_gvk(def, group, version, kind);
            // Rust's ObjectMeta is not optional in k8s-openapi, so it lands
            // in `required`; the API does not require it.
            if let Some(Value::Array(req)) = def.get_mut("required") {
                req.retain(|r| r != "metadata");
                if req.is_empty() {
                    def.remove("required");
                }
            }
        }
    }
    for (group, version, kind, item) in lists {
        let list_kind = format!("{kind}List");
        let list_name = format!("{item}List");
        if definitions.contains_key(&list_name) {
            continue;
        }
        let mut def = list_schema(&kind, &item);
        if let Value::Object(obj) = &mut def {
            add_gvk(obj, &group, &version, &list_kind);
        }
        definitions.insert(list_name.clone(), def);
        kinds.insert((group, version, list_kind), list_name);
    }

    // Upstream documents type IntOrString as a string of format
    // `int-or-string`; kubectl explain and the structured-merge-diff schema
    // converter key on that format.
    if let Some(Value::Object(def)) = definitions.get_mut(INT_OR_STRING) {
        def.insert("type".into(), json!("string"));
        def.insert("format".into(), json!("int-or-string"));
    }

    extensions::apply(&mut definitions);
    for def in definitions.values_mut() {
        strip_schema_keys(def);
    }

    BuiltinSchemas { definitions, kinds }
}

/// Appends one `{group, version, kind}` entry to a top-level schema's
/// `x-kubernetes-group-version-kind` (kubectl explain looks kinds up by it).
pub fn add_gvk(def: &mut Map<String, Value>, group: &str, version: &str, kind: &str) {
    let entry = json!({"group": group, "kind": kind, "version": version});
    match def.get_mut("x-kubernetes-group-version-kind") {
        Some(Value::Array(list)) => {
            if !list.contains(&entry) {
                list.push(entry);
            }
        }
        _ => {
            def.insert(
                "x-kubernetes-group-version-kind".into(),
                Value::Array(vec![entry]),
            );
        }
    }
}

/// The `…List` schema for a kind whose item schema is `item`.
pub fn list_schema(kind: &str, item: &str) -> Value {
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "properties": {
            "apiVersion": {
                "description": "APIVersion defines the versioned schema of this representation of an object.",
                "type": "string",
            },
            "items": {
                "description": format!("List of {kind} objects."),
                "type": "array",
                "items": {"$ref": ref_to(item)},
            },
            "kind": {
                "description": "Kind is a string value representing the REST resource this object represents.",
                "type": "string",
            },
            "metadata": {
                "description": "Standard list metadata.",
                "allOf": [{"$ref": ref_to(LIST_META)}],
            },
        },
        "required": ["items"],
    })
}

/// Removes `$schema` keys anywhere (OpenAPI 3.0 schemas must not carry them).
fn strip_schema_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.remove("$schema");
            for child in map.values_mut() {
                strip_schema_keys(child);
            }
        }
        Value::Array(items) => {
            for child in items {
                strip_schema_keys(child);
            }
        }
        _ => {}
    }
}

/// Calls `f` with every `$ref` target name found in `v`.
pub fn for_each_ref(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if k == "$ref" {
                    if let Some(name) = child.as_str().and_then(ref_name) {
                        f(name);
                    }
                } else {
                    for_each_ref(child, f);
                }
            }
        }
        Value::Array(items) => {
            for child in items {
                for_each_ref(child, f);
            }
        }
        _ => {}
    }
}

/// Names reachable from `roots` through `$ref`s, in discovery order.
pub fn reachable<'a>(defs: &'a Map<String, Value>, roots: &[&str]) -> Vec<&'a str> {
    let mut out: Vec<&'a str> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack: Vec<String> = roots.iter().rev().map(|s| s.to_string()).collect();
    while let Some(name) = stack.pop() {
        let Some((key, def)) = defs.get_key_value(name.as_str()) else {
            continue;
        };
        if !seen.insert(key.as_str()) {
            continue;
        }
        out.push(key.as_str());
        for_each_ref(def, &mut |n| {
            if !seen.contains(n) {
                stack.push(n.to_string());
            }
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_and_lists_are_generated() {
        let b = builtin();
        assert_eq!(b.name_of("", "v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
        assert_eq!(
            b.name_of("apps", "v1", "DeploymentList"),
            Some("io.k8s.api.apps.v1.DeploymentList")
        );
        let pod = b.get("io.k8s.api.core.v1.Pod").expect("pod");
        assert_eq!(
            pod["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        assert!(pod.get("required").is_none());
        assert!(b.get("io.k8s.api.autoscaling.v1.Scale").is_some());
        assert!(b.get(OBJECT_META).is_some());
    }

    #[test]
    fn no_dangling_refs_in_builtin_definitions() {
        let b = builtin();
        let mut missing = Vec::new();
        for def in b.definitions.values() {
            for_each_ref(def, &mut |n| {
                if !b.definitions.contains_key(n) {
                    missing.push(n.to_string());
                }
            });
        }
        assert!(missing.is_empty(), "{missing:?}");
    }

    #[test]
    fn no_schema_keys_or_defs() {
        let s = serde_json::to_string(&builtin().definitions).unwrap_or_default();
        assert!(!s.contains("\"$schema\""));
        assert!(!s.contains("\"$defs\""));
        assert!(!s.contains("#/definitions/"));
    }
}
