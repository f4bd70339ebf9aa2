//! Index attributes kept beside each stored object: its selectable field
//! values and its labels, so list and watch filter without parsing.
//!
//! Layout: `[field, value, field, value, ..., "", label, value, ...]`.
//! Field names are never empty, so the empty string separates the halves.

use kubesim_core::selector::{field_values, FieldSelector, LabelSelector};
use kubesim_core::ResourceInfo;
use kubesim_store::Attrs;
use serde_json::Value;

/// Computed on every write, so the strings are borrowed from `obj`: the
/// labels are those `meta::labels` gives (string values, in key order)
/// without building its map.
pub fn compute(resource: &ResourceInfo, obj: &Value) -> Attrs {
    let fields = field_values(resource, obj);
    let mut labels: Vec<(&str, &str)> = kubesim_core::meta::metadata(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
        .collect();
    // Keys of one map are distinct, so this is the BTreeMap's order.
    labels.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let fields = fields.iter().flat_map(|(f, v)| [*f, v.as_ref()]);
    let labels = labels.iter().flat_map(|(k, v)| [*k, *v]);
    Attrs::new(fields.chain([""]).chain(labels))
}

/// The value of field `key` (`labels` false) or of label `key` (true).
pub(crate) fn lookup<'a>(attrs: &'a Attrs, labels: bool, key: &str) -> Option<&'a str> {
    let mut it = attrs.iter();
    let mut in_labels = false;
    while let Some(k) = it.next() {
        // Only a field-name slot can hold the separator: a field's value
        // may itself be empty (an unscheduled pod's spec.nodeName).
        if k.is_empty() && !in_labels {
            if !labels {
                return None;
            }
            in_labels = true;
            continue;
        }
        let v = it.next()?;
        if in_labels == labels && k == key {
            return Some(v);
        }
    }
    None
}

/// What a list or watch asks for.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
}

impl Filter {
    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub fn matches(&self, attrs: &Attrs) -> bool {
        if self.is_everything() {
            return true;
        }
        self.fields.matches(&|f| lookup(attrs, false, f))
            && self.labels.matches(&|k| lookup(attrs, true, k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_the_string_ones_in_key_order() {
        let pods = kubesim_core::Registry::new()
            .get("", "v1", "pods")
            .expect("pods are built in");
        let pod = serde_json::json!({"metadata": {"name": "p", "namespace": "d",
            "labels": {"z": "1", "a": "2", "n": 3, "m": "4"}}, "spec": {"nodeName": "x"}});
        let attrs = compute(&pods, &pod);
        let all: Vec<&str> = attrs.iter().collect();
        assert_eq!(all[all.len() - 7..], ["", "a", "2", "m", "4", "z", "1"]);
        assert_eq!(lookup(&attrs, true, "n"), None);
        assert_eq!(lookup(&attrs, false, "spec.nodeName"), Some("x"));
        assert_eq!(lookup(&attrs, false, "spec.hostNetwork"), Some("false"));
    }

    #[test]
    fn an_empty_field_value_does_not_hide_the_labels() {
        let attrs = Attrs::new(["spec.nodeName", "", "", "app", "web"]);
        assert_eq!(lookup(&attrs, false, "spec.nodeName"), Some(""));
        assert_eq!(lookup(&attrs, true, "app"), Some("web"));
        assert_eq!(lookup(&attrs, false, "app"), None);
        assert_eq!(lookup(&attrs, true, "spec.nodeName"), None);
    }
}
