//! The default StorageClass, as upstream's DefaultStorageClass admission
//! and its retroactive assignment pick it.

use serde_json::Value;

const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
const DEFAULT_CLASS_BETA: &str = "storageclass.beta.kubernetes.io/is-default-class";

/// Whether a StorageClass is marked the default.
pub fn is_default_class(class: &Value) -> bool {
    let Some(ann) = class.pointer("/metadata/annotations") else {
        return false;
    };
    [DEFAULT_CLASS, DEFAULT_CLASS_BETA]
        .iter()
        .any(|k| ann.get(*k).and_then(Value::as_str) == Some("true"))
}

/// The name of the default class among `classes`: of several marked
/// default, the newest, and of those created at once the first by name.
pub fn default_class_name<'a>(classes: impl IntoIterator<Item = &'a Value>) -> Option<String> {
    let created = |c: &Value| {
        c.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
    };
    let name = |c: &'a Value| {
        c.pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    classes
        .into_iter()
        .filter(|c| is_default_class(c))
        .max_by(|a, b| {
            created(a)
                .cmp(&created(b))
                .then_with(|| name(b).cmp(name(a)))
        })
        .map(|c| name(c).to_string())
}

/// Whether a claim names no class at all (an empty name asks for none, and
/// is left alone).
pub fn claim_wants_default_class(claim: &Value) -> bool {
    matches!(
        claim.pointer("/spec/storageClassName"),
        None | Some(Value::Null)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, created: &str, default: bool) -> Value {
        let ann = if default {
            json!({DEFAULT_CLASS: "true"})
        } else {
            json!({})
        };
        json!({"metadata": {"name": name, "creationTimestamp": created, "annotations": ann}})
    }

    #[test]
    fn the_newest_default_wins_and_names_break_ties() {
        let classes = [
            class("old", "2024-01-01T00:00:00Z", true),
            class("plain", "2025-01-01T00:00:00Z", false),
            class("new-b", "2024-06-01T00:00:00Z", true),
            class("new-a", "2024-06-01T00:00:00Z", true),
        ];
        assert_eq!(default_class_name(&classes), Some("new-a".to_string()));
        assert_eq!(default_class_name(&classes[1..2]), None);
    }

    #[test]
    fn only_claims_without_a_class_want_the_default() {
        assert!(claim_wants_default_class(&json!({"spec": {}})));
        assert!(claim_wants_default_class(
            &json!({"spec": {"storageClassName": null}})
        ));
        assert!(!claim_wants_default_class(
            &json!({"spec": {"storageClassName": ""}})
        ));
        assert!(!claim_wants_default_class(
            &json!({"spec": {"storageClassName": "x"}})
        ));
    }
}
