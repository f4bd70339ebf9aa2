//! When simulated time may move while an outside scheduler is connected:
//! the policy over `kubesim_runtime::Lockstep`, which does the holding.
//!
//! The outside scheduler has work while some pod is unbound. Every change
//! to a pod or a node (what a scheduler watches and reacts to) restarts
//! its quiet period; requests in flight hold time by themselves (the HTTP
//! front enters the gate around each one). Watches are not in flight once
//! their stream is set up, so a client's open watches never hold time.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{Change, Informers, Lockstep, ObjectKey, ResourceRef};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;

pub struct Policy {
    pub gate: Lockstep,
    unbound: Mutex<BTreeSet<ObjectKey>>,
    connected: AtomicBool,
    connected_now: Notify,
}

impl Policy {
    pub fn new(quiet: Duration, limit: Duration) -> Arc<Self> {
        Arc::new(Policy {
            gate: Lockstep::new(quiet, limit),
            unbound: Mutex::new(BTreeSet::new()),
            connected: AtomicBool::new(false),
            connected_now: Notify::new(),
        })
    }

    /// Follows pods and nodes through the run's informers. Their handlers
    /// run in the same turn of the runtime as the write that caused them,
    /// so the gate closes before the clock could move past the change.
    pub fn follow(self: &Arc<Self>, informers: &Informers) {
        let me = self.clone();
        informers
            .get(&ResourceRef::core("pods"))
            .on_change(move |c| me.on_pod(c));
        let me = self.clone();
        informers
            .get(&ResourceRef::core("nodes"))
            .on_change(move |_| me.gate.touch());
    }

    fn on_pod(&self, change: &Change) {
        let pod = change.object();
        let key = ObjectKey::of(pod);
        let waiting = {
            let mut unbound = self.unbound.lock();
            if !matches!(change, Change::Deleted(_)) && is_unbound(pod) {
                unbound.insert(key);
            } else {
                unbound.remove(&key);
            }
            !unbound.is_empty()
        };
        self.gate.set_waiting(waiting);
        self.gate.touch();
    }

    /// A client opened a watch on pods: a scheduler is listening.
    pub fn client_watches_pods(&self) {
        if !self.connected.swap(true, Ordering::SeqCst) {
            tracing::info!("a client watches pods; the simulation may start");
        }
        self.connected_now.notify_waiters();
    }

    /// Completes once a client watches pods.
    pub async fn connected(&self) {
        loop {
            let notified = self.connected_now.notified();
            if self.connected.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// A pod waiting for a scheduler: not bound, not finished, not going away.
fn is_unbound(pod: &Value) -> bool {
    let node = meta::path(pod, "spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let phase = meta::path(pod, "status.phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    node.is_empty()
        && !matches!(phase, "Succeeded" | "Failed")
        && meta::path(pod, "metadata.deletionTimestamp").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unbound_pods() {
        let pending =
            json!({"metadata": {"name": "a"}, "spec": {}, "status": {"phase": "Pending"}});
        assert!(is_unbound(&pending));
        let bound = json!({"metadata": {"name": "a"}, "spec": {"nodeName": "n"}});
        assert!(!is_unbound(&bound));
        let failed = json!({"metadata": {"name": "a"}, "spec": {}, "status": {"phase": "Failed"}});
        assert!(!is_unbound(&failed));
        let leaving = json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}, "spec": {}});
        assert!(!is_unbound(&leaving));
    }
}
