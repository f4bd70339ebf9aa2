//! Service validation.

use std::collections::BTreeSet;

use serde_json::Value;

use super::fields::{self, arr, child, index, s};
use super::metadata::validate_labels;
use super::names;
use super::pod::PROTOCOLS;
use crate::error::Cause;

/// Sorted, as upstream prints a set.
const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const AFFINITIES: &[&str] = &["ClientIP", "None"];
const TRAFFIC_POLICIES: &[&str] = &["Cluster", "Local"];
const FAMILY_POLICIES: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];
const FAMILIES: &[&str] = &["IPv4", "IPv6"];
/// The default service node-port range of kube-apiserver.
pub const NODE_PORT_RANGE: (i64, i64) = (30000, 32767);

pub fn validate_service(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let ty = s(spec, "type");
    let headless = s(spec, "clusterIP") == "None";
    if ty.is_empty() {
        out.push(fields::required("spec.type"));
    } else if !TYPES.contains(&ty) {
        out.push(fields::unsupported("spec.type", ty, TYPES));
    }
    let ports = arr(spec, "ports");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        out.push(fields::required("spec.ports"));
    }
    if ty == "ExternalName" {
        let en = s(spec, "externalName");
        if en.is_empty() {
            out.push(fields::required("spec.externalName"));
        } else {
            let trimmed = en.strip_suffix('.').unwrap_or(en);
            fields::each_invalid(
                &mut out,
                "spec.externalName",
                en,
                names::dns1123_subdomain(trimmed),
            );
        }
    }
    let require_name = ports.len() > 1;
    let mut port_names = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let pp = index("spec.ports", i);
        let name = s(p, "name");
        if require_name && name.is_empty() {
            out.push(fields::required(child(&pp, "name")));
        } else if !name.is_empty() {
            fields::each_invalid(
                &mut out,
                &child(&pp, "name"),
                name,
                names::dns1123_label(name),
            );
            if !port_names.insert(name.to_string()) {
                out.push(fields::duplicate(child(&pp, "name"), &Value::from(name)));
            }
        }
        let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
        for m in names::port_number(port) {
            out.push(fields::invalid_int(child(&pp, "port"), port, &m));
        }
        let proto = s(p, "protocol");
        if proto.is_empty() {
            out.push(fields::required(child(&pp, "protocol")));
        } else if !PROTOCOLS.contains(&proto) {
            out.push(fields::unsupported(
                child(&pp, "protocol"),
                proto,
                PROTOCOLS,
            ));
        }
        match p.get("targetPort") {
            Some(Value::Number(n)) => {
                let n = n.as_i64().unwrap_or(-1);
                for m in names::port_number(n) {
                    out.push(fields::invalid_int(child(&pp, "targetPort"), n, &m));
                }
            }
            Some(Value::String(t)) => {
                fields::each_invalid(&mut out, &child(&pp, "targetPort"), t, names::port_name(t));
            }
            _ => {}
        }
        if let Some(np) = p
            .get("nodePort")
            .and_then(Value::as_i64)
            .filter(|n| *n != 0)
        {
            if ty == "ClusterIP" {
                out.push(fields::forbidden(
                    child(&pp, "nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            } else if !(NODE_PORT_RANGE.0..=NODE_PORT_RANGE.1).contains(&np) {
                out.push(fields::invalid_int(
                    child(&pp, "nodePort"),
                    np,
                    &format!(
                        "provided port is not in the valid range. The range of valid ports is {}-{}",
                        NODE_PORT_RANGE.0, NODE_PORT_RANGE.1
                    ),
                ));
            }
        }
    }
    let aff = s(spec, "sessionAffinity");
    if aff.is_empty() {
        out.push(fields::required("spec.sessionAffinity"));
    } else if !AFFINITIES.contains(&aff) {
        out.push(fields::unsupported("spec.sessionAffinity", aff, AFFINITIES));
    }
    for k in ["externalTrafficPolicy", "internalTrafficPolicy"] {
        let v = s(spec, k);
        if !v.is_empty() && !TRAFFIC_POLICIES.contains(&v) {
            out.push(fields::unsupported(
                format!("spec.{k}"),
                v,
                TRAFFIC_POLICIES,
            ));
        }
    }
    let fp = s(spec, "ipFamilyPolicy");
    if !fp.is_empty() && !FAMILY_POLICIES.contains(&fp) {
        out.push(fields::unsupported(
            "spec.ipFamilyPolicy",
            fp,
            FAMILY_POLICIES,
        ));
    }
    for (i, f) in arr(spec, "ipFamilies").iter().enumerate() {
        let f = f.as_str().unwrap_or("");
        if !FAMILIES.contains(&f) {
            out.push(fields::unsupported(
                index("spec.ipFamilies", i),
                f,
                FAMILIES,
            ));
        }
    }
    if headless && (ty == "LoadBalancer" || ty == "NodePort") {
        out.push(fields::invalid_str(
            "spec.clusterIPs[0]",
            "None",
            &format!("may not be set to 'None' for {ty} services"),
        ));
    }
    out.extend(validate_labels(spec.get("selector"), "spec.selector"));
    if let Some(old) = old {
        let old_ip = old.get("spec").map_or("", |o| s(o, "clusterIP"));
        let new_ip = s(spec, "clusterIP");
        // ExternalName services have no IP, so a type change may drop it.
        if !old_ip.is_empty() && !new_ip.is_empty() && old_ip != new_ip && ty != "ExternalName" {
            out.push(fields::invalid_str(
                "spec.clusterIPs[0]",
                new_ip,
                "may not change once set",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn svc() -> Value {
        json!({"metadata": {"name": "web"}, "spec": {
            "type": "ClusterIP", "sessionAffinity": "None",
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}],
            "selector": {"app": "web"}}})
    }

    use crate::validation::field_reasons as f;

    #[test]
    fn minimal_is_valid() {
        assert_eq!(f(&validate_service(&svc(), None)), vec![]);
    }

    #[test]
    fn ports_required_unless_headless_or_external() {
        let mut s = svc();
        s["spec"]["ports"] = json!([]);
        assert_eq!(
            f(&validate_service(&s, None)),
            vec![("spec.ports", "FieldValueRequired")]
        );
        s["spec"]["clusterIP"] = json!("None");
        assert_eq!(f(&validate_service(&s, None)), vec![]);
        let e = json!({"spec": {"type": "ExternalName", "sessionAffinity": "None", "externalName": "example.com"}});
        assert_eq!(f(&validate_service(&e, None)), vec![]);
    }

    #[test]
    fn port_rules() {
        let mut s = svc();
        s["spec"]["type"] = json!("NodePort");
        s["spec"]["ports"] = json!([
            {"port": 0, "protocol": "TCP", "name": "a"},
            {"port": 81, "protocol": "ICMP", "nodePort": 80},
            {"port": 82, "protocol": "TCP", "name": "a"}]);
        let c = validate_service(&s, None);
        assert_eq!(
            f(&c),
            vec![
                ("spec.ports[0].port", "FieldValueInvalid"),
                ("spec.ports[1].name", "FieldValueRequired"),
                ("spec.ports[1].protocol", "FieldValueNotSupported"),
                ("spec.ports[1].nodePort", "FieldValueInvalid"),
                ("spec.ports[2].name", "FieldValueDuplicate"),
            ]
        );
        assert_eq!(
            c[3].message,
            "Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767"
        );
    }

    #[test]
    fn type_and_cluster_ip() {
        let mut s = svc();
        s["spec"]["type"] = json!("Magic");
        assert_eq!(
            validate_service(&s, None)[0].message,
            "Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
        );
        let mut old = svc();
        old["spec"]["clusterIP"] = json!("10.96.0.10");
        let mut new = old.clone();
        new["spec"]["clusterIP"] = json!("10.96.0.11");
        assert_eq!(
            f(&validate_service(&new, Some(&old))),
            vec![("spec.clusterIPs[0]", "FieldValueInvalid")]
        );
    }
}
