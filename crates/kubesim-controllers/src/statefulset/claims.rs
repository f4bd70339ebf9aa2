//! Stable storage: for every entry of `spec.volumeClaimTemplates`, pod
//! `<set>-<i>` gets the PersistentVolumeClaim `<template>-<set>-<i>` and a
//! volume named after the template that mounts it. The names depend only
//! on the ordinal, so a pod recreated after a deletion, a failure or an
//! update finds the same claims (and the data behind them) again.

use kubesim_core::meta;
use serde_json::{json, Map, Value};

use super::ordinal;

pub use crate::storage_protection::claims_ref;

/// The set's claim templates (PersistentVolumeClaim objects).
pub fn templates(set: &Value) -> &[Value] {
    set.pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `<template>-<set>-<ordinal>`, upstream's naming (volume plugins spread
/// claims over zones by parsing it, so it is part of the contract).
pub fn claim_name(template: &Value, set: &str, ordinal: i64) -> String {
    format!("{}-{set}-{ordinal}", meta::name(template))
}

/// The ordinal whose claim from `template` is called `claim`, if any.
pub fn claim_ordinal(template: &Value, set: &str, claim: &str) -> Option<i64> {
    ordinal(&format!("{}-{set}", meta::name(template)), claim)
}

/// Whether the claim named `claim` would be one of `set`'s.
pub fn is_claim_of(set: &Value, claim: &str) -> bool {
    templates(set)
        .iter()
        .any(|t| claim_ordinal(t, meta::name(set), claim).is_some())
}

/// Metadata the server sets; a template copied from a stored object may
/// carry it, and a create must not.
const SERVER_FIELDS: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// The claim for `ordinal` made from `template`: the template as it is,
/// named for the ordinal, in the set's namespace, labelled with the
/// template's labels and the selector's `matchLabels` on top (as upstream,
/// so the claims can be listed with the set's selector). No status: the
/// server starts every claim Pending.
pub fn new_claim(set: &Value, template: &Value, ordinal: i64) -> Value {
    let mut m: Map<String, Value> = template
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for f in SERVER_FIELDS {
        m.remove(f);
    }
    let mut labels = m
        .remove("labels")
        .and_then(|l| match l {
            Value::Object(l) => Some(l),
            _ => None,
        })
        .unwrap_or_default();
    if let Some(sel) = set
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
    {
        labels.extend(sel.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    m.insert(
        "name".into(),
        json!(claim_name(template, meta::name(set), ordinal)),
    );
    m.insert("namespace".into(), json!(meta::namespace(set)));
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": Value::Object(m),
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Gives a pod spec one volume per claim template, named after the
/// template and mounting the ordinal's claim; a volume of the pod template
/// with the same name is replaced, as upstream does, so `volumeMounts`
/// naming the template reach the claim.
pub fn mount_claims(spec: &mut Value, set: &Value, ordinal: i64) {
    let ts = templates(set);
    if ts.is_empty() {
        return;
    }
    let mut volumes: Vec<Value> = ts
        .iter()
        .map(|t| {
            json!({"name": meta::name(t), "persistentVolumeClaim": {
                "claimName": claim_name(t, meta::name(set), ordinal)}})
        })
        .collect();
    let others = spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| {
            let name = v.get("name").and_then(Value::as_str).unwrap_or("");
            !ts.iter().any(|t| meta::name(t) == name)
        })
        .cloned()
        .collect::<Vec<_>>();
    volumes.extend(others);
    if !spec.is_object() {
        *spec = json!({});
    }
    spec["volumes"] = Value::Array(volumes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns", "uid": "s1"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "volumeClaimTemplates": [
                    {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                     "metadata": {"name": "data", "labels": {"tier": "db", "app": "other"},
                        "annotations": {"a": "b"}, "creationTimestamp": null},
                     "spec": {"accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}},
                     "status": {"phase": "Pending"}},
                    {"metadata": {"name": "logs"}, "spec": {}}]}})
    }

    #[test]
    fn claims_are_named_per_template_and_ordinal() {
        let s = set();
        let ts = templates(&s);
        assert_eq!(claim_name(&ts[0], "web", 3), "data-web-3");
        assert_eq!(claim_ordinal(&ts[0], "web", "data-web-3"), Some(3));
        assert_eq!(claim_ordinal(&ts[0], "web", "data-web-03"), None);
        assert_eq!(claim_ordinal(&ts[1], "web", "data-web-3"), None);
        assert!(is_claim_of(&s, "logs-web-0"));
        assert!(!is_claim_of(&s, "logs-webby-0"));
    }

    #[test]
    fn claim_takes_template_and_selector_labels() {
        let s = set();
        let c = new_claim(&s, &templates(&s)[0], 1);
        assert_eq!(c["metadata"]["name"], "data-web-1");
        assert_eq!(c["metadata"]["namespace"], "ns");
        // The selector's labels win over the template's.
        assert_eq!(c["metadata"]["labels"], json!({"tier": "db", "app": "web"}));
        assert_eq!(c["metadata"]["annotations"]["a"], "b");
        assert!(c["metadata"].get("creationTimestamp").is_none());
        assert_eq!(c["spec"]["resources"]["requests"]["storage"], "1Gi");
        assert!(c.get("status").is_none());
        let bare = new_claim(&s, &templates(&s)[1], 0);
        assert_eq!(bare["metadata"]["labels"], json!({"app": "web"}));
    }

    #[test]
    fn template_volumes_replace_namesakes_and_keep_the_rest() {
        let s = set();
        let mut spec = json!({"volumes": [
            {"name": "data", "emptyDir": {}},
            {"name": "config", "configMap": {"name": "c"}}]});
        mount_claims(&mut spec, &s, 2);
        assert_eq!(
            spec["volumes"],
            json!([
                {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-2"}},
                {"name": "logs", "persistentVolumeClaim": {"claimName": "logs-web-2"}},
                {"name": "config", "configMap": {"name": "c"}}])
        );
        let mut untouched = json!({"containers": []});
        mount_claims(
            &mut untouched,
            &json!({"metadata": {"name": "x"}, "spec": {}}),
            0,
        );
        assert!(untouched.get("volumes").is_none());
    }
}
