//! CustomResourceDefinition validation: the parts the server relies on to
//! register the new resource (group, names, scope, a single storage version).

use std::collections::BTreeSet;

use serde_json::Value;

use super::fields::{self, arr, child, index, s};
use super::names;
use crate::error::Cause;

pub fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let spec = crd.get("spec").unwrap_or(&empty);
    let group = s(spec, "group");
    let names_v = spec.get("names").unwrap_or(&empty);
    let plural = s(names_v, "plural");
    let name = crd.get("metadata").map_or("", |m| s(m, "name"));
    if name != format!("{plural}.{group}") {
        out.push(fields::invalid_str(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        out.push(fields::required("spec.group"));
    } else {
        fields::each_invalid(
            &mut out,
            "spec.group",
            group,
            names::dns1123_subdomain(group),
        );
        if group.split('.').count() < 2 {
            out.push(fields::invalid_str(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    let scope = s(spec, "scope");
    if scope.is_empty() {
        out.push(fields::required("spec.scope"));
    } else if scope != "Cluster" && scope != "Namespaced" {
        out.push(fields::unsupported(
            "spec.scope",
            scope,
            &["Cluster", "Namespaced"],
        ));
    }
    validate_names(names_v, "spec.names", &mut out);
    validate_versions(spec, &mut out);
    if let Some(old) = old {
        let old_spec = old.get("spec").unwrap_or(&empty);
        if s(old_spec, "group") != group {
            out.push(fields::immutable("spec.group", &Value::from(group)));
        }
        let old_plural = old_spec.get("names").map_or("", |n| s(n, "plural"));
        if old_plural != plural {
            out.push(fields::immutable("spec.names.plural", &Value::from(plural)));
        }
    }
    out
}

fn validate_names(n: &Value, p: &str, out: &mut Vec<Cause>) {
    for k in ["plural", "singular"] {
        let v = s(n, k);
        let path = child(p, k);
        if v.is_empty() {
            out.push(fields::required(path));
        } else {
            let msgs = names::dns1035_label(v);
            if !msgs.is_empty() {
                out.push(fields::invalid_str(path, v, &msgs.join(",")));
            }
        }
    }
    for k in ["kind", "listKind"] {
        let v = s(n, k);
        let path = child(p, k);
        if v.is_empty() {
            out.push(fields::required(path));
        } else {
            let lower = v.to_lowercase();
            let msgs = names::dns1035_label(&lower);
            if !msgs.is_empty() {
                out.push(fields::invalid_str(
                    path,
                    v,
                    &format!(
                        "may have mixed case, but should otherwise match: {}",
                        msgs.join(",")
                    ),
                ));
            }
        }
    }
    if !s(n, "kind").is_empty() && s(n, "kind") == s(n, "listKind") {
        out.push(fields::invalid_str(
            child(p, "listKind"),
            s(n, "listKind"),
            "kind and listKind may not be the same",
        ));
    }
    for (i, sn) in arr(n, "shortNames").iter().enumerate() {
        let v = sn.as_str().unwrap_or("");
        let msgs = names::dns1035_label(v);
        if !msgs.is_empty() {
            out.push(fields::invalid_str(
                index(&child(p, "shortNames"), i),
                v,
                &msgs.join(","),
            ));
        }
    }
}

fn validate_versions(spec: &Value, out: &mut Vec<Cause>) {
    let versions = arr(spec, "versions");
    if versions.is_empty() {
        out.push(fields::required_msg(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return;
    }
    let mut storage = 0;
    let mut seen = BTreeSet::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let p = index("spec.versions", i);
        let name = s(v, "name");
        let msgs = names::dns1035_label(name);
        if !msgs.is_empty() {
            out.push(fields::invalid_str(
                child(&p, "name"),
                name,
                &msgs.join(","),
            ));
        }
        unique &= seen.insert(name.to_string());
        if fields::bool_of(v, "storage") {
            storage += 1;
        }
        let has_schema = v
            .get("schema")
            .and_then(|sc| sc.get("openAPIV3Schema"))
            .is_some_and(Value::is_object);
        if !has_schema {
            out.push(fields::required_msg(
                child(&p, "schema.openAPIV3Schema"),
                "schemas are required",
            ));
        }
    }
    let all = spec.get("versions").unwrap_or(&Value::Null);
    if !unique {
        out.push(fields::invalid(
            "spec.versions",
            all,
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        out.push(fields::invalid(
            "spec.versions",
            all,
            "must have exactly one version marked as storage version",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd() -> Value {
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    }

    use crate::validation::field_reasons as f;

    #[test]
    fn valid_crd() {
        assert_eq!(f(&validate_crd(&crd(), None)), vec![]);
    }

    #[test]
    fn name_must_be_plural_dot_group() {
        let mut c = crd();
        c["metadata"]["name"] = json!("widget.example.com");
        let e = validate_crd(&c, None);
        assert_eq!(f(&e), vec![("metadata.name", "FieldValueInvalid")]);
        assert_eq!(
            e[0].message,
            "Invalid value: \"widget.example.com\": must be spec.names.plural+\".\"+spec.group"
        );
    }

    #[test]
    fn scope_and_storage_versions() {
        let mut c = crd();
        c["spec"]["scope"] = json!("Global");
        c["spec"]["versions"] = json!([
            {"name": "v1", "storage": true, "schema": {"openAPIV3Schema": {}}},
            {"name": "v2", "storage": true, "schema": {"openAPIV3Schema": {}}}]);
        assert_eq!(
            f(&validate_crd(&c, None)),
            vec![
                ("spec.scope", "FieldValueNotSupported"),
                ("spec.versions", "FieldValueInvalid")
            ]
        );
    }
}
