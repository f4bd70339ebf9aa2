//! Pod and pod-template validation.

use std::collections::BTreeSet;

use serde_json::Value;

use super::fields::{self, arr, child, has, index, key, s};
use super::metadata::{validate_annotations, validate_labels};
use super::names;
use super::qty;
use crate::error::Cause;

pub const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const MESSAGE_POLICIES: &[&str] = &["File", "FallbackToLogsOnError"];
/// Sorted, as upstream lists a set's members.
pub const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const PREEMPTION_POLICIES: &[&str] = &["Never", "PreemptLowerPriority"];
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// The fields a pod update may touch, in upstream's words.
pub const POD_UPDATE_MESSAGE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// A pod's spec (metadata is checked by the caller).
pub fn validate_pod(obj: &Value) -> Vec<Cause> {
    match obj.get("spec") {
        Some(spec) if spec.is_object() => validate_pod_spec(spec, "spec"),
        _ => vec![fields::required("spec.containers")],
    }
}

/// A `PodTemplateSpec` at `path` (`spec.template`).
pub fn validate_pod_template(template: Option<&Value>, path: &str) -> Vec<Cause> {
    let Some(t) = template.filter(|t| t.is_object()) else {
        return vec![fields::required(path)];
    };
    let mut out = Vec::new();
    let empty = Value::Null;
    let meta = t.get("metadata").unwrap_or(&empty);
    let mpath = child(path, "metadata");
    out.extend(validate_labels(
        meta.get("labels"),
        &child(&mpath, "labels"),
    ));
    out.extend(validate_annotations(
        meta.get("annotations"),
        &child(&mpath, "annotations"),
    ));
    let spath = child(path, "spec");
    match t.get("spec") {
        Some(spec) if spec.is_object() => out.extend(validate_pod_spec(spec, &spath)),
        _ => out.push(fields::required(child(&spath, "containers"))),
    }
    out
}

/// Upstream's `ValidatePodSpec`, for the rules clients commonly trip on.
pub fn validate_pod_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let volumes = validate_volumes(spec, path, &mut out);
    let containers = arr(spec, "containers");
    if containers.is_empty() {
        out.push(fields::required(child(path, "containers")));
    }
    // Names are unique across init and regular containers: both kinds share
    // the pod's status and log namespace.
    let mut seen = BTreeSet::new();
    for (list, field) in [
        ("initContainers", "initContainers"),
        ("containers", "containers"),
    ] {
        for (i, c) in arr(spec, list).iter().enumerate() {
            let p = index(&child(path, field), i);
            validate_container(c, &p, &volumes, &mut seen, &mut out);
        }
    }
    let rp = s(spec, "restartPolicy");
    if rp.is_empty() {
        out.push(fields::required(child(path, "restartPolicy")));
    } else if !RESTART_POLICIES.contains(&rp) {
        out.push(fields::unsupported(
            child(path, "restartPolicy"),
            rp,
            RESTART_POLICIES,
        ));
    }
    let dp = s(spec, "dnsPolicy");
    if dp.is_empty() {
        out.push(fields::required(child(path, "dnsPolicy")));
    } else if !DNS_POLICIES.contains(&dp) {
        out.push(fields::unsupported(
            child(path, "dnsPolicy"),
            dp,
            DNS_POLICIES,
        ));
    }
    if dp == "None" && spec.get("dnsConfig").is_none_or(Value::is_null) {
        out.push(fields::required_msg(
            child(path, "dnsConfig"),
            "must provide `dnsConfig` when `dnsPolicy` is None",
        ));
    }
    fields::nonnegative(
        &mut out,
        &child(path, "terminationGracePeriodSeconds"),
        spec.get("terminationGracePeriodSeconds"),
    );
    if let Some(n) = spec.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        if !(1..=i64::from(i32::MAX)).contains(&n) {
            out.push(fields::invalid_int(
                child(path, "activeDeadlineSeconds"),
                n,
                "must be between 1 and 2147483647, inclusive",
            ));
        }
    }
    let pp = s(spec, "preemptionPolicy");
    if !pp.is_empty() && !PREEMPTION_POLICIES.contains(&pp) {
        out.push(fields::unsupported(
            child(path, "preemptionPolicy"),
            pp,
            PREEMPTION_POLICIES,
        ));
    }
    if let Some(Value::Object(_)) = spec.get("nodeSelector") {
        out.extend(validate_labels(
            spec.get("nodeSelector"),
            &child(path, "nodeSelector"),
        ));
    }
    let sa = s(spec, "serviceAccountName");
    if !sa.is_empty() {
        fields::each_invalid(
            &mut out,
            &child(path, "serviceAccountName"),
            sa,
            names::dns1123_subdomain(sa),
        );
    }
    validate_tolerations(spec, path, &mut out);
    out
}

