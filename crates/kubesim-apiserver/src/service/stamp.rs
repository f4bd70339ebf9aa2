//! A stored object's bytes stamped with a revision without serializing
//! the object again: the value of `metadata.resourceVersion` is all that
//! changes, so the bytes around it are copied as they are. An expiring
//! Event's stored bytes are stamped with its deletion's revision.

use bytes::Bytes;
use serde_json::value::RawValue;

/// Stored bytes stamped with `rev` without decoding them: the same bytes
/// as encoding the decoded object at revision `rev`. None when the bytes
/// hold no such string where a stored object has it.
pub(crate) fn restamped(bytes: &[u8], rev: u64) -> Option<Bytes> {
    #[derive(serde::Deserialize)]
    struct Top<'a> {
        #[serde(borrow)]
        metadata: &'a RawValue,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "resourceVersion", borrow)]
        resource_version: &'a RawValue,
    }
    let top: Top = serde_json::from_slice(bytes).ok()?;
    let meta: Meta = serde_json::from_str(top.metadata.get()).ok()?;
    let old = meta.resource_version.get();
    if !old.starts_with('"') {
        return None;
    }
    // The raw value borrows from `bytes`: its place in them.
    let at = old.as_ptr() as usize - bytes.as_ptr() as usize;
    Some(stamped(bytes, at..at + old.len(), rev))
}

/// `bytes` with the JSON string at `old` replaced by revision `rev`'s.
fn stamped(bytes: &[u8], old: std::ops::Range<usize>, rev: u64) -> Bytes {
    let stamp = format!("\"{rev}\"");
    let mut out = Vec::with_capacity(bytes.len() - old.len() + stamp.len());
    out.extend_from_slice(&bytes[..old.start]);
    out.extend_from_slice(stamp.as_bytes());
    out.extend_from_slice(&bytes[old.end..]);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{at_revision, encode};
    use super::*;

    #[test]
    fn restamping_bytes_is_encoding_the_object_at_the_revision() {
        let objects = [
            // An Event names another object's resourceVersion, after its own.
            json!({"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "e\"1", "resourceVersion": "41",
                    "managedFields": [{"manager": "m", "fieldsV1": {"f:note": {}}}]},
                "involvedObject": {"kind": "Pod", "resourceVersion": "41"},
                "note": "resourceVersion \u{e9}"}),
            // The key may come first or last among the metadata's.
            json!({"kind": "Pod", "metadata": {"resourceVersion": "7", "name": "p"},
                "spec": {"metadata": {"resourceVersion": "x"}}}),
        ];
        for obj in objects {
            let bytes = encode(&obj);
            let want = encode(&at_revision(obj, 1234));
            assert_eq!(restamped(&bytes, 1234).unwrap(), want);
        }
        // Nothing to stamp: left to the caller.
        assert!(restamped(b"{}", 5).is_none());
        for text in [
            r#"{"metadata":{"name":"x"}}"#,
            r#"{"kind":"x"}"#,
            r#"{"metadata":{"resourceVersion":1}}"#,
            "[",
            "3",
        ] {
            assert!(restamped(text.as_bytes(), 5).is_none(), "{text}");
        }
    }
}
