//! InterPodAffinity: `spec.affinity.podAffinity` / `podAntiAffinity`.
//!
//! Filter enforces the required terms of the incoming pod (affinity and
//! anti-affinity) and the required anti-affinity terms of pods already
//! running. Score ranks nodes by the preferred terms of both sides, summed
//! per topology domain (a node gets the sum of the domains it belongs to).
//!
//! Counting is done once per cycle in PreFilter/PreScore over the whole
//! snapshot, keyed by topology pair (label key, label value), so Filter and
//! Score are map lookups.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use parking_lot::Mutex;

use kubesim_core::selector::{LabelOp, LabelRequirement, LabelSelector};
use serde_json::Value;

use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status, MAX_NODE_SCORE,
};

pub const NAME: &str = "InterPodAffinity";

/// Filter reasons, worded as kube-scheduler words them.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

const PRE_FILTER_KEY: &str = "PreFilterInterPodAffinity";
const PRE_SCORE_KEY: &str = "PreScoreInterPodAffinity";

type Pair = (String, String);
type NsLabels = BTreeMap<String, BTreeMap<String, String>>;

pub struct InterPodAffinity {
    hard_pod_affinity_weight: i32,
    ignore_preferred_terms_of_existing_pods: bool,
    /// Parsed terms of placed pods by uid. A pod's affinity cannot change
    /// after creation, so entries never go stale; the cache only saves
    /// re-parsing and is dropped whole when it grows past a bound.
    parsed: Mutex<HashMap<String, Arc<Terms>>>,
}

/// Entries kept before the parse cache is emptied.
const PARSED_CACHE_LIMIT: usize = 50_000;

impl InterPodAffinity {
    /// `args` is the plugin's `InterPodAffinityArgs` (or null for defaults).
    pub fn new(args: &Value) -> Result<Self, String> {
        let weight = match args.get("hardPodAffinityWeight") {
            None | Some(Value::Null) => 1,
            Some(v) => v
                .as_i64()
                .ok_or("hardPodAffinityWeight must be an integer")?,
        };
        // Upstream validation accepts 0..=100 (0 turns the feature off).
        if !(0..=100).contains(&weight) {
            return Err(format!(
                "hardPodAffinityWeight: Invalid value: {weight}: not in valid range [0-100]"
            ));
        }
        let ignore = match args.get("ignorePreferredTermsOfExistingPods") {
            None | Some(Value::Null) => false,
            Some(v) => v
                .as_bool()
                .ok_or("ignorePreferredTermsOfExistingPods must be a boolean")?,
        };
        Ok(InterPodAffinity {
            hard_pod_affinity_weight: weight as i32,
            ignore_preferred_terms_of_existing_pods: ignore,
            parsed: Mutex::new(HashMap::new()),
        })
    }
}

/// One PodAffinityTerm, resolved against the namespace of the pod that
/// declares it.
#[derive(Debug)]
struct Term {
    /// Explicit namespaces; the owner's namespace when neither namespaces
    /// nor a namespaceSelector is given.
    namespaces: BTreeSet<String>,
    /// `None` selects no namespace (an absent selector); `{}` selects all.
    namespace_selector: Option<LabelSelector>,
    /// `None` (absent labelSelector) matches no pod.
    selector: Option<LabelSelector>,
    topology_key: String,
}

impl Term {
    fn parse(
        v: &Value,
        owner_ns: &str,
        owner_labels: &BTreeMap<String, String>,
    ) -> Result<Self, String> {
        let topology_key = v
            .get("topologyKey")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut selector = match v.get("labelSelector") {
            None | Some(Value::Null) => None,
            Some(s) => Some(LabelSelector::from_json(s).map_err(|e| e.message)?),
        };
        // matchLabelKeys / mismatchLabelKeys narrow the selector with the
        // owner's own label values (`key in (v)` / `key notin (v)`). Merging
        // again when the API server already did adds a duplicate clause,
        // which changes nothing.
        let extra = label_key_requirements(v, owner_labels)?;
        if !extra.is_empty() {
            if let Some(sel) = selector.take() {
                let mut reqs = sel.requirements().to_vec();
                reqs.extend(extra);
                selector = Some(LabelSelector::from_requirements(reqs));
            }
        }
        let namespaces: BTreeSet<String> = v
            .get("namespaces")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let namespace_selector = match v.get("namespaceSelector") {
            None | Some(Value::Null) => None,
            Some(s) => Some(LabelSelector::from_json(s).map_err(|e| e.message)?),
        };
        let namespaces = if namespaces.is_empty() && namespace_selector.is_none() {
            BTreeSet::from([owner_ns.to_string()])
        } else {
            namespaces
        };
        Ok(Term {
            namespaces,
            namespace_selector,
            selector,
            topology_key,
        })
    }

