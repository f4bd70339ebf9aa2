//! The resource registry: which kinds exist, where they are served, and how
//! they are named. Built-in kinds are fixed at start; CustomResourceDefinitions
//! add and remove entries at run time.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    Namespaced,
    Cluster,
}

/// A subresource served under `<resource>/<name>/<sub>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subresource {
    pub name: &'static str,
    /// (group, version, kind) of what the subresource speaks.
    pub group: &'static str,
    pub version: &'static str,
    pub kind: String,
    pub verbs: &'static [&'static str],
}

/// A CRD's `additionalPrinterColumns` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// Scale subresource paths of a CRD.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// Everything the server knows about one served resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Plural, lower case: the URL segment.
    pub plural: String,
    pub singular: String,
    pub scope: Scope,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<&'static str>,
    pub subresources: Vec<Subresource>,
    /// Set for custom resources only.
    pub crd: Option<CrdInfo>,
}

/// What a CustomResourceDefinition adds to a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdInfo {
    pub printer_columns: Vec<PrinterColumn>,
    /// The version's `openAPIV3Schema`, if any.
    pub schema: Option<Value>,
    pub scale: Option<ScalePaths>,
}

pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The group of the resource metrics API (PodMetrics, NodeMetrics).
pub const METRICS_GROUP: &str = "metrics.k8s.io";
/// Upstream serves metrics read-only; kubesim also lets the components
/// that produce them write them.
pub const METRICS_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];
pub const SUB_VERBS: &[&str] = &["get", "patch", "update"];
/// Review kinds: computed from the request and returned, never stored, so
/// create is their only verb.
pub const REVIEW_KINDS: &[(&str, &str)] = &[
    ("authentication.k8s.io", "SelfSubjectReview"),
    ("authorization.k8s.io", "LocalSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectAccessReview"),
    ("authorization.k8s.io", "SelfSubjectRulesReview"),
    ("authorization.k8s.io", "SubjectAccessReview"),
];

impl ResourceInfo {
    pub fn namespaced(&self) -> bool {
        self.scope == Scope::Namespaced
    }
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }
    /// Where objects of this resource live in the store (`pods`, `deployments.apps`).
    /// A resource served in several group versions has one storage, named
    /// after its storage version (see [`crate::convert`]).
    pub fn storage_key(&self) -> String {
        match crate::convert::storage_version(&self.group, &self.version, &self.plural) {
            Some((group, _, plural)) if !self.is_custom() => crate::error::qualified(plural, group),
            _ => crate::error::qualified(&self.plural, &self.group),
        }
    }
    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresources.iter().any(|s| s.name == name)
    }
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }
    /// The URL prefix of the group version: `/api/v1` or `/apis/apps/v1`.
    pub fn gv_path(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }
    pub fn is_custom(&self) -> bool {
        self.crd.is_some()
    }
    /// A built-in review kind (see [`REVIEW_KINDS`]).
    pub fn is_review(&self) -> bool {
        !self.is_custom()
            && REVIEW_KINDS
                .iter()
                .any(|(g, k)| self.group == *g && self.kind == *k)
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    scope: Scope,
    short: &'static [&'static str],
    all: bool,
    subs: &'static [&'static str],
}

#[allow(clippy::too_many_arguments)] // a table row constructor: one argument per column
const fn b(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    scope: Scope,
    short: &'static [&'static str],
    all: bool,
    subs: &'static [&'static str],
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        scope,
        short,
        all,
        subs,
    }
}

use Scope::{Cluster, Namespaced};

