//! NodeRestriction, the admission step that narrows what the Node
//! authorizer lets a kubelet write to its own node's objects: its Node
//! (not its taints, nor labels outside the kubelet's set), its Lease and
//! CSINode, the status of pods bound to it, mirror pods owned by its
//! Node, the status of its pods' claims (capacity and conditions only),
//! and tokens bound to its own pods. The checks and messages are
//! upstream's (`plugin/pkg/admission/noderestriction`).

use std::collections::BTreeSet;

use kubesim_core::{meta, ApiError, ResourceInfo};
use serde_json::Value;

use super::node::{node_of, MIRROR_POD_ANNOTATION, NODE_LEASE_NAMESPACE};
use crate::Server;

/// Labels a kubelet may set on its own Node, besides those under
/// `[*.]kubelet.kubernetes.io/` and `[*.]node.kubernetes.io/`
/// (k8s.io/kubelet's `kubeletLabels`).
const KUBELET_LABELS: [&str; 11] = [
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// The part of a label key before its `/`, empty when it has none.
fn label_namespace(key: &str) -> &str {
    key.split_once('/').map_or("", |(ns, _)| ns)
}

fn in_domain(namespace: &str, domain: &str) -> bool {
    namespace == domain
        || namespace
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// Whether a kubelet may set `key` on its own Node.
fn kubelet_label(key: &str) -> bool {
    let ns = label_namespace(key);
    KUBELET_LABELS.contains(&key)
        || in_domain(ns, "kubelet.kubernetes.io")
        || in_domain(ns, "node.kubernetes.io")
}

/// Of the label keys that differ between `new` and `old`, those a node
/// may not add, change or remove, sorted: the `node-restriction`
/// namespace, and Kubernetes' own namespaces outside the kubelet's set.
fn forbidden_labels(new: &Value, old: Option<&Value>) -> Vec<String> {
    fn labels(o: &Value) -> Option<&serde_json::Map<String, Value>> {
        o.pointer("/metadata/labels").and_then(Value::as_object)
    }
    let none = serde_json::Map::new();
    let new = labels(new).unwrap_or(&none);
    let old = old.and_then(labels).unwrap_or(&none);
    let changed = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(v))
        .chain(old.iter().filter(|(k, v)| new.get(*k) != Some(v)))
        .map(|(k, _)| k.as_str());
    let forbidden = changed.filter(|k| {
        let ns = label_namespace(k);
        let kubernetes = in_domain(ns, "kubernetes.io") || in_domain(ns, "k8s.io");
        in_domain(ns, "node-restriction.kubernetes.io") || (kubernetes && !kubelet_label(k))
    });
    let sorted: BTreeSet<&str> = forbidden.collect();
    sorted.into_iter().map(str::to_string).collect()
}

/// NodeRestriction's 403: the request's object, and why.
fn restricted(resource: &ResourceInfo, name: &str, why: String) -> ApiError {
    ApiError::forbidden(&resource.plural, &resource.group, name, &why)
}

/// Why a node may not create `pod` (a mirror pod of its own), if it may not.
fn mirror_pod_refusal(node: &str, pod: &Value, node_uid: Option<&str>) -> Option<String> {
    let annotations = pod.pointer("/metadata/annotations");
    if annotations
        .and_then(|a| a.get(MIRROR_POD_ANNOTATION))
        .is_none()
    {
        return Some(format!("pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"));
    }
    if pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(node) {
        return Some(format!(
            "node {node:?} can only create pods with spec.nodeName set to itself"
        ));
    }
    let owners = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let owner = match owners {
        [] => {
            return Some(format!(
                "node {node:?} can only create pods with an owner reference set to itself"
            ))
        }
        [one] => one,
        _ => {
            return Some(format!(
                "node {node:?} can only create pods with a single owner reference set to itself"
            ))
        }
    };
    let field = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or("");
    if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
        return Some(format!(
            "node {node:?} can only create pods with an owner reference set to itself"
        ));
    }
    if owner.get("controller").and_then(Value::as_bool) != Some(true) {
        return Some(format!(
            "node {node:?} can only create pods with a controller owner reference set to itself"
        ));
    }
    if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
        return Some(format!(
            "node {node:?} must not set blockOwnerDeletion on an owner reference"
        ));
    }
    let node_uid = node_uid.unwrap_or("");
    if field("uid") != node_uid {
        return Some(format!(
            "node {node} UID mismatch: expected {} got {node_uid}",
            field("uid")
        ));
    }
    let spec = &pod["spec"];
    if spec["serviceAccountName"]
        .as_str()
        .is_some_and(|s| !s.is_empty())
    {
        return Some(format!(
            "node {node:?} can not create pods that reference a service account"
        ));
    }
    let uses = |kind| super::node::pod_refers_to_any(pod, kind);
    if uses(super::node::Kind::Secret) {
        return Some(format!(
            "node {node:?} can not create pods that reference secrets"
        ));
    }
    if uses(super::node::Kind::ConfigMap) {
        return Some(format!(
            "node {node:?} can not create pods that reference configmaps"
        ));
    }
    let volumes = spec["volumes"].as_array().map_or(&[][..], Vec::as_slice);
    let trust_bundle = volumes.iter().any(|v| {
        v.pointer("/projected/sources")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().any(|s| !s["clusterTrustBundle"].is_null()))
    });
    if trust_bundle {
        return Some(format!(
            "node {node:?} can not create pods that reference clustertrustbundles"
        ));
    }
    if volumes
        .iter()
        .any(|v| !v["persistentVolumeClaim"].is_null())
    {
        return Some(format!(
            "node {node:?} can not create pods that reference persistentvolumeclaims"
        ));
    }
    None
}

