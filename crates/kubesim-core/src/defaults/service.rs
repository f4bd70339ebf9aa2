//! Service and Endpoints defaults.

use serde_json::{Map, Value};

use super::{absent, child_obj, each_obj, set_default};

/// Default ClientIP affinity timeout (three hours), as upstream.
const CLIENT_IP_TIMEOUT: i64 = 10800;

pub fn default_service(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let Some(spec) = child_obj(root, "spec") else {
        return;
    };
    set_default(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    serde_json::json!({"clientIP": {"timeoutSeconds": CLIENT_IP_TIMEOUT}}),
                );
            }
        }
        _ => {}
    }
    set_default(spec, "type", "ClusterIP");
    for p in each_obj(spec, "ports") {
        set_default(p, "protocol", "TCP");
        let unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if unset {
            if let Some(port) = p.get("port").cloned() {
                p.insert("targetPort".into(), port);
            }
        }
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let has_external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let externally_accessible =
        ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && has_external_ips);
    if externally_accessible {
        set_default(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(ty.as_str(), "ClusterIP" | "NodePort" | "LoadBalancer") {
        set_default(spec, "internalTrafficPolicy", "Cluster");
    }
    if ty == "LoadBalancer" {
        set_default(spec, "allocateLoadBalancerNodePorts", true);
    }
    ip_families(spec, &ty);
}

/// The service REST storage fills IP families on a single-stack IPv4
/// cluster; ExternalName services have no IPs at all, and selector-less
/// headless services ask for every family the cluster has.
fn ip_families(spec: &mut Map<String, Value>, ty: &str) {
    if ty == "ExternalName" {
        return;
    }
    let headless = spec.get("clusterIP").and_then(Value::as_str) == Some("None");
    let has_selector = spec
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty());
    let policy = if headless && !has_selector {
        "RequireDualStack"
    } else {
        "SingleStack"
    };
    set_default(spec, "ipFamilyPolicy", policy);
    let empty = spec
        .get("ipFamilies")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if empty && (absent(spec, "ipFamilies") || spec.get("ipFamilies").is_some_and(Value::is_array))
    {
        spec.insert("ipFamilies".into(), Value::Array(vec!["IPv4".into()]));
    }
}

pub fn default_endpoints(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    for subset in each_obj(root, "subsets") {
        for p in each_obj(subset, "ports") {
            set_default(p, "protocol", "TCP");
        }
    }
}
