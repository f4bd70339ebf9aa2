//! Unschedulable verdicts remembered by pod shape, so that a pod retried
//! while nothing changed where it could fit costs a look at the nodes that
//! changed, not a scan of every node.
//!
//! kube-scheduler retries an unschedulable pod whenever an event may help
//! it (any bound pod's deletion, for NodeResourcesFit) and its backoff has
//! passed. Under a backlog, a simulation makes thousands of such attempts
//! per simulated minute, nearly all failing exactly as the previous
//! attempt of a pod of the same shape did: with 30,000 jobs at 150 % load,
//! failed attempts took two thirds of the run, and their number grows with
//! the backlog times the simulated time. The result of a replayed attempt
//! is the one a full attempt would give: the same message, the same
//! rejecting plugins, no nomination, and the node scan's start left where
//! a full failing scan leaves it (where it was).
//!
//! A verdict is replayed only when it cannot depend on anything but each
//! node and the pod's shape:
//! - every Filter plugin left after PreFilter judges a node by that node
//!   alone ([`NODE_LOCAL`]); InterPodAffinity and PodTopologySpread skip
//!   themselves when neither the pod nor any bound pod asks for them;
//! - the pod has no nominated node (it would be tried first);
//! - the only PostFilter is DefaultPreemption, it found nothing, and no
//!   changed node holds a pod less important than this one;
//! - the pods nominated to nodes are the same map as when remembered;
//! - the snapshot's change log reaches back to the remembered version.
//!
//! Otherwise, or when a changed node now fits, the attempt runs in full.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::algorithm::{active_filters, filter_node, FitError};
use crate::framework::{Code, CycleState, Nomination, PodInfo, Snapshot};
use crate::plugins::{
    node_affinity, node_name, node_ports, node_resources_fit, node_unschedulable, taint_toleration,
};
use crate::preemption;
use crate::profile::Profile;
use crate::queue::{Nominated, Rejecting};

/// Filter plugins whose verdict on a node reads only that node (its
/// object, its pods' requests and ports, the pods nominated to it) and the
/// pod. (VolumeRestrictions skips itself for the pods without volumes that
/// [`shape`] admits.)
const NODE_LOCAL: [&str; 6] = [
    node_unschedulable::NAME,
    node_name::NAME,
    taint_toleration::NAME,
    node_affinity::NAME,
    node_ports::NAME,
    node_resources_fit::NAME,
];

/// Shapes remembered at once; the oldest is forgotten first. Each holds a
/// verdict per node (about 150 bytes a node).
const KEPT: usize = 32;

/// What a failed attempt concluded, without a nomination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Shared: a replayed verdict gives every pod that fails alike the
    /// same text, and the event recorder keeps it once for all of them.
    pub message: Arc<str>,
    pub plugins: Rejecting,
}

struct Memo {
    version: u64,
    nominated: Arc<Nominated>,
    fit: FitError,
    failure: Failure,
}

#[derive(Default)]
pub struct Failures {
    memos: BTreeMap<Shape, Memo>,
    order: VecDeque<Shape>,
}

/// What a failed attempt concludes: PostFilter's nomination, if any, and
/// the message and rejecting plugins.
pub fn conclude(
    profile: &Profile,
    pod: &PodInfo,
    snap: &Snapshot,
    fit: &FitError,
) -> (Option<Nomination>, Failure) {
    let nomination = if fit.nodes > 0 {
        profile
            .post_filter
            .iter()
            .find_map(|pf| pf.post_filter(profile, pod, snap, &fit.statuses))
    } else {
        None
    };
    let post = match nomination {
        Some(_) => String::new(),
        None => post_filter_message(profile, pod, fit),
    };
    let failure = Failure {
        message: fit.message(&post).into(),
        plugins: fit.plugins().into(),
    };
    (nomination, failure)
}

/// What kube-scheduler appends to the message when PostFilter nominated
/// nothing.
fn post_filter_message(profile: &Profile, pod: &PodInfo, fit: &FitError) -> String {
    if profile.post_filter.is_empty() || fit.nodes == 0 {
        String::new()
    } else if pod.pod.spec("preemptionPolicy") == Some(&Value::from("Never")) {
        "preemption: not eligible due to preemptionPolicy=Never.".into()
    } else {
        fit.no_preemption_message()
    }
}

