//! The pod garbage collector's collection of stray pods, as upstream's
//! podgc does it on each 20-second beat:
//! - pods bound to a node that no longer exists (orphaned): a node that
//!   bound pods name but the node informer lacks is quarantined for 40 s,
//!   then looked up on the API server; if it is not found there either, its
//!   pods are marked Failed with a `DisruptionTarget` condition (reason
//!   `DeletionByPodGC`) and deleted at once;
//! - unscheduled pods being deleted (held by a finalizer): deleted at once.
//!
//! Rather than look at every pod on every beat, the informers' handlers
//! note the nodes that pods name while the node informer lacks them (or
//! that go) and the unscheduled pods being deleted; a pass runs at the next
//! beat only when they noted something, or when a quarantine ends, and
//! reads only those nodes' and pods' entries. A simulation without such
//! pods never wakes for it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{Cache, Change, Informer, ObjectKey};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{fail_and_delete, next_beat, nodes_ref};
use crate::pods::{is_finished, node_name};
use crate::Context;

/// Upstream's `quarantineTime`: how long a node must stay missing before
/// its pods go.
const QUARANTINE: Duration = Duration::from_secs(40);

/// What the informers' handlers note for the passes.
pub(super) struct Strays {
    state: Mutex<State>,
    wake: Notify,
}

#[derive(Default)]
struct State {
    /// Nodes that bound pods named while the node informer lacked them,
    /// and nodes that went: looked at in the next pass.
    suspects: BTreeSet<String>,
    /// Unscheduled pods seen being deleted: collected in the next pass.
    unscheduled: BTreeSet<ObjectKey>,
}

impl State {
    /// Whether the next beat has work.
    fn pending(&self) -> bool {
        !self.suspects.is_empty() || !self.unscheduled.is_empty()
    }
}

/// Follows nodes and pods, noting what may be stray. Whether a node is
/// known is asked of the node informer's cache, which holds a change
/// before its handlers hear of it.
pub(super) fn watch(nodes: &Informer, pods: &Informer) -> Arc<Strays> {
    let strays = Arc::new(Strays {
        state: Mutex::default(),
        wake: Notify::new(),
    });
    let s = strays.clone();
    nodes.on_change(move |c| {
        if let Change::Deleted(node) = c {
            let mut st = s.state.lock();
            st.suspects.insert(meta::name(node).to_string());
            s.wake.notify_one();
        }
    });
    let s = strays.clone();
    let known = nodes.cache();
    pods.on_change(move |c| {
        if matches!(c, Change::Deleted(_)) {
            return;
        }
        let pod = c.object();
        let mut st = s.state.lock();
        match node_name(pod) {
            Some(node) if !known.contains("", node) => {
                if !st.suspects.contains(node) {
                    st.suspects.insert(node.to_string());
                }
            }
            None if meta::is_deleting(pod) => {
                st.unscheduled.insert(ObjectKey::of(pod));
            }
            _ => return,
        }
        s.wake.notify_one();
    });
    strays
}

/// Runs the passes, on the beats counted from `start`.
pub(super) async fn run(ctx: &Context, start: Instant, strays: Arc<Strays>) {
    let pods = ctx.informers.get(&crate::replicaset::pods_ref()).cache();
    let nodes = ctx.informers.get(&nodes_ref()).cache();
    // Nodes found missing, with the beat they were first found at.
    let mut missing: BTreeMap<String, Instant> = BTreeMap::new();
    let mut last: Option<Instant> = None;
    loop {
        let pending = strays.state.lock().pending();
        let now = ctx.clock.instant();
        let due = if pending {
            now
        } else if let Some(&seen) = missing.values().min() {
            seen + QUARANTINE
        } else {
            strays.wake.notified().await;
            continue;
        };
        let at = next_beat(start, due.max(now), last);
        // Waiting for a quarantine to end, a handler's note makes a pass
        // due at an earlier beat; otherwise later notes join this pass.
        tokio::select! {
            biased;
            _ = ctx.clock.sleep_until(at) => {}
            _ = strays.wake.notified(), if !pending => continue,
        }
        last = Some(at);
        let (suspects, unscheduled) = {
            let mut st = strays.state.lock();
            (
                std::mem::take(&mut st.suspects),
                std::mem::take(&mut st.unscheduled),
            )
        };
        for key in unscheduled {
            let Some(pod) = pods.get(&key.namespace, &key.name) else {
                continue;
            };
            if node_name(&pod).is_none() && meta::is_deleting(&pod) {
                fail_and_delete(ctx, &key.namespace, &key.name, is_finished(&pod), None).await;
            }
        }
        // Quarantined from this beat on, while pods still name them and
        // the node informer still lacks them.
        for node in suspects {
            missing.entry(node).or_insert(at);
        }
        missing.retain(|n, _| !nodes.contains("", n) && pods.any_on_node(n));
        let expired: Vec<String> = missing
            .iter()
            .filter(|(_, seen)| at >= **seen + QUARANTINE)
            .map(|(n, _)| n.clone())
            .collect();
        for node in expired {
            match ctx.api.get(&nodes_ref(), "", &node).await {
                Err(e) if e.code == 404 => {
                    missing.remove(&node);
                    delete_orphans(ctx, &pods, &node).await;
                }
                // Back: the informer lags behind the server.
                Ok(_) => {
                    missing.remove(&node);
                }
                // Tried again at the next beat: its quarantine is over,
                // and a beat is never passed twice.
                Err(e) => tracing::warn!(node, error = %e.message, "looking up a missing node"),
            }
        }
    }
}

/// Deletes the pods bound to `node`, which no longer exists.
async fn delete_orphans(ctx: &Context, pods: &Cache, node: &str) {
    let condition = json!({"type": "DisruptionTarget", "status": "True",
        "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists"});
    for pod in pods.on_node(node) {
        let (ns, name) = (meta::namespace(&pod), meta::name(&pod));
        tracing::info!(pod = name, node, "deleting a pod whose node is gone");
        fail_and_delete(ctx, ns, name, is_finished(&pod), Some(condition.clone())).await;
    }
}
