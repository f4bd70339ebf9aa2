//! The Node authorizer (`--authorization-mode Node,RBAC`): a kubelet,
//! `system:node:<name>` in `system:nodes`, may read and write what its
//! own node needs, and no more.
//!
//! The rules are upstream's: secrets, configmaps, claims, volumes,
//! resource claims, volume attachments and service account tokens only
//! when a pod bound to the node uses them; its own Node, Lease and CSINode;
//! pods listed by `spec.nodeName`; everything else by the static rules of
//! the `system:node` role. Where upstream walks a graph kept up to date
//! from watches, kubesim looks at the stored pods of the one namespace
//! asked about that are bound to the node (their bound node is indexed
//! beside each pod, so the others are not decoded).
//!
//! Writes the authorizer lets through (a Node, pod status, mirror pods,
//! Leases, CSINodes) are narrowed to the node's own by NodeRestriction
//! ([`Server::node_restriction`]).

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use kubesim_core::meta;
use serde_json::Value;

use super::rbac::Rule;
use super::{Attributes, UserInfo};
use crate::Server;

/// The group every kubelet is in.
pub const NODES_GROUP: &str = "system:nodes";
/// A kubelet's user name is this and its node's name.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// Where the nodes' heartbeat Leases live.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// The annotation that marks a mirror pod.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// The node `user` acts for: None when it is not a node; Some("") when
/// it is one but names no node (`system:node:`).
pub fn node_of(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

/// The Node authorizer's answer: allowed, or no opinion with its reason
/// (perhaps empty), which RBAC may still overrule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeDecision {
    Allow,
    NoOpinion(String),
}

use NodeDecision::{Allow, NoOpinion};

/// Upstream's refusal of anything but a get of one named object, without
/// a subresource; None when `a` is such a get.
fn not_one_get(a: &Attributes) -> Option<NodeDecision> {
    if a.verb != "get" {
        return Some(no("can only get individual resources of this type"));
    }
    if !a.subresource.is_empty() {
        return Some(no("cannot get subresource"));
    }
    if a.name.is_empty() {
        return Some(no("No Object name found"));
    }
    None
}

fn no(reason: impl Into<String>) -> NodeDecision {
    NoOpinion(reason.into())
}

/// The rules every node holds, whatever it asks about: those of the
/// default `system:node` ClusterRole.
fn node_rules() -> &'static [Rule] {
    static RULES: OnceLock<Vec<Rule>> = OnceLock::new();
    RULES.get_or_init(|| {
        super::rbac::bootstrap::objects()
            .into_iter()
            .find(|(plural, o)| *plural == "clusterroles" && o["metadata"]["name"] == "system:node")
            .map(|(_, role)| Rule::all_from(&role))
            .unwrap_or_default()
    })
}

/// What a pod bound to the node may lead the node to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Secret,
    ConfigMap,
    Claim,
    ServiceAccount,
    ResourceClaim,
    Pod,
}

/// The value of `selector`'s requirement `field=value` (or `==`).
fn selected<'a>(selector: &'a str, field: &str) -> Option<&'a str> {
    selector.split(',').find_map(|req| {
        let (k, v) = req.split_once("==").or_else(|| req.split_once('='))?;
        (k.trim() == field).then_some(v.trim())
    })
}

impl Server {
    /// Whether the Node authorizer runs before RBAC.
    pub fn enable_node_authorizer(&self, on: bool) {
        self.rbac.node.store(on, Ordering::Relaxed);
    }

    pub fn node_authorizer_enabled(&self) -> bool {
        self.rbac.node.load(Ordering::Relaxed)
    }

