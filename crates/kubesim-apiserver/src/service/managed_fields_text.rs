//! Stored objects read for a write with their `metadata.managedFields`
//! kept apart as JSON text.
//!
//! The list is two fifths of a pod's JSON and most of the maps decoding
//! it builds, yet a binding, a deletion or an Event's expiry never reads
//! it, and an update reads it only to record its writer. Such writes
//! decode the object with `null` in the list's place
//! ([`managed_fields_apart`]), carry the text along, and write it back
//! into that place when they serialize the object: the stored bytes are
//! the ones decoding everything would have given. Whatever answers a
//! caller with the object first puts the list back as a value
//! ([`restore_managed`]).

use kubesim_core::patch::managed_fields;
use kubesim_core::ApiError;
use kubesim_runtime::decode::managed_fields_apart;
use kubesim_store::Record;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The managedFields text of an object decoded by [`decode_apart`]; None
/// when it had no list.
pub(crate) type Managed = Option<Box<RawValue>>;

/// Decodes a stored object for a write, its managedFields apart.
pub(crate) fn decode_apart(rec: &Record) -> Result<(Value, Managed), ApiError> {
    managed_fields_apart(&rec.bytes)
        .map_err(|e| ApiError::internal(format!("stored object is corrupt: {e}")))
}

/// Puts `managed` back into `obj` as a value, where its placeholder is; an
/// object whose list was replaced or removed meanwhile is left as it is.
pub(crate) fn restore_managed(obj: &mut Value, managed: Option<&RawValue>) {
    let Some(text) = managed else { return };
    if !managed_fields::holds_placeholder(obj) {
        return;
    }
    // The text was cut from stored JSON, so it parses.
    if let (Ok(list), Some(md)) = (
        serde_json::from_str::<Value>(text.get()),
        obj.get_mut("metadata").and_then(Value::as_object_mut),
    ) {
        md.insert("managedFields".into(), list);
    }
}

/// Object metadata serialized with the managedFields text in the place of
/// its placeholder.
pub(super) struct Rejoined<'a> {
    pub(super) md: &'a Map<String, Value>,
    pub(super) managed: &'a RawValue,
}

impl serde::Serialize for Rejoined<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut out = s.serialize_map(Some(self.md.len()))?;
        for (k, v) in self.md {
            if k == "managedFields" && v.is_null() {
                out.serialize_entry(k, self.managed)?;
            } else {
                out.serialize_entry(k, v)?;
            }
        }
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{encode, encode_with};
    use super::*;
    use kubesim_store::Attrs;
    use serde_json::json;

    fn record(obj: &Value) -> Record {
        Record {
            rev: 1,
            bytes: encode(obj),
            attrs: Attrs::default(),
        }
    }

    fn objects() -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "managedFields": [{"manager": "m", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:k:{\"a\":\"b\\\"\"}": {}}}}],
                    "labels": {"a": "b"}, "resourceVersion": "7"},
                "spec": {"metadata": {"managedFields": [1]}}, "status": {"x": 1.5}}),
            json!({"kind": "Pod", "metadata": {"name": "p"}}),
            json!({"metadata": {"managedFields": null, "name": "q"}}),
            json!({"metadata": "odd", "spec": [1]}),
            json!({}),
        ]
    }

    #[test]
    fn apart_and_back_is_the_stored_object() {
        for obj in objects() {
            let rec = record(&obj);
            let (mut v, managed) = decode_apart(&rec).unwrap();
            // Written back untouched, the bytes are the stored ones.
            assert_eq!(encode_with(&v, managed.as_deref()), rec.bytes, "{obj}");
            // Put back as a value, it is the whole object, keys in order.
            restore_managed(&mut v, managed.as_deref());
            assert_eq!(v.to_string(), obj.to_string());
        }
    }

    #[test]
    fn a_replaced_list_is_written_not_the_text() {
        let obj = objects().remove(0);
        let (mut v, managed) = decode_apart(&record(&obj)).unwrap();
        assert!(managed.is_some());
        assert_eq!(v["metadata"]["managedFields"], Value::Null);
        v["metadata"]["managedFields"] = json!([{"manager": "other"}]);
        let bytes = encode_with(&v, managed.as_deref());
        let back: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            back["metadata"]["managedFields"],
            json!([{"manager": "other"}])
        );
        // Restoring leaves a replaced list alone.
        restore_managed(&mut v, managed.as_deref());
        assert_eq!(
            v["metadata"]["managedFields"],
            json!([{"manager": "other"}])
        );
        // A removed list stays removed.
        v["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let back: Value = serde_json::from_slice(&encode_with(&v, managed.as_deref())).unwrap();
        assert!(back["metadata"].get("managedFields").is_none());
    }
}
