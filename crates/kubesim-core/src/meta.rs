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

/// Whether `obj`'s labels, as [`labels`] gives them, are `want`, without
/// building the map.
pub fn has_labels(obj: &Value, want: &BTreeMap<String, String>) -> bool {
    let theirs = metadata(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object);
    let strings = theirs.map_or(0, |m| m.values().filter(|v| v.is_string()).count());
    strings == want.len()
        && want
            .iter()
            .all(|(k, v)| theirs.and_then(|m| m.get(k)).and_then(Value::as_str) == Some(v))
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

/// [`Value::pointer`] without its cost: serde_json unescapes every token
/// into a new string, while tokens without `~` (nearly all) need no
/// unescaping. Same result for every pointer.
pub fn pointer<'a>(obj: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(obj);
    }
    let mut cur = obj;
    for token in pointer.strip_prefix('/')?.split('/') {
        cur = if token.contains('~') {
            step(cur, &token.replace("~1", "/").replace("~0", "~"))?
        } else {
            step(cur, token)?
        };
    }
    Some(cur)
}

fn step<'a>(v: &'a Value, token: &str) -> Option<&'a Value> {
    match v {
        Value::Object(m) => m.get(token),
        // An index is decimal digits without a sign or a leading zero.
        Value::Array(list)
            if !token.starts_with('+') && (token == "0" || !token.starts_with('0')) =>
        {
            list.get(token.parse::<usize>().ok()?)
        }
        _ => None,
    }
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

/// A JSON object of `fields` in their order, each value moved in: what
/// `json!` builds, without serializing the values again (`json!` passes
/// every interpolated expression, a `Value` too, through the serializer).
pub fn object<K: Into<String>>(fields: impl IntoIterator<Item = (K, Value)>) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointer_reads_as_serde_json_does() {
        let o = json!({"a": {"b/c": [10, {"d~e": "x"}], "": 1}, "l": [0, 1, 2]});
        for p in [
            "",
            "/",
            "/a",
            "/a/b~1c",
            "/a/b~1c/0",
            "/a/b~1c/1/d~0e",
            "/a/",
            "/l/2",
            "/l/02",
            "/l/+1",
            "/l/3",
            "/l/-1",
            "/l/x",
            "a",
            "/missing/x",
            "/a/b~1c/1/d~0e/z",
        ] {
            assert_eq!(pointer(&o, p), o.pointer(p), "{p}");
        }
        assert_eq!(pointer(&o, "/a/b~1c/0"), Some(&json!(10)));
    }

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
    fn has_labels_agrees_with_the_built_map() {
        let objs = [
            json!({"metadata": {"labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"a": "1", "b": "3"}}}),
            json!({"metadata": {"labels": {"a": "1"}}}),
            json!({"metadata": {"labels": {"a": "1", "b": "2", "n": 5}}}),
            json!({"metadata": {"labels": {"a": "1", "b": "2", "c": "3"}}}),
            json!({"metadata": {"labels": null}}),
            json!({"metadata": {}}),
            json!({}),
        ];
        for want in &objs {
            let want = labels(want);
            for o in &objs {
                assert_eq!(
                    has_labels(o, &want),
                    labels(o) == want,
                    "{o} against {want:?}"
                );
            }
        }
    }

    #[test]
    fn times_have_second_precision() {
        let t: jiff::Timestamp = "2026-01-02T03:04:05.678Z".parse().unwrap();
        assert_eq!(format_time(t), "2026-01-02T03:04:05Z");
        assert_eq!(format_micro_time(t), "2026-01-02T03:04:05.678000Z");
    }
}