/// The key under which pods judged alike by [`NODE_LOCAL`] filters share
/// a verdict: the profile, the priority, and the pod's spec as the
/// scheduler keeps it, with each container cut to what filters read. None
/// for a pod whose verdict is never replayed.
pub fn shape(profile: &Profile, pod: &PodInfo) -> Option<Shape> {
    let nominated = !pod.nominated_node().is_empty();
    let post = profile
        .post_filter
        .iter()
        .all(|p| p.name() == preemption::NAME);
    if nominated || !post {
        return None;
    }
    let own = pod.shape.get_or_init(|| pod_shape(pod)).as_ref()?;
    Some((profile.name.clone(), own.clone()))
}

/// A [`shape`]: the profile's name, and the pod's own part, shared with
/// the pod (no copy of its spec per attempt).
pub type Shape = (Arc<str>, Arc<str>);

/// The pod's own part of [`shape`]: its priority and cut spec, or None
/// when its affinity or volumes make its verdict depend on other pods.
fn pod_shape(pod: &PodInfo) -> Option<Arc<str>> {
    if pod.affinity.any || pod.volumes.is_some() {
        return None;
    }
    let Value::Object(spec) = &*pod.pod.spec else {
        return None;
    };
    let mut kept = Map::new();
    for (k, v) in spec {
        let v = match (k.as_str(), v) {
            ("containers" | "initContainers", Value::Array(cs)) => Value::Array(
                cs.iter()
                    .map(|c| {
                        let mut m = Map::new();
                        for f in ["resources", "ports", "restartPolicy"] {
                            if let Some(x) = c.get(f) {
                                m.insert(f.to_string(), x.clone());
                            }
                        }
                        Value::Object(m)
                    })
                    .collect(),
            ),
            _ => v.clone(),
        };
        kept.insert(k.clone(), v);
    }
    Some(format!("{}\u{0}{}", pod.priority, Value::Object(kept)).into())
}

impl Failures {
    /// The verdict a full attempt of `pod` would reach, when it is known to
    /// fail as the last pod of its shape did apart from the nodes that
    /// changed since, which are judged again here.
    pub fn replay(
        &mut self,
        shape: &Shape,
        profile: &Profile,
        pod: &PodInfo,
        snap: &Snapshot,
        nominated: &Arc<Nominated>,
    ) -> Option<Failure> {
        let memo = self.memos.get_mut(shape)?;
        if memo.fit.nodes != snap.nodes.len() || !Arc::ptr_eq(&memo.nominated, nominated) {
            return None;
        }
        let mut changed: Vec<usize> = snap.changes.since(memo.version)?.collect();
        let mut state = CycleState::default();
        profile.run_pre_filter(&mut state, pod, snap).ok()?;
        let filters = active_filters(profile, &state);
        if !filters.iter().all(|f| NODE_LOCAL.contains(&f.name())) {
            return None;
        }
        changed.sort_unstable();
        changed.dedup();
        let mut verdicts = Vec::with_capacity(changed.len());
        for i in changed {
            let node = &snap.nodes[i];
            let s = filter_node(&filters, &state, pod, node, nominated);
            let preemptible =
                !profile.post_filter.is_empty() && node.lowest_priority < pod.priority;
            if matches!(s.code, Code::Success | Code::Error) || preemptible {
                return None;
            }
            if memo.fit.statuses.get(&node.name) != Some(&s) {
                verdicts.push((node.name.clone(), s));
            }
        }
        memo.version = snap.changes.version();
        if !verdicts.is_empty() {
            let statuses = Arc::make_mut(&mut memo.fit.statuses);
            statuses.extend(verdicts);
            let post = post_filter_message(profile, pod, &memo.fit);
            memo.failure = Failure {
                message: memo.fit.message(&post).into(),
                plugins: memo.fit.plugins().into(),
            };
        }
        Some(memo.failure.clone())
    }

