//! Namespaces, Nodes, Leases, PriorityClasses and Events.

use std::collections::BTreeSet;

use serde_json::Value;

use super::fields::{self, arr, child, has, index, s};
use super::metadata::validate_finalizers;
use super::names;
use crate::error::Cause;

const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// The largest priority a user-defined PriorityClass may have.
pub const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// Built-in classes: (name, value); only these may use the `system-` prefix.
pub const SYSTEM_PRIORITY_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

pub fn validate_namespace(ns: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(spec) = ns.get("spec") {
        // spec.finalizers hold plain names like "kubernetes", which a core
        // kind accepts as a standard finalizer.
        out.extend(validate_finalizers(
            spec.get("finalizers"),
            "spec.finalizers",
            true,
        ));
    }
    if let Some(status) = ns.get("status") {
        let phase = s(status, "phase");
        if !phase.is_empty() && phase != "Active" && phase != "Terminating" {
            out.push(fields::unsupported(
                "status.phase",
                phase,
                &["Active", "Terminating"],
            ));
        }
    }
    out
}

pub fn validate_node(node: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let spec = node.get("spec").unwrap_or(&empty);
    let mut seen = BTreeSet::new();
    for (i, t) in arr(spec, "taints").iter().enumerate() {
        let p = index("spec.taints", i);
        let k = s(t, "key");
        if k.is_empty() {
            out.push(fields::required(child(&p, "key")));
        } else {
            fields::each_invalid(&mut out, &child(&p, "key"), k, names::qualified_name(k));
        }
        let v = s(t, "value");
        fields::each_invalid(&mut out, &child(&p, "value"), v, names::label_value(v));
        let e = s(t, "effect");
        if e.is_empty() {
            out.push(fields::required(child(&p, "effect")));
        } else if !TAINT_EFFECTS.contains(&e) {
            out.push(fields::unsupported(child(&p, "effect"), e, TAINT_EFFECTS));
        }
        if !seen.insert((k.to_string(), e.to_string())) {
            out.push(Cause::new(
                "FieldValueDuplicate",
                p,
                format!(
                    "Duplicate value: {}: taints must be unique by key and effect pair",
                    fields::render(t)
                ),
            ));
        }
    }
    out
}

pub fn validate_lease(lease: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    if let Some(spec) = lease.get("spec") {
        fields::positive(
            &mut out,
            "spec.leaseDurationSeconds",
            spec.get("leaseDurationSeconds"),
        );
        fields::nonnegative(
            &mut out,
            "spec.leaseTransitions",
            spec.get("leaseTransitions"),
        );
    }
    out
}

