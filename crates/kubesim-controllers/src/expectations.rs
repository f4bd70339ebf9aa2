//! Expectations: what a controller has asked the API for and not yet seen
//! in its informer. Until its own creates and deletes are observed, a
//! controller's cache undercounts (or overcounts) its pods, and acting on it
//! would create or delete twice. A controller records what it expects
//! before writing, the pod handlers count observations down, and the
//! controller only manages pods of an owner whose expectations are met.
//! Expectations older than five minutes are ignored, so a lost watch event
//! cannot stall an owner forever (upstream uses the same timeout).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use kubesim_runtime::{Clock, ObjectKey};

const TTL: Duration = Duration::from_secs(300);

struct Entry {
    adds: i64,
    /// Names of pods whose deletion has not been observed yet.
    dels: BTreeSet<String>,
    at: tokio::time::Instant,
}

pub struct Expectations {
    clock: Clock,
    inner: Mutex<BTreeMap<ObjectKey, Entry>>,
}

impl Expectations {
    pub fn new(clock: Clock) -> Self {
        Expectations {
            clock,
            inner: Mutex::new(BTreeMap::new()),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut BTreeMap<ObjectKey, Entry>) -> R) -> R {
        let mut g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut g)
    }

    /// Whether the owner's pods in the cache can be trusted.
    pub fn satisfied(&self, key: &ObjectKey) -> bool {
        let now = self.clock.instant();
        self.with(|m| match m.get(key) {
            None => true,
            Some(e) => (e.adds <= 0 && e.dels.is_empty()) || now.duration_since(e.at) > TTL,
        })
    }

    pub fn expect_creations(&self, key: &ObjectKey, n: usize) {
        let at = self.clock.instant();
        self.with(|m| {
            let e = m.entry(key.clone()).or_insert_with(|| Entry {
                adds: 0,
                dels: BTreeSet::new(),
                at,
            });
            e.adds = n as i64;
            e.at = at;
        });
    }

    /// A create was seen, or will never be (it failed).
    pub fn creation_observed(&self, key: &ObjectKey) {
        self.with(|m| {
            if let Some(e) = m.get_mut(key) {
                e.adds -= 1;
            }
        });
    }

    pub fn expect_deletions(&self, key: &ObjectKey, names: impl IntoIterator<Item = String>) {
        let at = self.clock.instant();
        self.with(|m| {
            let e = m.entry(key.clone()).or_insert_with(|| Entry {
                adds: 0,
                dels: BTreeSet::new(),
                at,
            });
            e.dels.extend(names);
            e.at = at;
        });
    }

    /// The pod is gone or being deleted (or its delete failed).
    pub fn deletion_observed(&self, key: &ObjectKey, pod: &str) {
        self.with(|m| {
            if let Some(e) = m.get_mut(key) {
                e.dels.remove(pod);
            }
        });
    }

    pub fn forget(&self, key: &ObjectKey) {
        self.with(|m| {
            m.remove(key);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn satisfied_once_everything_is_observed_or_stale() {
        let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
        let e = Expectations::new(clock.clone());
        let k = ObjectKey::new("ns", "rs");
        assert!(e.satisfied(&k));
        e.expect_creations(&k, 2);
        e.creation_observed(&k);
        assert!(!e.satisfied(&k));
        e.creation_observed(&k);
        assert!(e.satisfied(&k));
        e.expect_deletions(&k, ["p1".to_string()]);
        assert!(!e.satisfied(&k));
        clock.sleep(TTL + Duration::from_secs(1)).await;
        assert!(e.satisfied(&k));
        e.deletion_observed(&k, "p1");
        e.forget(&k);
        assert!(e.satisfied(&k));
    }
}
