//! Per-field list and map strategies of the built-in types.
//!
//! Upstream encodes these as Go struct tags (`patchStrategy`,
//! `patchMergeKey`) for strategic merge patch and as `+listType`,
//! `+listMapKey`, `+mapType`/`+structType` markers for server-side apply.
//! Both are reproduced here as one data table keyed by Go type name and JSON
//! field name, plus a map from each built-in resource to its root type. The
//! lookups are pure so the schema publisher can reuse them for the
//! `x-kubernetes-patch-*` and `x-kubernetes-list-*` extensions.
//!
//! Custom resources carry their SSA metadata in the CRD's structural schema,
//! so for them the list type is read from `x-kubernetes-list-type` and
//! friends instead.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::Value;

use crate::resource::ResourceInfo;

/// How strategic merge patch combines a list in the patch with the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// The patch's list replaces the current list (the default).
    Replace,
    /// Lists of objects merged element-wise by this key field.
    MergeByKey(&'static str),
    /// Lists of scalars merged as a union.
    MergePrimitive,
}

/// How server-side apply identifies list elements (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// The whole list is one value owned by one manager (the default).
    Atomic,
    /// Scalars identified by their value.
    Set,
    /// Objects identified by the values of these key fields.
    Map(Vec<String>),
}

/// The table's compile-time form of [`ListType`].
#[derive(Debug, Clone, Copy)]
enum Lt {
    Atomic,
    Set,
    Map(&'static [&'static str]),
}

impl Lt {
    fn to_list_type(self) -> ListType {
        match self {
            Lt::Atomic => ListType::Atomic,
            Lt::Set => ListType::Set,
            Lt::Map(keys) => ListType::Map(keys.iter().map(|k| k.to_string()).collect()),
        }
    }
}

/// One tagged field: `(go type, json field, go type of the field or of its
/// list elements, SMP strategy, SSA list type)`.
type Entry = (
    &'static str,
    &'static str,
    &'static str,
    ListStrategy,
    Option<Lt>,
);

use ListStrategy::{MergeByKey as Key, MergePrimitive as Prim, Replace as Rep};
use Lt::{Atomic, Map, Set};

const NAME: &[&str] = &["name"];
const TYPE: &[&str] = &["type"];
const IP: &[&str] = &["ip"];
const PORT_PROTO: &[&str] = &["port", "protocol"];
const CPORT_PROTO: &[&str] = &["containerPort", "protocol"];

