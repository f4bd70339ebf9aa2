//! DefaultPreemption: when no node fits a pod, find a node where evicting
//! lower-priority pods makes room, evicting as few and as unimportant pods
//! as possible.
//!
//! For each candidate node (one whose Filter verdict was plain
//! `Unschedulable`), every lower-priority pod is removed; if the pod then
//! fits, victims are given back one at a time from the most important down
//! (pods protected by a PodDisruptionBudget first), keeping each one that
//! leaves the pod still fitting. The candidate with the cheapest victim set
//! wins.
//!
//! Candidates are tried in snapshot (name) order from offset 0; upstream
//! starts at a random offset, but a fixed start keeps runs reproducible.
//! The dry run stops once it has `max(minCandidateNodesAbsolute,
//! minCandidateNodesPercentage% of the candidates)` nodes (at least one of
//! them without PDB violations), as upstream does.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_core::selector::LabelSelector;
use serde_json::Value;

use crate::framework::{
    Code, Filters, NodeInfo, Nomination, PodInfo, PostFilter, Resources, Snapshot, Status,
};

pub const NAME: &str = "DefaultPreemption";

pub struct DefaultPreemption {
    min_candidate_nodes_percentage: i64,
    min_candidate_nodes_absolute: i64,
}

impl DefaultPreemption {
    /// `args` is the plugin's `DefaultPreemptionArgs` (or null for defaults).
    pub fn new(args: &Value) -> Result<Self, String> {
        let int = |field: &str, default: i64| -> Result<i64, String> {
            match args.get(field) {
                None | Some(Value::Null) => Ok(default),
                Some(v) => v.as_i64().ok_or(format!("{field} must be an integer")),
            }
        };
        let pct = int("minCandidateNodesPercentage", 10)?;
        let abs = int("minCandidateNodesAbsolute", 100)?;
        if !(0..=100).contains(&pct) {
            return Err(format!(
                "minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]"
            ));
        }
        if abs < 0 {
            return Err(format!(
                "minCandidateNodesAbsolute: Invalid value: {abs}: not in valid range [0, inf)"
            ));
        }
        if pct == 0 && abs == 0 {
            return Err(
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"
                    .into(),
            );
        }
        Ok(DefaultPreemption {
            min_candidate_nodes_percentage: pct,
            min_candidate_nodes_absolute: abs,
        })
    }

    /// How many candidates the dry run gathers before stopping:
    /// `max(n * pct / 100, abs)`, capped at `n`.
    fn num_candidates(&self, n: usize) -> usize {
        let n = n as i64;
        let want = (n * self.min_candidate_nodes_percentage / 100)
            .max(self.min_candidate_nodes_absolute)
            .min(n);
        want as usize
    }
}

/// A node where the pod fits after evicting `victims`.
struct Candidate {
    node: String,
    /// Most important first.
    victims: Vec<Arc<PodInfo>>,
    pdb_violations: usize,
}

impl PostFilter for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }

    fn post_filter(
        &self,
        filters: &dyn Filters,
        pod: &PodInfo,
        snap: &Snapshot,
        statuses: &BTreeMap<String, Status>,
    ) -> Option<Nomination> {
        if !eligible(pod, snap, statuses) {
            return None;
        }
        // Only nodes where removing pods can help: some pod there is less
        // important than this one (no victims elsewhere), and the node
        // failed for a reason eviction may cure.
        let potential: Vec<usize> = snap
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| {
                n.lowest_priority < pod.priority
                    && statuses
                        .get(&n.name)
                        .is_some_and(|s| s.code == Code::Unschedulable)
            })
            .map(|(i, _)| i)
            .collect();
        if potential.is_empty() {
            return None;
        }
        let wanted = self.num_candidates(potential.len());
        let pdbs = Pdbs::of(snap);
        // One working copy of the snapshot; each trial swaps one node.
        let mut work = snap.clone();
        let mut clean = Vec::new();
        let mut violating = Vec::new();
        for &i in &potential {
            if let Some(c) = select_victims(filters, pod, &mut work, i, &pdbs) {
                if c.pdb_violations == 0 {
                    clean.push(c);
                } else {
                    violating.push(c);
                }
                if !clean.is_empty() && clean.len() + violating.len() >= wanted {
                    break;
                }
            }
        }
        clean.append(&mut violating);
        let best = pick(clean)?;
        Some(Nomination {
            node: best.node,
            victims: best.victims,
        })
    }
}

