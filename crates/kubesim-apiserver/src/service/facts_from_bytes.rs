//! Single facts read from stored bytes without building the object: a
//! create asks whether its namespace is terminating and whether a
//! PriorityClass is the global default, and decoding those whole objects
//! (a namespace with its managedFields) for one field cost more than the
//! rest of the admission of a pod.

use std::collections::BTreeMap;

use kubesim_store::Record;
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

/// [`is_deleting`] remembered by key and revision: every create reads its
/// namespace, which changes rarely, and reading the namespace's bytes each
/// time was most of the check. A revision names one stored state, so an
/// answer holds for as long as the record is at that revision.
#[derive(Default)]
pub(crate) struct DeletingCache {
    known: parking_lot::Mutex<BTreeMap<String, (u64, bool)>>,
}

/// Entries kept before the cache starts over (namespaces deleted long ago
/// are not otherwise forgotten).
const DELETING_CACHE_LIMIT: usize = 4096;

impl DeletingCache {
    /// [`is_deleting`] of `rec`, the record stored under `key`.
    pub(crate) fn is_deleting(&self, key: &str, rec: &Record) -> Option<bool> {
        if let Some(&(rev, deleting)) = self.known.lock().get(key) {
            if rev == rec.rev {
                return Some(deleting);
            }
        }
        let deleting = is_deleting(&rec.bytes)?;
        let mut known = self.known.lock();
        if known.len() >= DELETING_CACHE_LIMIT && !known.contains_key(key) {
            known.clear();
        }
        known.insert(key.to_string(), (rec.rev, deleting));
        Some(deleting)
    }
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
    fn the_cache_answers_for_the_revision_it_read() {
        let record = |rev, obj: Value| Record {
            rev,
            bytes: serde_json::to_vec(&obj).unwrap().into(),
            attrs: Default::default(),
        };
        let open = json!({"metadata": {"name": "a"}});
        let closing =
            json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        let cache = DeletingCache::default();
        assert_eq!(
            cache.is_deleting("a", &record(3, open.clone())),
            Some(false)
        );
        // Same key and revision: the remembered answer, whatever the bytes.
        assert_eq!(
            cache.is_deleting("a", &record(3, closing.clone())),
            Some(false)
        );
        assert_eq!(cache.is_deleting("a", &record(4, closing)), Some(true));
        assert_eq!(cache.is_deleting("b", &record(4, open)), Some(false));
        let corrupt = Record {
            rev: 5,
            bytes: b"not json".to_vec().into(),
            attrs: Default::default(),
        };
        assert_eq!(cache.is_deleting("a", &corrupt), None);
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