    /// Whether a pod (its namespace and labels) is selected by this term.
    fn matches(&self, ns: &str, labels: &BTreeMap<String, String>, ns_labels: &NsLabels) -> bool {
        let Some(selector) = &self.selector else {
            return false;
        };
        let ns_ok = self.namespaces.contains(ns)
            || self.namespace_selector.as_ref().is_some_and(|s| {
                static NONE: BTreeMap<String, String> = BTreeMap::new();
                s.matches_map(ns_labels.get(ns).unwrap_or(&NONE))
            });
        ns_ok && selector.matches_map(labels)
    }

    fn matches_pod(&self, pod: &PodInfo, ns_labels: &NsLabels) -> bool {
        self.matches(&pod.key.namespace, &pod.labels, ns_labels)
    }
}

fn label_key_requirements(
    v: &Value,
    owner_labels: &BTreeMap<String, String>,
) -> Result<Vec<LabelRequirement>, String> {
    let mut out = Vec::new();
    for (field, op) in [
        ("matchLabelKeys", LabelOp::In),
        ("mismatchLabelKeys", LabelOp::NotIn),
    ] {
        for key in v.get(field).and_then(Value::as_array).into_iter().flatten() {
            let Some(key) = key.as_str() else { continue };
            if let Some(value) = owner_labels.get(key) {
                out.push(
                    LabelRequirement::new(key, op, vec![value.clone()]).map_err(|e| e.message)?,
                );
            }
        }
    }
    Ok(out)
}

/// The inter-pod (anti-)affinity terms of one pod.
#[derive(Debug, Default)]
struct Terms {
    required_affinity: Vec<Term>,
    required_anti: Vec<Term>,
    preferred_affinity: Vec<(i32, Term)>,
    preferred_anti: Vec<(i32, Term)>,
}

impl Terms {
    fn of(pod: &PodInfo) -> Result<Terms, String> {
        let mut t = Terms::default();
        let Some(aff) = pod.pod.spec("affinity") else {
            return Ok(t);
        };
        let ns = &pod.key.namespace;
        let required = |v: Option<&Value>| -> Result<Vec<Term>, String> {
            let items = v
                .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
                .and_then(Value::as_array);
            items
                .into_iter()
                .flatten()
                .map(|term| Term::parse(term, ns, &pod.labels))
                .collect()
        };
        let preferred = |v: Option<&Value>| -> Result<Vec<(i32, Term)>, String> {
            let items = v
                .and_then(|a| a.get("preferredDuringSchedulingIgnoredDuringExecution"))
                .and_then(Value::as_array);
            items
                .into_iter()
                .flatten()
                .map(|w| {
                    let weight = w.get("weight").and_then(Value::as_i64).unwrap_or(0) as i32;
                    let term = w.get("podAffinityTerm").unwrap_or(&Value::Null);
                    Ok((weight, Term::parse(term, ns, &pod.labels)?))
                })
                .collect()
        };
        let affinity = aff.get("podAffinity");
        let anti = aff.get("podAntiAffinity");
        t.required_affinity = required(affinity)?;
        t.required_anti = required(anti)?;
        t.preferred_affinity = preferred(affinity)?;
        t.preferred_anti = preferred(anti)?;
        Ok(t)
    }

    fn has_preferred(&self) -> bool {
        !self.preferred_affinity.is_empty() || !self.preferred_anti.is_empty()
    }
}

/// Whether the pod object declares any inter-pod affinity at all; a cheap
/// test that spares parsing the terms of the many pods without any.
/// What PreFilter leaves for Filter.
struct FilterState {
    terms: Arc<Terms>,
    /// Pairs where an existing pod's required anti-affinity selects the
    /// incoming pod.
    existing_anti: BTreeMap<Pair, i64>,
    /// Pairs holding pods selected by the incoming pod's required affinity.
    affinity: BTreeMap<Pair, i64>,
    /// Pairs holding pods selected by the incoming pod's required anti-affinity.
    anti: BTreeMap<Pair, i64>,
    /// The incoming pod satisfies all its own required affinity terms.
    self_match: bool,
}

fn bump(counts: &mut BTreeMap<Pair, i64>, node: &NodeInfo, key: &str, by: i64) {
    if let Some(value) = node.labels.get(key) {
        *counts.entry((key.to_string(), value.clone())).or_default() += by;
    }
}

