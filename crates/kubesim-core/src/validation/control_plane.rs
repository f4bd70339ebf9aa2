//! Storage attachment, dynamic resource allocation, admission, service
//! CIDR and certificate-request kinds: the simple rules of upstream's
//! validation (required fields, enumerations, uniqueness, immutability),
//! not the CEL compilation or x509 parsing behind some of them.

use std::collections::BTreeSet;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;

use super::fields::{self, arr, child, has, index, s};
use super::names;
use crate::error::Cause;

const NULL: Value = Value::Null;

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&NULL)
}

/// `field` of `obj` and `old` must be equal (absent equals absent).
fn immutable(out: &mut Vec<Cause>, path: &str, new: Option<&Value>, old: Option<&Value>) {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    if norm(new) != norm(old) {
        out.push(fields::immutable(path, new.unwrap_or(&NULL)));
    }
}

/// A CSI driver name: at most 63 characters of a DNS subdomain.
fn csi_driver_name(out: &mut Vec<Cause>, path: &str, name: &str) {
    if name.is_empty() {
        out.push(fields::required(path));
        return;
    }
    if name.len() > 63 {
        out.push(fields::too_long(path, 63));
    }
    fields::each_invalid(
        out,
        path,
        name,
        names::dns1123_subdomain(&name.to_lowercase()),
    );
}

pub fn validate_csi_node(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, d) in arr(spec(obj), "drivers").iter().enumerate() {
        let p = index("spec.drivers", i);
        let name = s(d, "name");
        csi_driver_name(&mut out, &child(&p, "name"), name);
        if !name.is_empty() && !seen.insert(name) {
            out.push(fields::duplicate(child(&p, "name"), &Value::from(name)));
        }
        if s(d, "nodeID").is_empty() {
            out.push(fields::required(child(&p, "nodeID")));
        }
    }
    out
}

pub fn validate_csi_driver(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    csi_driver_name(&mut out, "name", crate::meta::name(obj));
    let sp = spec(obj);
    let policy = s(sp, "fsGroupPolicy");
    let policies = ["ReadWriteOnceWithFSType", "File", "None"];
    if !policy.is_empty() && !policies.contains(&policy) {
        out.push(fields::unsupported("spec.fsGroupPolicy", policy, &policies));
    }
    for (i, m) in arr(sp, "volumeLifecycleModes").iter().enumerate() {
        let mode = m.as_str().unwrap_or("");
        if mode != "Persistent" && mode != "Ephemeral" {
            out.push(fields::unsupported(
                index("spec.volumeLifecycleModes", i),
                mode,
                &["Persistent", "Ephemeral"],
            ));
        }
    }
    if let Some(old) = old {
        immutable(
            &mut out,
            "spec.attachRequired",
            sp.get("attachRequired"),
            spec(old).get("attachRequired"),
        );
    }
    out
}

pub fn validate_csi_storage_capacity(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let class = s(obj, "storageClassName");
    if class.is_empty() {
        out.push(fields::required("storageClassName"));
    } else {
        fields::each_invalid(
            &mut out,
            "storageClassName",
            class,
            names::dns1123_subdomain(class),
        );
    }
    out
}

pub fn validate_volume_attachment(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = spec(obj);
    csi_driver_name(&mut out, "spec.attacher", s(sp, "attacher"));
    if s(sp, "nodeName").is_empty() {
        out.push(fields::required("spec.nodeName"));
    }
    let source = sp.get("source").unwrap_or(&NULL);
    match (
        has(source, "persistentVolumeName"),
        has(source, "inlineVolumeSpec"),
    ) {
        (true, true) => out.push(fields::forbidden(
            "spec.source",
            "must specify exactly one of persistentVolumeName and inlineVolumeSpec",
        )),
        (false, false) => out.push(fields::required_msg(
            "spec.source",
            "must specify exactly one of persistentVolumeName and inlineVolumeSpec",
        )),
        _ => {}
    }
    if let Some(old) = old {
        immutable(&mut out, "spec", obj.get("spec"), old.get("spec"));
    }
    out
}