    /// The Node authorizer's answer for `node` (None: not a node, no
    /// opinion and no reason).
    pub fn authorize_node(&self, user: &UserInfo, a: &Attributes) -> Option<NodeDecision> {
        let node = node_of(user)?;
        if node.is_empty() {
            return Some(no(format!("unknown node for user {:?}", user.name)));
        }
        if a.resource_request {
            let sub = a.subresource.as_str();
            let d = match (a.group.as_str(), a.resource.as_str()) {
                ("", "secrets") => Some(self.read_namespaced(node, Kind::Secret, a)),
                ("", "configmaps") => Some(self.read_namespaced(node, Kind::ConfigMap, a)),
                ("", "persistentvolumeclaims") if sub == "status" => Some(match a.verb.as_str() {
                    "update" | "patch" => self.related(node, Kind::Claim, a),
                    _ => no("can only get/update/patch this type"),
                }),
                ("", "persistentvolumeclaims") => Some(self.get_related(node, Kind::Claim, a)),
                ("", "persistentvolumes") => Some(self.get_volume(node, a)),
                ("resource.k8s.io", "resourceclaims") => {
                    Some(self.get_related(node, Kind::ResourceClaim, a))
                }
                ("storage.k8s.io", "volumeattachments") => Some(self.get_attachment(node, a)),
                ("", "serviceaccounts") => Some(self.node_token(node, a)),
                ("coordination.k8s.io", "leases") => Some(lease(node, a)),
                ("storage.k8s.io", "csinodes") => Some(csinode(node, a)),
                ("", "nodes") => own_node(node, a),
                ("", "pods") => self.pod(node, a),
                _ => None,
            };
            if let Some(d) = d {
                return Some(d);
            }
        }
        if node_rules().iter().any(|r| r.allows(a)) {
            Some(Allow)
        } else {
            Some(no(""))
        }
    }

    fn read_namespaced(&self, node: &str, kind: Kind, a: &Attributes) -> NodeDecision {
        if !matches!(a.verb.as_str(), "get" | "list" | "watch") {
            return no("can only read resources of this type");
        }
        if !a.subresource.is_empty() {
            return no("cannot read subresource");
        }
        if a.namespace.is_empty() {
            return no("can only read namespaced object of this type");
        }
        self.related(node, kind, a)
    }

    fn get_related(&self, node: &str, kind: Kind, a: &Attributes) -> NodeDecision {
        if a.verb != "get" {
            return no("can only get individual resources of this type");
        }
        if !a.subresource.is_empty() {
            return no("cannot get subresource");
        }
        self.related(node, kind, a)
    }

    /// Allowed when a pod bound to `node` uses the object `a` names.
    fn related(&self, node: &str, kind: Kind, a: &Attributes) -> NodeDecision {
        if a.name.is_empty() {
            return no("No Object name found");
        }
        if self.node_uses(node, kind, &a.namespace, &a.name) {
            Allow
        } else {
            unrelated(node)
        }
    }

    /// A volume: through the claim bound to it.
    fn get_volume(&self, node: &str, a: &Attributes) -> NodeDecision {
        if let Some(refused) = not_one_get(a) {
            return refused;
        }
        let claim = self
            .stored("", "persistentvolumes", "", &a.name)
            .and_then(|pv| {
                let r = pv.pointer("/spec/claimRef")?;
                let ns = r.get("namespace")?.as_str()?.to_string();
                let name = r.get("name")?.as_str()?.to_string();
                Some((ns, name))
            });
        let bound = claim.is_some_and(|(ns, name)| {
            self.stored("", "persistentvolumeclaims", &ns, &name)
                .is_some_and(|c| {
                    c.pointer("/spec/volumeName").and_then(Value::as_str) == Some(&a.name)
                })
                && self.node_uses(node, Kind::Claim, &ns, &name)
        });
        if bound {
            Allow
        } else {
            unrelated(node)
        }
    }

    fn get_attachment(&self, node: &str, a: &Attributes) -> NodeDecision {
        if let Some(refused) = not_one_get(a) {
            return refused;
        }
        let mine = self
            .stored("storage.k8s.io", "volumeattachments", "", &a.name)
            .is_some_and(|va| va.pointer("/spec/nodeName").and_then(Value::as_str) == Some(node));
        if mine {
            Allow
        } else {
            unrelated(node)
        }
    }