/// The fields of a claim a node's status update may change, cleared so
/// that what is left must be equal.
fn without_node_writable(claim: &Value) -> Value {
    let mut c = claim.clone();
    if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    if let Some(s) = c.get_mut("status").and_then(Value::as_object_mut) {
        for f in [
            "capacity",
            "conditions",
            "allocatedResources",
            "allocatedResourceStatuses",
        ] {
            s.remove(f);
        }
    }
    c
}

/// The paths of the fields where two JSON values differ, for a refusal's
/// message (upstream prints a structural diff of the Go objects).
fn differing_paths(a: &Value, b: &Value, prefix: &str, out: &mut Vec<String>) {
    match (a.as_object(), b.as_object()) {
        (Some(x), Some(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let null = Value::Null;
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                differing_paths(
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    &path,
                    out,
                );
            }
        }
        _ if a != b => out.push(prefix.to_string()),
        _ => {}
    }
}

impl Server {
    /// NodeRestriction on a create, update or delete by a kubelet: `old`
    /// is the stored object of an update or delete, `obj` the object
    /// written (None for a delete).
    pub(crate) fn node_restriction(
        &self,
        resource: &ResourceInfo,
        subresource: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let Some(node) = self.restricted_node() else {
            return Ok(());
        };
        let name = obj.or(old).map(meta::name).unwrap_or_default();
        let deny = |why: String| Err(restricted(resource, name, why));
        if node.is_empty() {
            return deny("could not determine node from user".to_string());
        }
        let bound = |p: &Value| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(&node);
        match (resource.group.as_str(), resource.plural.as_str(), subresource) {
            ("", "pods", "") => match (obj, old) {
                (Some(pod), None) => {
                    let node_uid = self.node_uid(&node);
                    match mirror_pod_refusal(&node, pod, node_uid.as_deref()) {
                        Some(why) => deny(why),
                        None => Ok(()),
                    }
                }
                (None, Some(pod)) if !bound(pod) => deny(format!(
                    "node {node:?} can only delete pods with spec.nodeName set to itself"
                )),
                (None, Some(_)) => Ok(()),
                _ => deny(format!(
                    "unexpected operation \"UPDATE\", node {node:?} can only create and delete mirror pods"
                )),
            },
            ("", "pods", "status") => match old {
                Some(pod) if !bound(pod) => deny(format!(
                    "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
                )),
                Some(pod) if obj.is_some_and(|o| o["metadata"]["labels"] != pod["metadata"]["labels"]) => {
                    deny(format!("node {node:?} cannot update labels through pod status"))
                }
                _ => Ok(()),
            },
            ("", "persistentvolumeclaims", "status") => match (obj, old) {
                (Some(new), Some(old)) => {
                    let mut changed = Vec::new();
                    differing_paths(&without_node_writable(old), &without_node_writable(new), "", &mut changed);
                    if changed.is_empty() {
                        Ok(())
                    } else {
                        deny(format!("node {node:?} is not allowed to update fields other than status.capacity and status.conditions: {}", changed.join(", ")))
                    }
                }
                _ => Ok(()),
            },
            ("", "nodes", _) => {
                if name != node {
                    return deny(format!("node {node:?} is not allowed to modify node {name:?}"));
                }
                let Some(new) = obj else {
                    return Ok(());
                };
                let config_source = |n: &Value| n.pointer("/spec/configSource").filter(|c| !c.is_null()).cloned();
                match old {
                    None => {
                        if config_source(new).is_some() {
                            return deny(format!("node {node:?} is not allowed to create pods with a non-nil configSource"));
                        }
                        let labels = forbidden_labels(new, None);
                        if !labels.is_empty() {
                            return deny(format!("node {node:?} is not allowed to set the following labels: {}", labels.join(", ")));
                        }
                    }
                    Some(old) => {
                        if config_source(new).is_some() && config_source(new) != config_source(old) {
                            return deny(format!("node {node:?} is not allowed to update configSource to a new non-nil configSource"));
                        }
                        let taints = |n: &Value| n.pointer("/spec/taints").cloned().filter(|t| t.as_array().is_some_and(|a| !a.is_empty()));
                        if taints(new) != taints(old) {
                            return deny(format!("node {node:?} is not allowed to modify taints"));
                        }
                        let labels = forbidden_labels(new, Some(old));
                        if !labels.is_empty() {
                            return deny(format!("is not allowed to modify labels: {}", labels.join(", ")));
                        }
                    }
                }
                Ok(())
            }
            ("coordination.k8s.io", "leases", _) => {
                let ns = obj.or(old).map(meta::namespace).unwrap_or_default();
                if ns != NODE_LEASE_NAMESPACE {
                    deny(format!("can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"))
                } else if name != node {
                    deny("can only access node lease with the same name as the requesting node".to_string())
                } else {
                    Ok(())
                }
            }
            ("storage.k8s.io", "csinodes", _) if name != node => deny(
                "can only access CSINode with the same name as the requesting node".to_string(),
            ),
            _ => Ok(()),
        }
    }

