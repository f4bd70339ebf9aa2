//! The rules of an aggregated ClusterRole: the union of the rules of the
//! ClusterRoles its `aggregationRule` selects, as kube-controller-manager's
//! clusterrole-aggregation controller and the API server's bootstrap
//! compute them.

use serde_json::Value;

use crate::meta;
use crate::selector::label::LabelSelector;

/// The rules `role` should hold, given every ClusterRole (`roles`), or
/// None when it has no aggregationRule. Selected roles are taken in name
/// order, each rule once, the role itself left out.
pub fn aggregated_rules(role: &Value, roles: &[Value]) -> Option<Vec<Value>> {
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")?
        .as_array()?;
    let own = meta::name(role);
    let mut sorted: Vec<&Value> = roles.iter().filter(|r| meta::name(r) != own).collect();
    sorted.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
    let mut rules: Vec<Value> = Vec::new();
    for sel in selectors {
        // A selector that does not parse selects nothing, as upstream's
        // controller skips it.
        let Ok(sel) = LabelSelector::from_json(sel) else {
            continue;
        };
        for r in &sorted {
            let labels = r.pointer("/metadata/labels");
            let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
            if !sel.matches(&get) {
                continue;
            }
            for rule in r
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !rules.contains(rule) {
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unions_the_selected_roles_in_name_order() {
        let agg = json!({"metadata": {"name": "admin"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to-admin": "true"}}]}});
        let b = json!({"metadata": {"name": "b", "labels": {"to-admin": "true"}}, "rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        let a = json!({"metadata": {"name": "a", "labels": {"to-admin": "true"}}, "rules": [{"verbs": ["list"]}]});
        let other = json!({"metadata": {"name": "c"}, "rules": [{"verbs": ["delete"]}]});
        let all = vec![agg.clone(), b, a, other];
        assert_eq!(
            aggregated_rules(&agg, &all),
            Some(vec![json!({"verbs": ["list"]}), json!({"verbs": ["get"]})])
        );
        assert_eq!(aggregated_rules(&all[3], &all), None);
    }
}