impl InterPodAffinity {
    /// Terms of an already placed pod; terms that do not parse count as
    /// none rather than failing every other pod's cycle.
    fn existing_terms(&self, pod: &PodInfo) -> Arc<Terms> {
        if pod.uid.is_empty() {
            return Arc::new(Terms::of(pod).unwrap_or_default());
        }
        let mut cache = self.parsed.lock();
        if let Some(t) = cache.get(&pod.uid) {
            return t.clone();
        }
        if cache.len() >= PARSED_CACHE_LIMIT {
            cache.clear();
        }
        let t = Arc::new(Terms::of(pod).unwrap_or_default());
        cache.insert(pod.uid.clone(), t.clone());
        t
    }

    fn filter_state(&self, pod: &PodInfo, snap: &Snapshot) -> Result<FilterState, String> {
        let terms = Arc::new(Terms::of(pod)?);
        let ns_labels = &snap.namespace_labels;
        let mut existing_anti = BTreeMap::new();
        let mut affinity = BTreeMap::new();
        let mut anti = BTreeMap::new();
        let incoming_has_required =
            !terms.required_affinity.is_empty() || !terms.required_anti.is_empty();
        if !incoming_has_required && snap.pods_with_required_anti == 0 {
            return Ok(FilterState {
                terms,
                existing_anti: BTreeMap::new(),
                affinity: BTreeMap::new(),
                anti: BTreeMap::new(),
                self_match: false,
            });
        }
        // Without required terms of its own, only nodes holding pods with
        // required anti-affinity matter.
        let nodes = snap
            .nodes
            .iter()
            .filter(|n| incoming_has_required || n.pods_with_required_anti > 0);
        for (node, existing) in nodes.flat_map(|n| n.pods.iter().map(move |p| (n, p))) {
            if existing.affinity.required_anti {
                for term in &self.existing_terms(existing).required_anti {
                    if term.matches_pod(pod, ns_labels) {
                        bump(&mut existing_anti, node, &term.topology_key, 1);
                    }
                }
            }
            if incoming_has_required {
                for term in &terms.required_affinity {
                    if term.matches_pod(existing, ns_labels) {
                        bump(&mut affinity, node, &term.topology_key, 1);
                    }
                }
                for term in &terms.required_anti {
                    if term.matches_pod(existing, ns_labels) {
                        bump(&mut anti, node, &term.topology_key, 1);
                    }
                }
            }
        }
        let self_match = !terms.required_affinity.is_empty()
            && terms
                .required_affinity
                .iter()
                .all(|t| t.matches_pod(pod, ns_labels));
        Ok(FilterState {
            terms,
            existing_anti,
            affinity,
            anti,
            self_match,
        })
    }
}

impl FilterState {
    /// Every required affinity term finds a matching pod in the node's
    /// domain. A node lacking a term's topology key never qualifies. When no
    /// pod anywhere matches and the pod matches its own terms, it may start
    /// the group (otherwise the first replica of a self-affine set would
    /// wait forever).
    fn satisfies_affinity(&self, node: &NodeInfo) -> bool {
        let mut all_found = true;
        for term in &self.terms.required_affinity {
            let Some(value) = node.labels.get(&term.topology_key) else {
                return false;
            };
            let pair = (term.topology_key.clone(), value.clone());
            if self.affinity.get(&pair).copied().unwrap_or(0) <= 0 {
                all_found = false;
            }
        }
        all_found || (self.affinity.values().all(|&c| c <= 0) && self.self_match)
    }

    fn satisfies_anti_affinity(&self, node: &NodeInfo) -> bool {
        if self.anti.is_empty() {
            return true;
        }
        !self.terms.required_anti.iter().any(|term| {
            node.labels.get(&term.topology_key).is_some_and(|value| {
                let pair = (term.topology_key.clone(), value.clone());
                self.anti.get(&pair).copied().unwrap_or(0) > 0
            })
        })
    }

    fn satisfies_existing_anti_affinity(&self, node: &NodeInfo) -> bool {
        if self.existing_anti.is_empty() {
            return true;
        }
        !node.labels.iter().any(|(k, v)| {
            self.existing_anti
                .get(&(k.clone(), v.clone()))
                .is_some_and(|&c| c > 0)
        })
    }
}

/// What PreScore leaves for Score: topology key -> value -> summed weight.
struct ScoreState {
    topology_score: BTreeMap<String, BTreeMap<String, i64>>,
}