/// Tagged fields and typed children of the built-in types. Fields that are
/// plain scalars need no entry; a list without an SSA type is atomic.
const FIELDS: &[Entry] = &[
    // metav1.ObjectMeta
    ("ObjectMeta", "finalizers", "", Prim, Some(Set)),
    (
        "ObjectMeta",
        "ownerReferences",
        "",
        Key("uid"),
        Some(Map(&["uid"])),
    ),
    // core/v1 Pod and its templates
    ("Pod", "spec", "PodSpec", Rep, None),
    ("Pod", "status", "PodStatus", Rep, None),
    ("PodTemplate", "template", "PodTemplateSpec", Rep, None),
    ("PodTemplateSpec", "metadata", "ObjectMeta", Rep, None),
    ("PodTemplateSpec", "spec", "PodSpec", Rep, None),
    ("PodSpec", "volumes", "Volume", Key("name"), Some(Map(NAME))),
    (
        "PodSpec",
        "initContainers",
        "Container",
        Key("name"),
        Some(Map(NAME)),
    ),
    (
        "PodSpec",
        "containers",
        "Container",
        Key("name"),
        Some(Map(NAME)),
    ),
    (
        "PodSpec",
        "ephemeralContainers",
        "Container",
        Key("name"),
        Some(Map(NAME)),
    ),
    (
        "PodSpec",
        "imagePullSecrets",
        "",
        Key("name"),
        Some(Map(NAME)),
    ),
    ("PodSpec", "hostAliases", "", Key("ip"), Some(Map(IP))),
    (
        "PodSpec",
        "topologySpreadConstraints",
        "TopologySpreadConstraint",
        Key("topologyKey"),
        Some(Map(&["topologyKey", "whenUnsatisfiable"])),
    ),
    (
        "PodSpec",
        "resourceClaims",
        "",
        Key("name"),
        Some(Map(NAME)),
    ),
    (
        "PodSpec",
        "schedulingGates",
        "",
        Key("name"),
        Some(Map(NAME)),
    ),
    ("PodSpec", "nodeSelector", "atomic", Rep, None),
    ("PodSpec", "tolerations", "", Rep, Some(Atomic)),
    ("PodSpec", "readinessGates", "", Rep, Some(Atomic)),
    ("PodSpec", "resources", "ResourceRequirements", Rep, None),
    (
        "TopologySpreadConstraint",
        "labelSelector",
        "atomic",
        Rep,
        None,
    ),
    ("Volume", "ephemeral", "EphemeralVolumeSource", Rep, None),
    (
        "EphemeralVolumeSource",
        "volumeClaimTemplate",
        "PersistentVolumeClaim",
        Rep,
        None,
    ),
    (
        "Container",
        "ports",
        "",
        Key("containerPort"),
        Some(Map(CPORT_PROTO)),
    ),
    ("Container", "env", "", Key("name"), Some(Map(NAME))),
    (
        "Container",
        "volumeMounts",
        "",
        Key("mountPath"),
        Some(Map(&["mountPath"])),
    ),
    (
        "Container",
        "volumeDevices",
        "",
        Key("devicePath"),
        Some(Map(&["devicePath"])),
    ),
    ("Container", "resizePolicy", "", Rep, Some(Atomic)),
    ("Container", "resources", "ResourceRequirements", Rep, None),
    ("ResourceRequirements", "claims", "", Rep, Some(Map(NAME))),
    ("PodStatus", "conditions", "", Key("type"), Some(Map(TYPE))),
    ("PodStatus", "podIPs", "", Key("ip"), Some(Map(IP))),
    ("PodStatus", "hostIPs", "", Key("ip"), Some(Map(IP))),
    (
        "PodStatus",
        "resourceClaimStatuses",
        "",
        Key("name"),
        Some(Map(NAME)),
    ),
    ("PodStatus", "containerStatuses", "", Rep, Some(Atomic)),
    ("PodStatus", "initContainerStatuses", "", Rep, Some(Atomic)),
    (
        "PodStatus",
        "ephemeralContainerStatuses",
        "",
        Rep,
        Some(Atomic),
    ),
    // core/v1 others
    (
        "ReplicationController",
        "spec",
        "ReplicationControllerSpec",
        Rep,
        None,
    ),
    (
        "ReplicationController",
        "status",
        "ConditionedStatus",
        Rep,
        None,
    ),
    ("ReplicationControllerSpec", "selector", "atomic", Rep, None),
    (
        "ReplicationControllerSpec",
        "template",
        "PodTemplateSpec",
        Rep,
        None,
    ),
    ("Node", "spec", "NodeSpec", Rep, None),
    ("Node", "status", "NodeStatus", Rep, None),
    ("NodeSpec", "podCIDRs", "", Prim, Some(Set)),
    ("NodeSpec", "taints", "", Rep, Some(Atomic)),
    ("NodeStatus", "conditions", "", Key("type"), Some(Map(TYPE))),
    ("NodeStatus", "addresses", "", Key("type"), Some(Map(TYPE))),
    ("Service", "spec", "ServiceSpec", Rep, None),
    ("Service", "status", "ServiceStatus", Rep, None),
    (
        "ServiceSpec",
        "ports",
        "",
        Key("port"),
        Some(Map(PORT_PROTO)),
    ),
    ("ServiceSpec", "selector", "atomic", Rep, None),
    (
        "ServiceStatus",
        "conditions",
        "",
        Key("type"),
        Some(Map(TYPE)),
    ),
    ("Namespace", "status", "ConditionedStatus", Rep, None),
    (
        "PersistentVolumeClaim",
        "spec",
        "PersistentVolumeClaimSpec",
        Rep,
        None,
    ),
    (
        "PersistentVolumeClaim",
        "status",
        "ConditionedStatus",
        Rep,
        None,
    ),
    ("PersistentVolumeClaimSpec", "selector", "atomic", Rep, None),
    ("PersistentVolume", "status", "ConditionedStatus", Rep, None),
    // apps/v1
    ("Deployment", "spec", "WorkloadSpec", Rep, None),
    ("Deployment", "status", "ConditionedStatus", Rep, None),
    ("ReplicaSet", "spec", "WorkloadSpec", Rep, None),
    ("ReplicaSet", "status", "ConditionedStatus", Rep, None),
    ("DaemonSet", "spec", "WorkloadSpec", Rep, None),
    ("DaemonSet", "status", "ConditionedStatus", Rep, None),
    ("StatefulSet", "spec", "StatefulSetSpec", Rep, None),
    ("StatefulSet", "status", "ConditionedStatus", Rep, None),
    ("WorkloadSpec", "selector", "atomic", Rep, None),
    ("WorkloadSpec", "template", "PodTemplateSpec", Rep, None),
    ("StatefulSetSpec", "selector", "atomic", Rep, None),
    ("StatefulSetSpec", "template", "PodTemplateSpec", Rep, None),
    (
        "StatefulSetSpec",
        "volumeClaimTemplates",
        "PersistentVolumeClaim",
        Rep,
        Some(Atomic),
    ),
    // batch/v1
    ("Job", "spec", "JobSpec", Rep, None),
    ("Job", "status", "JobStatus", Rep, None),
    ("JobSpec", "selector", "atomic", Rep, None),
    ("JobSpec", "template", "PodTemplateSpec", Rep, None),
    ("JobStatus", "conditions", "", Key("type"), Some(Atomic)),
    ("CronJob", "spec", "CronJobSpec", Rep, None),
    ("CronJobSpec", "jobTemplate", "JobTemplateSpec", Rep, None),
    ("JobTemplateSpec", "metadata", "ObjectMeta", Rep, None),
    ("JobTemplateSpec", "spec", "JobSpec", Rep, None),
    // policy/v1, autoscaling/v2
    (
        "PodDisruptionBudget",
        "spec",
        "PodDisruptionBudgetSpec",
        Rep,
        None,
    ),
    (
        "PodDisruptionBudget",
        "status",
        "PodDisruptionBudgetStatus",
        Rep,
        None,
    ),
    ("PodDisruptionBudgetSpec", "selector", "atomic", Rep, None),
    (
        "PodDisruptionBudgetStatus",
        "conditions",
        "",
        Key("type"),
        Some(Map(TYPE)),
    ),
    (
        "HorizontalPodAutoscaler",
        "status",
        "ConditionedStatus",
        Rep,
        None,
    ),
    // networking.k8s.io/v1
    ("NetworkPolicy", "spec", "NetworkPolicySpec", Rep, None),
    ("NetworkPolicySpec", "podSelector", "atomic", Rep, None),
    // apiextensions.k8s.io/v1
    ("CustomResourceDefinition", "status", "CrdStatus", Rep, None),
    ("CrdStatus", "conditions", "", Rep, Some(Map(TYPE))),
    // Statuses whose only tagged list is `conditions` keyed by type.
    (
        "ConditionedStatus",
        "conditions",
        "",
        Key("type"),
        Some(Map(TYPE)),
    ),
];

