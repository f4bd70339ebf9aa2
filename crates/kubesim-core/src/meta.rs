//! Accessors for the `metadata` of objects held as `serde_json::Value`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `metadata`, created if missing (and replaced if it is not an object).
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = obj.as_object_mut().expect("object");
    let entry = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("object")
}

pub fn str_field<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get(key)?.as_str()
}

pub fn name(obj: &Value) -> &str {
    str_field(obj, "name").unwrap_or("")
}

pub fn namespace(obj: &Value) -> &str {
    str_field(obj, "namespace").unwrap_or("")
}

pub fn uid(obj: &Value) -> &str {
    str_field(obj, "uid").unwrap_or("")
}

pub fn resource_version(obj: &Value) -> &str {
    str_field(obj, "resourceVersion").unwrap_or("")
}

/// A string map under metadata (`labels`, `annotations`), ordered by key.
pub fn string_map(obj: &Value, key: &str) -> BTreeMap<String, String> {
    metadata(obj)
        .and_then(|m| m.get(key))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    string_map(obj, "labels")
}

pub fn annotations(obj: &Value) -> BTreeMap<String, String> {
    string_map(obj, "annotations")
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_deleting(obj: &Value) -> bool {
    metadata(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// Reads a dotted path (`spec.nodeName`) from an object.
pub fn path<'a>(obj: &'a Value, dotted: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in dotted.split('.') {
        cur = cur.get(part)?;
    }
    Some(cur)
}

/// Kubernetes timestamps: RFC 3339, UTC, second precision.
pub fn format_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Kubernetes MicroTime: RFC 3339 with microseconds.
pub fn format_micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

pub fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_metadata() {
        let o = json!({"metadata": {"name": "a", "labels": {"x": "1"}, "finalizers": ["f"]}, "spec": {"nodeName": "n"}});
        assert_eq!(name(&o), "a");
        assert_eq!(labels(&o).get("x").map(String::as_str), Some("1"));
        assert_eq!(finalizers(&o), vec!["f".to_string()]);
        assert_eq!(path(&o, "spec.nodeName"), Some(&json!("n")));
        assert!(!is_deleting(&o));
    }

    #[test]
    fn times_have_second_precision() {
        let t: jiff::Timestamp = "2026-01-02T03:04:05.678Z".parse().unwrap();
        assert_eq!(format_time(t), "2026-01-02T03:04:05Z");
        assert_eq!(format_micro_time(t), "2026-01-02T03:04:05.678000Z");
    }
}