    fn node_token(&self, node: &str, a: &Attributes) -> NodeDecision {
        if a.verb != "create" || a.name.is_empty() {
            return no("can only create tokens for individual service accounts");
        }
        if a.subresource != "token" {
            return no("can only create token subresource of serviceaccount");
        }
        if self.node_uses(node, Kind::ServiceAccount, &a.namespace, &a.name) {
            Allow
        } else {
            unrelated(node)
        }
    }

    fn pod(&self, node: &str, a: &Attributes) -> Option<NodeDecision> {
        Some(match (a.subresource.as_str(), a.verb.as_str()) {
            ("", "get") => self.get_related(node, Kind::Pod, a),
            ("", "list" | "watch") => {
                if selected(&a.field_selector, "spec.nodeName") == Some(node) {
                    Allow
                } else if !a.name.is_empty() {
                    self.related(node, Kind::Pod, a)
                } else {
                    no("can only list/watch pods with spec.nodeName field selector")
                }
            }
            // Mirror pods, and the status and eviction of the node's own
            // pods: NodeRestriction checks which.
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                Allow
            }
            _ => no(""),
        })
    }

    /// The object stored under `group`/`plural` at `ns`/`name`, decoded.
    fn stored(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Value> {
        let r = self.resource(group, "v1", plural).ok()?;
        self.get(&r, ns, name).ok()
    }

    /// Whether a pod in `ns` bound to `node` uses the `kind` named `name`
    /// (for [`Kind::Pod`]: is that pod).
    fn node_uses(&self, node: &str, kind: Kind, ns: &str, name: &str) -> bool {
        let Ok(pods) = self.resource("", "v1", "pods") else {
            return false;
        };
        if kind == Kind::Pod {
            return self
                .store
                .get(
                    &pods.storage_key(),
                    &crate::service::object_key(&pods, ns, name),
                )
                .is_some_and(|rec| {
                    crate::service::attrs::field(&pods, &rec.attrs, "spec.nodeName") == Some(node)
                });
        }
        let direct = self
            .node_pods(node, Some(ns))
            .iter()
            .any(|pod| pod_uses(pod, kind, name));
        direct || (kind == Kind::Secret && self.volume_secret(node, ns, name))
    }

    /// The pods bound to `node`, in namespace `ns` or in all, decoded
    /// (the others are passed over on their indexed bound node).
    fn node_pods(&self, node: &str, ns: Option<&str>) -> Vec<Value> {
        let Ok(pods) = self.resource("", "v1", "pods") else {
            return Vec::new();
        };
        let Ok(snap) = self.store.snapshot(&pods.storage_key(), None) else {
            return Vec::new();
        };
        let prefix = ns.map_or(String::new(), |ns| {
            crate::service::namespace_prefix(&pods, ns)
        });
        let slot = kubesim_core::selector::indexed_slot(&pods, "spec.nodeName");
        snap.items
            .range(std::sync::Arc::<str>::from(prefix.as_str())..)
            .take_while(|(k, _)| k.starts_with(prefix.as_str()))
            .filter(|(_, rec)| {
                slot.and_then(|s| crate::service::attrs::value(&rec.attrs, s)) == Some(node)
            })
            .filter_map(|(_, rec)| serde_json::from_slice::<Value>(&rec.bytes).ok())
            .collect()
    }

    /// Whether the Secret `ns`/`name` is one a kubelet reads for a
    /// volume of a claim that a pod bound to `node` uses (a CSI node
    /// secret, or another volume source's `secretRef`), as upstream's
    /// graph follows pod → claim → volume → secret. The pod may be in
    /// any namespace: a volume's secret names its own.
    fn volume_secret(&self, node: &str, ns: &str, name: &str) -> bool {
        self.node_pods(node, None).iter().any(|pod| {
            let pod_ns = meta::namespace(pod);
            claims_of(pod).into_iter().any(|claim| {
                let volume = self
                    .stored("", "persistentvolumeclaims", pod_ns, &claim)
                    .and_then(|c| c.pointer("/spec/volumeName")?.as_str().map(str::to_string));
                volume
                    .and_then(|v| self.stored("", "persistentvolumes", "", &v))
                    .is_some_and(|pv| {
                        volume_secrets(&pv).contains(&(ns.to_string(), name.to_string()))
                    })
            })
        })
    }
}

