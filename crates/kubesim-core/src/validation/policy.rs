//! PodDisruptionBudgets and HorizontalPodAutoscalers.

use serde_json::Value;

use super::fields::{self, arr, child, has, index, s};
use super::names;
use super::selector::validate_label_selector;
use super::workloads::{int_or_percent, not_more_than_100_percent};
use crate::error::Cause;

pub fn validate_pdb(pdb: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let spec = pdb.get("spec").unwrap_or(&empty);
    if has(spec, "minAvailable") && has(spec, "maxUnavailable") {
        out.push(fields::invalid(
            "spec",
            spec,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for k in ["minAvailable", "maxUnavailable"] {
        if let Some(v) = spec.get(k).filter(|v| !v.is_null()) {
            let p = child("spec", k);
            int_or_percent(v, &p, &mut out);
            not_more_than_100_percent(v, &p, &mut out);
        }
    }
    if let Some(sel) = spec.get("selector").filter(|v| v.is_object()) {
        out.extend(validate_label_selector(sel, "spec.selector"));
    }
    let policy = s(spec, "unhealthyPodEvictionPolicy");
    if !policy.is_empty() && policy != "AlwaysAllow" && policy != "IfHealthyBudget" {
        out.push(fields::unsupported(
            "spec.unhealthyPodEvictionPolicy",
            policy,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
    out
}

const METRIC_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const TARGET_TYPES: &[&str] = &["AverageValue", "Utilization", "Value"];

pub fn validate_hpa(hpa: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let spec = hpa.get("spec").unwrap_or(&empty);
    let min = spec.get("minReplicas").and_then(Value::as_i64);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if let Some(m) = min.filter(|m| *m < 1) {
        out.push(fields::invalid_int(
            "spec.minReplicas",
            m,
            "must be greater than or equal to 1",
        ));
    }
    if max < 1 {
        out.push(fields::invalid_int(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if let Some(m) = min {
        if max < m {
            out.push(fields::invalid_int(
                "spec.maxReplicas",
                max,
                "must be greater than or equal to `minReplicas`",
            ));
        }
    }
    let r = spec.get("scaleTargetRef").unwrap_or(&empty);
    for k in ["kind", "name"] {
        let v = s(r, k);
        let p = child("spec.scaleTargetRef", k);
        if v.is_empty() {
            out.push(fields::required(p));
        } else {
            fields::each_invalid(&mut out, &p, v, names::path_segment_name(v, false));
        }
    }
    for (i, m) in arr(spec, "metrics").iter().enumerate() {
        validate_metric(m, &index("spec.metrics", i), &mut out);
    }
    out
}

fn validate_metric(m: &Value, p: &str, out: &mut Vec<Cause>) {
    let ty = s(m, "type");
    if ty.is_empty() {
        out.push(fields::required_msg(
            child(p, "type"),
            "must specify a metric source type",
        ));
        return;
    }
    if !METRIC_TYPES.contains(&ty) {
        out.push(fields::unsupported(child(p, "type"), ty, METRIC_TYPES));
        return;
    }
    // The source lives under the lower-camel form of its type name.
    let mut field = ty.to_string();
    if let Some(first) = field.get_mut(0..1) {
        first.make_ascii_lowercase();
    }
    let sp = child(p, &field);
    let Some(src) = m.get(&field).filter(|v| v.is_object()) else {
        out.push(fields::required_msg(
            sp,
            &format!("must populate information for the given metric source (only allowed when type is {ty})"),
        ));
        return;
    };
    if (ty == "Resource" || ty == "ContainerResource") && s(src, "name").is_empty() {
        out.push(fields::required_msg(
            child(&sp, "name"),
            "must specify a resource name",
        ));
    }
    let empty = Value::Null;
    let target = src.get("target").unwrap_or(&empty);
    let tp = child(&sp, "target");
    let tt = s(target, "type");
    if tt.is_empty() {
        out.push(fields::required_msg(
            child(&tp, "type"),
            "must specify a metric target type",
        ));
    } else if !TARGET_TYPES.contains(&tt) {
        out.push(fields::unsupported(child(&tp, "type"), tt, TARGET_TYPES));
    }
    if let Some(u) = target.get("averageUtilization").and_then(Value::as_i64) {
        if u <= 0 {
            out.push(fields::invalid_int(
                child(&tp, "averageUtilization"),
                u,
                "must be greater than 0",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::validation::field_reasons as f;

    #[test]
    fn pdb_rules() {
        let ok =
            json!({"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}}});
        assert_eq!(f(&validate_pdb(&ok)), vec![]);
        let both = json!({"spec": {"minAvailable": 1, "maxUnavailable": "150%"}});
        assert_eq!(
            f(&validate_pdb(&both)),
            vec![
                ("spec", "FieldValueInvalid"),
                ("spec.maxUnavailable", "FieldValueInvalid")
            ]
        );
        assert!(validate_pdb(&both)[0]
            .message
            .ends_with("minAvailable and maxUnavailable cannot be both set"));
    }

    #[test]
    fn hpa_rules() {
        let ok = json!({"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}});
        assert_eq!(f(&validate_hpa(&ok)), vec![]);
        let bad = json!({"spec": {"scaleTargetRef": {}, "minReplicas": 5, "maxReplicas": 2,
            "metrics": [{"type": "Resource"}]}});
        assert_eq!(
            f(&validate_hpa(&bad)),
            vec![
                ("spec.maxReplicas", "FieldValueInvalid"),
                ("spec.scaleTargetRef.kind", "FieldValueRequired"),
                ("spec.scaleTargetRef.name", "FieldValueRequired"),
                ("spec.metrics[0].resource", "FieldValueRequired"),
            ]
        );
    }
}
