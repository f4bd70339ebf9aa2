//! `metav1.LabelSelector` checks and matching, as workload validation needs.

use serde_json::Value;

use super::fields::{self, arr, child, index, s};
use super::metadata::validate_labels;
use super::names;
use crate::error::Cause;

/// Upstream's `ValidateLabelSelector`.
pub fn validate_label_selector(sel: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    for (i, req) in arr(sel, "matchExpressions").iter().enumerate() {
        let p = index(&child(path, "matchExpressions"), i);
        let op = s(req, "operator");
        let values = arr(req, "values");
        match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    out.push(fields::required_msg(
                        child(&p, "values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    out.push(fields::forbidden(
                        child(&p, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => out.push(fields::invalid_str(
                child(&p, "operator"),
                other,
                "not a valid selector operator",
            )),
        }
        let k = s(req, "key");
        fields::each_invalid(&mut out, &child(&p, "key"), k, names::qualified_name(k));
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            fields::each_invalid(
                &mut out,
                &index(&child(&p, "values"), j),
                v,
                names::label_value(v),
            );
        }
    }
    out.extend(validate_labels(
        sel.get("matchLabels"),
        &child(path, "matchLabels"),
    ));
    out
}

/// True when the selector has no requirements at all.
pub fn is_empty(sel: &Value) -> bool {
    fields::obj(sel, "matchLabels").is_none_or(|m| m.is_empty())
        && arr(sel, "matchExpressions").is_empty()
}

/// Whether `labels` (an object of strings, or absent) satisfy `sel`.
pub fn matches(sel: &Value, labels: Option<&Value>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    if let Some(m) = fields::obj(sel, "matchLabels") {
        for (k, v) in m {
            if get(k) != v.as_str() {
                return false;
            }
        }
    }
    for req in arr(sel, "matchExpressions") {
        let have = get(s(req, "key"));
        let in_values = |h: &str| arr(req, "values").iter().any(|v| v.as_str() == Some(h));
        let ok = match s(req, "operator") {
            "In" => have.is_some_and(in_values),
            "NotIn" => !have.is_some_and(in_values),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matching() {
        let sel = json!({"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                 {"key": "x", "operator": "DoesNotExist"}]});
        assert!(matches(&sel, Some(&json!({"app": "web", "tier": "a"}))));
        assert!(!matches(&sel, Some(&json!({"app": "web", "tier": "c"}))));
        assert!(!matches(
            &sel,
            Some(&json!({"app": "web", "tier": "a", "x": ""}))
        ));
        assert!(!matches(&sel, None));
        assert!(is_empty(&json!({})));
    }

    #[test]
    fn selector_errors() {
        let sel = json!({"matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Has"}]});
        let c = validate_label_selector(&sel, "spec.selector");
        let f: Vec<&str> = c.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            f,
            vec![
                "spec.selector.matchExpressions[0].values",
                "spec.selector.matchExpressions[1].values",
                "spec.selector.matchExpressions[2].operator"
            ]
        );
    }
}