impl ScoreState {
    fn add(&mut self, key: &str, node: &NodeInfo, amount: i64) {
        if let Some(value) = node.labels.get(key) {
            *self
                .topology_score
                .entry(key.to_string())
                .or_default()
                .entry(value.clone())
                .or_default() += amount;
        }
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points {
            pre_filter: true,
            filter: true,
            pre_score: true,
            score: true,
        }
    }

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snap: &Snapshot) -> Status {
        let s = match self.filter_state(pod, snap) {
            Ok(s) => s,
            Err(e) => return Status::error(e),
        };
        // Nothing constrains this pod: Filter would pass every node.
        if s.existing_anti.is_empty()
            && s.terms.required_affinity.is_empty()
            && s.terms.required_anti.is_empty()
        {
            return Status::skip();
        }
        state.write(PRE_FILTER_KEY, s);
        Status::success()
    }

    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<FilterState>(PRE_FILTER_KEY) else {
            return Status::success();
        };
        // A missing affinity partner cannot be created by evicting pods, so
        // preemption is pointless there; the two anti-affinity cases can be
        // cured by evicting the offending pods.
        if !s.satisfies_affinity(node) {
            return Status::unresolvable(REASON_AFFINITY);
        }
        if !s.satisfies_anti_affinity(node) {
            return Status::unschedulable(REASON_ANTI_AFFINITY);
        }
        if !s.satisfies_existing_anti_affinity(node) {
            return Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY);
        }
        Status::success()
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snap: &Snapshot,
        feasible: &[&NodeInfo],
    ) -> Status {
        if feasible.is_empty() {
            return Status::skip();
        }
        let terms = match Terms::of(pod) {
            Ok(t) => t,
            Err(e) => return Status::error(e),
        };
        let has_preferred = terms.has_preferred();
        if !has_preferred
            && (self.ignore_preferred_terms_of_existing_pods || snap.pods_with_affinity == 0)
        {
            return Status::skip();
        }
        let ns_labels = &snap.namespace_labels;
        let hard = i64::from(self.hard_pod_affinity_weight);
        let mut s = ScoreState {
            topology_score: BTreeMap::new(),
        };
        let nodes = snap
            .nodes
            .iter()
            .filter(|n| !n.labels.is_empty() && (has_preferred || n.pods_with_affinity > 0));
        for (node, existing) in nodes.flat_map(|n| n.pods.iter().map(move |p| (n, p))) {
            // Without preferred terms of its own, only pods that declare
            // affinity can contribute.
            let existing_declares = existing.affinity.any;
            if !has_preferred && !existing_declares {
                continue;
            }
            // The incoming pod's preferences toward this pod.
            for (weight, term) in &terms.preferred_affinity {
                if term.matches_pod(existing, ns_labels) {
                    s.add(&term.topology_key, node, i64::from(*weight));
                }
            }
            for (weight, term) in &terms.preferred_anti {
                if term.matches_pod(existing, ns_labels) {
                    s.add(&term.topology_key, node, -i64::from(*weight));
                }
            }
            if !existing_declares {
                continue;
            }
            // This pod's terms toward the incoming pod: its required
            // affinity counts with the configured hard weight.
            let theirs = self.existing_terms(existing);
            if hard > 0 {
                for term in &theirs.required_affinity {
                    if term.matches_pod(pod, ns_labels) {
                        s.add(&term.topology_key, node, hard);
                    }
                }
            }
            for (weight, term) in &theirs.preferred_affinity {
                if term.matches_pod(pod, ns_labels) {
                    s.add(&term.topology_key, node, i64::from(*weight));
                }
            }
            for (weight, term) in &theirs.preferred_anti {
                if term.matches_pod(pod, ns_labels) {
                    s.add(&term.topology_key, node, -i64::from(*weight));
                }
            }
        }
        if s.topology_score.is_empty() {
            return Status::skip();
        }
        state.write(PRE_SCORE_KEY, s);
        Status::success()
    }

    /// The sum, over topology keys the node carries, of its domain's score.
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> i64 {
        let Some(s) = state.read::<ScoreState>(PRE_SCORE_KEY) else {
            return 0;
        };
        s.topology_score
            .iter()
            .filter_map(|(key, values)| values.get(node.labels.get(key)?).copied())
            .sum()
    }

    /// Min-max scaling: `MAX_NODE_SCORE * (s - min) / (max - min)`, and 0
    /// for every node when all scores are equal.
    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) {
        let Some(s) = state.read::<ScoreState>(PRE_SCORE_KEY) else {
            return;
        };
        if s.topology_score.is_empty() || scores.is_empty() {
            return;
        }
        let min = scores.iter().copied().min().unwrap_or(0);
        let max = scores.iter().copied().max().unwrap_or(0);
        let spread = max - min;
        for score in scores.iter_mut() {
            *score = if spread > 0 {
                (MAX_NODE_SCORE as f64 * ((*score - min) as f64 / spread as f64)) as i64
            } else {
                0
            };
        }
    }
}
