//! Service account tokens already checked, each with the stored records
//! it was checked against. A token whose records are the very same
//! records (the same `Arc`, so unchanged since) and whose validity period
//! holds on the clock is the same user again, without verifying its
//! signature, parsing its claims and decoding its objects once more: an
//! operator or component sends the same token with every request.
//!
//! Any write to the account or to a bound object replaces its record, so
//! the next request checks the token in full; deleting either makes the
//! token fail that check. Nothing else can make a checked token invalid.

use std::collections::HashMap;
use std::sync::Arc;

use kubesim_store::Record;
use parking_lot::RwLock;

use super::UserInfo;

/// Entries kept at most; past it the cache starts over, which costs one
/// full check per token in use.
const MAX_ENTRIES: usize = 4096;

/// One checked token.
pub(crate) struct Checked {
    pub user: UserInfo,
    /// Valid from `not_before` (inclusive) until `expires` (exclusive),
    /// in seconds since the epoch; legacy tokens have neither.
    pub not_before: Option<i64>,
    pub expires: Option<i64>,
    /// (resource storage key, object key, the record seen).
    pub records: Vec<(String, String, Arc<Record>)>,
}

#[derive(Default)]
pub(crate) struct TokenCache {
    entries: RwLock<HashMap<Box<str>, Arc<Checked>>>,
}

impl TokenCache {
    /// The user of `token` if it was checked and nothing it depends on
    /// changed; `current` reads a record from the store.
    pub fn get(
        &self,
        token: &str,
        now: i64,
        current: impl Fn(&str, &str) -> Option<Arc<Record>>,
    ) -> Option<UserInfo> {
        let c = self.entries.read().get(token)?.clone();
        let in_time =
            c.not_before.is_none_or(|nbf| now >= nbf) && c.expires.is_none_or(|exp| now < exp);
        let unchanged = c
            .records
            .iter()
            .all(|(res, key, rec)| current(res, key).is_some_and(|r| Arc::ptr_eq(&r, rec)));
        (in_time && unchanged).then(|| c.user.clone())
    }

    pub fn put(&self, token: &str, checked: Checked) {
        let mut e = self.entries.write();
        if e.len() >= MAX_ENTRIES {
            e.clear();
        }
        e.insert(token.into(), Arc::new(checked));
    }

    /// Forgets every checked token (the signing key changed).
    pub fn clear(&self) {
        self.entries.write().clear();
    }
}
