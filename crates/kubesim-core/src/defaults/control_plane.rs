//! Defaults of the storage-attachment, dynamic resource allocation and
//! admission kinds (upstream `pkg/apis/{storage,resource,admissionregistration}/v1/defaults.go`).

use serde_json::{json, Map, Value};

use super::{child_obj, each_obj, existing_obj, set_default};

pub fn default_csi_driver(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|r| child_obj(r, "spec")) else {
        return;
    };
    set_default(spec, "attachRequired", true);
    set_default(spec, "podInfoOnMount", false);
    set_default(spec, "storageCapacity", false);
    set_default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType");
    set_default(spec, "requiresRepublish", false);
    set_default(spec, "seLinuxMount", false);
    let modes_empty = spec
        .get("volumeLifecycleModes")
        .is_none_or(|m| m.is_null() || m.as_array().is_some_and(Vec::is_empty));
    if modes_empty {
        spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
    }
}

/// A device request's `exactly` (or one `firstAvailable` entry): one
/// device of the class unless the request says otherwise.
fn default_device_request(r: &mut Map<String, Value>) {
    set_default(r, "allocationMode", "ExactCount");
    if r.get("allocationMode").and_then(Value::as_str) == Some("ExactCount") {
        set_default(r, "count", 1);
    }
    for t in each_obj(r, "tolerations") {
        set_default(t, "operator", "Equal");
    }
}

/// The `spec` of a ResourceClaim (also inside a ResourceClaimTemplate).
fn default_claim_spec(spec: &mut Map<String, Value>) {
    let Some(devices) = existing_obj(spec, "devices") else {
        return;
    };
    for req in each_obj(devices, "requests") {
        if let Some(exactly) = existing_obj(req, "exactly") {
            default_device_request(exactly);
        }
        for sub in each_obj(req, "firstAvailable") {
            default_device_request(sub);
        }
    }
}

pub fn default_resource_claim(obj: &mut Value) {
    if let Some(spec) = obj.as_object_mut().and_then(|r| existing_obj(r, "spec")) {
        default_claim_spec(spec);
    }
}

pub fn default_resource_claim_template(obj: &mut Value) {
    let spec = obj
        .as_object_mut()
        .and_then(|r| existing_obj(r, "spec"))
        .and_then(|s| existing_obj(s, "spec"));
    if let Some(spec) = spec {
        default_claim_spec(spec);
    }
}

/// `matchConstraints` / `matchResources`: every object matches unless
/// selectors say otherwise, and rules match equivalent versions.
fn default_match_resources(m: &mut Map<String, Value>) {
    set_default(m, "matchPolicy", "Equivalent");
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    for rule in each_obj(m, "resourceRules") {
        set_default(rule, "scope", "*");
    }
}

pub fn default_validating_admission_policy(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|r| child_obj(r, "spec")) else {
        return;
    };
    set_default(spec, "failurePolicy", "Fail");
    if let Some(m) = existing_obj(spec, "matchConstraints") {
        default_match_resources(m);
    }
}

pub fn default_policy_binding(obj: &mut Value) {
    let Some(spec) = obj.as_object_mut().and_then(|r| existing_obj(r, "spec")) else {
        return;
    };
    if let Some(m) = existing_obj(spec, "matchResources") {
        default_match_resources(m);
    }
}

/// Validating and mutating webhook configurations; `mutating` adds the
/// reinvocation policy.
pub fn default_webhook_configuration(obj: &mut Value, mutating: bool) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    for hook in each_obj(root, "webhooks") {
        set_default(hook, "failurePolicy", "Fail");
        set_default(hook, "matchPolicy", "Equivalent");
        set_default(hook, "namespaceSelector", json!({}));
        set_default(hook, "objectSelector", json!({}));
        set_default(hook, "timeoutSeconds", 10);
        if mutating {
            set_default(hook, "reinvocationPolicy", "Never");
        }
        for rule in each_obj(hook, "rules") {
            set_default(rule, "scope", "*");
        }
        if let Some(service) =
            existing_obj(hook, "clientConfig").and_then(|c| existing_obj(c, "service"))
        {
            set_default(service, "port", 443);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csi_driver_defaults() {
        let mut d = json!({"metadata": {"name": "x.csi.io"}, "spec": {"attachRequired": false}});
        default_csi_driver(&mut d);
        assert_eq!(d["spec"]["attachRequired"], false);
        assert_eq!(d["spec"]["podInfoOnMount"], false);
        assert_eq!(d["spec"]["volumeLifecycleModes"], json!(["Persistent"]));
        assert_eq!(d["spec"]["fsGroupPolicy"], "ReadWriteOnceWithFSType");
    }

    #[test]
    fn claim_requests_default_to_one_device() {
        let mut c = json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
            {"name": "any", "firstAvailable": [{"name": "a", "deviceClassName": "c", "allocationMode": "All"}]}
        ]}}});
        default_resource_claim(&mut c);
        let exactly = &c["spec"]["devices"]["requests"][0]["exactly"];
        assert_eq!(exactly["allocationMode"], "ExactCount");
        assert_eq!(exactly["count"], 1);
        let sub = &c["spec"]["devices"]["requests"][1]["firstAvailable"][0];
        assert_eq!(sub["allocationMode"], "All");
        assert!(sub.get("count").is_none());
    }

    #[test]
    fn webhook_defaults() {
        let mut w = json!({"webhooks": [{"name": "a.b.c", "clientConfig": {"service": {"namespace": "n", "name": "s"}}, "rules": [{}]}]});
        default_webhook_configuration(&mut w, true);
        let h = &w["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
        assert_eq!(h["rules"][0]["scope"], "*");
    }
}