pub fn validate_volume_attributes_class(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    csi_driver_name(&mut out, "driverName", s(obj, "driverName"));
    if let Some(old) = old {
        immutable(
            &mut out,
            "parameters",
            obj.get("parameters"),
            old.get("parameters"),
        );
        immutable(
            &mut out,
            "driverName",
            obj.get("driverName"),
            old.get("driverName"),
        );
    }
    out
}

/// One `exactly` request or `firstAvailable` entry.
fn device_request(out: &mut Vec<Cause>, path: &str, r: &Value) {
    if s(r, "deviceClassName").is_empty() {
        out.push(fields::required(child(path, "deviceClassName")));
    }
    let mode = s(r, "allocationMode");
    match mode {
        "ExactCount" | "" => fields::positive(out, &child(path, "count"), r.get("count")),
        "All" => {
            if has(r, "count") {
                out.push(fields::invalid(
                    child(path, "count"),
                    r.get("count").unwrap_or(&NULL),
                    "must not be specified when allocationMode is 'All'",
                ));
            }
        }
        other => out.push(fields::unsupported(
            child(path, "allocationMode"),
            other,
            &["All", "ExactCount"],
        )),
    }
}

fn claim_spec(out: &mut Vec<Cause>, path: &str, sp: &Value) {
    let devices = sp.get("devices").unwrap_or(&NULL);
    let requests_path = child(&child(path, "devices"), "requests");
    let mut seen = BTreeSet::new();
    for (i, r) in arr(devices, "requests").iter().enumerate() {
        let p = index(&requests_path, i);
        let name = s(r, "name");
        if name.is_empty() {
            out.push(fields::required(child(&p, "name")));
        } else {
            fields::each_invalid(out, &child(&p, "name"), name, names::dns1123_label(name));
            if !seen.insert(name) {
                out.push(fields::duplicate(child(&p, "name"), &Value::from(name)));
            }
        }
        match (r.get("exactly"), has(r, "firstAvailable")) {
            (Some(e), false) if !e.is_null() => device_request(out, &child(&p, "exactly"), e),
            (None | Some(Value::Null), true) => {
                for (j, sub) in arr(r, "firstAvailable").iter().enumerate() {
                    let sp = index(&child(&p, "firstAvailable"), j);
                    if s(sub, "name").is_empty() {
                        out.push(fields::required(child(&sp, "name")));
                    }
                    device_request(out, &sp, sub);
                }
            }
            _ => out.push(fields::required_msg(
                p,
                "exactly one of `exactly` or `firstAvailable` is required",
            )),
        }
    }
}

pub fn validate_resource_claim(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    claim_spec(&mut out, "spec", spec(obj));
    if let Some(old) = old {
        immutable(&mut out, "spec", obj.get("spec"), old.get("spec"));
    }
    out
}

pub fn validate_resource_claim_template(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    claim_spec(&mut out, "spec.spec", spec(spec(obj)));
    if let Some(old) = old {
        immutable(&mut out, "spec", obj.get("spec"), old.get("spec"));
    }
    out
}

pub fn validate_resource_slice(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = spec(obj);
    csi_driver_name(&mut out, "spec.driver", s(sp, "driver"));
    let pool = sp.get("pool").unwrap_or(&NULL);
    if s(pool, "name").is_empty() {
        out.push(fields::required("spec.pool.name"));
    }
    fields::positive(
        &mut out,
        "spec.pool.resourceSliceCount",
        pool.get("resourceSliceCount"),
    );
    let chosen = [
        "nodeName",
        "nodeSelector",
        "allNodes",
        "perDeviceNodeSelection",
    ]
    .iter()
    .filter(|k| match sp.get(**k) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(v) => !v.is_null(),
        None => false,
    })
    .count();
    if chosen != 1 {
        out.push(fields::required_msg(
            "spec",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        ));
    }
    if let Some(old) = old {
        immutable(
            &mut out,
            "spec.driver",
            sp.get("driver"),
            spec(old).get("driver"),
        );
        immutable(
            &mut out,
            "spec.nodeName",
            sp.get("nodeName"),
            spec(old).get("nodeName"),
        );
    }
    out
}

