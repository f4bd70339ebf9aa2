//! What a Job controller has asked for but its informer has not shown yet:
//! pods it created, pods it deleted, and pods whose tracking finalizer it
//! removed. Until the cache catches up the controller neither creates more
//! pods (it would overshoot) nor counts a pod again (it would count twice).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::ObjectKey;
use parking_lot::Mutex;
use serde_json::Value;

use super::TRACKING_FINALIZER;

#[derive(Default)]
struct Pending {
    /// Names of created pods not yet in the cache.
    creates: BTreeSet<String>,
    /// Names of deleted pods still in the cache without a deletion mark.
    deletes: BTreeSet<String>,
    /// Uids of pods whose finalizer was removed but which the cache still
    /// shows with it.
    finalizers: BTreeSet<String>,
}

#[derive(Default)]
pub struct Expectations {
    by_job: Mutex<BTreeMap<ObjectKey, Pending>>,
}

impl Expectations {
    pub fn created(&self, job: &ObjectKey, pod: &str) {
        self.by_job
            .lock()
            .entry(job.clone())
            .or_default()
            .creates
            .insert(pod.to_string());
    }

    pub fn deleted(&self, job: &ObjectKey, pod: &str) {
        self.by_job
            .lock()
            .entry(job.clone())
            .or_default()
            .deletes
            .insert(pod.to_string());
    }

    /// Forgets an expectation whose request failed: nothing will arrive.
    pub fn create_failed(&self, job: &ObjectKey, pod: &str) {
        if let Some(p) = self.by_job.lock().get_mut(job) {
            p.creates.remove(pod);
        }
    }

    pub fn finalizer_removed(&self, job: &ObjectKey, uid: &str) {
        self.by_job
            .lock()
            .entry(job.clone())
            .or_default()
            .finalizers
            .insert(uid.to_string());
    }

    pub fn is_finalizer_removed(&self, job: &ObjectKey, uid: &str) -> bool {
        self.by_job
            .lock()
            .get(job)
            .is_some_and(|p| p.finalizers.contains(uid))
    }

    pub fn forget(&self, job: &ObjectKey) {
        self.by_job.lock().remove(job);
    }

    /// Drops what the cache (`pods`: every pod of the job's namespace)
    /// already shows; true when nothing is outstanding for creates and
    /// deletes.
    pub fn observe(&self, job: &ObjectKey, pods: &[Arc<Value>]) -> bool {
        let mut all = self.by_job.lock();
        let Some(p) = all.get_mut(job) else {
            return true;
        };
        let by_name: BTreeMap<&str, &Value> =
            pods.iter().map(|o| (meta::name(o), o.as_ref())).collect();
        let by_uid: BTreeMap<&str, &Value> =
            pods.iter().map(|o| (meta::uid(o), o.as_ref())).collect();
        p.creates.retain(|n| !by_name.contains_key(n.as_str()));
        p.deletes.retain(|n| {
            by_name
                .get(n.as_str())
                .is_some_and(|o| !meta::is_deleting(o))
        });
        p.finalizers.retain(|u| {
            by_uid
                .get(u.as_str())
                .is_some_and(|o| meta::finalizers(o).iter().any(|f| f == TRACKING_FINALIZER))
        });
        let satisfied = p.creates.is_empty() && p.deletes.is_empty();
        if satisfied && p.finalizers.is_empty() {
            all.remove(job);
        }
        satisfied
    }
}
