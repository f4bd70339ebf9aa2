//! Defaults of cluster plumbing kinds: Namespaces, Secrets, volumes,
//! autoscalers, priority classes and CRDs.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Map, Value};

use super::{absent, child_obj, existing_obj, set_default};

pub fn default_namespace(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    // Every namespace carries its own name as a label so that namespace
    // selectors can pick namespaces by name.
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string);
    if let (Some(name), Some(meta)) = (name, child_obj(root, "metadata")) {
        if let Some(labels) = child_obj(meta, "labels") {
            labels.insert("kubernetes.io/metadata.name".into(), name.into());
        }
    }
    // The `kubernetes` finalizer is added only while the namespace is being
    // created (no phase yet): the namespace controller removes it through
    // `/finalize` later, and re-adding it then would keep a deleted
    // namespace alive forever.
    let creating = root
        .get("status")
        .and_then(|s| s.get("phase"))
        .is_none_or(Value::is_null)
        && root
            .get("metadata")
            .and_then(|m| m.get("deletionTimestamp"))
            .is_none_or(Value::is_null);
    if creating {
        if let Some(spec) = child_obj(root, "spec") {
            if absent(spec, "finalizers") {
                spec.insert("finalizers".into(), json!([]));
            }
            if let Some(Value::Array(list)) = spec.get_mut("finalizers") {
                if !list.iter().any(|f| f == "kubernetes") {
                    list.push("kubernetes".into());
                }
            }
        }
    }
    if let Some(status) = child_obj(root, "status") {
        set_default(status, "phase", "Active");
    }
}

pub fn default_secret(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if root.get("type").is_none_or(|t| t.is_null() || t == "") {
        root.insert("type".into(), "Opaque".into());
    }
    // A real cluster never returns `stringData`: decoding folds it into
    // `data` (winning over a same-named key), base64-encoded.
    let Some(Value::Object(string_data)) = root.get("stringData").cloned() else {
        return;
    };
    if !absent(root, "data") && !root.get("data").is_some_and(Value::is_object) {
        return;
    }
    root.remove("stringData");
    if let Some(data) = child_obj(root, "data") {
        for (k, v) in string_data {
            let text = v.as_str().unwrap_or_default();
            data.insert(k, STANDARD.encode(text).into());
        }
    }
}

pub fn default_pvc(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = child_obj(root, "spec") {
        set_default(spec, "volumeMode", "Filesystem");
    }
    if let Some(status) = child_obj(root, "status") {
        set_default(status, "phase", "Pending");
    }
}

pub fn default_pv(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if let Some(spec) = child_obj(root, "spec") {
        set_default(spec, "persistentVolumeReclaimPolicy", "Retain");
        set_default(spec, "volumeMode", "Filesystem");
    }
    if let Some(status) = child_obj(root, "status") {
        set_default(status, "phase", "Pending");
    }
}

/// autoscaling/v2: at least one replica, and CPU at 80% when no metric is
/// given; an explicit `behavior` gets its missing rules filled.
pub fn default_hpa(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let Some(spec) = child_obj(root, "spec") else {
        return;
    };
    set_default(spec, "minReplicas", 1);
    let no_metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if no_metrics && (absent(spec, "metrics") || spec.get("metrics").is_some_and(Value::is_array)) {
        spec.insert(
            "metrics".into(),
            json!([{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        );
    }
    if let Some(b) = existing_obj(spec, "behavior") {
        if let Some(up) = child_obj(b, "scaleUp") {
            scaling_rules(
                up,
                0,
                json!([{"type": "Pods", "value": 4, "periodSeconds": 15},
                       {"type": "Percent", "value": 100, "periodSeconds": 15}]),
            );
        }
        if let Some(down) = child_obj(b, "scaleDown") {
            scaling_rules(
                down,
                300,
                json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
            );
        }
    }
}

fn scaling_rules(r: &mut Map<String, Value>, window: i64, policies: Value) {
    set_default(r, "stabilizationWindowSeconds", window);
    set_default(r, "selectPolicy", "Max");
    set_default(r, "policies", policies);
}

pub fn default_priority_class(obj: &mut Value) {
    if let Some(root) = obj.as_object_mut() {
        set_default(root, "preemptionPolicy", "PreemptLowerPriority");
    }
}

pub fn default_crd(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let Some(spec) = child_obj(root, "spec") else {
        return;
    };
    if let Some(names) = existing_obj(spec, "names") {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            set_default(names, "singular", kind.to_lowercase());
            set_default(names, "listKind", format!("{kind}List"));
        }
    }
    set_default(spec, "conversion", json!({"strategy": "None"}));
}
