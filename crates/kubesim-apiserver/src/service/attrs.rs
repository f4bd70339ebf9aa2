//! Index attributes kept beside each stored object: its selectable field
//! values and its labels, so list and watch filter without parsing.
//!
//! Layout: `[field, value, field, value, ..., "", label, value, ...]`.
//! Field names are never empty, so the empty string separates the halves.

use kubesim_core::selector::{field_values, FieldSelector, LabelSelector};
use kubesim_core::ResourceInfo;
use kubesim_store::Attrs;
use serde_json::Value;

pub fn compute(resource: &ResourceInfo, obj: &Value) -> Attrs {
    let fields = field_values(resource, obj);
    let labels = kubesim_core::meta::labels(obj);
    let mut v: Vec<Box<str>> = Vec::with_capacity(fields.len() * 2 + 1 + labels.len() * 2);
    for (f, val) in fields {
        v.push(f.into());
        v.push(val.into());
    }
    v.push("".into());
    for (k, val) in labels {
        v.push(k.into());
        v.push(val.into());
    }
    v.into_boxed_slice()
}

fn split(attrs: &[Box<str>]) -> (&[Box<str>], &[Box<str>]) {
    // Only names sit at even positions; a value may be empty (an unbound
    // pod's spec.nodeName), so the separator is the first empty name.
    match attrs
        .iter()
        .step_by(2)
        .position(|s| s.is_empty())
        .map(|i| i * 2)
    {
        Some(i) => (&attrs[..i], &attrs[i + 1..]),
        None => (attrs, &[]),
    }
}

fn lookup<'a>(pairs: &'a [Box<str>], key: &str) -> Option<&'a str> {
    pairs
        .chunks_exact(2)
        .find(|c| &*c[0] == key)
        .map(|c| &*c[1])
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

    pub fn matches(&self, attrs: &[Box<str>]) -> bool {
        if self.is_everything() {
            return true;
        }
        let (fields, labels) = split(attrs);
        self.fields.matches(&|f| lookup(fields, f)) && self.labels.matches(&|k| lookup(labels, k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_field_value_is_not_the_separator() {
        let attrs: Vec<Box<str>> = ["spec.nodeName", "", "", "app", "web"]
            .into_iter()
            .map(Into::into)
            .collect();
        let (fields, labels) = split(&attrs);
        assert_eq!(fields.len(), 2);
        assert_eq!(lookup(labels, "app"), Some("web"));
    }
}