/// Volume names, unique and DNS labels; returns the set of names.
fn validate_volumes(spec: &Value, path: &str, out: &mut Vec<Cause>) -> BTreeSet<String> {
    let mut names_seen = BTreeSet::new();
    for (i, v) in arr(spec, "volumes").iter().enumerate() {
        let p = child(&index(&child(path, "volumes"), i), "name");
        let n = s(v, "name");
        if n.is_empty() {
            out.push(fields::required(p));
            continue;
        }
        fields::each_invalid(out, &p, n, names::dns1123_label(n));
        if !names_seen.insert(n.to_string()) {
            out.push(fields::duplicate(p, &Value::from(n)));
        }
    }
    names_seen
}

fn validate_container(
    c: &Value,
    p: &str,
    volumes: &BTreeSet<String>,
    seen: &mut BTreeSet<String>,
    out: &mut Vec<Cause>,
) {
    let name = s(c, "name");
    if name.is_empty() {
        out.push(fields::required(child(p, "name")));
    } else {
        let msgs = names::dns1123_label(name);
        if msgs.is_empty() && !seen.insert(name.to_string()) {
            out.push(fields::duplicate(child(p, "name"), &Value::from(name)));
        }
        fields::each_invalid(out, &child(p, "name"), name, msgs);
    }
    let image = s(c, "image");
    if image.is_empty() {
        out.push(fields::required(child(p, "image")));
    } else if image.trim() != image {
        out.push(fields::invalid_str(
            child(p, "image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
    let pull = s(c, "imagePullPolicy");
    if pull.is_empty() {
        out.push(fields::required(child(p, "imagePullPolicy")));
    } else if !PULL_POLICIES.contains(&pull) {
        out.push(fields::unsupported(
            child(p, "imagePullPolicy"),
            pull,
            PULL_POLICIES,
        ));
    }
    let tmp = s(c, "terminationMessagePolicy");
    if tmp.is_empty() {
        out.push(fields::required(child(p, "terminationMessagePolicy")));
    } else if !MESSAGE_POLICIES.contains(&tmp) {
        out.push(fields::unsupported(
            child(p, "terminationMessagePolicy"),
            tmp,
            MESSAGE_POLICIES,
        ));
    }
    validate_container_ports(c, p, out);
    validate_mounts(c, p, volumes, out);
    validate_resources(c.get("resources"), &child(p, "resources"), out);
}

fn validate_container_ports(c: &Value, p: &str, out: &mut Vec<Cause>) {
    let mut port_names = BTreeSet::new();
    for (i, port) in arr(c, "ports").iter().enumerate() {
        let pp = index(&child(p, "ports"), i);
        let n = s(port, "name");
        if !n.is_empty() {
            let msgs = names::port_name(n);
            if !msgs.is_empty() {
                fields::each_invalid(out, &child(&pp, "name"), n, msgs);
            } else if !port_names.insert(n.to_string()) {
                out.push(fields::duplicate(child(&pp, "name"), &Value::from(n)));
            }
        }
        match port.get("containerPort").and_then(Value::as_i64) {
            None | Some(0) => out.push(fields::required(child(&pp, "containerPort"))),
            Some(n) => {
                for m in names::port_number(n) {
                    out.push(fields::invalid_int(child(&pp, "containerPort"), n, &m));
                }
            }
        }
        if let Some(h) = port.get("hostPort").and_then(Value::as_i64) {
            if h != 0 {
                for m in names::port_number(h) {
                    out.push(fields::invalid_int(child(&pp, "hostPort"), h, &m));
                }
            }
        }
        let proto = s(port, "protocol");
        if proto.is_empty() {
            out.push(fields::required(child(&pp, "protocol")));
        } else if !PROTOCOLS.contains(&proto) {
            out.push(fields::unsupported(
                child(&pp, "protocol"),
                proto,
                PROTOCOLS,
            ));
        }
    }
}

fn validate_mounts(c: &Value, p: &str, volumes: &BTreeSet<String>, out: &mut Vec<Cause>) {
    let mut paths = BTreeSet::new();
    for (i, m) in arr(c, "volumeMounts").iter().enumerate() {
        let mp = index(&child(p, "volumeMounts"), i);
        let n = s(m, "name");
        if n.is_empty() {
            out.push(fields::required(child(&mp, "name")));
        } else if !volumes.contains(n) {
            out.push(fields::not_found(child(&mp, "name"), &Value::from(n)));
        }
        let path = s(m, "mountPath");
        if path.is_empty() {
            out.push(fields::required(child(&mp, "mountPath")));
        } else if !paths.insert(path.to_string()) {
            out.push(fields::invalid_str(
                child(&mp, "mountPath"),
                path,
                "must be unique",
            ));
        }
    }
}

/// Quantities must parse, be non-negative, and requests must not exceed
/// limits.
fn validate_resources(res: Option<&Value>, p: &str, out: &mut Vec<Cause>) {
    let Some(res) = res else { return };
    let mut parsed = |which: &str| {
        let mut got = Vec::new();
        if let Some(m) = fields::obj(res, which) {
            for (k, v) in m {
                let fp = key(&child(p, which), k);
                let text = match v {
                    Value::String(t) => t.clone(),
                    Value::Number(n) => n.to_string(),
                    other => {
                        out.push(fields::invalid(fp, other, "must be a quantity"));
                        continue;
                    }
                };
                match qty::parse(&text) {
                    None => out.push(fields::invalid_str(
                        fp,
                        &text,
                        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                    )),
                    Some(q) if q.0 < 0 => out.push(fields::invalid_str(
                        fp,
                        &text,
                        "must be greater than or equal to 0",
                    )),
                    Some(q) => got.push((k.clone(), text, q)),
                }
            }
        }
        got
    };
    let limits = parsed("limits");
    let requests = parsed("requests");
    for (k, text, q) in &requests {
        if let Some((_, ltext, l)) = limits.iter().find(|(lk, _, _)| lk == k) {
            if q > l {
                out.push(fields::invalid_str(
                    key(&child(p, "requests"), k),
                    text,
                    &format!("must be less than or equal to {k} limit of {ltext}"),
                ));
            }
        }
    }
}

fn validate_tolerations(spec: &Value, path: &str, out: &mut Vec<Cause>) {
    for (i, t) in arr(spec, "tolerations").iter().enumerate() {
        let tp = index(&child(path, "tolerations"), i);
        let k = s(t, "key");
        if !k.is_empty() {
            fields::each_invalid(out, &child(&tp, "key"), k, names::qualified_name(k));
        }
        let op = s(t, "operator");
        match op {
            "" | "Equal" => {
                if k.is_empty() && !op.is_empty() {
                    out.push(fields::invalid_str(
                        child(&tp, "operator"),
                        op,
                        "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                    ));
                }
                let v = s(t, "value");
                fields::each_invalid(out, &child(&tp, "value"), v, names::label_value(v));
            }
            "Exists" => {
                let v = s(t, "value");
                if !v.is_empty() {
                    out.push(fields::invalid_str(
                        child(&tp, "operator"),
                        v,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => out.push(fields::unsupported(
                child(&tp, "operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        let effect = s(t, "effect");
        if !effect.is_empty() && !TAINT_EFFECTS.contains(&effect) {
            out.push(fields::unsupported(
                child(&tp, "effect"),
                effect,
                TAINT_EFFECTS,
            ));
        }
        if has(t, "tolerationSeconds") && effect != "NoExecute" {
            out.push(fields::invalid_str(
                child(&tp, "effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
    }
}

/// Upstream's `ValidatePodUpdate` for the spec: everything is frozen except
/// images, a shrinking activeDeadlineSeconds, added tolerations and a
/// negative grace period turning into 1.
pub fn validate_pod_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let (Some(new_spec), Some(old_spec)) = (new.get("spec"), old.get("spec")) else {
        return out;
    };
    // Most updates (every status write) leave the spec as it was, and an
    // unchanged spec passes every check below: skip copying it.
    if crate::same::values(new_spec, old_spec) {
        return out;
    }
    let path = "spec.activeDeadlineSeconds";
    match (
        new_spec
            .get("activeDeadlineSeconds")
            .and_then(Value::as_i64),
        old_spec
            .get("activeDeadlineSeconds")
            .and_then(Value::as_i64),
    ) {
        (Some(n), Some(o)) if n > o => {
            out.push(fields::invalid_int(
                path,
                n,
                "must be less than or equal to previous value",
            ));
            return out;
        }
        (None, Some(_)) => {
            out.push(fields::invalid_raw(
                path,
                "null",
                "must not update from a positive integer to nil value",
            ));
        }
        _ => {}
    }
    // Build the spec the update would produce if it only touched the
    // mutable fields, then demand it equal the new one.
    let mut munged = new_spec.clone();
    if let Some(m) = munged.as_object_mut() {
        for list in ["containers", "initContainers"] {
            let olds = arr(old_spec, list);
            if let Some(Value::Array(items)) = m.get_mut(list) {
                if items.len() == olds.len() {
                    for (c, oc) in items.iter_mut().zip(olds) {
                        if let (Some(c), Some(img)) = (c.as_object_mut(), oc.get("image")) {
                            c.insert("image".into(), img.clone());
                        }
                    }
                }
            }
        }
        restore(m, old_spec, "activeDeadlineSeconds");
        let old_tols = arr(old_spec, "tolerations");
        let new_tols = arr(new_spec, "tolerations");
        if old_tols.iter().all(|t| new_tols.contains(t)) {
            restore(m, old_spec, "tolerations");
        }
        let old_grace = old_spec
            .get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64);
        let new_grace = new_spec
            .get("terminationGracePeriodSeconds")
            .and_then(Value::as_i64);
        if old_grace.is_some_and(|g| g < 0) && new_grace == Some(1) {
            restore(m, old_spec, "terminationGracePeriodSeconds");
        }
    }
    if !crate::same::values(&munged, old_spec) {
        out.push(fields::forbidden("spec", POD_UPDATE_MESSAGE));
    }
    out
}

/// Copies `k` from `old` into `m` (or removes it when `old` lacks it).
fn restore(m: &mut serde_json::Map<String, Value>, old: &Value, k: &str) {
    match old.get(k) {
        Some(v) => {
            m.insert(k.to_string(), v.clone());
        }
        None => {
            m.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Value {
        json!({
            "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                            "terminationMessagePolicy": "File"}],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst"
        })
    }

    use crate::validation::field_reasons as f;

    #[test]
    fn minimal_spec_is_valid() {
        assert!(validate_pod_spec(&spec(), "spec").is_empty());
    }

    #[test]
    fn containers_required() {
        let c = validate_pod(
            &json!({"spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}}),
        );
        assert_eq!(f(&c), vec![("spec.containers", "FieldValueRequired")]);
        let c = validate_pod(&json!({}));
        assert_eq!(f(&c), vec![("spec.containers", "FieldValueRequired")]);
    }

    #[test]
    fn container_rules() {
        let mut s = spec();
        s["containers"] = json!([
            {"name": "", "image": "x", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"},
            {"name": "Bad", "image": "", "imagePullPolicy": "Sometimes", "terminationMessagePolicy": "File"},
            {"name": "c", "image": "x", "imagePullPolicy": "Always", "terminationMessagePolicy": "File",
             "ports": [{"containerPort": 70000, "protocol": "TCP"}, {"containerPort": 80, "protocol": "HTTP"}]},
        ]);
        s["initContainers"] = json!([{"name": "c", "image": "x", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}]);
        let c = validate_pod_spec(&s, "spec");
        assert_eq!(
            f(&c),
            vec![
                ("spec.containers[0].name", "FieldValueRequired"),
                ("spec.containers[1].name", "FieldValueInvalid"),
                ("spec.containers[1].image", "FieldValueRequired"),
                (
                    "spec.containers[1].imagePullPolicy",
                    "FieldValueNotSupported"
                ),
                ("spec.containers[2].name", "FieldValueDuplicate"),
                (
                    "spec.containers[2].ports[0].containerPort",
                    "FieldValueInvalid"
                ),
                (
                    "spec.containers[2].ports[1].protocol",
                    "FieldValueNotSupported"
                ),
            ]
        );
        assert_eq!(
            c[5].message,
            "Invalid value: 70000: must be between 1 and 65535, inclusive"
        );
        assert_eq!(
            c[6].message,
            "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
    }

    #[test]
    fn policies() {
        let mut s = spec();
        s["restartPolicy"] = json!("Sometimes");
        s["dnsPolicy"] = json!("Cluster");
        let c = validate_pod_spec(&s, "spec");
        assert_eq!(
            f(&c),
            vec![
                ("spec.restartPolicy", "FieldValueNotSupported"),
                ("spec.dnsPolicy", "FieldValueNotSupported")
            ]
        );
        assert_eq!(
            c[0].message,
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""
        );
    }

    #[test]
    fn requests_within_limits() {
        let mut s = spec();
        s["containers"][0]["resources"] =
            json!({"limits": {"cpu": "500m", "memory": "bad"}, "requests": {"cpu": "1"}});
        let c = validate_pod_spec(&s, "spec");
        assert_eq!(
            f(&c),
            vec![
                (
                    "spec.containers[0].resources.limits[memory]",
                    "FieldValueInvalid"
                ),
                (
                    "spec.containers[0].resources.requests[cpu]",
                    "FieldValueInvalid"
                ),
            ]
        );
        assert_eq!(
            c[1].message,
            "Invalid value: \"1\": must be less than or equal to cpu limit of 500m"
        );
    }

    #[test]
    fn mounts_must_name_volumes() {
        let mut s = spec();
        s["volumes"] = json!([{"name": "data"}, {"name": "data"}]);
        s["containers"][0]["volumeMounts"] =
            json!([{"name": "data", "mountPath": "/d"}, {"name": "nope", "mountPath": "/d"}]);
        let c = validate_pod_spec(&s, "spec");
        assert_eq!(
            f(&c),
            vec![
                ("spec.volumes[1].name", "FieldValueDuplicate"),
                (
                    "spec.containers[0].volumeMounts[1].name",
                    "FieldValueNotFound"
                ),
                (
                    "spec.containers[0].volumeMounts[1].mountPath",
                    "FieldValueInvalid"
                ),
            ]
        );
    }

    #[test]
    fn pod_update_rules() {
        let old = json!({"spec": spec()});
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("nginx:2");
        new["spec"]["tolerations"] = json!([{"key": "a", "operator": "Exists"}]);
        new["spec"]["activeDeadlineSeconds"] = json!(30);
        assert!(validate_pod_update(&new, &old).is_empty());

        let mut bad = old.clone();
        bad["spec"]["restartPolicy"] = json!("Never");
        let c = validate_pod_update(&bad, &old);
        assert_eq!(f(&c), vec![("spec", "FieldValueForbidden")]);
        assert!(c[0].message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`"
        ));

        let mut longer = new.clone();
        longer["spec"]["activeDeadlineSeconds"] = json!(60);
        let c = validate_pod_update(&longer, &new);
        assert_eq!(
            f(&c),
            vec![("spec.activeDeadlineSeconds", "FieldValueInvalid")]
        );

        let mut removed = new.clone();
        removed["spec"]["tolerations"] = json!([]);
        let c = validate_pod_update(&removed, &new);
        assert_eq!(f(&c), vec![("spec", "FieldValueForbidden")]);
    }
}