/// Root Go type of each built-in resource, by (group, plural).
const ROOTS: &[(&str, &str, &str)] = &[
    ("", "pods", "Pod"),
    ("", "podtemplates", "PodTemplate"),
    ("", "replicationcontrollers", "ReplicationController"),
    ("", "nodes", "Node"),
    ("", "services", "Service"),
    ("", "namespaces", "Namespace"),
    ("", "persistentvolumeclaims", "PersistentVolumeClaim"),
    ("", "persistentvolumes", "PersistentVolume"),
    ("apps", "deployments", "Deployment"),
    ("apps", "replicasets", "ReplicaSet"),
    ("apps", "daemonsets", "DaemonSet"),
    ("apps", "statefulsets", "StatefulSet"),
    ("batch", "jobs", "Job"),
    ("batch", "cronjobs", "CronJob"),
    ("policy", "poddisruptionbudgets", "PodDisruptionBudget"),
    (
        "autoscaling",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
    ),
    ("networking.k8s.io", "networkpolicies", "NetworkPolicy"),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
    ),
];

/// The type name used for fields whose value is an atomic map or struct
/// (`+mapType=atomic`, `+structType=atomic` such as LabelSelector).
const ATOMIC: &str = "atomic";

/// The root Go type of a built-in resource; other built-ins get a generic
/// root that still knows about `metadata`.
pub fn root_type(resource: &ResourceInfo) -> &'static str {
    static BY_RESOURCE: LazyLock<HashMap<&str, HashMap<&str, &str>>> = LazyLock::new(|| {
        let mut m: HashMap<&str, HashMap<&str, &str>> = HashMap::new();
        for (g, p, t) in ROOTS {
            m.entry(g).or_default().entry(p).or_insert(t);
        }
        m
    });
    BY_RESOURCE
        .get(resource.group.as_str())
        .and_then(|m| m.get(resource.plural.as_str()))
        .copied()
        .unwrap_or("Object")
}