fn unrelated(node: &str) -> NodeDecision {
    no(format!(
        "no relationship found between node '{node}' and this object"
    ))
}

fn lease(node: &str, a: &Attributes) -> NodeDecision {
    if !matches!(
        a.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no("can only get, create, update, patch, or delete a node lease");
    }
    if a.namespace != NODE_LEASE_NAMESPACE {
        return no(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    if a.verb != "create" && a.name != node {
        return no("can only access node lease with the same name as the requesting node");
    }
    Allow
}

fn csinode(node: &str, a: &Attributes) -> NodeDecision {
    if !matches!(
        a.verb.as_str(),
        "get" | "create" | "update" | "patch" | "delete"
    ) {
        return no("can only get, create, update, patch, or delete a CSINode");
    }
    if !a.subresource.is_empty() {
        return no("cannot authorize CSINode subresources");
    }
    if a.verb != "create" && a.name != node {
        return no("can only access CSINode with the same name as the requesting node");
    }
    Allow
}

/// Nodes: its own may be read; writes go on to NodeRestriction.
fn own_node(node: &str, a: &Attributes) -> Option<NodeDecision> {
    Some(match (a.subresource.as_str(), a.verb.as_str()) {
        ("", "create" | "update" | "patch") | ("status", "update" | "patch") => Allow,
        ("", "get" | "list" | "watch") => {
            let name = if a.name.is_empty() {
                selected(&a.field_selector, "metadata.name").unwrap_or_default()
            } else {
                a.name.as_str()
            };
            if name == node {
                Allow
            } else if name.is_empty() {
                no(format!(
                    "node '{node}' cannot read all nodes, only its own Node object"
                ))
            } else {
                no(format!(
                    "node '{node}' cannot read '{name}', only its own Node object"
                ))
            }
        }
        _ => no(""),
    })
}

/// Every name of `kind` a pod refers to.
fn pod_uses(pod: &Value, kind: Kind, name: &str) -> bool {
    let spec = &pod["spec"];
    let is = |v: &Value| v.as_str() == Some(name);
    match kind {
        Kind::ServiceAccount => {
            let sa = spec["serviceAccountName"].as_str().unwrap_or("default");
            sa == name
        }
        Kind::Claim => claims_of(pod).iter().any(|c| c == name),
        Kind::ResourceClaim => {
            spec["resourceClaims"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| is(&c["resourceClaimName"]))
                || pod["status"]["resourceClaimStatuses"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| is(&c["resourceClaimName"]))
        }
        Kind::Secret | Kind::ConfigMap => secret_or_config_map(pod, kind == Kind::Secret, &is),
        Kind::Pod => meta::name(pod) == name,
    }
}

/// Whether a projected volume `v` has a `source` (`secret`, `configMap`)
/// named `name`.
fn projected(v: &Value, source: &str, is: &dyn Fn(&Value) -> bool) -> bool {
    v["projected"]["sources"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| is(&s[source]["name"]))
}

/// Whether `pod` names a Secret (`secret`) or a ConfigMap for which `is`
/// holds, anywhere a kubelet would read one: volumes, projections, CSI
/// and other volume secret references, image pull secrets, environment.
fn secret_or_config_map(pod: &Value, secret: bool, is: &dyn Fn(&Value) -> bool) -> bool {
    let spec = &pod["spec"];
    let volumes = spec["volumes"].as_array().into_iter().flatten();
    let containers = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten());
    let in_volumes = volumes.into_iter().any(|v| {
        if secret {
            is(&v["secret"]["secretName"])
                || v.as_object().is_some_and(|o| {
                    o.values().any(|src| {
                        is(&src["secretRef"]["name"]) || is(&src["nodePublishSecretRef"]["name"])
                    })
                })
                || projected(v, "secret", is)
        } else {
            is(&v["configMap"]["name"]) || projected(v, "configMap", is)
        }
    });
    let pull = secret
        && spec["imagePullSecrets"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| is(&s["name"]));
    let (key_ref, from_ref) = if secret {
        ("secretKeyRef", "secretRef")
    } else {
        ("configMapKeyRef", "configMapRef")
    };
    let in_env = containers.into_iter().any(|c| {
        c["env"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| is(&e["valueFrom"][key_ref]["name"]))
            || c["envFrom"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| is(&e[from_ref]["name"]))
    });
    in_volumes || pull || in_env
}

/// The claims a pod's volumes use: named ones, and those of its generic
/// ephemeral volumes (`<pod>-<volume>`).
fn claims_of(pod: &Value) -> Vec<String> {
    let volumes = pod["spec"]["volumes"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    volumes
        .iter()
        .filter_map(|v| match v["persistentVolumeClaim"]["claimName"].as_str() {
            Some(c) => Some(c.to_string()),
            None if v["ephemeral"].is_object() => Some(format!(
                "{}-{}",
                meta::name(pod),
                v["name"].as_str().unwrap_or_default()
            )),
            None => None,
        })
        .collect()
}

/// The Secrets (namespace, name) a kubelet reads to mount a volume:
/// a CSI volume's node-side secrets, and the `secretRef` of the other
/// sources that have one, and azureFile's secret (their namespace
/// defaulting to the claim's). The controller-side CSI secrets are
/// not the kubelet's and not listed.
fn volume_secrets(pv: &Value) -> Vec<(String, String)> {
    let spec = pv["spec"].as_object();
    let claim_ns = pv
        .pointer("/spec/claimRef/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = Vec::new();
    let mut add = |name: &Value, namespace: &Value, default_ns: &str| {
        if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
            let ns = namespace
                .as_str()
                .filter(|n| !n.is_empty())
                .unwrap_or(default_ns);
            out.push((ns.to_string(), name.to_string()));
        }
    };
    for (source, v) in spec.into_iter().flatten() {
        match source.as_str() {
            "csi" => {
                for f in [
                    "nodePublishSecretRef",
                    "nodeStageSecretRef",
                    "nodeExpandSecretRef",
                ] {
                    add(&v[f]["name"], &v[f]["namespace"], "");
                }
            }
            "azureFile" => add(&v["secretName"], &v["secretNamespace"], claim_ns),
            _ => {
                let r = &v["secretRef"];
                add(&r["name"], &r["namespace"], claim_ns);
            }
        }
    }
    out
}

/// Whether `pod` names any object of `kind` (a Secret or a ConfigMap):
/// NodeRestriction refuses mirror pods that do.
pub(super) fn pod_refers_to_any(pod: &Value, kind: Kind) -> bool {
    let named = |v: &Value| v.as_str().is_some_and(|s| !s.is_empty());
    matches!(kind, Kind::Secret | Kind::ConfigMap)
        && secret_or_config_map(pod, kind == Kind::Secret, &named)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_identity_needs_the_group_and_the_prefix() {
        let n = UserInfo::authenticated("system:node:n1", vec![NODES_GROUP.into()]);
        assert_eq!(node_of(&n), Some("n1"));
        let unnamed = UserInfo::authenticated("system:node:", vec![NODES_GROUP.into()]);
        assert_eq!(node_of(&unnamed), Some(""));
        let outside = UserInfo::authenticated("system:node:n1", vec![]);
        assert_eq!(node_of(&outside), None);
        let other = UserInfo::authenticated("bob", vec![NODES_GROUP.into()]);
        assert_eq!(node_of(&other), None);
    }

    #[test]
    fn field_selectors_are_read_as_upstream_writes_them() {
        assert_eq!(selected("spec.nodeName=n1", "spec.nodeName"), Some("n1"));
        assert_eq!(
            selected("status.phase=Running,spec.nodeName==n2", "spec.nodeName"),
            Some("n2")
        );
        assert_eq!(selected("spec.nodeName!=n1", "spec.nodeName"), None);
        assert_eq!(selected("", "spec.nodeName"), None);
    }

    #[test]
    fn pods_name_what_they_use() {
        let pod = serde_json::json!({"metadata": {"name": "p"}, "spec": {
            "serviceAccountName": "runner",
            "imagePullSecrets": [{"name": "pull"}],
            "volumes": [
                {"name": "a", "secret": {"secretName": "vol-secret"}},
                {"name": "b", "configMap": {"name": "vol-cm"}},
                {"name": "c", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "d", "projected": {"sources": [{"secret": {"name": "proj"}}]}},
                {"name": "e", "ephemeral": {"volumeClaimTemplate": {}}},
                {"name": "f", "csi": {"driver": "x", "nodePublishSecretRef": {"name": "csi"}}}
            ],
            "containers": [{"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}}],
                "envFrom": [{"secretRef": {"name": "env-secret"}}]}]}});
        for s in ["pull", "vol-secret", "proj", "csi", "env-secret"] {
            assert!(pod_uses(&pod, Kind::Secret, s), "{s}");
        }
        assert!(!pod_uses(&pod, Kind::Secret, "vol-cm"));
        for c in ["vol-cm", "env-cm"] {
            assert!(pod_uses(&pod, Kind::ConfigMap, c), "{c}");
        }
        assert!(pod_uses(&pod, Kind::Claim, "data"));
        assert!(pod_uses(&pod, Kind::Claim, "p-e"));
        assert!(pod_uses(&pod, Kind::ServiceAccount, "runner"));
        assert!(!pod_uses(&pod, Kind::ServiceAccount, "default"));
    }

    #[test]
    fn volumes_name_the_secrets_a_kubelet_mounts_them_with() {
        let pv = serde_json::json!({"spec": {
            "claimRef": {"namespace": "apps", "name": "data"},
            "csi": {"driver": "d", "volumeHandle": "h",
                "nodePublishSecretRef": {"namespace": "storage", "name": "publish"},
                "nodeStageSecretRef": {"namespace": "storage", "name": "stage"},
                "controllerPublishSecretRef": {"namespace": "storage", "name": "controller"}}}});
        let got = volume_secrets(&pv);
        let want = [("storage", "publish"), ("storage", "stage")];
        assert_eq!(got.len(), 2, "{got:?}");
        for (ns, name) in want {
            assert!(got.contains(&(ns.into(), name.into())), "{got:?}");
        }
        let rbd = serde_json::json!({"spec": {"claimRef": {"namespace": "apps"},
            "rbd": {"monitors": ["m"], "image": "i", "secretRef": {"name": "ceph"}}}});
        assert_eq!(
            volume_secrets(&rbd),
            [("apps".to_string(), "ceph".to_string())]
        );
        let azure = serde_json::json!({"spec": {"claimRef": {"namespace": "apps"},
            "azureFile": {"secretName": "az", "shareName": "s"}}});
        assert_eq!(
            volume_secrets(&azure),
            [("apps".to_string(), "az".to_string())]
        );
    }

    #[test]
    fn leases_and_csinodes_are_the_nodes_own() {
        let a = |verb: &str, ns: &str, name: &str| Attributes {
            verb: verb.into(),
            resource_request: true,
            group: "coordination.k8s.io".into(),
            resource: "leases".into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        };
        assert_eq!(lease("n1", &a("update", NODE_LEASE_NAMESPACE, "n1")), Allow);
        assert_eq!(
            lease("n1", &a("update", NODE_LEASE_NAMESPACE, "n2")),
            no("can only access node lease with the same name as the requesting node")
        );
        assert_eq!(
            lease("n1", &a("get", "default", "n1")),
            no("can only access leases in the \"kube-node-lease\" system namespace")
        );
        assert_eq!(
            lease("n1", &a("list", NODE_LEASE_NAMESPACE, "")),
            no("can only get, create, update, patch, or delete a node lease")
        );
    }
}
