//! One scheduling attempt on a snapshot: PreFilter, Filter over (enough
//! of) the nodes, PreScore, Score and NormalizeScore times the weights,
//! and the choice of the best node. No I/O; [`crate::scheduler`] acts on
//! the outcome.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_runtime::Rng;

use crate::framework::{Code, CycleState, NodeInfo, Plugin, PodInfo, Snapshot, Status};
use crate::profile::Profile;
use crate::queue::Nominated;

/// Below this many nodes every node is filtered.
const MIN_FEASIBLE_NODES: usize = 100;
/// The adaptive percentage never goes below this.
const MIN_PERCENTAGE: usize = 5;

/// How many feasible nodes to look for before scoring: all of a small
/// cluster; otherwise `percentage` of the nodes, where the adaptive default
/// is 50% minus one point per 125 nodes, at least 5%, and in any case at
/// least 100 nodes.
pub fn feasible_nodes_to_find(percentage: Option<u32>, nodes: usize) -> usize {
    if nodes < MIN_FEASIBLE_NODES || percentage == Some(100) {
        return nodes;
    }
    let pct = match percentage {
        Some(p) if p > 0 => p as usize,
        _ => 50usize.saturating_sub(nodes / 125).max(MIN_PERCENTAGE),
    };
    (nodes * pct / 100).max(MIN_FEASIBLE_NODES)
}

/// Why no node was chosen.
#[derive(Debug, Clone)]
pub struct FitError {
    pub nodes: usize,
    /// The verdict of every node that was tried and failed (shared with
    /// [`crate::failures`], which keeps it for pods of the same shape).
    pub statuses: Arc<BTreeMap<String, Status>>,
    /// Set when a PreFilter rejected the pod before any node was tried.
    pub pre_filter: Option<Status>,
}

impl FitError {
    /// kube-scheduler's summary: `0/N nodes are available: ` then each
    /// reason with the number of nodes that gave it, sorted as strings,
    /// then a period and what PostFilter said, if anything.
    pub fn message(&self, post_filter: &str) -> String {
        if self.nodes == 0 {
            return "no nodes available to schedule pods".to_string();
        }
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        match &self.pre_filter {
            Some(s) => {
                for r in &s.reasons {
                    *counts.entry(r).or_default() += self.nodes;
                }
            }
            None => {
                for s in self.statuses.values() {
                    for r in &s.reasons {
                        *counts.entry(r).or_default() += 1;
                    }
                }
            }
        }
        let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
        parts.sort();
        let mut msg = format!(
            "0/{} nodes are available: {}.",
            self.nodes,
            parts.join(", ")
        );
        if !post_filter.is_empty() {
            msg.push(' ');
            msg.push_str(post_filter);
        }
        msg
    }

    /// The plugins that rejected the pod (for deciding which cluster
    /// events may help it).
    pub fn plugins(&self) -> BTreeSet<&'static str> {
        self.pre_filter
            .iter()
            .chain(self.statuses.values())
            .map(|s| s.plugin)
            .filter(|p| !p.is_empty())
            .collect()
    }

    /// What upstream's preemption says when it found nothing to evict:
    /// nodes rejected for reasons eviction cannot cure, and the others.
    pub fn no_preemption_message(&self) -> String {
        let mut hopeless = 0;
        let mut tried = 0;
        match &self.pre_filter {
            Some(s) if s.code == Code::UnschedulableAndUnresolvable => hopeless = self.nodes,
            Some(_) => tried = self.nodes,
            None => {
                for s in self.statuses.values() {
                    if s.code == Code::UnschedulableAndUnresolvable {
                        hopeless += 1;
                    } else {
                        tried += 1;
                    }
                }
            }
        }
        let mut parts = Vec::new();
        if tried > 0 {
            parts.push(format!(
                "{tried} No preemption victims found for incoming pod"
            ));
        }
        if hopeless > 0 {
            parts.push(format!(
                "{hopeless} Preemption is not helpful for scheduling"
            ));
        }
        parts.sort();
        format!(
            "preemption: 0/{} nodes are available: {}.",
            self.nodes,
            parts.join(", ")
        )
    }
}

#[derive(Debug)]
pub enum ScheduleError {
    Unschedulable(FitError),
    /// A plugin failed (not a verdict on the pod).
    Internal(String),
}

/// The state carried between attempts: where the next node scan starts
/// and the seeded generator for ties.
pub struct Algorithm {
    next_start: usize,
    rng: Rng,
    pub percentage_of_nodes_to_score: Option<u32>,
}

/// The outcome of a successful attempt, with the cycle's state (PostBind
/// style consumers and tests may look at it).
pub struct Placement {
    pub node: String,
    /// Feasible nodes found before scoring.
    pub feasible: usize,
}

impl Algorithm {
    pub fn new(rng: Rng, percentage_of_nodes_to_score: Option<u32>) -> Self {
        Algorithm {
            next_start: 0,
            rng,
            percentage_of_nodes_to_score,
        }
    }