/// The table's entry for `field` of type `ty`. Looked up by hashing, as
/// every strategic merge and apply asks for each list and map it meets.
fn entry(ty: &str, field: &str) -> Option<&'static Entry> {
    static BY_TYPE: LazyLock<HashMap<&str, HashMap<&str, &Entry>>> = LazyLock::new(|| {
        let mut m: HashMap<&str, HashMap<&str, &Entry>> = HashMap::new();
        // The first entry of a (type, field) pair wins, as a scan would.
        for e in FIELDS {
            m.entry(e.0).or_default().entry(e.1).or_insert(e);
        }
        m
    });
    BY_TYPE.get(ty).and_then(|m| m.get(field)).copied()
}

/// Walks the type table along `path`; None once a field has no known type.
fn walk(resource: &ResourceInfo, path: &[&str]) -> Option<(&'static str, &'static str)> {
    walk_from(root_type(resource), path)
}

/// [`walk`] from the resource's root type `root`.
fn walk_from<S: AsRef<str>>(
    root: &'static str,
    path: &[S],
) -> Option<(&'static str, &'static str)> {
    let mut ty = root;
    let mut last_field: &'static str = "";
    for (i, field) in path.iter().enumerate() {
        let field = field.as_ref();
        // Every kind's top-level metadata is an ObjectMeta.
        if i == 0 && field == "metadata" {
            ty = "ObjectMeta";
            last_field = "metadata";
            continue;
        }
        let e = entry(ty, field)?;
        if i + 1 == path.len() {
            return Some((ty, e.1));
        }
        if e.2.is_empty() || e.2 == ATOMIC {
            return None;
        }
        ty = e.2;
        last_field = e.1;
    }
    Some((ty, last_field))
}

/// Strategic-merge strategy of the list at `path` (field names from the
/// root, list levels transparent): `["spec","template","spec","containers"]`.
pub fn list_strategy(resource: &ResourceInfo, path: &[&str]) -> ListStrategy {
    if resource.crd.is_some() || path.is_empty() {
        return ListStrategy::Replace;
    }
    match walk(resource, path).and_then(|(ty, f)| entry(ty, f)) {
        Some(e) => e.3,
        None => ListStrategy::Replace,
    }
}