    /// NodeRestriction on a TokenRequest by a kubelet: the token must be
    /// bound to a pod, by uid, that runs on the kubelet's node.
    pub(crate) fn node_token_restriction(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        account: &str,
        request: &Value,
    ) -> Result<(), ApiError> {
        let Some(node) = self.restricted_node() else {
            return Ok(());
        };
        let deny = |why: &str| Err(restricted(resource, account, why.to_string()));
        let b = request
            .pointer("/spec/boundObjectRef")
            .filter(|b| !b.is_null());
        let field = |f: &str| {
            b.and_then(|b| b.get(f))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        if b.is_none()
            || field("apiVersion") != "v1"
            || field("kind") != "Pod"
            || field("name").is_empty()
        {
            return deny("node requested token not bound to a pod");
        }
        if field("uid").is_empty() {
            return deny("node requested token with a pod binding without a uid");
        }
        let pods = self.resource("", "v1", "pods")?;
        let pod = self.get(&pods, ns, field("name"))?;
        if meta::uid(&pod) != field("uid") {
            return deny(&format!("the UID in the bound object reference ({}) does not match the UID in record. The object might have been deleted and then recreated", field("uid")));
        }
        if pod.pointer("/spec/nodeName").and_then(Value::as_str) != Some(&node) {
            return deny("node requested token bound to a pod scheduled on a different node");
        }
        Ok(())
    }

    /// The node the current request's kubelet acts for, when NodeRestriction
    /// applies to it (the Node authorizer is on and the request is
    /// authorized); Some("") for a node identity that names no node.
    fn restricted_node(&self) -> Option<String> {
        if !self.node_authorizer_enabled() {
            return None;
        }
        let auth = super::current()?;
        if !auth.enforce {
            return None;
        }
        node_of(&auth.user).map(str::to_string)
    }

    fn node_uid(&self, node: &str) -> Option<String> {
        let nodes = self.resource("", "v1", "nodes").ok()?;
        let n = self.get(&nodes, "", node).ok()?;
        Some(meta::uid(&n).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kubelets_set_only_their_own_labels() {
        let node = |labels: Value| json!({"metadata": {"name": "n1", "labels": labels}});
        let new = node(json!({
            "kubernetes.io/hostname": "n1",
            "node.kubernetes.io/exclude-from-external-load-balancers": "",
            "x.kubelet.kubernetes.io/a": "b",
            "example.com/team": "a",
            "node-role.kubernetes.io/control-plane": "",
            "node-restriction.kubernetes.io/pool": "gpu",
            "a.node-restriction.kubernetes.io/b": "c",
            "k8s.io/x": "y",
        }));
        assert_eq!(
            forbidden_labels(&new, None),
            [
                "a.node-restriction.kubernetes.io/b",
                "k8s.io/x",
                "node-restriction.kubernetes.io/pool",
                "node-role.kubernetes.io/control-plane",
            ]
        );
        // Only what changes counts: a forbidden label kept as it was is fine,
        // removing one is not.
        let old = node(json!({"node-role.kubernetes.io/control-plane": "", "k8s.io/gone": "1"}));
        let same = node(json!({"node-role.kubernetes.io/control-plane": "", "example.com/x": "1"}));
        assert_eq!(forbidden_labels(&same, Some(&old)), ["k8s.io/gone"]);
        // A namespace that merely ends in the domain's letters is not in it.
        assert!(forbidden_labels(&node(json!({"notkubernetes.io/x": "1"})), None).is_empty());
    }

    #[test]
    fn mirror_pods_are_owned_by_their_node() {
        let pod = |owners: Value, spec: Value| {
            let mut spec = spec;
            spec["nodeName"] = json!("n1");
            json!({"metadata": {"name": "static-n1",
                "annotations": {MIRROR_POD_ANNOTATION: "hash"},
                "ownerReferences": owners}, "spec": spec})
        };
        let own = json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1", "controller": true}]);
        assert_eq!(
            mirror_pod_refusal("n1", &pod(own.clone(), json!({})), Some("u1")),
            None
        );
        let refusal = |owners: Value, spec: Value| {
            mirror_pod_refusal("n1", &pod(owners, spec), Some("u1")).unwrap_or_default()
        };
        assert_eq!(
            refusal(json!([]), json!({})),
            "node \"n1\" can only create pods with an owner reference set to itself"
        );
        assert_eq!(
            refusal(json!([own[0], own[0]]), json!({})),
            "node \"n1\" can only create pods with a single owner reference set to itself"
        );
        let other = json!([{"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "u1", "controller": true}]);
        assert_eq!(
            refusal(other, json!({})),
            "node \"n1\" can only create pods with an owner reference set to itself"
        );
        let not_controller =
            json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1"}]);
        assert_eq!(
            refusal(not_controller, json!({})),
            "node \"n1\" can only create pods with a controller owner reference set to itself"
        );
        let blocking = json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1", "controller": true, "blockOwnerDeletion": true}]);
        assert_eq!(
            refusal(blocking, json!({})),
            "node \"n1\" must not set blockOwnerDeletion on an owner reference"
        );
        let stale = json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "old", "controller": true}]);
        assert_eq!(
            refusal(stale, json!({})),
            "node n1 UID mismatch: expected old got u1"
        );
        let secret = json!({"volumes": [{"name": "s", "secret": {"secretName": "x"}}]});
        assert_eq!(
            refusal(own.clone(), secret),
            "node \"n1\" can not create pods that reference secrets"
        );
        let cm =
            json!({"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "x"}}]}]});
        assert_eq!(
            refusal(own.clone(), cm),
            "node \"n1\" can not create pods that reference configmaps"
        );
        let claim =
            json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "x"}}]});
        assert_eq!(
            refusal(own.clone(), claim),
            "node \"n1\" can not create pods that reference persistentvolumeclaims"
        );
        let bundle = json!({"volumes": [{"name": "b", "projected": {"sources": [{"clusterTrustBundle": {"name": "x", "path": "p"}}]}}]});
        assert_eq!(
            refusal(own, bundle),
            "node \"n1\" can not create pods that reference clustertrustbundles"
        );
    }

    #[test]
    fn claim_status_updates_change_capacity_and_conditions_only() {
        let old = json!({"metadata": {"name": "c", "resourceVersion": "1", "labels": {"a": "b"}},
            "spec": {"volumeName": "v"}, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let mut resized = old.clone();
        resized["metadata"]["resourceVersion"] = json!("2");
        resized["status"]["capacity"]["storage"] = json!("2Gi");
        resized["status"]["conditions"] = json!([{"type": "Resizing", "status": "True"}]);
        let mut out = Vec::new();
        differing_paths(
            &without_node_writable(&old),
            &without_node_writable(&resized),
            "",
            &mut out,
        );
        assert!(out.is_empty(), "{out:?}");
        let mut relabelled = resized.clone();
        relabelled["metadata"]["labels"]["a"] = json!("c");
        relabelled["status"]["phase"] = json!("Lost");
        differing_paths(
            &without_node_writable(&old),
            &without_node_writable(&relabelled),
            "",
            &mut out,
        );
        assert_eq!(out, ["metadata.labels.a", "status.phase"]);
    }
}