    pub fn schedule(
        &mut self,
        profile: &Profile,
        pod: &PodInfo,
        snap: &Snapshot,
        nominated: &Nominated,
    ) -> Result<Placement, ScheduleError> {
        let n = snap.nodes.len();
        if n == 0 {
            return Err(ScheduleError::Unschedulable(FitError {
                nodes: 0,
                statuses: Arc::default(),
                pre_filter: None,
            }));
        }
        let mut state = CycleState::default();
        if let Err(s) = profile.run_pre_filter(&mut state, pod, snap) {
            if s.code == Code::Error {
                return Err(ScheduleError::Internal(s.reasons.join(", ")));
            }
            return Err(ScheduleError::Unschedulable(FitError {
                nodes: n,
                statuses: Arc::default(),
                pre_filter: Some(s),
            }));
        }
        let filters = active_filters(profile, &state);
        let check = |node: &NodeInfo| filter_node(&filters, &state, pod, node, nominated);

        // A pod nominated by preemption tries its node first.
        let nominated_node = pod.nominated_node();
        if !nominated_node.is_empty() {
            if let Some(node) = snap.node(nominated_node) {
                if check(node).is_success() {
                    return Ok(Placement {
                        node: nominated_node.to_string(),
                        feasible: 1,
                    });
                }
            }
        }

        let pct = profile
            .percentage_of_nodes_to_score
            .or(self.percentage_of_nodes_to_score);
        let want = feasible_nodes_to_find(pct, n);
        let start = self.next_start % n;
        let mut feasible: Vec<&NodeInfo> = Vec::with_capacity(want.min(n));
        let mut failed: Vec<(usize, Status)> = Vec::new();
        let mut processed = 0;
        for i in 0..n {
            let idx = (start + i) % n;
            prefetch(&snap.nodes[(idx + PREFETCH_AHEAD) % n]);
            let node = &snap.nodes[idx];
            processed += 1;
            let s = check(node);
            match s.code {
                Code::Success => {
                    feasible.push(node);
                    if feasible.len() >= want {
                        break;
                    }
                }
                Code::Error => return Err(ScheduleError::Internal(s.reasons.join(", "))),
                _ => failed.push((idx, s)),
            }
        }
        self.next_start = (start + processed) % n;
        if feasible.is_empty() {
            return Err(ScheduleError::Unschedulable(FitError {
                nodes: n,
                statuses: Arc::new(
                    failed
                        .into_iter()
                        .map(|(i, s)| (snap.nodes[i].name.clone(), s))
                        .collect(),
                ),
                pre_filter: None,
            }));
        }
        let found = feasible.len();
        if found == 1 {
            return Ok(Placement {
                node: feasible[0].name.clone(),
                feasible: 1,
            });
        }

        for p in &profile.pre_score {
            let s = p.pre_score(&mut state, pod, snap, &feasible);
            match s.code {
                Code::Success => {}
                Code::Error => return Err(ScheduleError::Internal(s.reasons.join(", "))),
                // Skip, or, since a PreScore has no say on feasibility,
                // anything else (a plugin bug): the plugin is left out.
                _ => state.skip_score.insert(p.name()),
            }
        }
        let mut totals = vec![0i64; found];
        let mut scores = vec![0i64; found];
        for (p, weight) in &profile.score {
            if state.skip_score.contains(p.name()) {
                continue;
            }
            for (s, node) in scores.iter_mut().zip(&feasible) {
                *s = p.score(&state, pod, node);
            }
            p.normalize(&state, pod, &mut scores);
            for (t, s) in totals.iter_mut().zip(&scores) {
                *t += s * weight;
            }
        }
        // The highest total; among equals each is equally likely, as
        // upstream's reservoir sampling makes them, from one draw (in an
        // empty cluster every node ties, and a draw per tie cost as much
        // as a scoring plugin).
        let top = totals.iter().copied().max().unwrap_or(0);
        let ties = totals.iter().filter(|&&t| t == top).count() as u64;
        let pick = if ties > 1 { self.rng.below(ties) } else { 0 };
        let best = totals
            .iter()
            .enumerate()
            .filter(|(_, &t)| t == top)
            .nth(pick as usize)
            .map_or(0, |(i, _)| i);
        Ok(Placement {
            node: feasible[best].name.clone(),
            feasible: found,
        })
    }
}

/// How many nodes ahead of the one being filtered to start loading.
const PREFETCH_AHEAD: usize = 4;

/// Asks the CPU to load a node's info ahead of its use: node infos live
/// all over the heap, and waiting for each one's first cache line was the
/// largest single cost of a scan over hundreds of nodes.
#[inline]
fn prefetch(node: &Arc<NodeInfo>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let p = Arc::as_ptr(node) as *const i8;
        let size = std::mem::size_of::<NodeInfo>();
        let mut off = 0;
        while off < size {
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch
            // is only a hint that never faults; the address is inside a
            // live allocation anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = node;
}

/// The Filter plugins of `profile` whose PreFilter did not skip them.
pub(crate) fn active_filters<'a>(
    profile: &'a Profile,
    state: &CycleState,
) -> Vec<&'a Arc<dyn Plugin>> {
    profile
        .filter
        .iter()
        .filter(|p| !state.skip_filter.contains(p.name()))
        .collect()
}

