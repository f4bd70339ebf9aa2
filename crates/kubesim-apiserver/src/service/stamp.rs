//! A stored object's bytes stamped with a revision without serializing
//! the object again: the value of `metadata.resourceVersion` is all that
//! changes, so the bytes around it are copied as they are. An expiring
//! Event's stored bytes are stamped with its deletion's revision
//! ([`restamped`]); an object serialized ahead of its commit, with its
//! resourceVersion pending, is stamped with the commit's ([`Encoded`]).

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::Value;

use super::encode_with;

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

/// The resourceVersion an object serialized ahead of its commit holds
/// until then: a commit's revision is known only inside the store's write.
const PENDING_REVISION: &str = "\u{1}rv\u{1}";
/// [`PENDING_REVISION`] as JSON writes it, after its key.
const PENDING_FIELD: &[u8] = br#""resourceVersion":"\u0001rv\u0001""#;
const KEY: usize = br#""resourceVersion":"#.len();

/// An object serialized ahead of its commit (on the helper thread, for a
/// write prepared there), its resourceVersion left to stamp.
pub(crate) struct Encoded {
    bytes: Bytes,
    /// Where the pending resourceVersion's string starts.
    at: usize,
}

impl Encoded {
    /// `obj`, which the commit will stamp, with `managed` (see
    /// [`encode_with`]). Leaves `metadata.resourceVersion` pending in
    /// `obj`, where the commit's stamp will put it. None when the bytes
    /// would not show where (the pending text elsewhere in the object).
    pub(crate) fn of(obj: &mut Value, managed: Option<&RawValue>) -> Option<Encoded> {
        kubesim_core::meta::metadata_mut(obj).insert(
            "resourceVersion".into(),
            Value::String(PENDING_REVISION.into()),
        );
        let bytes = encode_with(obj, managed);
        let mut found = memchr::memmem::find_iter(&bytes, PENDING_FIELD);
        let at = found.next()? + KEY;
        if found.next().is_some() {
            return None;
        }
        Some(Encoded { bytes, at })
    }

    /// The bytes [`encode_with`] gives for the object stamped with `rev`.
    pub(crate) fn at_revision(&self, rev: u64) -> Bytes {
        let pending = self.at..self.at + PENDING_FIELD.len() - KEY;
        stamped(&self.bytes, pending, rev)
    }

    /// A commit's bytes at `rev`: those made ahead when there are, else
    /// what `encode` gives for the object just stamped.
    pub(crate) fn or_encode(
        made: Option<&Encoded>,
        rev: u64,
        encode: impl FnOnce() -> Bytes,
    ) -> Bytes {
        match made {
            Some(e) => e.at_revision(rev),
            None => encode(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{at_revision, encode, stamp_revision};
    use super::*;

    #[test]
    fn objects_encoded_ahead_are_the_bytes_of_their_commit() {
        let managed = RawValue::from_string(r#"[{"manager":"m"}]"#.into()).unwrap();
        let objects = [
            // Stored before: the stamp goes where its resourceVersion is.
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "resourceVersion": "3", "managedFields": null,
                    "labels": {"resourceVersion": "x"}},
                "spec": {"resourceVersion": "9"}}),
            // Created: at the end of its metadata.
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"}}),
        ];
        for (obj, managed) in objects.into_iter().zip([Some(&*managed), None]) {
            let mut ahead = obj.clone();
            let encoded = Encoded::of(&mut ahead, managed).unwrap();
            // The commit stamps the object itself in place.
            for mut committed in [obj, ahead] {
                stamp_revision(&mut committed, 1234);
                assert_eq!(encoded.at_revision(1234), encode_with(&committed, managed));
            }
        }
        // The pending text anywhere else: no bytes ahead.
        let mut odd = json!({"metadata": {"name": "r",
            "annotations": {"resourceVersion": PENDING_REVISION}}});
        assert!(Encoded::of(&mut odd, None).is_none());
    }

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