/// The built-in kinds, in discovery order within each group.
const BUILTINS: &[Builtin] = &[
    b("", "v1", "Binding", "bindings", Namespaced, &[], false, &[]),
    b(
        "",
        "v1",
        "ConfigMap",
        "configmaps",
        Namespaced,
        &["cm"],
        false,
        &[],
    ),
    b(
        "",
        "v1",
        "Endpoints",
        "endpoints",
        Namespaced,
        &["ep"],
        false,
        &[],
    ),
    b("", "v1", "Event", "events", Namespaced, &["ev"], false, &[]),
    b(
        "",
        "v1",
        "LimitRange",
        "limitranges",
        Namespaced,
        &["limits"],
        false,
        &[],
    ),
    b(
        "",
        "v1",
        "Namespace",
        "namespaces",
        Cluster,
        &["ns"],
        false,
        &["finalize", "status"],
    ),
    b(
        "",
        "v1",
        "Node",
        "nodes",
        Cluster,
        &["no"],
        false,
        &["status"],
    ),
    b(
        "",
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        Namespaced,
        &["pvc"],
        false,
        &["status"],
    ),
    b(
        "",
        "v1",
        "PersistentVolume",
        "persistentvolumes",
        Cluster,
        &["pv"],
        false,
        &["status"],
    ),
    b(
        "",
        "v1",
        "Pod",
        "pods",
        Namespaced,
        &["po"],
        true,
        &[
            "attach",
            "binding",
            "eviction",
            "exec",
            "log",
            "portforward",
            "status",
        ],
    ),
    b(
        "",
        "v1",
        "PodTemplate",
        "podtemplates",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        Namespaced,
        &["rc"],
        true,
        &["scale", "status"],
    ),
    b(
        "",
        "v1",
        "ResourceQuota",
        "resourcequotas",
        Namespaced,
        &["quota"],
        false,
        &["status"],
    ),
    b("", "v1", "Secret", "secrets", Namespaced, &[], false, &[]),
    b(
        "",
        "v1",
        "ServiceAccount",
        "serviceaccounts",
        Namespaced,
        &["sa"],
        false,
        &["token"],
    ),
    b(
        "",
        "v1",
        "Service",
        "services",
        Namespaced,
        &["svc"],
        true,
        &["status"],
    ),
    b(
        "apps",
        "v1",
        "ControllerRevision",
        "controllerrevisions",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "apps",
        "v1",
        "DaemonSet",
        "daemonsets",
        Namespaced,
        &["ds"],
        true,
        &["status"],
    ),
    b(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        Namespaced,
        &["deploy"],
        true,
        &["scale", "status"],
    ),
    b(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        Namespaced,
        &["rs"],
        true,
        &["scale", "status"],
    ),
    b(
        "apps",
        "v1",
        "StatefulSet",
        "statefulsets",
        Namespaced,
        &["sts"],
        true,
        &["scale", "status"],
    ),
    // Create-only reviews: answered from the request, never stored.
    b(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        Cluster,
        &[],
        false,
        &[],
    ),
    // Asked by kube-controller-manager's CSR approver (may this node
    // have a client certificate?) and by webhook authorizers.
    b(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        Cluster,
        &[],
        false,
        &[],
    ),
    // Stored once, as v2; v1 is a converted view (see `convert`).
    b(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        Namespaced,
        &["hpa"],
        true,
        &["status"],
    ),
    b(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        Namespaced,
        &["hpa"],
        true,
        &["status"],
    ),
    b(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        Namespaced,
        &["cj"],
        true,
        &["status"],
    ),
    b(
        "batch",
        "v1",
        "Job",
        "jobs",
        Namespaced,
        &[],
        true,
        &["status"],
    ),
    b(
        "coordination.k8s.io",
        "v1",
        "Lease",
        "leases",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        "endpointslices",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "events.k8s.io",
        "v1",
        "Event",
        "events",
        Namespaced,
        &["ev"],
        false,
        &[],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        Namespaced,
        &["ing"],
        false,
        &["status"],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        Namespaced,
        &["netpol"],
        false,
        &[],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "IngressClass",
        "ingressclasses",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "IPAddress",
        "ipaddresses",
        Cluster,
        &["ip"],
        false,
        &[],
    ),
    b(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        "servicecidrs",
        Cluster,
        &[],
        false,
        &["status"],
    ),
    b(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        Namespaced,
        &["pdb"],
        false,
        &["status"],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        "roles",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        "priorityclasses",
        Cluster,
        &["pc"],
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "StorageClass",
        "storageclasses",
        Cluster,
        &["sc"],
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        "csidrivers",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "CSINode",
        "csinodes",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        "csistoragecapacities",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        "volumeattachments",
        Cluster,
        &[],
        false,
        &["status"],
    ),
    b(
        "storage.k8s.io",
        "v1",
        "VolumeAttributesClass",
        "volumeattributesclasses",
        Cluster,
        &["vac"],
        false,
        &[],
    ),
    // Dynamic resource allocation: kube-scheduler waits for these
    // informers before it binds anything, DRA or not.
    b(
        "resource.k8s.io",
        "v1",
        "DeviceClass",
        "deviceclasses",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "resource.k8s.io",
        "v1",
        "ResourceClaim",
        "resourceclaims",
        Namespaced,
        &[],
        false,
        &["status"],
    ),
    b(
        "resource.k8s.io",
        "v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "resource.k8s.io",
        "v1",
        "ResourceSlice",
        "resourceslices",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        Cluster,
        &[],
        false,
        &["status"],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        Cluster,
        &["csr"],
        false,
        &["approval", "status"],
    ),
    // The resource metrics API. Upstream serves it from metrics-server
    // through aggregation; here the objects are stored, written by the
    // emulated kubelets (or tests) and read by the autoscaler and
    // `kubectl top`.
    b(
        "metrics.k8s.io",
        "v1beta1",
        "NodeMetrics",
        "nodes",
        Cluster,
        &[],
        false,
        &[],
    ),
    b(
        "metrics.k8s.io",
        "v1beta1",
        "PodMetrics",
        "pods",
        Namespaced,
        &[],
        false,
        &[],
    ),
    b(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        Cluster,
        &["crd", "crds"],
        false,
        &["status"],
    ),
];