    /// Keeps the verdict of a full attempt that failed with no nomination.
    pub fn remember(
        &mut self,
        shape: Shape,
        snap: &Snapshot,
        nominated: &Arc<Nominated>,
        fit: &FitError,
        failure: &Failure,
    ) {
        if fit.pre_filter.is_some() {
            return;
        }
        let memo = Memo {
            version: snap.changes.version(),
            nominated: nominated.clone(),
            fit: fit.clone(),
            failure: failure.clone(),
        };
        if self.memos.insert(shape.clone(), memo).is_none() {
            self.order.push_back(shape);
            if self.order.len() > KEPT {
                if let Some(old) = self.order.pop_front() {
                    self.memos.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Algorithm, ScheduleError};
    use crate::config::ProfileConfig;
    use crate::plugins::testutil::{named_pod, node};
    use kubesim_runtime::Rng;
    use serde_json::json;

    fn sized(name: &str, cpu: u64, memory_gi: u64, priority: i32) -> PodInfo {
        named_pod(
            name,
            json!({"priority": priority, "containers": [{"name": "c", "resources": {"requests":
                {"cpu": cpu.to_string(), "memory": format!("{memory_gi}Gi")}}}]}),
        )
    }

    /// Pods land on and leave random nodes; after each change every pending
    /// shape is replayed where it can be and also attempted in full: the
    /// two must agree, message for message.
    #[test]
    fn a_replayed_verdict_is_the_one_a_full_attempt_gives() {
        let profile = Profile::build(&ProfileConfig::default_named("default-scheduler")).unwrap();
        let rng = Rng::seeded(11);
        let mut snap = Snapshot::default();
        for i in 0..8 {
            let extra = if i % 5 == 0 {
                json!({"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}})
            } else {
                json!({})
            };
            snap.nodes.push(Arc::new(node(&format!("n{i:02}"), extra)));
            snap.index.insert(format!("n{i:02}"), i);
        }
        snap.recount();
        let pending = [
            sized("wide", 3, 1, 10),
            sized("tall", 1, 7, 10),
            sized("both", 4, 7, 10),
            sized("low", 3, 1, -5),
        ];
        let nominated = Arc::new(Nominated::new());
        let mut failures = Failures::default();
        let (mut replayed, mut full_failures, mut placed) = (0, 0, 0);
        for step in 0..600u32 {
            let i = rng.below(snap.nodes.len() as u64) as usize;
            let mut n = (*snap.nodes[i]).clone();
            // Nodes hover around full, so that pending pods sometimes fit.
            let full = n.requested.milli_cpu >= 3000 || n.requested.memory >= 6 << 30;
            if !n.pods.is_empty() && (full || rng.below(4) == 0) {
                let uid = n.pods[0].uid.clone();
                n.remove_pod(&uid);
            } else {
                let priority = if rng.below(4) == 0 { 0 } else { 20 };
                let p = sized(
                    &format!("s{step}"),
                    1 + rng.below(2),
                    1 + rng.below(3),
                    priority,
                );
                n.add_pod(Arc::new(p.placed_on(&n.name)));
            }
            snap.set_node(i, Arc::new(n));
            for pod in &pending {
                let shape = shape(&profile, pod).expect("a plain pod has a shape");
                let replay = failures.replay(&shape, &profile, pod, &snap, &nominated);
                let full =
                    Algorithm::new(Rng::seeded(1), None).schedule(&profile, pod, &snap, &nominated);
                match (replay, full) {
                    (replay, Err(ScheduleError::Unschedulable(fit))) => {
                        full_failures += 1;
                        let (nomination, failure) = conclude(&profile, pod, &snap, &fit);
                        if let Some(r) = replay {
                            assert!(nomination.is_none(), "step {step}: replayed a nomination");
                            assert_eq!(r, failure, "step {step}, pod {}", pod.key.name);
                            replayed += 1;
                        } else if nomination.is_none() {
                            failures.remember(shape, &snap, &nominated, &fit, &failure);
                        }
                    }
                    (Some(r), other) => panic!(
                        "step {step}: replayed {r:?} where a full attempt gave {:?}",
                        other.map(|p| p.node)
                    ),
                    (None, _) => placed += 1,
                }
            }
        }
        // The walk must reach all three cases, or it checked little.
        assert!(replayed > 200, "replayed {replayed}");
        assert!(full_failures > replayed, "{full_failures} vs {replayed}");
        assert!(placed > 50, "placed {placed}");
        eprintln!("replayed {replayed} of {full_failures} failures; {placed} placed");
    }
}