const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];

pub fn validate_validating_admission_policy(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = spec(obj);
    if arr(sp, "validations").is_empty() && arr(sp, "auditAnnotations").is_empty() {
        out.push(fields::required_msg(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    for (i, v) in arr(sp, "validations").iter().enumerate() {
        if s(v, "expression").is_empty() {
            out.push(fields::required(child(
                &index("spec.validations", i),
                "expression",
            )));
        }
    }
    let policy = s(sp, "failurePolicy");
    if !policy.is_empty() && !FAILURE_POLICIES.contains(&policy) {
        out.push(fields::unsupported(
            "spec.failurePolicy",
            policy,
            &FAILURE_POLICIES,
        ));
    }
    match sp.get("matchConstraints") {
        Some(m) if m.is_object() => {
            if arr(m, "resourceRules").is_empty() {
                out.push(fields::required("spec.matchConstraints.resourceRules"));
            }
        }
        _ => out.push(fields::required("spec.matchConstraints")),
    }
    out
}

pub fn validate_policy_binding(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = spec(obj);
    if s(sp, "policyName").is_empty() {
        out.push(fields::required("spec.policyName"));
    }
    let actions = arr(sp, "validationActions");
    if actions.is_empty() {
        out.push(fields::required("spec.validationActions"));
    }
    let mut seen = BTreeSet::new();
    for (i, a) in actions.iter().enumerate() {
        let p = index("spec.validationActions", i);
        let a = a.as_str().unwrap_or("");
        if !["Deny", "Warn", "Audit"].contains(&a) {
            out.push(fields::unsupported(&p, a, &["Audit", "Deny", "Warn"]));
        } else if !seen.insert(a) {
            out.push(fields::duplicate(p, &Value::from(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        out.push(fields::invalid(
            "spec.validationActions",
            sp.get("validationActions").unwrap_or(&NULL),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    out
}

pub fn validate_webhook_configuration(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, h) in arr(obj, "webhooks").iter().enumerate() {
        let p = index("webhooks", i);
        let name = s(h, "name");
        if name.is_empty() {
            out.push(fields::required(child(&p, "name")));
        } else {
            let mut msgs = names::dns1123_subdomain(name);
            if name.split('.').count() < 3 {
                msgs.push(
                    "should be a domain with at least three segments separated by dots".into(),
                );
            }
            fields::each_invalid(&mut out, &child(&p, "name"), name, msgs);
            if !seen.insert(name) {
                out.push(fields::duplicate(child(&p, "name"), &Value::from(name)));
            }
        }
        let side = s(h, "sideEffects");
        if side.is_empty() {
            out.push(fields::required(child(&p, "sideEffects")));
        } else if side != "None" && side != "NoneOnDryRun" {
            out.push(fields::unsupported(
                child(&p, "sideEffects"),
                side,
                &["None", "NoneOnDryRun"],
            ));
        }
        if arr(h, "admissionReviewVersions").is_empty() {
            out.push(fields::required(child(&p, "admissionReviewVersions")));
        }
        let policy = s(h, "failurePolicy");
        if !policy.is_empty() && !FAILURE_POLICIES.contains(&policy) {
            out.push(fields::unsupported(
                child(&p, "failurePolicy"),
                policy,
                &FAILURE_POLICIES,
            ));
        }
        let config = h.get("clientConfig").unwrap_or(&NULL);
        if has(config, "url") == has(config, "service") {
            out.push(fields::required_msg(
                child(&p, "clientConfig"),
                "exactly one of url or service is required",
            ));
        }
    }
    out
}

/// `a.b.c.d/n` or an IPv6 prefix; the family of a valid one.
fn cidr_family(cidr: &str) -> Option<u8> {
    let (ip, bits) = cidr.split_once('/')?;
    let bits: u8 = bits.parse().ok()?;
    match ip.parse::<std::net::IpAddr>().ok()? {
        std::net::IpAddr::V4(_) if bits <= 32 => Some(4),
        std::net::IpAddr::V6(_) if bits <= 128 => Some(6),
        _ => None,
    }
}

pub fn validate_service_cidr(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let cidrs = arr(spec(obj), "cidrs");
    if cidrs.is_empty() {
        out.push(fields::required("spec.cidrs"));
    }
    if cidrs.len() > 2 {
        out.push(Cause::new(
            "FieldValueTooMany",
            "spec.cidrs",
            format!("Too many: {}: must have at most 2 items", cidrs.len()),
        ));
    }
    let mut families = BTreeSet::new();
    for (i, c) in cidrs.iter().enumerate() {
        let p = index("spec.cidrs", i);
        let c = c.as_str().unwrap_or("");
        match cidr_family(c) {
            Some(f) => {
                if !families.insert(f) {
                    out.push(fields::invalid_str(
                        &p,
                        c,
                        "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
                    ));
                }
            }
            None => out.push(fields::invalid_str(
                &p,
                c,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )),
        }
    }
    out
}

pub fn validate_ip_address(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = crate::meta::name(obj);
    // The name is the address, in its canonical form, so that each address
    // has exactly one object.
    match name.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.to_string() == name => {}
        Ok(ip) => out.push(fields::invalid_str(
            "metadata.name",
            name,
            &format!("must be in canonical form (\"{ip}\")"),
        )),
        Err(_) if name.is_empty() => {}
        Err(_) => out.push(fields::invalid_str(
            "metadata.name",
            name,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )),
    }
    match spec(obj).get("parentRef") {
        Some(r) if r.is_object() => {
            if s(r, "resource").is_empty() {
                out.push(fields::required("spec.parentRef.resource"));
            }
            if s(r, "name").is_empty() {
                out.push(fields::required("spec.parentRef.name"));
            }
        }
        _ => out.push(fields::required("spec.parentRef")),
    }
    if let Some(old) = old {
        immutable(
            &mut out,
            "spec.parentRef",
            spec(obj).get("parentRef"),
            spec(old).get("parentRef"),
        );
    }
    out
}

const CSR_CONDITIONS: [&str; 3] = ["Approved", "Denied", "Failed"];

pub fn validate_csr(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let sp = spec(obj);
    match s(sp, "request") {
        "" => out.push(fields::required("spec.request")),
        req => {
            let pem = STANDARD.decode(req).ok();
            let ok = pem
                .as_deref()
                .and_then(|b| std::str::from_utf8(b).ok())
                .is_some_and(|t| t.contains("-----BEGIN CERTIFICATE REQUEST-----"));
            if !ok {
                out.push(fields::invalid_raw(
                    "spec.request",
                    "[]byte{...}",
                    "PEM block type must be CERTIFICATE REQUEST",
                ));
            }
        }
    }
    let signer = s(sp, "signerName");
    if signer.is_empty() {
        out.push(fields::required("spec.signerName"));
    } else {
        match signer.split_once('/') {
            Some((domain, path)) if !path.is_empty() => fields::each_invalid(
                &mut out,
                "spec.signerName",
                signer,
                names::dns1123_subdomain(domain),
            ),
            _ => out.push(fields::invalid_str(
                "spec.signerName",
                signer,
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            )),
        }
    }
    if arr(sp, "usages").is_empty() {
        out.push(fields::required("spec.usages"));
    }
    if let Some(n) = sp.get("expirationSeconds").and_then(Value::as_i64) {
        if n < 600 {
            out.push(fields::invalid_int(
                "spec.expirationSeconds",
                n,
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, c) in arr(obj.get("status").unwrap_or(&NULL), "conditions")
        .iter()
        .enumerate()
    {
        let p = index("status.conditions", i);
        let t = s(c, "type");
        if t.is_empty() {
            out.push(fields::required(child(&p, "type")));
        } else if CSR_CONDITIONS.contains(&t) && !seen.insert(t) {
            out.push(fields::duplicate(child(&p, "type"), &Value::from(t)));
        }
        let st = s(c, "status");
        if !["True", "False", "Unknown"].contains(&st) {
            out.push(fields::unsupported(
                child(&p, "status"),
                st,
                &["False", "True", "Unknown"],
            ));
        }
    }
    if seen.contains("Approved") && seen.contains("Denied") {
        out.push(fields::invalid_str(
            "status.conditions",
            "Denied",
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    if let Some(old) = old {
        immutable(&mut out, "spec", obj.get("spec"), old.get("spec"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::field_reasons;
    use super::*;
    use serde_json::json;

    #[test]
    fn csr_rules() {
        let pem = STANDARD.encode(
            "-----BEGIN CERTIFICATE REQUEST-----\nMII\n-----END CERTIFICATE REQUEST-----\n",
        );
        let good = json!({"metadata": {"name": "c"}, "spec": {"request": pem,
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}});
        assert!(validate_csr(&good, None).is_empty());
        let bad = json!({"metadata": {"name": "c"}, "spec": {"request": STANDARD.encode("x"),
            "signerName": "nosigner", "usages": []},
            "status": {"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}});
        assert_eq!(
            field_reasons(&validate_csr(&bad, None)),
            vec![
                ("spec.request", "FieldValueInvalid"),
                ("spec.signerName", "FieldValueInvalid"),
                ("spec.usages", "FieldValueRequired"),
                ("status.conditions", "FieldValueInvalid"),
            ]
        );
    }

    #[test]
    fn service_cidr_families() {
        let ok = json!({"spec": {"cidrs": ["10.96.0.0/12", "fd00::/108"]}});
        assert!(validate_service_cidr(&ok).is_empty());
        let twice = json!({"spec": {"cidrs": ["10.96.0.0/12", "10.0.0.0/8"]}});
        assert_eq!(
            field_reasons(&validate_service_cidr(&twice)),
            vec![("spec.cidrs[1]", "FieldValueInvalid")]
        );
    }

    #[test]
    fn ip_address_names_are_canonical() {
        let parent =
            json!({"group": "", "resource": "services", "namespace": "default", "name": "k"});
        let ok = json!({"metadata": {"name": "10.96.0.1"}, "spec": {"parentRef": parent}});
        assert!(validate_ip_address(&ok, None).is_empty());
        let long = json!({"metadata": {"name": "2001:db8:0::1"}, "spec": {"parentRef": parent}});
        assert_eq!(
            field_reasons(&validate_ip_address(&long, None)),
            vec![("metadata.name", "FieldValueInvalid")]
        );
    }

    #[test]
    fn claim_requests() {
        let c = json!({"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 0}},
            {"name": "gpu"}
        ]}}});
        assert_eq!(
            field_reasons(&validate_resource_claim(&c, None)),
            vec![
                (
                    "spec.devices.requests[0].exactly.count",
                    "FieldValueInvalid"
                ),
                ("spec.devices.requests[1].name", "FieldValueDuplicate"),
                ("spec.devices.requests[1]", "FieldValueRequired"),
            ]
        );
        let old = json!({"spec": {"devices": {"requests": []}}});
        let new = json!({"spec": {"devices": {"requests": [{"name": "a", "exactly": {"deviceClassName": "c", "count": 1}}]}}});
        assert_eq!(
            field_reasons(&validate_resource_claim(&new, Some(&old))),
            vec![("spec", "FieldValueInvalid")]
        );
    }

    #[test]
    fn slices_name_exactly_one_node_choice() {
        let s = json!({"spec": {"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "nodeName": "n1", "allNodes": true}});
        assert_eq!(
            field_reasons(&validate_resource_slice(&s, None)),
            vec![("spec", "FieldValueRequired")]
        );
    }

    #[test]
    fn webhook_names_have_three_segments() {
        let w = json!({"webhooks": [{"name": "a.b", "sideEffects": "None", "admissionReviewVersions": ["v1"], "clientConfig": {"url": "https://x"}}]});
        assert_eq!(
            field_reasons(&validate_webhook_configuration(&w)),
            vec![("webhooks[0].name", "FieldValueInvalid")]
        );
    }

    #[test]
    fn bindings_need_actions() {
        let b = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Warn"]}});
        assert_eq!(
            field_reasons(&validate_policy_binding(&b)),
            vec![("spec.validationActions", "FieldValueInvalid")]
        );
    }
}