/// Whether the pod may preempt at all: not with `preemptionPolicy: Never`,
/// and not while a pod it already evicted is still terminating on its
/// nominated node (unless that node has since become hopeless).
fn eligible(pod: &PodInfo, snap: &Snapshot, statuses: &BTreeMap<String, Status>) -> bool {
    if pod.pod.spec("preemptionPolicy").and_then(Value::as_str) == Some("Never") {
        return false;
    }
    let nominated = pod.nominated_node();
    if nominated.is_empty() {
        return true;
    }
    if statuses
        .get(nominated)
        .is_some_and(|s| s.code == Code::UnschedulableAndUnresolvable)
    {
        return true;
    }
    let Some(node) = snap.node(nominated) else {
        return true;
    };
    !node
        .pods
        .iter()
        .any(|p| p.priority < pod.priority && p.deleting && p.pod.preempted)
}

/// `status.startTime` in nanoseconds; `None` (not started yet) sorts as the
/// latest possible time, as upstream substitutes the current time.
fn start_time(pod: &PodInfo) -> Option<i128> {
    meta::parse_time(&pod.pod.start_time).map(|t| t.as_nanosecond())
}

/// Orders start times with "not started" after every real time.
fn cmp_start(a: Option<i128>, b: Option<i128>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Most important first: higher priority, then earlier start.
fn more_important_first(a: &Arc<PodInfo>, b: &Arc<PodInfo>) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then_with(|| cmp_start(start_time(a), start_time(b)))
}

/// The PodDisruptionBudgets of the snapshot, parsed once.
struct Pdbs {
    items: Vec<Pdb>,
}

struct Pdb {
    namespace: String,
    selector: LabelSelector,
    allowed: i64,
    disrupted: BTreeSet<String>,
}

impl Pdbs {
    fn of(snap: &Snapshot) -> Pdbs {
        let items = snap
            .pdbs
            .iter()
            .filter_map(|p| {
                let selector = p.get("spec").and_then(|s| s.get("selector"))?;
                if selector.is_null() {
                    return None;
                }
                let selector = LabelSelector::from_json(selector).ok()?;
                // A PDB with an empty selector protects nothing here.
                if selector.is_empty() {
                    return None;
                }
                let status = p.get("status");
                Some(Pdb {
                    namespace: meta::namespace(p).to_string(),
                    selector,
                    allowed: status
                        .and_then(|s| s.get("disruptionsAllowed"))
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                    disrupted: status
                        .and_then(|s| s.get("disruptedPods"))
                        .and_then(Value::as_object)
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default(),
                })
            })
            .collect();
        Pdbs { items }
    }

    /// Splits victims (in order) into those whose eviction would exceed some
    /// budget and the rest. Each matching budget's allowance is spent in
    /// victim order; pods already listed as disrupted do not spend it again.
    fn split(&self, pods: &[Arc<PodInfo>], victims: &[usize]) -> (Vec<usize>, Vec<usize>) {
        let mut allowed: Vec<i64> = self.items.iter().map(|p| p.allowed).collect();
        let (mut violating, mut fine) = (Vec::new(), Vec::new());
        for &i in victims {
            let v = &pods[i];
            let mut violates = false;
            if !v.labels.is_empty() {
                for (i, pdb) in self.items.iter().enumerate() {
                    if pdb.namespace != v.key.namespace
                        || !pdb.selector.matches_map(&v.labels)
                        || pdb.disrupted.contains(&v.key.name)
                    {
                        continue;
                    }
                    allowed[i] -= 1;
                    if allowed[i] < 0 {
                        violates = true;
                    }
                }
            }
            if violates {
                violating.push(i);
            } else {
                fine.push(i);
            }
        }
        (violating, fine)
    }
}

/// The victims needed on node `idx` of `work`, or `None` when evicting
/// every lower-priority pod still would not make the pod fit. `work` is
/// restored before returning. Pods are tracked by position on the node.
fn select_victims(
    filters: &dyn Filters,
    pod: &PodInfo,
    work: &mut Snapshot,
    idx: usize,
    pdbs: &Pdbs,
) -> Option<Candidate> {
    let original = work.nodes[idx].clone();
    let mut potential: Vec<usize> = (0..original.pods.len())
        .filter(|&i| original.pods[i].priority < pod.priority)
        .collect();
    if potential.is_empty() {
        return None;
    }
    let mut removed: BTreeSet<usize> = potential.iter().copied().collect();
    let result = (|| {
        if !fits_without(filters, pod, work, idx, &original, &removed) {
            return None;
        }
        potential.sort_by(|&a, &b| more_important_first(&original.pods[a], &original.pods[b]));
        let (violating, fine) = pdbs.split(&original.pods, &potential);
        let mut victims: Vec<usize> = Vec::new();
        let mut pdb_violations = 0;
        // Give pods back, budget-protected ones first, each group from the
        // most important down; a pod stays evicted only if the pod would no
        // longer fit with it back.
        for (group, protected) in [(&violating, true), (&fine, false)] {
            for &p in group {
                removed.remove(&p);
                if !fits_without(filters, pod, work, idx, &original, &removed) {
                    removed.insert(p);
                    victims.push(p);
                    if protected {
                        pdb_violations += 1;
                    }
                }
            }
        }
        if !violating.is_empty() && !fine.is_empty() {
            victims.sort_by(|&a, &b| more_important_first(&original.pods[a], &original.pods[b]));
        }
        if victims.is_empty() {
            // The pod fits with nothing evicted: not a preemption candidate
            // (upstream treats this as an error of the filters).
            return None;
        }
        Some(Candidate {
            node: original.name.clone(),
            victims: victims.iter().map(|&i| original.pods[i].clone()).collect(),
            pdb_violations,
        })
    })();
    work.nodes[idx] = original;
    result
}