pub fn validate_priority_class(pc: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = pc.get("metadata").map_or("", |m| s(m, "name"));
    let value = pc.get("value").and_then(Value::as_i64);
    if !has(pc, "value") {
        out.push(fields::required("value"));
    } else if value.is_none() {
        out.push(fields::invalid(
            "value",
            pc.get("value").unwrap_or(&Value::Null),
            "must be an integer",
        ));
    }
    let value = value.unwrap_or(0);
    let global_default = fields::bool_of(pc, "globalDefault");
    if name.starts_with("system-") {
        let err = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((n, v)) if *v != value => Some(format!("value of {n} PriorityClass must be {v}")),
            Some((n, _)) if global_default => {
                Some(format!("globalDefault of {n} PriorityClass must be false"))
            }
            Some(_) => None,
        };
        if let Some(e) = err {
            out.push(fields::forbidden(
                "metadata.name",
                &format!("priority class names with 'system-' prefix are reserved for system use only. error: {e}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        out.push(fields::forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    let pp = s(pc, "preemptionPolicy");
    if !pp.is_empty() && pp != "Never" && pp != "PreemptLowerPriority" {
        out.push(fields::unsupported(
            "preemptionPolicy",
            pp,
            &["Never", "PreemptLowerPriority"],
        ));
    }
    if let Some(old) = old {
        if old.get("value") != pc.get("value") {
            out.push(fields::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        if old.get("preemptionPolicy") != pc.get("preemptionPolicy") {
            out.push(fields::immutable(
                "preemptionPolicy",
                pc.get("preemptionPolicy").unwrap_or(&Value::Null),
            ));
        }
    }
    out
}

/// `group` tells the two Event APIs apart: core events need an involved
/// object in their namespace; events.k8s.io ones need the reporting fields.
pub fn validate_event(ev: &Value, group: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let ns = ev.get("metadata").map_or("", |m| s(m, "namespace"));
    if group.is_empty() {
        match ev.get("involvedObject") {
            Some(io) if io.is_object() => {
                let ions = s(io, "namespace");
                let mismatch = if ions.is_empty() {
                    !ns.is_empty() && ns != "default"
                } else {
                    ns != ions
                };
                if mismatch {
                    out.push(fields::invalid_str(
                        "involvedObject.namespace",
                        ions,
                        "does not match event.namespace",
                    ));
                }
            }
            _ => out.push(fields::required("involvedObject")),
        }
    } else {
        for k in [
            "eventTime",
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
        ] {
            if s(ev, k).is_empty() {
                out.push(fields::required(k));
            }
        }
        let rc = s(ev, "reportingController");
        if !rc.is_empty() {
            fields::each_invalid(
                &mut out,
                "reportingController",
                rc,
                names::qualified_name(rc),
            );
        }
        let ty = s(ev, "type");
        if ty != "Normal" && ty != "Warning" {
            out.push(fields::invalid_str(
                "type",
                "",
                &format!("has invalid value: {ty}"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::validation::field_reasons as f;

    #[test]
    fn namespace_finalizers() {
        let ns = json!({"spec": {"finalizers": ["kubernetes", "bad finalizer"]}, "status": {"phase": "Active"}});
        assert_eq!(
            f(&validate_namespace(&ns)),
            vec![("spec.finalizers", "FieldValueInvalid")]
        );
    }

    #[test]
    fn node_taints() {
        let n = json!({"spec": {"taints": [
            {"key": "a", "effect": "NoSchedule"},
            {"key": "a", "effect": "NoSchedule"},
            {"key": "b", "effect": "Sometimes"}]}});
        assert_eq!(
            f(&validate_node(&n)),
            vec![
                ("spec.taints[1]", "FieldValueDuplicate"),
                ("spec.taints[2].effect", "FieldValueNotSupported")
            ]
        );
    }

    #[test]
    fn leases() {
        let l = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
        assert_eq!(
            f(&validate_lease(&l)),
            vec![
                ("spec.leaseDurationSeconds", "FieldValueInvalid"),
                ("spec.leaseTransitions", "FieldValueInvalid")
            ]
        );
    }

    #[test]
    fn priority_classes() {
        let ok = json!({"metadata": {"name": "high"}, "value": 1000});
        assert_eq!(f(&validate_priority_class(&ok, None)), vec![]);
        let big = json!({"metadata": {"name": "high"}, "value": 2_000_000_000i64});
        assert_eq!(
            f(&validate_priority_class(&big, None)),
            vec![("value", "FieldValueForbidden")]
        );
        let sys = json!({"metadata": {"name": "system-foo"}, "value": 1});
        assert_eq!(
            f(&validate_priority_class(&sys, None)),
            vec![("metadata.name", "FieldValueForbidden")]
        );
        let known =
            json!({"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000i64});
        assert_eq!(f(&validate_priority_class(&known, None)), vec![]);
        let missing = json!({"metadata": {"name": "x"}});
        assert_eq!(
            f(&validate_priority_class(&missing, None)),
            vec![("value", "FieldValueRequired")]
        );
        let changed = json!({"metadata": {"name": "high"}, "value": 1001});
        assert_eq!(
            f(&validate_priority_class(&changed, Some(&ok))),
            vec![("value", "FieldValueForbidden")]
        );
    }

    #[test]
    fn events() {
        let e = json!({"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}});
        assert_eq!(
            f(&validate_event(&e, "")),
            vec![("involvedObject.namespace", "FieldValueInvalid")]
        );
        assert_eq!(
            f(&validate_event(&json!({}), "")),
            vec![("involvedObject", "FieldValueRequired")]
        );
        let v1 = json!({"eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "kubesim.io/x",
                        "reportingInstance": "i", "action": "Run", "reason": "R", "type": "Normal"});
        assert_eq!(f(&validate_event(&v1, "events.k8s.io")), vec![]);
    }
}
