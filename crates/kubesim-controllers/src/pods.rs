//! What the controllers that own pods share: building a pod from a
//! template, controller references, and the pod states they count.

use kubesim_core::meta;
use serde_json::{json, Map, Value};

use crate::pod_facts::PodFacts;

/// The ownerReference a controller puts on what it creates.
pub fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": owner.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
        "kind": owner.get("kind").and_then(Value::as_str).unwrap_or(""),
        "name": meta::name(owner),
        "uid": meta::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The uid of the controller owning `obj`, if any.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    meta::pointer(obj, "/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}

/// Whether `obj` is controlled by the object with `uid`.
pub fn is_controlled_by(obj: &Value, uid: &str) -> bool {
    controller_uid(obj) == Some(uid)
}

/// A new pod from `template` (a PodTemplateSpec), owned by `owner`, named
/// by the server from `generate_name` unless `name` is given.
pub fn from_template(
    template: &Value,
    owner: &Value,
    generate_name: &str,
    name: Option<&str>,
) -> Value {
    let tmeta = template
        .get("metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut m = Map::new();
    for field in ["labels", "annotations", "finalizers"] {
        if let Some(v) = tmeta.get(field) {
            m.insert(field.into(), v.clone());
        }
    }
    match name {
        Some(n) => m.insert("name".into(), json!(n)),
        None => m.insert("generateName".into(), json!(generate_name)),
    };
    m.insert("namespace".into(), json!(meta::namespace(owner)));
    m.insert("ownerReferences".into(), json!([controller_ref(owner)]));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": Value::Object(m),
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

pub fn phase(pod: &Value) -> &str {
    meta::pointer(pod, "/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// In a terminal phase: Succeeded or Failed.
pub fn is_finished(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Neither finished nor being deleted: what ReplicaSets count as theirs.
pub fn is_active(pod: &Value) -> bool {
    !is_finished(pod) && !meta::is_deleting(pod)
}

/// The status of condition `kind` ("True"/"False"/"Unknown") if present.
pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

pub fn is_ready(pod: &Value) -> bool {
    condition(pod, "Ready")
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// Ready for at least `min_ready_seconds` at `now`.
pub fn is_available(pod: &Value, min_ready_seconds: i64, now: jiff::Timestamp) -> bool {
    PodFacts::of(pod).available(min_ready_seconds, now)
}

pub fn is_running_and_ready(pod: &Value) -> bool {
    phase(pod) == "Running" && is_ready(pod)
}

/// When the pod's Ready condition last turned true.
pub fn ready_since(pod: &Value) -> Option<jiff::Timestamp> {
    if !is_ready(pod) {
        return None;
    }
    condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(meta::parse_time)
}

/// How long until a ready pod becomes available, if it is not yet.
pub fn until_available(
    pod: &Value,
    min_ready_seconds: i64,
    now: jiff::Timestamp,
) -> Option<std::time::Duration> {
    PodFacts::of(pod).until_available(min_ready_seconds, now)
}

fn restarts(pod: &Value) -> i64 {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

fn deletion_cost(pod: &Value) -> i64 {
    pod.pointer("/metadata/annotations/controller.kubernetes.io~1pod-deletion-cost")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn phase_rank(pod: &Value) -> u8 {
    match phase(pod) {
        "Pending" | "" => 0,
        "Unknown" => 1,
        _ => 2,
    }
}

/// Which of two pods to delete first when scaling down: the one that
/// costs least to lose. In order: unscheduled before scheduled, pending
/// before unknown before running, not ready before ready, lower deletion
/// cost annotation first, ready for less time first, more container
/// restarts first, newer before older; the name breaks remaining ties so
/// the choice is deterministic.
pub fn deletion_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    let (scheduled, created) = (is_bound, created_at);
    scheduled(a)
        .cmp(&scheduled(b))
        .then(phase_rank(a).cmp(&phase_rank(b)))
        .then(is_ready(a).cmp(&is_ready(b)))
        .then(deletion_cost(a).cmp(&deletion_cost(b)))
        // Ready more recently (a later timestamp) goes first.
        .then(ready_since(b).cmp(&ready_since(a)))
        .then(restarts(b).cmp(&restarts(a)))
        .then(created(b).cmp(&created(a)))
        .then(meta::name(a).cmp(meta::name(b)))
}

/// The node the pod is bound to, if any.
pub fn node_name(pod: &Value) -> Option<&str> {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// Whether the pod is bound to a node.
pub fn is_bound(pod: &Value) -> bool {
    node_name(pod).is_some()
}

/// The object's creationTimestamp (the epoch when it has none).
pub fn created_at(obj: &Value) -> jiff::Timestamp {
    meta::str_field(obj, "creationTimestamp")
        .and_then(meta::parse_time)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_pods_carry_labels_and_owner() {
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-5d4", "namespace": "ns", "uid": "u1"}});
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        let p = from_template(&t, &rs, "web-5d4-", None);
        assert_eq!(p["metadata"]["generateName"], "web-5d4-");
        assert_eq!(p["metadata"]["namespace"], "ns");
        assert_eq!(p["metadata"]["labels"]["app"], "web");
        assert!(is_controlled_by(&p, "u1"));
        assert_eq!(p["spec"]["containers"][0]["image"], "nginx");
    }

    #[test]
    fn availability_waits_min_ready_seconds() {
        let pod = json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        let t0: jiff::Timestamp = "2026-01-01T00:00:05Z".parse().unwrap();
        assert!(is_available(&pod, 0, t0));
        assert!(is_available(&pod, 5, t0));
        assert!(!is_available(&pod, 6, t0));
        assert!(is_active(&pod));
    }

    #[test]
    fn scale_down_prefers_the_cheapest_pods() {
        let mk =
            |name: &str, node: &str, phase: &str, ready: bool, restarts: i64, created: &str| {
                json!({"metadata": {"name": name, "creationTimestamp": created},
                "spec": {"nodeName": node},
                "status": {"phase": phase,
                    "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                    "containerStatuses": [{"restartCount": restarts}]}})
            };
        let old = "2026-01-01T00:00:00Z";
        let new = "2026-01-01T01:00:00Z";
        let mut pods = [
            mk("running-ready-old", "n", "Running", true, 0, old),
            mk("running-ready-new", "n", "Running", true, 0, new),
            mk("running-ready-restarted", "n", "Running", true, 3, old),
            mk("running-notready", "n", "Running", false, 0, old),
            mk("pending", "n", "Pending", false, 0, old),
            mk("unscheduled", "", "Pending", false, 0, old),
        ];
        pods.sort_by(deletion_order);
        let names: Vec<&str> = pods.iter().map(meta::name).collect();
        assert_eq!(
            names,
            [
                "unscheduled",
                "pending",
                "running-notready",
                "running-ready-restarted",
                "running-ready-new",
                "running-ready-old"
            ]
        );
    }
}
