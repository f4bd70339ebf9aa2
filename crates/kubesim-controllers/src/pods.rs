//! What the controllers that own pods share: building a pod from a
//! template, controller references, and the pod states they count.

use kubesim_core::meta;
use serde_json::{json, Map, Value};

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
    obj.pointer("/metadata/ownerReferences")?
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
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Neither finished nor being deleted: what ReplicaSets count as theirs.
pub fn is_active(pod: &Value) -> bool {
    !matches!(phase(pod), "Succeeded" | "Failed") && !meta::is_deleting(pod)
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
    if !is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    let since = condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(meta::parse_time);
    match since {
        Some(t) => t + jiff::SignedDuration::from_secs(min_ready_seconds) <= now,
        None => false,
    }
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
}
