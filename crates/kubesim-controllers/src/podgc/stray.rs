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
//! note when a pod names a node the node informer lacks, a node goes, or
//! an unscheduled pod is being deleted, and only then does a pass run, at
//! the next beat; a quarantined node wakes the pass that ends its
//! quarantine. A simulation without such pods never wakes for it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{Change, Informer};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{fail_and_delete, next_beat, nodes_ref};
use crate::pods::phase;
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
    /// The nodes the node informer holds.
    nodes: BTreeSet<String>,
    /// Something may be stray: a pass is due at the next beat.
    dirty: bool,
}

/// The pod's node, when it is bound.
fn node_of(pod: &Value) -> Option<&str> {
    meta::path(pod, "spec.nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

/// Follows nodes and pods, noting what may be stray.
pub(super) fn watch(nodes: &Informer, pods: &Informer) -> Arc<Strays> {
    let strays = Arc::new(Strays {
        state: Mutex::default(),
        wake: Notify::new(),
    });
    let s = strays.clone();
    nodes.on_change(move |c| {
        let name = meta::name(c.object());
        let mut st = s.state.lock();
        match c {
            Change::Deleted(_) => {
                st.nodes.remove(name);
                st.dirty = true;
                s.wake.notify_one();
            }
            _ => {
                if !st.nodes.contains(name) {
                    st.nodes.insert(name.to_string());
                }
            }
        }
    });
    let s = strays.clone();
    pods.on_change(move |c| {
        if matches!(c, Change::Deleted(_)) {
            return;
        }
        let pod = c.object();
        let stray = match node_of(pod) {
            Some(node) => !s.state.lock().nodes.contains(node),
            None => meta::is_deleting(pod),
        };
        if stray {
            s.state.lock().dirty = true;
            s.wake.notify_one();
        }
    });
    strays
}

/// Runs the passes, on the beats counted from `start`.
pub(super) async fn run(ctx: &Context, start: Instant, strays: Arc<Strays>) {
    let pods = ctx.informers.get(&crate::replicaset::pods_ref()).cache();
    // Nodes found missing, with the beat they were first found at.
    let mut missing: BTreeMap<String, Instant> = BTreeMap::new();
    let mut last: Option<Instant> = None;
    loop {
        let dirty = std::mem::take(&mut strays.state.lock().dirty);
        let due = match (dirty, missing.values().min()) {
            (true, _) => ctx.clock.instant(),
            (false, Some(&seen)) => seen + QUARANTINE,
            (false, None) => {
                strays.wake.notified().await;
                strays.state.lock().dirty = true;
                continue;
            }
        };
        let at = next_beat(start, due.max(ctx.clock.instant()), last);
        // A change before the beat comes in the same pass.
        tokio::select! {
            biased;
            _ = ctx.clock.sleep_until(at) => {}
            _ = strays.wake.notified(), if !dirty => {
                strays.state.lock().dirty = true;
                continue;
            }
        }
        last = Some(at);
        strays.state.lock().dirty = false;
        let all = pods.list();
        // Unscheduled pods being deleted go at once.
        for pod in all
            .iter()
            .filter(|p| node_of(p).is_none() && meta::is_deleting(p))
        {
            let terminal = matches!(phase(pod), "Succeeded" | "Failed");
            fail_and_delete(ctx, meta::namespace(pod), meta::name(pod), terminal, None).await;
        }
        // Nodes named by pods but unknown: quarantined from this beat on.
        let known = strays.state.lock().nodes.clone();
        let named: BTreeSet<&str> = all
            .iter()
            .filter_map(|p| node_of(p))
            .filter(|n| !known.contains(*n))
            .collect();
        missing.retain(|n, _| named.contains(n.as_str()));
        for n in &named {
            missing.entry(n.to_string()).or_insert(at);
        }
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
                Err(e) => tracing::warn!(node, error = %e.message, "looking up a missing node"),
            }
        }
        // A lookup that failed otherwise is tried again at the next beat:
        // its quarantine is over, and a beat is never passed twice.
    }
}

/// Deletes the pods bound to `node`, which no longer exists.
async fn delete_orphans(ctx: &Context, pods: &kubesim_runtime::Cache, node: &str) {
    let condition = json!({"type": "DisruptionTarget", "status": "True",
        "reason": "DeletionByPodGC", "message": "PodGC: node no longer exists"});
    for pod in pods.on_node(node) {
        let terminal = matches!(phase(&pod), "Succeeded" | "Failed");
        tracing::info!(
            pod = meta::name(&pod),
            node,
            "deleting a pod whose node is gone"
        );
        fail_and_delete(
            ctx,
            meta::namespace(&pod),
            meta::name(&pod),
            terminal,
            Some(condition.clone()),
        )
        .await;
    }
}
