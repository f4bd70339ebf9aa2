//! Decoding serialized objects into the parts a cache keeps. An informer's
//! cache drops `metadata.managedFields` (no control loop reads it) and a
//! shaped one keeps only the metadata, so building those parts of the tree
//! only to drop them was wasted: managedFields is a third of a pod's JSON,
//! and each write of a pod reaches several caches. These decoders skip
//! what would be dropped while reading, and give exactly the value that
//! decoding everything and then dropping it would give.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// What of an object's serialized JSON a consumer keeps. A transport that
/// holds an object already decoded may build the same value from it
/// instead, so each shape is named rather than given as a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decode {
    /// Everything.
    Full,
    /// [`without_managed_fields`].
    WithoutManagedFields,
    /// [`metadata_only`].
    MetadataOnly,
}

impl Decode {
    /// Decodes `json` into this shape.
    pub fn bytes(self, json: &[u8]) -> serde_json::Result<Value> {
        match self {
            Decode::Full => serde_json::from_slice(json),
            Decode::WithoutManagedFields => without_managed_fields(json),
            Decode::MetadataOnly => metadata_only(json),
        }
    }
}

/// The whole object but `metadata.managedFields`.
pub fn without_managed_fields(json: &[u8]) -> serde_json::Result<Value> {
    decode(json, Keep::All)
}

/// `apiVersion`, `kind` and `metadata` without `managedFields`: what
/// [`metadata_only`](crate::metadata_only) keeps.
pub fn metadata_only(json: &[u8]) -> serde_json::Result<Value> {
    decode(json, Keep::Head)
}

/// The whole object with `metadata.managedFields` left as its JSON text:
/// the value holds `null` in the list's place, and the text comes apart
/// (None when the object has no list). A write that does not read the
/// entries carries the text over instead of building the list and
/// serializing it again; the list is two fifths of a pod's JSON and most
/// of the maps its decoding builds.
pub fn managed_fields_apart(json: &[u8]) -> serde_json::Result<(Value, Option<Box<RawValue>>)> {
    let mut raw = None;
    let v = decode_with(json, Keep::All, Some(&mut raw))?;
    Ok((v, raw))
}

#[derive(Clone, Copy)]
enum Keep {
    All,
    Head,
}

fn decode(json: &[u8], keep: Keep) -> serde_json::Result<Value> {
    decode_with(json, keep, None)
}

fn decode_with(
    json: &[u8],
    keep: Keep,
    raw: Option<&mut Option<Box<RawValue>>>,
) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let v = match (Top { keep, raw }).deserialize(&mut de) {
        Ok(v) => v,
        // Not an object: decoded in full, as before.
        Err(_) => return serde_json::from_slice(json),
    };
    de.end()?;
    Ok(v)
}

/// The top-level object; with `raw`, managedFields is kept as text there.
struct Top<'r> {
    keep: Keep,
    raw: Option<&'r mut Option<Box<RawValue>>>,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match (key.as_str(), self.keep) {
                ("metadata", _) => {
                    let v = map.next_value_seed(Metadata {
                        raw: self.raw.as_deref_mut(),
                    })?;
                    out.insert(key, v);
                }
                (_, Keep::All) | ("apiVersion" | "kind", Keep::Head) => {
                    let v = map.next_value::<Value>()?;
                    out.insert(key, v);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// `metadata`, without `managedFields` when it is an object, or with its
/// text put in `raw` and `null` in its place.
struct Metadata<'r> {
    raw: Option<&'r mut Option<Box<RawValue>>>,
}

impl<'de> DeserializeSeed<'de> for Metadata<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Metadata<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "managedFields" {
                // A placeholder holds its place, so that removing it below
                // moves the same key into it as removing the decoded list
                // from a decoded map does (`Map::remove` swaps), and so
                // that text kept apart goes back where it was.
                match self.raw.as_deref_mut() {
                    Some(raw) => *raw = Some(map.next_value::<Box<RawValue>>()?),
                    None => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                out.insert(key, Value::Null);
            } else {
                let v = map.next_value::<Value>()?;
                out.insert(key, v);
            }
        }
        if self.raw.is_none() {
            out.remove("managedFields");
        }
        Ok(Value::Object(out))
    }

    // Metadata that is not an object is kept as it is.
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full_then_dropped(v: &Value, head: bool) -> Value {
        let mut v = v.clone();
        if head {
            v = crate::metadata_only(v);
        }
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
        v
    }

    #[test]
    fn same_as_decoding_everything_then_dropping() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}],
                "labels": {"a": "b"}, "resourceVersion": "7", "uid": "u"},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "x": 1.5, "y": -3, "z": null}});
        let odd = [
            pod.clone(),
            json!({"kind": "Pod", "metadata": "not an object", "spec": [1, 2]}),
            json!({"metadata": null}),
            json!({"spec": {"metadata": {"managedFields": 1}}}),
            json!({}),
        ];
        for v in odd {
            let bytes = serde_json::to_vec(&v).unwrap();
            let all = without_managed_fields(&bytes).unwrap();
            assert_eq!(all, full_then_dropped(&v, false));
            assert_eq!(all.to_string(), full_then_dropped(&v, false).to_string());
            let head = metadata_only(&bytes).unwrap();
            assert_eq!(head, full_then_dropped(&v, true));
            assert_eq!(head.to_string(), full_then_dropped(&v, true).to_string());
        }
        // The key order is that of a decoded map after `remove`.
        let bytes = serde_json::to_vec(&pod).unwrap();
        let all = without_managed_fields(&bytes).unwrap();
        let keys: Vec<&String> = all["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["name", "uid", "labels", "resourceVersion"]);
        // A nested managedFields is kept; only the object's own is dropped.
        let nested = json!({"spec": {"metadata": {"managedFields": 1}}});
        let bytes = serde_json::to_vec(&nested).unwrap();
        assert_eq!(without_managed_fields(&bytes).unwrap(), nested);
    }

    #[test]
    fn other_documents_decode_in_full_or_fail_alike() {
        assert_eq!(without_managed_fields(b"[1,2]").unwrap(), json!([1, 2]));
        assert_eq!(metadata_only(b"\"x\"").unwrap(), json!("x"));
        assert!(without_managed_fields(b"{\"a\":").is_err());
        assert!(metadata_only(b"{} trailing").is_err());
    }
}
