//! Schemas of the built-in kinds, generated once per process from the
//! `k8s-openapi` types and post-processed into OpenAPI 3.0 component form.

use std::collections::HashMap;
use std::sync::OnceLock;

use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use k8s_openapi::schemars::JsonSchema;
use serde_json::{json, Map, Value};

use super::extensions;
use crate::resource::Registry;

/// Where definitions live inside a document; every `$ref` points here.
pub const REF_PREFIX: &str = "#/components/schemas/";

pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
pub const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";

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

/// Adds `T`'s schema (and everything it references) to the generator and
/// returns its definition name.
pub(super) fn add<T: JsonSchema>(gen: &mut SchemaGenerator) -> Option<String> {
    let schema = gen.subschema_for::<T>();
    let reference = schema.get("$ref")?.as_str()?;
    // schemars builds the ref from the configured definitions path; only the
    // name after the last path segment matters to us.
    Some(reference.rsplit('/').next()?.to_string())
}

/// Maps a built-in (group, version, kind) to its `k8s-openapi` type. Kinds the
/// crate does not know (or that we do not serve) yield `None`.
fn add_kind(gen: &mut SchemaGenerator, group: &str, version: &str, kind: &str) -> Option<String> {
    use k8s_openapi::api::{
        apps::v1 as apps, authentication::v1 as authentication, authorization::v1 as authorization,
        autoscaling::v1 as autoscaling1, autoscaling::v2 as autoscaling2, batch::v1 as batch,
        coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery,
        events::v1 as events, networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    match (group, version, kind) {
        ("", "v1", "Binding") => add::<core::Binding>(gen),
        ("", "v1", "ConfigMap") => add::<core::ConfigMap>(gen),
        ("", "v1", "Endpoints") => add::<core::Endpoints>(gen),
        ("", "v1", "Event") => add::<core::Event>(gen),
        ("", "v1", "LimitRange") => add::<core::LimitRange>(gen),
        ("", "v1", "Namespace") => add::<core::Namespace>(gen),
        ("", "v1", "Node") => add::<core::Node>(gen),
        ("", "v1", "PersistentVolumeClaim") => add::<core::PersistentVolumeClaim>(gen),
        ("", "v1", "PersistentVolume") => add::<core::PersistentVolume>(gen),
        ("", "v1", "Pod") => add::<core::Pod>(gen),
        ("", "v1", "PodTemplate") => add::<core::PodTemplate>(gen),
        ("", "v1", "ReplicationController") => add::<core::ReplicationController>(gen),
        ("", "v1", "ResourceQuota") => add::<core::ResourceQuota>(gen),
        ("", "v1", "Secret") => add::<core::Secret>(gen),
        ("", "v1", "ServiceAccount") => add::<core::ServiceAccount>(gen),
        ("", "v1", "Service") => add::<core::Service>(gen),
        ("apps", "v1", "ControllerRevision") => add::<apps::ControllerRevision>(gen),
        ("apps", "v1", "DaemonSet") => add::<apps::DaemonSet>(gen),
        ("apps", "v1", "Deployment") => add::<apps::Deployment>(gen),
        ("apps", "v1", "ReplicaSet") => add::<apps::ReplicaSet>(gen),
        ("apps", "v1", "StatefulSet") => add::<apps::StatefulSet>(gen),
        ("authentication.k8s.io", "v1", "SelfSubjectReview") => {
            add::<authentication::SelfSubjectReview>(gen)
        }
        ("authentication.k8s.io", "v1", "TokenRequest") => add::<authentication::TokenRequest>(gen),
        ("authorization.k8s.io", "v1", "SelfSubjectAccessReview") => {
            add::<authorization::SelfSubjectAccessReview>(gen)
        }
        ("authorization.k8s.io", "v1", "SelfSubjectRulesReview") => {
            add::<authorization::SelfSubjectRulesReview>(gen)
        }
        ("autoscaling", "v1", "Scale") => add::<autoscaling1::Scale>(gen),
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => {
            add::<autoscaling1::HorizontalPodAutoscaler>(gen)
        }
        ("autoscaling", "v2", "HorizontalPodAutoscaler") => {
            add::<autoscaling2::HorizontalPodAutoscaler>(gen)
        }
        ("batch", "v1", "CronJob") => add::<batch::CronJob>(gen),
        ("batch", "v1", "Job") => add::<batch::Job>(gen),
        ("coordination.k8s.io", "v1", "Lease") => add::<coordination::Lease>(gen),
        ("discovery.k8s.io", "v1", "EndpointSlice") => add::<discovery::EndpointSlice>(gen),
        ("events.k8s.io", "v1", "Event") => add::<events::Event>(gen),
        ("networking.k8s.io", "v1", "Ingress") => add::<networking::Ingress>(gen),
        ("networking.k8s.io", "v1", "IngressClass") => add::<networking::IngressClass>(gen),
        ("networking.k8s.io", "v1", "NetworkPolicy") => add::<networking::NetworkPolicy>(gen),
        ("policy", "v1", "Eviction") => add::<policy::Eviction>(gen),
        ("policy", "v1", "PodDisruptionBudget") => add::<policy::PodDisruptionBudget>(gen),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => {
            add::<rbac::ClusterRoleBinding>(gen)
        }
        ("rbac.authorization.k8s.io", "v1", "ClusterRole") => add::<rbac::ClusterRole>(gen),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding") => add::<rbac::RoleBinding>(gen),
        ("rbac.authorization.k8s.io", "v1", "Role") => add::<rbac::Role>(gen),
        ("scheduling.k8s.io", "v1", "PriorityClass") => add::<scheduling::PriorityClass>(gen),
        ("storage.k8s.io", "v1", "StorageClass") => add::<storage::StorageClass>(gen),
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition") => {
            add::<apiextensions::CustomResourceDefinition>(gen)
        }
        _ => super::control_plane_kinds::add_kind(gen, group, version, kind),
    }
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
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

    let settings = SchemaSettings::openapi3();
    let mut gen = settings.into_generator();

    // The meta types every document needs regardless of kinds.
    let _ = add::<meta::ObjectMeta>(&mut gen);
    let _ = add::<meta::ListMeta>(&mut gen);
    let _ = add::<meta::Status>(&mut gen);
    let _ = add::<meta::DeleteOptions>(&mut gen);
    let _ = add::<meta::Patch>(&mut gen);

    // Built-in kinds as the registry serves them, plus the kinds their
    // subresources speak (Scale, Eviction, Binding).
    let mut gvks: Vec<(String, String, String)> = Vec::new();
    for r in Registry::new().all() {
        if r.is_custom() {
            continue;
        }
        gvks.push((r.group.clone(), r.version.clone(), r.kind.clone()));
        for s in &r.subresources {
            gvks.push((s.group.to_string(), s.version.to_string(), s.kind.clone()));
        }
    }
    let mut seen = std::collections::HashSet::new();
    gvks.retain(|k| seen.insert(k.clone()));

    let mut kinds = HashMap::new();
    let mut lists = Vec::new();
    for (group, version, kind) in gvks {
        let Some(name) = add_kind(&mut gen, &group, &version, &kind) else {
            continue;
        };
        if has_list(&kind) {
            lists.push((group.clone(), version.clone(), kind.clone(), name.clone()));
        }
        kinds.insert((group, version, kind), name);
    }

    // Applying the generator's transforms here rewrites `$ref` siblings into
    // `allOf` (OpenAPI 3.0 ignores siblings of `$ref`) and `null` types into
    // `nullable`.
    let mut definitions = gen.take_definitions(true);

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
