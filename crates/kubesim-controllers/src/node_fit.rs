//! Whether a pod may run on a node as far as the node's labels, name and
//! taints decide: the nodeSelector, required node affinity, and taint
//! tolerations. The DaemonSet controller uses it to pick its nodes.

use std::collections::BTreeMap;

use kubesim_core::meta;
use serde_json::Value;

fn str_list(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// One nodeSelectorRequirement against a value lookup.
fn requirement(req: &Value, get: &dyn Fn(&str) -> Option<String>) -> bool {
    let key = req.get("key").and_then(Value::as_str).unwrap_or("");
    let op = req.get("operator").and_then(Value::as_str).unwrap_or("");
    let values = str_list(req.get("values"));
    let got = get(key);
    match op {
        "In" => got.is_some_and(|g| values.contains(&g.as_str())),
        "NotIn" => got.is_none_or(|g| !values.contains(&g.as_str())),
        "Exists" => got.is_some(),
        "DoesNotExist" => got.is_none(),
        "Gt" | "Lt" => {
            let (Some(g), Some(v)) = (
                got.and_then(|g| g.parse::<i64>().ok()),
                values.first().and_then(|v| v.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if op == "Gt" {
                g > v
            } else {
                g < v
            }
        }
        _ => false,
    }
}

/// A nodeSelectorTerm: every expression on labels and every field match.
/// An empty term matches nothing, as upstream.
fn term(t: &Value, labels: &BTreeMap<String, String>, node_name: &str) -> bool {
    let exprs = t.get("matchExpressions").and_then(Value::as_array);
    let fields = t.get("matchFields").and_then(Value::as_array);
    if exprs.is_none_or(|e| e.is_empty()) && fields.is_none_or(|f| f.is_empty()) {
        return false;
    }
    let by_label = |k: &str| labels.get(k).cloned();
    let by_field = |k: &str| (k == "metadata.name").then(|| node_name.to_string());
    exprs
        .into_iter()
        .flatten()
        .all(|r| requirement(r, &by_label))
        && fields
            .into_iter()
            .flatten()
            .all(|r| requirement(r, &by_field))
}

/// nodeSelector and required node affinity of `pod_spec` against `node`.
pub fn matches_node(pod_spec: &Value, node: &Value) -> bool {
    let labels = meta::labels(node);
    if let Some(sel) = pod_spec.get("nodeSelector").and_then(Value::as_object) {
        if !sel
            .iter()
            .all(|(k, v)| labels.get(k).map(String::as_str) == v.as_str())
        {
            return false;
        }
    }
    let terms = pod_spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    match terms {
        None => true,
        Some(ts) => ts.iter().any(|t| term(t, &labels, meta::name(node))),
    }
}

fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let effect = s(toleration, "effect");
    if !effect.is_empty() && effect != s(taint, "effect") {
        return false;
    }
    let key = s(toleration, "key");
    if !key.is_empty() && key != s(taint, "key") {
        return false;
    }
    match s(toleration, "operator").as_str() {
        "Exists" => true,
        "" | "Equal" => s(toleration, "value") == s(taint, "value"),
        _ => false,
    }
}

/// Taints with effect NoSchedule or NoExecute that no toleration covers.
pub fn untolerated_taints<'a>(pod_spec: &Value, node: &'a Value) -> Vec<&'a Value> {
    let tolerations: Vec<&Value> = pod_spec
        .get("tolerations")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| {
            matches!(
                t.get("effect").and_then(Value::as_str),
                Some("NoSchedule" | "NoExecute")
            )
        })
        .filter(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_affinity_and_taints() {
        let node = json!({"metadata": {"name": "n1", "labels": {"disk": "ssd", "cores": "8"}},
            "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"},
                                {"key": "soft", "effect": "PreferNoSchedule"}]}});
        assert!(matches_node(
            &json!({"nodeSelector": {"disk": "ssd"}}),
            &node
        ));
        assert!(!matches_node(
            &json!({"nodeSelector": {"disk": "hdd"}}),
            &node
        ));
        let aff = |e: Value| json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [e]}}}});
        assert!(matches_node(
            &aff(
                json!({"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]})
            ),
            &node
        ));
        assert!(!matches_node(
            &aff(
                json!({"matchExpressions": [{"key": "disk", "operator": "NotIn", "values": ["ssd"]}]})
            ),
            &node
        ));
        assert!(matches_node(
            &aff(
                json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]})
            ),
            &node
        ));
        assert!(!matches_node(
            &aff(
                json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]})
            ),
            &node
        ));
        // PreferNoSchedule never blocks; the gpu taint does until tolerated.
        assert_eq!(untolerated_taints(&json!({}), &node).len(), 1);
        assert!(untolerated_taints(
            &json!({"tolerations": [{"key": "gpu", "operator": "Exists"}]}),
            &node
        )
        .is_empty());
        assert!(untolerated_taints(
            &json!({"tolerations": [{"key": "gpu", "value": "yes"}]}),
            &node
        )
        .is_empty());
        assert_eq!(
            untolerated_taints(
                &json!({"tolerations": [{"key": "gpu", "value": "no"}]}),
                &node
            )
            .len(),
            1
        );
    }
}