/// The patch merge key of the list at `path`, if it is merged by key.
pub fn patch_merge_key(resource: &ResourceInfo, path: &[&str]) -> Option<&'static str> {
    match list_strategy(resource, path) {
        ListStrategy::MergeByKey(k) => Some(k),
        _ => None,
    }
}

/// Server-side-apply list type of the list at `path`.
pub fn list_type(resource: &ResourceInfo, path: &[&str]) -> ListType {
    Types::new(resource).list_type(path)
}

/// The list-map keys of the list at `path` (`x-kubernetes-list-map-keys`),
/// empty unless it is a map list.
pub fn list_map_keys(resource: &ResourceInfo, path: &[&str]) -> Vec<String> {
    match list_type(resource, path) {
        ListType::Map(keys) => keys,
        _ => Vec::new(),
    }
}

/// Whether the object at `path` is atomic for server-side apply
/// (`x-kubernetes-map-type: atomic`, e.g. label selectors).
pub fn map_is_atomic(resource: &ResourceInfo, path: &[&str]) -> bool {
    Types::new(resource).map_is_atomic(path)
}

/// [`list_type`] and [`map_is_atomic`] for one resource, its root type
/// looked up once: comparing two objects asks about every list and map
/// it meets, and finding the root type hashes the group and resource.
pub(super) struct Types<'a> {
    resource: &'a ResourceInfo,
    root: &'static str,
}

impl<'a> Types<'a> {
    pub(super) fn new(resource: &'a ResourceInfo) -> Self {
        Types {
            resource,
            root: root_type(resource),
        }
    }

    /// [`list_type`], with the path's fields in any string form.
    pub(super) fn list_type<S: AsRef<str>>(&self, path: &[S]) -> ListType {
        if let Some(crd) = &self.resource.crd {
            return crd_schema_at(crd.schema.as_ref(), path)
                .map(crd_list_type)
                .unwrap_or(ListType::Atomic);
        }
        if path.is_empty() {
            return ListType::Atomic;
        }
        match walk_from(self.root, path).and_then(|(ty, f)| entry(ty, f)) {
            Some(e) => e.4.map(Lt::to_list_type).unwrap_or(ListType::Atomic),
            None => ListType::Atomic,
        }
    }

    /// [`map_is_atomic`], with the path's fields in any string form.
    pub(super) fn map_is_atomic<S: AsRef<str>>(&self, path: &[S]) -> bool {
        if let Some(crd) = &self.resource.crd {
            return crd_schema_at(crd.schema.as_ref(), path)
                .and_then(|s| s.get("x-kubernetes-map-type"))
                .and_then(Value::as_str)
                == Some("atomic");
        }
        if path.is_empty() {
            return false;
        }
        match walk_from(self.root, path).and_then(|(ty, f)| entry(ty, f)) {
            Some(e) => e.2 == ATOMIC,
            None => false,
        }
    }
}

/// Values SSA assumes for absent list-map key fields, as the published
/// schema defaults do (`protocol` defaults to TCP on ports).
pub fn key_default(key: &str) -> Option<Value> {
    match key {
        "protocol" => Some(Value::String("TCP".into())),
        _ => None,
    }
}

/// The structural-schema node of a CRD at `path`, descending through array
/// items transparently.
fn crd_schema_at<'a, S: AsRef<str>>(schema: Option<&'a Value>, path: &[S]) -> Option<&'a Value> {
    let mut node = schema?;
    for field in path {
        let field = field.as_ref();
        while let Some(items) = node.get("items") {
            node = items;
        }
        node = match node.get("properties").and_then(|p| p.get(field)) {
            Some(n) => n,
            None => node.get("additionalProperties").filter(|a| a.is_object())?,
        };
    }
    Some(node)
}

fn crd_list_type(node: &Value) -> ListType {
    match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => {
            let keys: Vec<String> = node
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if keys.is_empty() {
                ListType::Atomic
            } else {
                ListType::Map(keys)
            }
        }
        _ => ListType::Atomic,
    }
}