/// Order in which built-in groups are listed by `/apis` (upstream's order,
/// which also decides which group wins a short-name tie in kubectl).
pub const GROUP_ORDER: &[&str] = &[
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "resource.k8s.io",
    "metrics.k8s.io",
];

fn subresource(name: &'static str, kind: &str) -> Subresource {
    match name {
        "scale" => Subresource {
            name,
            group: "autoscaling",
            version: "v1",
            kind: "Scale".into(),
            verbs: SUB_VERBS,
        },
        "binding" => Subresource {
            name,
            group: "",
            version: "v1",
            kind: "Binding".into(),
            verbs: &["create"],
        },
        "eviction" => Subresource {
            name,
            group: "policy",
            version: "v1",
            kind: "Eviction".into(),
            verbs: &["create"],
        },
        "log" => Subresource {
            name,
            group: "",
            version: "v1",
            kind: "Pod".into(),
            verbs: &["get"],
        },
        "exec" | "attach" | "portforward" => Subresource {
            name,
            group: "",
            version: "v1",
            kind: format!("Pod{}Options", capitalize(name)),
            verbs: &["create", "get"],
        },
        "token" => Subresource {
            name,
            group: "authentication.k8s.io",
            version: "v1",
            kind: "TokenRequest".into(),
            verbs: &["create"],
        },
        "finalize" => Subresource {
            name,
            group: "",
            version: "v1",
            kind: "Namespace".into(),
            verbs: &["update"],
        },
        _ => Subresource {
            name,
            group: "",
            version: "",
            kind: kind.to_string(),
            verbs: SUB_VERBS,
        },
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn builtin_info(bi: &Builtin) -> ResourceInfo {
    let mut subresources: Vec<Subresource> =
        bi.subs.iter().map(|s| subresource(s, bi.kind)).collect();
    for s in &mut subresources {
        // Status (and finalize/log) speak the parent's own group version.
        if s.version.is_empty() || (s.group.is_empty() && s.kind == bi.kind) {
            s.group = bi.group;
            s.version = bi.version;
        }
    }
    let verbs: Vec<&'static str> = match bi.plural {
        "bindings" => vec!["create"],
        _ if REVIEW_KINDS.contains(&(bi.group, bi.kind)) => vec!["create"],
        _ if bi.group == METRICS_GROUP => METRICS_VERBS.to_vec(),
        _ => ALL_VERBS.to_vec(),
    };
    ResourceInfo {
        group: bi.group.into(),
        version: bi.version.into(),
        kind: bi.kind.into(),
        plural: bi.plural.into(),
        singular: bi.kind.to_lowercase(),
        scope: bi.scope,
        short_names: bi.short.iter().map(|s| s.to_string()).collect(),
        categories: if bi.all { vec!["all".into()] } else { vec![] },
        verbs,
        subresources,
        crd: None,
    }
}

/// (group, version, plural)
type Key = (String, String, String);

/// A [`Key`] seen as borrowed strings, so that every request's lookup of
/// its resource does not allocate a key of three strings first.
trait KeyParts {
    fn parts(&self) -> (&str, &str, &str);
}

impl KeyParts for Key {
    fn parts(&self) -> (&str, &str, &str) {
        (&self.0, &self.1, &self.2)
    }
}

impl KeyParts for (&str, &str, &str) {
    fn parts(&self) -> (&str, &str, &str) {
        *self
    }
}

// Ordered as the tuple of strings orders itself, as `Borrow` requires.
impl<'a> std::borrow::Borrow<dyn KeyParts + 'a> for Key {
    fn borrow(&self) -> &(dyn KeyParts + 'a) {
        self
    }
}

crate::ordered_by_parts!(KeyParts);

/// The set of served resources. Cheap to clone; clones share state.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<RwLock<BTreeMap<Key, Arc<ResourceInfo>>>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry holding the built-in kinds.
    pub fn new() -> Self {
        let mut map = BTreeMap::new();
        for bi in BUILTINS {
            let info = builtin_info(bi);
            map.insert(
                (
                    info.group.clone(),
                    info.version.clone(),
                    info.plural.clone(),
                ),
                Arc::new(info),
            );
        }
        Registry {
            inner: Arc::new(RwLock::new(map)),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<Key, Arc<ResourceInfo>>> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.read()
            .get(&(group, version, plural) as &dyn KeyParts)
            .cloned()
    }

    /// The resource serving `kind` in `apiVersion` (`apps/v1`, `v1`).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        let (group, version) = split_api_version(api_version);
        self.read()
            .values()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// Every served resource, ordered by group, version, plural.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.read().values().cloned().collect()
    }

    /// Group versions served, each with its resources; groups in upstream's
    /// order, then custom groups alphabetically.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let all = self.all();
        let mut names: Vec<String> = Vec::new();
        for g in GROUP_ORDER {
            if all.iter().any(|r| r.group == *g) {
                names.push(g.to_string());
            }
        }
        for r in &all {
            if !r.group.is_empty() && !names.contains(&r.group) {
                names.push(r.group.clone());
            }
        }
        names
            .into_iter()
            .map(|g| {
                let mut versions: Vec<String> = all
                    .iter()
                    .filter(|r| r.group == g)
                    .map(|r| r.version.clone())
                    .collect();
                versions.dedup();
                versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
                versions.dedup();
                (g, versions)
            })
            .collect()
    }

    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.read()
            .values()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect()
    }

    /// Adds or replaces a resource (used for CRDs).
    pub fn insert(&self, info: ResourceInfo) {
        let key = (
            info.group.clone(),
            info.version.clone(),
            info.plural.clone(),
        );
        self.inner
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, Arc::new(info));
    }

    /// Removes every custom version of `plural.group`.
    pub fn remove_custom(&self, group: &str, plural: &str) {
        self.inner
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(g, _, p), info| !(g == group && p == plural && info.is_custom()));
    }
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Kubernetes version ordering: GA > beta > alpha, higher numbers first.
pub fn version_priority(v: &str) -> (u8, u32, u32) {
    let rest = match v.strip_prefix('v') {
        Some(r) => r,
        None => return (0, 0, 0),
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let major: u32 = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    let (level, n) = if let Some(n) = tail.strip_prefix("beta") {
        (2, n)
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n)
    } else {
        return (0, 0, 0);
    };
    (level, major, n.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_resolve() {
        let r = Registry::new();
        let pods = r.get("", "v1", "pods").expect("pods");
        assert_eq!(pods.kind, "Pod");
        assert!(pods.namespaced());
        assert_eq!(pods.storage_key(), "pods");
        let d = r.by_kind("apps/v1", "Deployment").expect("deploy");
        assert_eq!(d.storage_key(), "deployments.apps");
        assert_eq!(
            d.subresource("scale").map(|s| s.kind.as_str()),
            Some("Scale")
        );
        assert_eq!(d.subresource("status").map(|s| s.group), Some("apps"));
    }

    #[test]
    fn metrics_api_is_served() {
        let r = Registry::new();
        let pm = r
            .get("metrics.k8s.io", "v1beta1", "pods")
            .expect("pod metrics");
        assert_eq!(pm.kind, "PodMetrics");
        assert!(pm.namespaced());
        assert_eq!(pm.storage_key(), "pods.metrics.k8s.io");
        assert!(pm.verbs.contains(&"watch") && pm.verbs.contains(&"create"));
        let nm = r
            .get("metrics.k8s.io", "v1beta1", "nodes")
            .expect("node metrics");
        assert_eq!(nm.kind, "NodeMetrics");
        assert!(!nm.namespaced());
    }

    #[test]
    fn reviews_are_create_only() {
        let r = Registry::new();
        for (group, plural) in [
            ("authorization.k8s.io", "subjectaccessreviews"),
            ("authentication.k8s.io", "selfsubjectreviews"),
            ("authorization.k8s.io", "selfsubjectaccessreviews"),
            ("authorization.k8s.io", "selfsubjectrulesreviews"),
        ] {
            let info = r.get(group, "v1", plural).expect(plural);
            assert!(info.is_review() && !info.namespaced(), "{plural}");
            assert_eq!(info.verbs, vec!["create"], "{plural}");
        }
        assert!(!r.get("", "v1", "pods").expect("pods").is_review());
    }

    #[test]
    fn version_order() {
        let mut v = vec!["v1beta1", "v2", "v1", "v1alpha1", "v2beta2"];
        v.sort_by_key(|b| std::cmp::Reverse(version_priority(b)));
        assert_eq!(v, vec!["v2", "v1", "v2beta2", "v1beta1", "v1alpha1"]);
    }
}
