//! What the replica controllers read of each pod they own, derived once
//! per pod version. A ReplicaSet of 10,000 pods is synced again on nearly
//! every change to one of them; parsing all 10,000 each time made scaling
//! quadratic, so each sync parses only the pods that changed since.

use std::collections::HashMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{Lazy, ObjectKey};
use parking_lot::Mutex;

use crate::pods;

/// The facts of one pod version.
#[derive(Debug, Clone, PartialEq)]
pub struct PodFacts {
    /// Neither terminal (Succeeded/Failed) nor being deleted.
    pub active: bool,
    pub ready: bool,
    /// When the Ready condition last became what it is.
    pub ready_since: Option<jiff::Timestamp>,
}

impl PodFacts {
    pub fn of(pod: &serde_json::Value) -> PodFacts {
        PodFacts {
            active: pods::is_active(pod),
            ready: pods::is_ready(pod),
            ready_since: pods::ready_since(pod),
        }
    }

    /// Ready for at least `min_ready_seconds` at `now` (as
    /// [`pods::is_available`]).
    pub fn available(&self, min_ready_seconds: i64, now: jiff::Timestamp) -> bool {
        if !self.ready {
            return false;
        }
        if min_ready_seconds <= 0 {
            return true;
        }
        self.ready_since
            .is_some_and(|t| t + jiff::SignedDuration::from_secs(min_ready_seconds) <= now)
    }

    /// How long until the pod counts as available, if it is ready but not
    /// yet for `min_ready_seconds` (as [`pods::until_available`]).
    pub fn until_available(
        &self,
        min_ready_seconds: i64,
        now: jiff::Timestamp,
    ) -> Option<std::time::Duration> {
        if min_ready_seconds <= 0 || !self.ready {
            return None;
        }
        let at = self.ready_since? + jiff::SignedDuration::from_secs(min_ready_seconds);
        if at <= now {
            return None;
        }
        std::time::Duration::try_from(at.duration_since(now)).ok()
    }
}

/// Facts by pod, each kept with the resourceVersion it was derived from.
#[derive(Default)]
pub struct FactsMemo {
    by_pod: Mutex<HashMap<ObjectKey, (String, Arc<PodFacts>)>>,
}

impl FactsMemo {
    /// The facts of `pod` as cached now: derived again only when its
    /// resourceVersion moved.
    pub fn get(&self, key: &ObjectKey, pod: &Lazy) -> Arc<PodFacts> {
        let rv = pod.resource_version();
        if let Some((seen, facts)) = self.by_pod.lock().get(key) {
            if seen == rv {
                return facts.clone();
            }
        }
        let facts = Arc::new(PodFacts::of(pod));
        self.by_pod
            .lock()
            .insert(key.clone(), (rv.to_string(), facts.clone()));
        facts
    }

    /// Drops what is kept of a deleted pod.
    pub fn forget(&self, pod: &serde_json::Value) {
        self.by_pod
            .lock()
            .remove(&ObjectKey::new(meta::namespace(pod), meta::name(pod)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesim_runtime::Cache;
    use serde_json::json;

    fn pod(rv: &str, ready: &str, since: &str) -> serde_json::Value {
        json!({"metadata": {"name": "p", "namespace": "d", "resourceVersion": rv,
                "ownerReferences": [{"controller": true, "uid": "rs"}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": ready, "lastTransitionTime": since}]}})
    }

    fn lazy(cache: &Cache, obj: serde_json::Value) -> Lazy {
        cache.upsert(obj);
        let mut listed = cache.controlled_by_lazy("rs");
        assert_eq!(listed.len(), 1);
        listed.remove(0).1
    }

    #[test]
    fn facts_follow_the_resource_version() {
        let cache = Cache::default();
        let memo = FactsMemo::default();
        let key = ObjectKey::new("d", "p");
        let t = "2026-01-01T00:00:00Z";
        let first = memo.get(&key, &lazy(&cache, pod("1", "False", t)));
        assert!(first.active && !first.ready);
        // A new version is derived again.
        let second = memo.get(&key, &lazy(&cache, pod("2", "True", t)));
        assert!(second.ready);
        assert_eq!(second.ready_since, meta::parse_time(t));
        // The same version is not: what was kept comes back as it was.
        let again = memo.get(&key, &lazy(&cache, pod("2", "True", t)));
        assert!(Arc::ptr_eq(&second, &again));
        memo.forget(&pod("2", "True", t));
        assert!(memo.by_pod.lock().is_empty());
    }

    #[test]
    fn availability_waits_for_min_ready_seconds() {
        let since = meta::parse_time("2026-01-01T00:00:00Z").unwrap();
        let f = PodFacts {
            active: true,
            ready: true,
            ready_since: Some(since),
        };
        let at = |s| since + jiff::SignedDuration::from_secs(s);
        assert!(f.available(0, since));
        assert!(!f.available(10, at(9)));
        assert!(f.available(10, at(10)));
        assert_eq!(
            f.until_available(10, at(4)),
            Some(std::time::Duration::from_secs(6))
        );
        assert_eq!(f.until_available(10, at(10)), None);
        let not_ready = PodFacts {
            ready: false,
            ..f.clone()
        };
        assert!(!not_ready.available(0, since));
        assert_eq!(not_ready.until_available(10, at(4)), None);
    }
}
