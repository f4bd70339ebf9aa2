//! The pod garbage collector (upstream's podgc). Its collection of
//! terminated pods (kube-controller-manager's
//! `--terminated-pod-gc-threshold`) is here: once more pods have
//! terminated than the threshold, the oldest are deleted down to it,
//! evicted ones first, on the controller's 20-second beat. A pod counts as
//! terminated in any phase but Pending, Running and Unknown, as upstream
//! counts it; one in none of the terminal phases is marked Failed before
//! it goes. Pods bound to nodes that no longer exist, and unscheduled pods
//! being deleted, are collected in `stray`.
//!
//! Upstream looks at every pod every 20 s. Here the terminated pods are
//! kept in deletion order as they change, and a pass runs at the first
//! beat after their number passed the threshold: the same deletions at the
//! same beats, without waking a simulation of months every 20 s or reading
//! every pod on each beat.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{
    Change, DeleteOptions, Informer, KeyRef, KeyedMap, ObjectKey, ResourceRef, WriteOptions,
};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::pods::phase;
use crate::replicaset::pods_ref;
use crate::Context;

mod stray;

/// kube-controller-manager's default `--terminated-pod-gc-threshold`.
pub const DEFAULT_THRESHOLD: usize = 12_500;

/// Upstream's `gcCheckPeriod`.
const CHECK_PERIOD: Duration = Duration::from_secs(20);

/// Where a terminated pod stands in the order of deletion: evicted pods
/// first, then the oldest by creation, then by name (and namespace, so
/// that the order is total).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Place {
    not_evicted: bool,
    created: String,
    name: String,
    namespace: String,
}

impl Place {
    /// Its place if `pod` has terminated, and whether its phase is a
    /// terminal one.
    fn of(pod: &Value) -> Option<(Place, bool)> {
        let phase = phase(pod);
        if matches!(phase, "Pending" | "Running" | "Unknown") {
            return None;
        }
        let reason = meta::path(pod, "status.reason").and_then(Value::as_str);
        let place = Place {
            not_evicted: !(phase == "Failed" && reason == Some("Evicted")),
            created: meta::path(pod, "metadata.creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            name: meta::name(pod).to_string(),
            namespace: meta::namespace(pod).to_string(),
        };
        Some((place, matches!(phase, "Succeeded" | "Failed")))
    }
}

/// The terminated pods, by key and in deletion order, each with whether
/// its phase is a terminal one (Succeeded or Failed).
#[derive(Default)]
struct Terminated {
    by_key: KeyedMap<Place>,
    ordered: BTreeMap<Place, bool>,
}

impl Terminated {
    /// Puts `pod` at `place` (None: it has not terminated, or is gone).
    /// Most changes are of pods that have not terminated: those are looked
    /// up by borrowed name, without building a key.
    fn set(&mut self, pod: &Value, place: Option<(Place, bool)>) {
        if let Some(old) = self
            .by_key
            .remove(&KeyRef(meta::namespace(pod), meta::name(pod)))
        {
            self.ordered.remove(&old);
        }
        if let Some((p, terminal)) = place {
            self.ordered.insert(p.clone(), terminal);
            self.by_key.insert(ObjectKey::of(pod), p);
        }
    }

