//! The `x-kubernetes-*` list and patch annotations that `k8s-openapi`'s
//! schemas lack. kubectl's client-side apply reads the patch strategy and
//! merge key from the OpenAPI v3 document; server-side apply uses the list
//! type and map keys.

use serde_json::{json, Map, Value};

/// How one list field merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldPatchMeta {
    /// Definition name holding the field.
    pub definition: &'static str,
    /// JSON field name.
    pub field: &'static str,
    /// `x-kubernetes-patch-strategy` (`merge`, `retainKeys`, `merge,retainKeys`).
    pub strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`.
    pub merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type` (`map`, `set`, `atomic`).
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys` when `list_type` is `map`.
    pub map_keys: &'static [&'static str],
}

const fn map(
    definition: &'static str,
    field: &'static str,
    strategy: &'static str,
    merge_key: &'static str,
    map_keys: &'static [&'static str],
) -> FieldPatchMeta {
    FieldPatchMeta {
        definition,
        field,
        strategy: Some(strategy),
        merge_key: Some(merge_key),
        list_type: Some("map"),
        map_keys,
    }
}

const POD_SPEC: &str = "io.k8s.api.core.v1.PodSpec";
const CONTAINER: &str = "io.k8s.api.core.v1.Container";
const EPHEMERAL: &str = "io.k8s.api.core.v1.EphemeralContainer";

/// The annotated fields. Kept small on purpose: the patch engine has its own
/// table; both are to be unified.
pub const FIELDS: &[FieldPatchMeta] = &[
    map(POD_SPEC, "containers", "merge", "name", &["name"]),
    map(POD_SPEC, "initContainers", "merge", "name", &["name"]),
    map(POD_SPEC, "ephemeralContainers", "merge", "name", &["name"]),
    map(POD_SPEC, "volumes", "merge,retainKeys", "name", &["name"]),
    map(POD_SPEC, "imagePullSecrets", "merge", "name", &["name"]),
    map(POD_SPEC, "hostAliases", "merge", "ip", &["ip"]),
    map(
        POD_SPEC,
        "resourceClaims",
        "merge,retainKeys",
        "name",
        &["name"],
    ),
    map(POD_SPEC, "schedulingGates", "merge", "name", &["name"]),
    map(
        POD_SPEC,
        "topologySpreadConstraints",
        "merge",
        "topologyKey",
        &["topologyKey", "whenUnsatisfiable"],
    ),
    map(
        CONTAINER,
        "ports",
        "merge",
        "containerPort",
        &["containerPort", "protocol"],
    ),
    map(CONTAINER, "env", "merge", "name", &["name"]),
    map(
        CONTAINER,
        "volumeMounts",
        "merge",
        "mountPath",
        &["mountPath"],
    ),
    map(
        CONTAINER,
        "volumeDevices",
        "merge",
        "devicePath",
        &["devicePath"],
    ),
    map(
        EPHEMERAL,
        "ports",
        "merge",
        "containerPort",
        &["containerPort", "protocol"],
    ),
    map(EPHEMERAL, "env", "merge", "name", &["name"]),
    map(
        EPHEMERAL,
        "volumeMounts",
        "merge",
        "mountPath",
        &["mountPath"],
    ),
    map(
        EPHEMERAL,
        "volumeDevices",
        "merge",
        "devicePath",
        &["devicePath"],
    ),
    map(
        "io.k8s.api.core.v1.ServiceSpec",
        "ports",
        "merge",
        "port",
        &["port", "protocol"],
    ),
    map(
        "io.k8s.api.core.v1.ServiceAccount",
        "secrets",
        "merge",
        "name",
        &["name"],
    ),
    map(
        "io.k8s.api.core.v1.PodStatus",
        "podIPs",
        "merge",
        "ip",
        &["ip"],
    ),
    map(
        "io.k8s.api.core.v1.PodStatus",
        "hostIPs",
        "merge",
        "ip",
        &["ip"],
    ),
    map(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "ownerReferences",
        "merge",
        "uid",
        &["uid"],
    ),
    FieldPatchMeta {
        definition: "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        field: "finalizers",
        strategy: Some("merge"),
        merge_key: None,
        list_type: Some("set"),
        map_keys: &[],
    },
    FieldPatchMeta {
        definition: "io.k8s.api.apps.v1.DeploymentSpec",
        field: "strategy",
        strategy: Some("retainKeys"),
        merge_key: None,
        list_type: None,
        map_keys: &[],
    },
    FieldPatchMeta {
        definition: "io.k8s.api.apps.v1.DaemonSetSpec",
        field: "updateStrategy",
        strategy: Some("retainKeys"),
        merge_key: None,
        list_type: None,
        map_keys: &[],
    },
];

/// Patch metadata of `definition.field`, from the table or, for any
/// `conditions` list, the upstream convention (merge by `type`).
pub fn field_patch_meta(definition: &str, field: &str) -> Option<FieldPatchMeta> {
    FIELDS
        .iter()
        .find(|f| f.definition == definition && f.field == field)
        .copied()
}

/// `conditions` lists merge by `type` throughout the API.
const CONDITIONS: FieldPatchMeta = map("", "conditions", "merge", "type", &["type"]);

fn annotate(prop: &mut Map<String, Value>, meta: &FieldPatchMeta) {
    if let Some(s) = meta.strategy {
        prop.insert("x-kubernetes-patch-strategy".into(), json!(s));
    }
    if let Some(k) = meta.merge_key {
        prop.insert("x-kubernetes-patch-merge-key".into(), json!(k));
    }
    if let Some(t) = meta.list_type {
        prop.insert("x-kubernetes-list-type".into(), json!(t));
    }
    if !meta.map_keys.is_empty() {
        prop.insert("x-kubernetes-list-map-keys".into(), json!(meta.map_keys));
    }
}

/// Adds the annotations to the generated definitions in place.
pub fn apply(defs: &mut Map<String, Value>) {
    for meta in FIELDS {
        if let Some(Value::Object(prop)) = defs
            .get_mut(meta.definition)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(meta.field))
        {
            annotate(prop, meta);
        }
    }
    for def in defs.values_mut() {
        if let Some(Value::Object(prop)) = def
            .get_mut("properties")
            .and_then(|p| p.get_mut("conditions"))
        {
            let is_list = prop.get("type").and_then(Value::as_str) == Some("array");
            if is_list && !prop.contains_key("x-kubernetes-patch-merge-key") {
                annotate(prop, &CONDITIONS);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_annotated() {
        let defs = &super::super::generate::builtin().definitions;
        let c = &defs[POD_SPEC]["properties"]["containers"];
        assert_eq!(c["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(c["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(c["x-kubernetes-list-map-keys"], json!(["name"]));
        let ports = &defs[CONTAINER]["properties"]["ports"];
        assert_eq!(
            ports["x-kubernetes-list-map-keys"],
            json!(["containerPort", "protocol"])
        );
        let conds = &defs["io.k8s.api.apps.v1.DeploymentStatus"]["properties"]["conditions"];
        assert_eq!(conds["x-kubernetes-patch-merge-key"], "type");
        assert!(field_patch_meta(POD_SPEC, "volumes").is_some());
    }
}
