//! Index attributes kept beside each stored object: its selectable field
//! values and its labels, so list and watch filter without parsing.
//!
//! Layout: `[value, value, ..., label, value, label, value, ...]`: first
//! the value of each indexed field, in the order `field_values` gives
//! them (the names are the resource's, so a record need not repeat them:
//! an Event's names were two thirds of its index), then the labels.

use kubesim_core::selector::{
    field_values, indexed_count, indexed_slot, FieldSelector, LabelSelector,
};
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
    let fields = fields.iter().map(|(_, v)| v.as_ref());
    let labels = labels.iter().flat_map(|(k, v)| [*k, *v]);
    Attrs::new(fields.chain(labels))
}

/// The value in `slot` of the index (a field's slot, from `indexed_slot`).
pub(crate) fn value(attrs: &Attrs, slot: usize) -> Option<&str> {
    attrs.iter().nth(slot)
}

/// The value of the indexed field `key` of a `resource` object.
pub(crate) fn field<'a>(resource: &ResourceInfo, attrs: &'a Attrs, key: &str) -> Option<&'a str> {
    value(attrs, indexed_slot(resource, key)?)
}

/// The value of the label `key`, past the `fields` field values.
fn label<'a>(fields: usize, attrs: &'a Attrs, key: &str) -> Option<&'a str> {
    let mut it = attrs.iter().skip(fields);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        if k == key {
            return Some(v);
        }
    }
    None
}

/// What a list or watch asks for, of one resource's objects.
#[derive(Debug, Clone)]
pub struct Filter {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// Where the field of each of `fields`' requirements sits in a
    /// record's index, in their order, and how many field values come
    /// before the labels.
    slots: Vec<Option<usize>>,
    indexed: usize,
}

impl Filter {
    pub fn new(resource: &ResourceInfo, labels: LabelSelector, fields: FieldSelector) -> Self {
        let slots = fields
            .requirements
            .iter()
            .map(|r| indexed_slot(resource, &r.field))
            .collect();
        Filter {
            labels,
            fields,
            slots,
            indexed: indexed_count(resource),
        }
    }

    pub fn is_everything(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }

    pub fn matches(&self, attrs: &Attrs) -> bool {
        if self.is_everything() {
            return true;
        }
        let mut fields = self.fields.requirements.iter().zip(&self.slots);
        fields.all(|(r, slot)| r.matches(&|_| value(attrs, (*slot)?)))
            && self.labels.matches(&|k| label(self.indexed, attrs, k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(group: &str, version: &str, plural: &str) -> std::sync::Arc<ResourceInfo> {
        kubesim_core::Registry::new()
            .get(group, version, plural)
            .expect("built in")
    }

    #[test]
    fn labels_are_the_string_ones_in_key_order() {
        let pods = res("", "v1", "pods");
        let pod = serde_json::json!({"metadata": {"name": "p", "namespace": "d",
            "labels": {"z": "1", "a": "2", "n": 3, "m": "4"}}, "spec": {"nodeName": "x"}});
        let attrs = compute(&pods, &pod);
        let all: Vec<&str> = attrs.iter().collect();
        assert_eq!(all[all.len() - 6..], ["a", "2", "m", "4", "z", "1"]);
        assert_eq!(all.len(), indexed_count(&pods) + 6);
        assert_eq!(label(indexed_count(&pods), &attrs, "n"), None);
        assert_eq!(label(indexed_count(&pods), &attrs, "m"), Some("4"));
        assert_eq!(field(&pods, &attrs, "spec.nodeName"), Some("x"));
        assert_eq!(field(&pods, &attrs, "spec.hostNetwork"), Some("false"));
        assert_eq!(field(&pods, &attrs, "a"), None);
    }

    #[test]
    fn an_empty_field_value_does_not_hide_the_labels() {
        let pods = res("", "v1", "pods");
        let pod = serde_json::json!({"metadata": {"name": "p", "labels": {"app": "web"}}});
        let attrs = compute(&pods, &pod);
        assert_eq!(field(&pods, &attrs, "spec.nodeName"), Some(""));
        let filter = |l: &str, f: &str| {
            let labels = LabelSelector::parse(l).expect("label selector");
            let fields = FieldSelector::parse(f).expect("field selector");
            Filter::new(&pods, labels, fields).matches(&attrs)
        };
        assert!(filter("app=web", "spec.nodeName="));
        assert!(!filter("app=db", "spec.nodeName="));
        assert!(!filter("app=web", "spec.nodeName=n1"));
        assert!(filter("", "metadata.name=p,status.phase!=Running"));
    }

    #[test]
    fn events_are_selected_by_either_apis_names_from_one_index() {
        let core = res("", "v1", "events");
        let ev = serde_json::json!({
            "metadata": {"name": "e", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p1", "uid": "u1"},
            "reason": "Scheduled", "reportingComponent": "sched"
        });
        let attrs = compute(&core, &ev);
        assert_eq!(attrs.iter().count(), indexed_count(&core));
        for (f, v) in [
            ("involvedObject.name", "p1"),
            ("regarding.name", "p1"),
            ("regarding.uid", "u1"),
            ("regarding.fieldPath", ""),
            ("reportingController", "sched"),
            ("reportingComponent", "sched"),
            ("reason", "Scheduled"),
        ] {
            assert_eq!(field(&core, &attrs, f), Some(v), "{f}");
        }
        let v1 = res("events.k8s.io", "v1", "events");
        let fields = FieldSelector::parse("regarding.name=p1,reportingController=sched")
            .expect("field selector");
        assert!(Filter::new(&v1, LabelSelector::everything(), fields.clone()).matches(&attrs));
        assert!(Filter::new(&core, LabelSelector::everything(), fields).matches(&attrs));
        let other = FieldSelector::parse("regarding.name=p2").expect("field selector");
        assert!(!Filter::new(&v1, LabelSelector::everything(), other).matches(&attrs));
    }
}