/// Runs PreFilter on `work` with node `idx` lacking the pods at positions
/// `removed`, then Filter on that node.
fn fits_without(
    filters: &dyn Filters,
    pod: &PodInfo,
    work: &mut Snapshot,
    idx: usize,
    original: &Arc<NodeInfo>,
    removed: &BTreeSet<usize>,
) -> bool {
    let node = Arc::new(without_pods(original, removed));
    work.nodes[idx] = node.clone();
    match filters.pre_filter(pod, work) {
        Ok(state) => filters.filter(&state, pod, &node).is_success(),
        Err(_) => false,
    }
}

/// A copy of `node` without the pods at positions `removed`: their requests
/// are taken off the totals and host ports are recomputed from the pods left.
fn without_pods(node: &NodeInfo, removed: &BTreeSet<usize>) -> NodeInfo {
    let mut copy = node.clone();
    copy.pods = Vec::with_capacity(node.pods.len() - removed.len());
    for (i, p) in node.pods.iter().enumerate() {
        if removed.contains(&i) {
            subtract(&mut copy.requested, &p.requests);
            subtract(&mut copy.non_zero_requested, &p.non_zero_requests);
        } else {
            copy.pods.push(p.clone());
        }
    }
    copy.used_ports = copy
        .pods
        .iter()
        .flat_map(|p| p.host_ports.iter().cloned())
        .collect();
    copy.recount();
    copy
}

fn subtract(total: &mut Resources, r: &Resources) {
    total.milli_cpu -= r.milli_cpu;
    total.memory -= r.memory;
    total.ephemeral_storage -= r.ephemeral_storage;
    total.pods -= r.pods;
    for (name, amount) in &r.scalar {
        if let Some(t) = total.scalar.get_mut(name) {
            *t -= amount;
        }
    }
}

/// The cost of a candidate, compared field by field; smaller is better.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Cost {
    pdb_violations: usize,
    highest_priority: i64,
    /// Sum of `priority + 2^31` over victims: shifting every priority to be
    /// positive keeps negative priorities from rewarding more victims.
    priority_sum: i64,
    victims: usize,
    /// Later is better, so the start time enters reversed.
    start: std::cmp::Reverse<StartKey>,
}

#[derive(PartialEq, Eq)]
struct StartKey(Option<i128>);

impl PartialOrd for StartKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StartKey {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_start(self.0, other.0)
    }
}

impl Candidate {
    /// The ordering kube-scheduler applies: fewest PDB violations, lowest
    /// highest-victim priority, smallest shifted priority sum, fewest
    /// victims, then the latest "earliest start among the highest-priority
    /// victims" (evicting recently started pods loses less work).
    fn cost(&self) -> Cost {
        let highest = self.victims.iter().map(|v| v.priority).max().unwrap_or(0);
        let earliest_top = self
            .victims
            .iter()
            .filter(|v| v.priority == highest)
            .map(|v| start_time(v))
            .min_by(|a, b| cmp_start(*a, *b))
            .flatten();
        Cost {
            pdb_violations: self.pdb_violations,
            highest_priority: i64::from(highest),
            priority_sum: self
                .victims
                .iter()
                .map(|v| i64::from(v.priority) + (1i64 << 31))
                .sum(),
            victims: self.victims.len(),
            start: std::cmp::Reverse(StartKey(earliest_top)),
        }
    }
}

/// The cheapest candidate; the first one in order among equals.
fn pick(candidates: Vec<Candidate>) -> Option<Candidate> {
    let mut best: Option<(Cost, Candidate)> = None;
    for c in candidates {
        let cost = c.cost();
        if best.as_ref().is_none_or(|(b, _)| cost < *b) {
            best = Some((cost, c));
        }
    }
    best.map(|(_, c)| c)
}
