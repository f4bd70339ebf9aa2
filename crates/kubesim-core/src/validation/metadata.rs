//! `metadata` checks shared by every kind: name, labels, annotations,
//! finalizers and owner references.

use serde_json::Value;

use super::fields::{self, arr, child, index, s};
use super::names::{self, NameRule};
use crate::error::Cause;

/// Upstream's cap on the summed size of annotation keys and values.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Finalizers without a domain that built-in kinds accept.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// Validates `metadata` of an object whose name follows `rule`.
/// `builtin` enables the core-only rule that unqualified finalizers must be
/// standard ones.
pub fn validate_object_meta(obj: &Value, rule: NameRule, builtin: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let empty = Value::Null;
    let meta = obj.get("metadata").unwrap_or(&empty);
    let name = s(meta, "name");
    let generate = s(meta, "generateName");
    if !generate.is_empty() {
        for m in names::path_segment_name(generate, true)
            .into_iter()
            .chain(rule.check(generate, true))
        {
            out.push(fields::invalid_str("metadata.generateName", generate, &m));
        }
    }
    if name.is_empty() {
        if generate.is_empty() {
            out.push(fields::required_msg(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        let msgs = names::path_segment_name(name, false);
        // Upstream stops at the path-segment errors: the name checks would
        // only repeat them.
        let msgs = if msgs.is_empty() {
            rule.check(name, false)
        } else {
            msgs
        };
        fields::each_invalid(&mut out, "metadata.name", name, msgs);
    }
    out.extend(validate_labels(meta.get("labels"), "metadata.labels"));
    out.extend(validate_annotations(
        meta.get("annotations"),
        "metadata.annotations",
    ));
    out.extend(validate_finalizers(
        meta.get("finalizers"),
        "metadata.finalizers",
        builtin,
    ));
    out.extend(validate_owner_references(meta));
    out
}

/// Label keys must be qualified names and values label values.
pub fn validate_labels(labels: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(Value::Object(m)) = labels else {
        return out;
    };
    for (k, v) in m {
        fields::each_invalid(&mut out, path, k, names::qualified_name(k));
        match v {
            Value::String(v) => fields::each_invalid(&mut out, path, v, names::label_value(v)),
            Value::Null => {}
            other => out.push(fields::invalid(path, other, "must be a string")),
        }
    }
    out
}

pub fn validate_annotations(annotations: Option<&Value>, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(Value::Object(m)) = annotations else {
        return out;
    };
    let mut total = 0usize;
    for (k, v) in m {
        // Upstream lower-cases keys first: annotation keys may be mixed case.
        fields::each_invalid(&mut out, path, k, names::qualified_name(&k.to_lowercase()));
        total = total.saturating_add(k.len() + v.as_str().map_or(0, str::len));
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        out.push(fields::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    out
}

pub fn validate_finalizers(list: Option<&Value>, path: &str, builtin: bool) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(Value::Array(items)) = list else {
        return out;
    };
    let mut orphan = false;
    let mut foreground = false;
    for (i, f) in items.iter().enumerate() {
        let Some(f) = f.as_str() else {
            out.push(fields::invalid(index(path, i), f, "must be a string"));
            continue;
        };
        let msgs = names::qualified_name(f);
        if !msgs.is_empty() {
            fields::each_invalid(&mut out, path, f, msgs);
        } else if builtin && !f.contains('/') && !STANDARD_FINALIZERS.contains(&f) {
            out.push(fields::invalid_str(
                index(path, i),
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
        orphan |= f == "orphan";
        foreground |= f == "foregroundDeletion";
    }
    if orphan && foreground {
        out.push(fields::invalid(
            path,
            list.unwrap_or(&Value::Null),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    out
}

fn validate_owner_references(meta: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let path = "metadata.ownerReferences";
    let mut controllers = Vec::new();
    for r in arr(meta, "ownerReferences") {
        let api_version = s(r, "apiVersion");
        let version = api_version.rsplit('/').next().unwrap_or("");
        if version.is_empty() {
            out.push(fields::invalid_str(
                child(path, "apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        for k in ["kind", "name", "uid"] {
            if s(r, k).is_empty() {
                out.push(fields::invalid_str(
                    child(path, k),
                    s(r, k),
                    "must not be empty",
                ));
            }
        }
        if fields::bool_of(r, "controller") {
            controllers.push(s(r, "name").to_string());
        }
    }
    if controllers.len() > 1 {
        out.push(fields::invalid(
            path,
            meta.get("ownerReferences").unwrap_or(&Value::Null),
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields_of(c: &[Cause]) -> Vec<&str> {
        c.iter().map(|c| c.field.as_str()).collect()
    }

    #[test]
    fn name_required_unless_generate_name() {
        let c = validate_object_meta(&json!({"metadata": {}}), NameRule::Dns1123Subdomain, true);
        assert_eq!(c[0].field, "metadata.name");
        assert_eq!(
            c[0].message,
            "Required value: name or generateName is required"
        );
        let c = validate_object_meta(
            &json!({"metadata": {"generateName": "web-"}}),
            NameRule::Dns1123Subdomain,
            true,
        );
        assert!(c.is_empty());
    }

    #[test]
    fn dot_names_are_invalid() {
        for n in [".", ".."] {
            let c = validate_object_meta(
                &json!({"metadata": {"name": n}}),
                NameRule::PathSegment,
                true,
            );
            assert_eq!(c.len(), 1, "{n}");
            assert_eq!(
                c[0].message,
                format!("Invalid value: \"{n}\": may not be '{n}'")
            );
        }
    }

    #[test]
    fn bad_name_uses_upstream_text() {
        let c = validate_object_meta(
            &json!({"metadata": {"name": "Web"}}),
            NameRule::Dns1123Subdomain,
            true,
        );
        assert_eq!(c[0].reason, "FieldValueInvalid");
        assert!(c[0]
            .message
            .starts_with("Invalid value: \"Web\": a lowercase RFC 1123 subdomain"));
    }

    #[test]
    fn labels_annotations_finalizers_owners() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT);
        let o = json!({"metadata": {
            "name": "a",
            "labels": {"ok": "v", "bad key": "v", "k": "-bad"},
            "annotations": {"Example.com/Mixed": "fine", "big": big},
            "finalizers": ["kubernetes", "custom", "example.com/x"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"}]
        }});
        let c = validate_object_meta(&o, NameRule::Dns1123Subdomain, true);
        assert_eq!(
            fields_of(&c),
            vec![
                "metadata.labels",
                "metadata.labels",
                "metadata.annotations",
                "metadata.finalizers[1]",
                "metadata.ownerReferences.uid"
            ]
        );
        assert_eq!(c[2].reason, "FieldValueTooLong");
        // Custom resources accept any qualified finalizer.
        let c = validate_object_meta(&o, NameRule::Dns1123Subdomain, false);
        assert!(!fields_of(&c).contains(&"metadata.finalizers[1]"));
    }
}
