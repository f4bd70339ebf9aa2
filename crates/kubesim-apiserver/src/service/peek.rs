//! Single facts read from stored bytes without building the object: a
//! create asks whether its namespace is terminating and whether a
//! PriorityClass is the global default, and decoding those whole objects
//! (a namespace with its managedFields) for one field cost more than the
//! rest of the admission of a pod.

use serde::de::IgnoredAny;
use serde::Deserialize;

#[derive(Deserialize)]
struct WithMetadata {
    metadata: Option<Metadata>,
}

#[derive(Deserialize)]
struct Metadata {
    #[serde(rename = "deletionTimestamp")]
    deletion_timestamp: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct GlobalDefault {
    #[serde(rename = "globalDefault")]
    global_default: Option<bool>,
}

/// Whether the stored object has a non-null `metadata.deletionTimestamp`,
/// as `meta::is_deleting` says of the decoded object; `None` when the bytes
/// do not have the expected shape (the caller then decodes them).
pub(crate) fn is_deleting(bytes: &[u8]) -> Option<bool> {
    let o: WithMetadata = serde_json::from_slice(bytes).ok()?;
    Some(o.metadata.is_some_and(|m| m.deletion_timestamp.is_some()))
}

/// Whether the stored object has `globalDefault: true`; `None` when the
/// bytes do not have the expected shape.
pub(crate) fn is_global_default(bytes: &[u8]) -> Option<bool> {
    let o: GlobalDefault = serde_json::from_slice(bytes).ok()?;
    Some(o.global_default == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesim_core::meta;
    use serde_json::{json, Value};

    #[test]
    fn deletion_agrees_with_the_decoded_object() {
        for obj in [
            json!({"metadata": {"name": "a", "managedFields": [{"manager": "m"}]}}),
            json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
            json!({"metadata": {"name": "a", "deletionTimestamp": null}}),
            json!({"metadata": null}),
            json!({"kind": "Namespace"}),
        ] {
            let bytes = serde_json::to_vec(&obj).unwrap();
            assert_eq!(is_deleting(&bytes), Some(meta::is_deleting(&obj)), "{obj}");
        }
        // Shapes the typed read refuses are left to a full decode.
        assert_eq!(is_deleting(br#"{"metadata": "x"}"#), None);
        assert_eq!(is_deleting(b"not json"), None);
    }

    #[test]
    fn global_default_agrees_with_the_decoded_object() {
        for obj in [
            json!({"value": 10, "globalDefault": true}),
            json!({"value": 10, "globalDefault": false}),
            json!({"value": 10, "globalDefault": null}),
            json!({"value": 10}),
        ] {
            let bytes = serde_json::to_vec(&obj).unwrap();
            let decoded: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(
                is_global_default(&bytes),
                Some(decoded.get("globalDefault") == Some(&Value::Bool(true))),
                "{obj}"
            );
        }
        assert_eq!(is_global_default(br#"{"globalDefault": "yes"}"#), None);
    }
}