    /// The pods beyond `threshold`, first to go first.
    fn excess(&self, threshold: usize) -> Vec<(Place, bool)> {
        self.ordered
            .iter()
            .take(self.by_key.len().saturating_sub(threshold))
            .map(|(p, t)| (p.clone(), *t))
            .collect()
    }
}

/// Runs until dropped; a threshold of 0 turns the collection of
/// terminated pods off, as a threshold of 0 or less does upstream.
pub async fn run(ctx: Arc<Context>, threshold: usize) {
    let (nodes, pods) = (
        ctx.informers.get(&nodes_ref()),
        ctx.informers.get(&pods_ref()),
    );
    let strays = stray::watch(&nodes, &pods);
    let terminated = (threshold > 0).then(|| watch_terminated(&pods, threshold));
    ctx.informers.wait_synced().await;
    // The beats of both collections, as upstream's one loop has.
    let start = ctx.clock.instant();
    let terminated = async {
        if let Some((terminated, over)) = terminated {
            collect_terminated(&ctx, start, threshold, terminated, over).await;
        }
    };
    tokio::join!(terminated, stray::run(&ctx, start, strays));
}

fn nodes_ref() -> ResourceRef {
    ResourceRef::core("nodes")
}

/// The terminated pods as the informer reports them, and a signal when
/// their number passes `threshold`.
fn watch_terminated(pods: &Informer, threshold: usize) -> (Arc<Mutex<Terminated>>, Arc<Notify>) {
    let terminated: Arc<Mutex<Terminated>> = Arc::default();
    let over = Arc::new(Notify::new());
    {
        let (terminated, over) = (terminated.clone(), over.clone());
        pods.on_change(move |c| {
            let pod = c.object();
            let place = match c {
                Change::Deleted(_) => None,
                _ => Place::of(pod),
            };
            let mut t = terminated.lock();
            t.set(pod, place);
            if t.by_key.len() > threshold {
                over.notify_one();
            }
        });
    }
    (terminated, over)
}

/// Deletes the terminated pods beyond `threshold`, at the first beat after
/// their number passed it.
async fn collect_terminated(
    ctx: &Context,
    start: Instant,
    threshold: usize,
    terminated: Arc<Mutex<Terminated>>,
    over: Arc<Notify>,
) {
    let mut last: Option<Instant> = None;
    loop {
        if terminated.lock().by_key.len() <= threshold {
            over.notified().await;
            continue;
        }
        // The next beat, and never the one of the last pass: its
        // deletions may not have reached the informer yet.
        let at = next_beat(start, ctx.clock.instant(), last);
        ctx.clock.sleep_until(at).await;
        last = Some(at);
        let doomed = terminated.lock().excess(threshold);
        if doomed.is_empty() {
            continue;
        }
        // Upstream logs each pass at its default level; here a long
        // simulation would print one line per finished pod.
        tracing::debug!(pods = doomed.len(), "garbage collecting terminated pods");
        for (p, terminal) in doomed {
            fail_and_delete(ctx, &p.namespace, &p.name, terminal, None).await;
        }
    }
}

/// The first beat (`start` plus a whole number of periods) at or after
/// `now`, and after `last`.
fn next_beat(start: Instant, now: Instant, last: Option<Instant>) -> Instant {
    let period = CHECK_PERIOD.as_nanos();
    let beats = now
        .saturating_duration_since(start)
        .as_nanos()
        .div_ceil(period);
    let mut at = start + Duration::from_nanos((beats * period).min(u64::MAX as u128) as u64);
    if last.is_some_and(|l| at <= l) {
        at += CHECK_PERIOD;
    }
    at
}

/// Deletes a pod at once, as upstream's `markFailedAndDeletePod` does:
/// unless its phase is a terminal one, it is first marked Failed (with
/// `condition`, if any) by a forced server-side apply of its status as
/// `PodGC`, since no kubelet may be left to do it.
async fn fail_and_delete(
    ctx: &Context,
    namespace: &str,
    name: &str,
    terminal: bool,
    condition: Option<Value>,
) {
    let pods = pods_ref();
    if !terminal {
        let mut status = json!({"phase": "Failed"});
        if let Some(c) = condition {
            status["conditions"] = json!([c]);
        }
        let body = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace}, "status": status});
        let opts = WriteOptions {
            field_manager: Some(FIELD_MANAGER.into()),
            force: true,
            ..Default::default()
        };
        let marked = ctx
            .api
            .patch_value(
                &pods,
                namespace,
                name,
                PatchType::Apply,
                body,
                Some("status"),
                &opts,
            )
            .await;
        if let Err(e) = marked {
            if e.code != 404 {
                tracing::warn!(pod = %name, error = %e.message, "marking a pod Failed");
            }
            return;
        }
    }
    let now = DeleteOptions::now_status_only();
    if let Err(e) = ctx.api.delete(&pods, namespace, name, &now).await {
        if e.code != 404 {
            tracing::warn!(pod = %name, error = %e.message, "deleting a pod");
        }
    }
}

/// The field manager of upstream's pod garbage collector.
const FIELD_MANAGER: &str = "PodGC";

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, created: &str, phase: &str, reason: Option<&str>) -> Value {
        let mut p = json!({"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
            "status": {"phase": phase}});
        if let Some(r) = reason {
            p["status"]["reason"] = json!(r);
        }
        p
    }

    #[test]
    fn evicted_pods_go_first_then_the_oldest_then_by_name() {
        let mut t = Terminated::default();
        for p in [
            pod("c", "2026-01-01T00:00:02Z", "Succeeded", None),
            pod("b", "2026-01-01T00:00:01Z", "Failed", None),
            pod("a", "2026-01-01T00:00:01Z", "Succeeded", None),
            pod("z", "2026-01-01T00:00:09Z", "Failed", Some("Evicted")),
            pod("r", "2026-01-01T00:00:00Z", "Running", None),
            pod("n", "2026-01-01T00:00:00Z", "", None),
        ] {
            t.set(&p, Place::of(&p));
        }
        let names = |v: Vec<(Place, bool)>| v.into_iter().map(|(p, _)| p.name).collect::<Vec<_>>();
        // Running is not terminated; no phase at all is.
        assert_eq!(t.by_key.len(), 5);
        assert_eq!(names(t.excess(2)), ["z", "n", "a"]);
        assert_eq!(names(t.excess(5)), Vec::<String>::new());
        // Only the pod without a phase is marked Failed before it goes.
        let unmarked: Vec<String> = t
            .excess(0)
            .into_iter()
            .filter(|(_, terminal)| !terminal)
            .map(|(p, _)| p.name)
            .collect();
        assert_eq!(unmarked, ["n"]);
        // A pod that changes takes its new place; a deleted one leaves.
        let b = pod("b", "2026-01-01T00:00:01Z", "Failed", Some("Evicted"));
        t.set(&b, Place::of(&b));
        let z = pod("z", "2026-01-01T00:00:09Z", "Failed", Some("Evicted"));
        t.set(&z, None);
        assert_eq!(names(t.excess(1)), ["b", "n", "a"]);
    }

    #[tokio::test(start_paused = true)]
    async fn passes_run_on_the_beat_and_once_per_beat() {
        let clock = kubesim_runtime::Clock::simulated(jiff::Timestamp::UNIX_EPOCH);
        let start = clock.instant();
        let s = |secs: u64| start + Duration::from_secs(secs);
        assert_eq!(next_beat(start, start, None), start);
        assert_eq!(next_beat(start, s(1), None), s(20));
        assert_eq!(next_beat(start, s(20), None), s(20));
        assert_eq!(next_beat(start, s(20), Some(s(20))), s(40));
        assert_eq!(next_beat(start, s(41), Some(s(20))), s(60));
    }
}
