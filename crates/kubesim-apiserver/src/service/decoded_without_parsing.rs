//! The value a consumer's decoder would give for a committed object, built
//! from the object the server serialized rather than by parsing the bytes.
//!
//! It must be indistinguishable from decoding, key order included (maps
//! keep insertion order), so it follows what [`encode`](super::encode)
//! writes and what [`Decode`] reads: the head keys first, then the rest in
//! order; without `managedFields`, the last metadata key takes its place,
//! as removing it from a decoded map does; and numbers as they read back
//! from their text.

use kubesim_runtime::decode::Decode;
use serde_json::{Map, Value};

use super::HEAD;

/// What `decode.bytes(&encode(obj))` gives.
pub(crate) fn shaped(decode: Decode, obj: &Value) -> Value {
    let Value::Object(m) = obj else {
        // Not an object: every decoder reads it in full.
        return exact(obj);
    };
    let mut out = Map::new();
    for k in HEAD {
        if let Some(v) = m.get(k) {
            let v = match (k, decode) {
                ("metadata", Decode::WithoutManagedFields | Decode::MetadataOnly) => {
                    without_managed_fields(v)
                }
                _ => exact(v),
            };
            out.insert(k.to_string(), v);
        }
    }
    if decode != Decode::MetadataOnly {
        for (k, v) in m.iter().filter(|(k, _)| !HEAD.contains(&k.as_str())) {
            out.insert(k.clone(), exact(v));
        }
    }
    Value::Object(out)
}

/// [`shaped`] of an object its owner gives up: the same value, built by
/// moving `obj`'s parts rather than copying them.
pub(crate) fn shaped_owned(decode: Decode, obj: Value) -> Value {
    let Value::Object(mut m) = obj else {
        return exact_owned(obj);
    };
    let mut out = Map::with_capacity(m.len());
    for k in HEAD {
        if let Some(v) = m.shift_remove(k) {
            let v = match (k, decode) {
                ("metadata", Decode::WithoutManagedFields | Decode::MetadataOnly) => {
                    without_managed_fields_owned(v)
                }
                _ => exact_owned(v),
            };
            out.insert(k.to_string(), v);
        }
    }
    if decode != Decode::MetadataOnly {
        for (k, v) in m {
            out.insert(k, exact_owned(v));
        }
    }
    Value::Object(out)
}

/// [`without_managed_fields`] of metadata its owner gives up.
fn without_managed_fields_owned(md: Value) -> Value {
    let Value::Object(mut m) = md else {
        return exact_owned(md);
    };
    // The same removal as the decoder's: the last key takes its place.
    m.remove("managedFields");
    for v in m.values_mut() {
        if has_float(v) {
            *v = exact(v);
        }
    }
    Value::Object(m)
}

/// [`exact`] of a value its owner gives up.
fn exact_owned(v: Value) -> Value {
    if has_float(&v) {
        exact(&v)
    } else {
        v
    }
}

/// Object metadata without `managedFields`; other values as they are.
fn without_managed_fields(md: &Value) -> Value {
    let Value::Object(m) = md else {
        return exact(md);
    };
    let mut out = Map::new();
    for (k, v) in m {
        if k == "managedFields" {
            // Holds its place so that the removal below moves the same key
            // into it as the decoder's does.
            out.insert(k.clone(), Value::Null);
        } else {
            out.insert(k.clone(), exact(v));
        }
    }
    out.remove("managedFields");
    Value::Object(out)
}

/// A copy of `v` as it reads back from its serialization: the same but for
/// floating-point numbers, which are read back from their text (the parser
/// does not promise to return the very number that was printed).
fn exact(v: &Value) -> Value {
    if !has_float(v) {
        return v.clone();
    }
    match v {
        Value::Number(_) => serde_json::to_string(v)
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_else(|| v.clone()),
        Value::Array(a) => Value::Array(a.iter().map(exact).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), exact(v))).collect()),
        other => other.clone(),
    }
}

/// Whether a floating-point number appears anywhere in `v`.
pub(crate) fn has_float(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(a) => a.iter().any(has_float),
        Value::Object(m) => m.values().any(has_float),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::encode;
    use super::*;
    use serde_json::json;

    const SHAPES: [Decode; 3] = [
        Decode::Full,
        Decode::WithoutManagedFields,
        Decode::MetadataOnly,
    ];

    /// The same value and the same key order (hence the same text) as
    /// decoding the serialized object.
    fn assert_same(obj: &Value) {
        let bytes = encode(obj);
        for d in SHAPES {
            let decoded = d.bytes(&bytes).unwrap();
            let built = shaped(d, obj);
            assert_eq!(built, decoded, "{d:?} of {obj}");
            assert_eq!(built.to_string(), decoded.to_string(), "{d:?} of {obj}");
            let moved = shaped_owned(d, obj.clone());
            assert_eq!(
                moved.to_string(),
                decoded.to_string(),
                "{d:?} of {obj}, moved"
            );
        }
    }

    fn pod() -> Value {
        json!({
            // Head keys out of order, as a patched value may hold them.
            "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i",
                "resources": {"requests": {"cpu": "1"}}}], "priority": 0},
            "metadata": {"name": "p", "namespace": "default",
                "managedFields": [{"manager": "m", "operation": "Update",
                    "fieldsV1": {"f:spec": {"f:nodeName": {}}}}],
                "uid": "u", "labels": {"a": "b"}, "resourceVersion": "7",
                "annotations": {"x": "y"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
            "kind": "Pod",
            "apiVersion": "v1",
        })
    }

    #[test]
    fn same_as_decoding_the_serialized_object() {
        let mut objects = vec![
            pod(),
            json!({}),
            json!({"metadata": null, "kind": "X"}),
            json!({"metadata": "odd", "spec": [1, -2, 3.5]}),
            json!({"metadata": {"managedFields": []}}),
            json!({"metadata": {"a": 1, "managedFields": [], "b": 2, "c": 3}}),
            // Only the object's own managedFields goes.
            json!({"spec": {"metadata": {"managedFields": [1]}}, "metadata": {"name": "x"}}),
            json!([1, {"b": 2, "a": 1}]),
            json!("text"),
            json!(null),
        ];
        // managedFields last, so that nothing moves into its place.
        let mut last = pod();
        let mf = last["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("managedFields")
            .unwrap();
        last["metadata"]["managedFields"] = mf;
        objects.push(last);
        for obj in &objects {
            assert_same(obj);
        }
        // The removal moved the last metadata key into managedFields' place.
        let built = shaped(Decode::WithoutManagedFields, &pod());
        let keys: Vec<&String> = built["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "namespace",
                "annotations",
                "uid",
                "labels",
                "resourceVersion"
            ]
        );
        let top: Vec<&String> = built.as_object().unwrap().keys().collect();
        assert_eq!(top, ["apiVersion", "kind", "metadata", "spec", "status"]);
    }

    #[test]
    fn floats_read_back_as_the_parser_reads_them() {
        // Shortest representations of 17 significant digits, the parser's
        // hardest cases, plus the ordinary ones.
        let mut floats = vec![0.1, -0.0, 1.0, 1e300, 5e-324, 0.30000000000000004, 2.5e-8];
        let mut x: f64 = 0.123_456_789_012_345_67;
        for _ in 0..2000 {
            x = (x * 7.389_056_098_930_65 + 0.577_215_664_901_532_9).fract();
            floats.push(x);
            floats.push(x * 1e22);
            floats.push(x / 3e15);
        }
        for f in floats {
            let obj = json!({"metadata": {"x": f, "managedFields": [f]}, "spec": {"v": [f]}});
            assert_same(&obj);
        }
    }
}