/// The verdict of `filters` on one node, with the pods nominated to it.
pub(crate) fn filter_node(
    filters: &[&Arc<dyn Plugin>],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    nominated: &Nominated,
) -> Status {
    match with_nominated(pod, node, nominated) {
        Some(n) => run_filters(filters, state, pod, &n),
        None => run_filters(filters, state, pod, node),
    }
}

fn run_filters(
    filters: &[&Arc<dyn Plugin>],
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
) -> Status {
    for p in filters {
        let mut s = p.filter(state, pod, node);
        if !s.is_success() {
            s.plugin = p.name();
            return s;
        }
    }
    Status::success()
}

/// The node with the pods nominated to it that are at least as important
/// as `pod` counted as if already there, when there are any. (Upstream
/// filters twice, with and without them; one pass with them is the
/// stricter half and is what kubesim does.)
fn with_nominated(pod: &PodInfo, node: &NodeInfo, nominated: &Nominated) -> Option<NodeInfo> {
    let on = nominated.get(&node.name)?;
    let mut extra = on
        .values()
        .filter(|p| p.key != pod.key && p.priority >= pod.priority)
        .peekable();
    extra.peek()?;
    let mut n = node.clone();
    for p in extra {
        n.add_pod(p.clone());
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProfileConfig;
    use crate::framework::Status;

    #[test]
    fn adaptive_percentage() {
        // (nodes, configured percentage, nodes to find)
        let table = [
            (50, None, 50),
            (100, None, 100),
            (1000, None, 420),    // 50 - 8 = 42%
            (5000, None, 500),    // 50 - 40 = 10%
            (6000, None, 300),    // 50 - 48 = 2% -> 5%
            (20000, None, 1000),  // 5%
            (1000, Some(5), 100), // 50 but at least 100
            (1000, Some(30), 300),
            (1000, Some(100), 1000),
        ];
        for (nodes, pct, want) in table {
            assert_eq!(feasible_nodes_to_find(pct, nodes), want, "{nodes} {pct:?}");
        }
    }

    fn status(code: Code, reason: &str) -> Status {
        Status {
            code,
            reasons: vec![reason.to_string().into()],
            plugin: "X",
        }
    }

    #[test]
    fn fit_error_message_counts_and_sorts() {
        let mut statuses = BTreeMap::new();
        for (i, r) in ["Insufficient cpu", "Insufficient cpu", "Insufficient cpu"]
            .iter()
            .enumerate()
        {
            statuses.insert(format!("a{i}"), status(Code::Unschedulable, r));
        }
        for i in 0..2 {
            statuses.insert(
                format!("b{i}"),
                status(
                    Code::UnschedulableAndUnresolvable,
                    "node(s) had untolerated taint {k: v}",
                ),
            );
        }
        let e = FitError {
            nodes: 5,
            statuses: Arc::new(statuses),
            pre_filter: None,
        };
        assert_eq!(
            e.message(""),
            "0/5 nodes are available: 2 node(s) had untolerated taint {k: v}, 3 Insufficient cpu."
        );
        assert_eq!(
            e.message(&e.no_preemption_message()),
            "0/5 nodes are available: 2 node(s) had untolerated taint {k: v}, 3 Insufficient cpu. \
preemption: 0/5 nodes are available: 2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."
        );
    }

    #[test]
    fn ties_are_broken_by_the_seeded_rng() {
        use crate::plugins::testutil::{node, pod};
        use serde_json::json;
        let profile = Profile::build(&ProfileConfig::default_named("d")).unwrap();
        let mut snap = Snapshot::default();
        for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
            snap.nodes.push(Arc::new(node(name, json!({}))));
            snap.index.insert(name.to_string(), i);
        }
        let p = pod(json!({"containers": [{"name": "c"}]}));
        let picks = |seed| {
            let mut a = Algorithm::new(Rng::seeded(seed), None);
            (0..8)
                .map(|_| {
                    a.schedule(&profile, &p, &snap, &Nominated::new())
                        .unwrap()
                        .node
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(picks(3), picks(3));
        let all: BTreeSet<String> = (0..4).flat_map(picks).collect();
        assert!(
            all.len() > 1,
            "identical nodes should all get picked: {all:?}"
        );
        // Each as likely as the others.
        let mut a = Algorithm::new(Rng::seeded(5), None);
        let mut count: BTreeMap<String, u32> = BTreeMap::new();
        for _ in 0..400 {
            let placed = a.schedule(&profile, &p, &snap, &Nominated::new()).unwrap();
            *count.entry(placed.node).or_default() += 1;
        }
        assert_eq!(count.len(), 4, "{count:?}");
        assert!(
            count.values().all(|&c| (60..=140).contains(&c)),
            "{count:?}"
        );
    }
}
