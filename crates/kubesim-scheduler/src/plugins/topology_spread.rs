//! PodTopologySpread: `spec.topologySpreadConstraints`.
//!
//! Hard constraints (`whenUnsatisfiable: DoNotSchedule`) are enforced in
//! Filter: placing the pod in a domain must keep
//! `matching pods in the domain + (1 if the pod matches itself) - global minimum`
//! at or below `maxSkew`, where the global minimum is taken over eligible
//! domains and counts as 0 while fewer than `minDomains` domains exist.
//! Soft constraints (`ScheduleAnyway`) rank nodes in Score: fewer matching
//! pods in the node's domains is better.
//!
//! A pod without constraints gets the default ones (the built-in "System"
//! set or the configured list), scoped to the pods of its own workload.

use std::collections::{BTreeMap, BTreeSet};

use kubesim_core::selector::{LabelOp, LabelRequirement, LabelSelector};
use serde_json::Value;

use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status, Taint, MAX_NODE_SCORE,
};

pub const NAME: &str = "PodTopologySpread";

pub const REASON_CONSTRAINTS: &str = "node(s) didn't match pod topology spread constraints";
pub const REASON_MISSING_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const PRE_FILTER_KEY: &str = "PreFilterPodTopologySpread";
const PRE_SCORE_KEY: &str = "PreScorePodTopologySpread";

const HOSTNAME: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    DoNotSchedule,
    ScheduleAnyway,
}

/// A constraint from the args' `defaultConstraints` (no selector of its own).
#[derive(Clone, Debug)]
struct DefaultConstraint {
    max_skew: i32,
    topology_key: String,
    when: When,
}

pub struct PodTopologySpread {
    defaults: Vec<DefaultConstraint>,
    /// The built-in defaults are in use: nodes lacking some topology key are
    /// then still scored (upstream relaxes the all-keys rule for them).
    system_defaulted: bool,
}

impl PodTopologySpread {
    /// `args` is the plugin's `PodTopologySpreadArgs` (or null for defaults).
    pub fn new(args: &Value) -> Result<Self, String> {
        let given: Vec<DefaultConstraint> = match args.get("defaultConstraints") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, c)| parse_default(i, c))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("defaultConstraints must be a list".into()),
        };
        let defaulting = args
            .get("defaultingType")
            .and_then(Value::as_str)
            .unwrap_or("System");
        match defaulting {
            "System" => {
                if !given.is_empty() {
                    return Err(
                        "defaultConstraints: Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty"
                            .into(),
                    );
                }
                Ok(PodTopologySpread {
                    defaults: vec![
                        DefaultConstraint {
                            max_skew: 3,
                            topology_key: HOSTNAME.into(),
                            when: When::ScheduleAnyway,
                        },
                        DefaultConstraint {
                            max_skew: 5,
                            topology_key: ZONE.into(),
                            when: When::ScheduleAnyway,
                        },
                    ],
                    system_defaulted: true,
                })
            }
            "List" => Ok(PodTopologySpread {
                defaults: given,
                system_defaulted: false,
            }),
            other => Err(format!(
                "defaultingType: Unsupported value: \"{other}\": supported values: \"System\", \"List\""
            )),
        }
    }
}

fn parse_when(v: Option<&Value>) -> Result<When, String> {
    match v.and_then(Value::as_str) {
        Some("DoNotSchedule") => Ok(When::DoNotSchedule),
        Some("ScheduleAnyway") => Ok(When::ScheduleAnyway),
        other => Err(format!("whenUnsatisfiable: Unsupported value: {other:?}")),
    }
}

fn parse_default(i: usize, c: &Value) -> Result<DefaultConstraint, String> {
    let max_skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
    if max_skew <= 0 {
        return Err(format!(
            "defaultConstraints[{i}].maxSkew: Invalid value: {max_skew}: must be greater than zero"
        ));
    }
    let topology_key = c.get("topologyKey").and_then(Value::as_str).unwrap_or("");
    if topology_key.is_empty() {
        return Err(format!(
            "defaultConstraints[{i}].topologyKey: Required value"
        ));
    }
    if c.get("labelSelector").is_some_and(|s| !s.is_null()) {
        return Err(format!(
            "defaultConstraints[{i}].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
        ));
    }
    Ok(DefaultConstraint {
        max_skew: max_skew as i32,
        topology_key: topology_key.into(),
        when: parse_when(c.get("whenUnsatisfiable"))?,
    })
}

/// Which pods a constraint counts.
#[derive(Debug)]
enum PodSelector {
    /// An absent labelSelector: no pod.
    Nothing,
    Labels(LabelSelector),
    /// Default constraints select the pods of the incoming pod's workload.
    /// Upstream builds that selector from the Services, ReplicaSets and
    /// StatefulSets selecting the pod; the snapshot holds no Services, so
    /// this approximates it with the pods sharing the incoming pod's
    /// controller owner (ownerReferences with `controller: true`, by uid).
    Owner(String),
}

impl PodSelector {
    fn matches(&self, pod: &PodInfo) -> bool {
        match self {
            PodSelector::Nothing => false,
            PodSelector::Labels(s) => s.matches_map(&pod.labels),
            PodSelector::Owner(uid) => pod.controller.as_deref() == Some(uid.as_str()),
        }
    }

    /// Matching pods on `node`, in namespace `ns`, not being deleted.
    /// An empty label selector counts nothing here (though the incoming pod
    /// still matches it), as upstream does.
    fn count(&self, node: &NodeInfo, ns: &str) -> i64 {
        match self {
            PodSelector::Nothing => 0,
            PodSelector::Labels(s) if s.is_empty() => 0,
            // A controller reference names an owner of the pod's own
            // namespace, so the uid alone picks the incoming pod's peers.
            PodSelector::Owner(uid) => i64::from(node.controlled_by(uid)),
            PodSelector::Labels(_) => node
                .pods
                .iter()
                .filter(|p| !p.deleting && p.key.namespace == ns && self.matches(p))
                .count() as i64,
        }
    }
}

#[derive(Debug)]
struct Constraint {
    max_skew: i64,
    topology_key: String,
    selector: PodSelector,
    min_domains: i64,
    /// nodeAffinityPolicy Honor (default): only nodes matching the pod's
    /// nodeSelector / required node affinity form domains.
    honor_node_affinity: bool,
    /// nodeTaintsPolicy Honor (default Ignore): skip nodes with taints the
    /// pod does not tolerate.
    honor_taints: bool,
}

impl Constraint {
    fn includes(&self, pod: &PodInfo, node: &NodeInfo, affinity: &RequiredNodeAffinity) -> bool {
        (!self.honor_node_affinity || affinity.matches(node))
            && (!self.honor_taints || !has_untolerated_taint(pod, &node.taints))
    }
}

impl PodTopologySpread {
    /// The pod's own constraints of kind `when`, or else the defaults.
    fn constraints(&self, pod: &PodInfo, when: When) -> Result<Vec<Constraint>, String> {
        let own = pod
            .pod
            .spec("topologySpreadConstraints")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty());
        if let Some(own) = own {
            let mut out = Vec::new();
            for c in own {
                if parse_when(c.get("whenUnsatisfiable"))? != when {
                    continue;
                }
                out.push(own_constraint(c, pod)?);
            }
            return Ok(out);
        }
        let Some(uid) = &pod.controller else {
            return Ok(Vec::new());
        };
        Ok(self
            .defaults
            .iter()
            .filter(|d| d.when == when)
            .map(|d| Constraint {
                max_skew: i64::from(d.max_skew),
                topology_key: d.topology_key.clone(),
                selector: PodSelector::Owner(uid.to_string()),
                min_domains: 1,
                honor_node_affinity: true,
                honor_taints: false,
            })
            .collect())
    }

    /// Whether nodes must carry every constraint's key to be counted.
    fn require_all_topologies(&self, pod: &PodInfo) -> bool {
        let has_own = pod
            .pod
            .spec("topologySpreadConstraints")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        has_own || !self.system_defaulted
    }
}

fn own_constraint(c: &Value, pod: &PodInfo) -> Result<Constraint, String> {
    let mut selector = match c.get("labelSelector") {
        None | Some(Value::Null) => PodSelector::Nothing,
        Some(s) => PodSelector::Labels(LabelSelector::from_json(s).map_err(|e| e.message)?),
    };
    // matchLabelKeys: AND `key in (the pod's value)` for each listed key the
    // pod carries, so only the pod's own revision/group is counted.
    if let PodSelector::Labels(sel) = &selector {
        let mut reqs = sel.requirements().to_vec();
        let before = reqs.len();
        for key in c
            .get("matchLabelKeys")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(key) = key.as_str() else { continue };
            if let Some(v) = pod.labels.get(key) {
                reqs.push(
                    LabelRequirement::new(key, LabelOp::In, vec![v.clone()])
                        .map_err(|e| e.message)?,
                );
            }
        }
        if reqs.len() != before {
            selector = PodSelector::Labels(LabelSelector::from_requirements(reqs));
        }
    }
    let policy = |field: &str, default_honor: bool| match c.get(field).and_then(Value::as_str) {
        Some("Honor") => true,
        Some("Ignore") => false,
        _ => default_honor,
    };
    Ok(Constraint {
        max_skew: c.get("maxSkew").and_then(Value::as_i64).unwrap_or(1),
        topology_key: c
            .get("topologyKey")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        selector,
        min_domains: c.get("minDomains").and_then(Value::as_i64).unwrap_or(1),
        honor_node_affinity: policy("nodeAffinityPolicy", true),
        honor_taints: policy("nodeTaintsPolicy", false),
    })
}

fn has_all_keys(node: &NodeInfo, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| node.labels.contains_key(&c.topology_key))
}

/// The pod's `nodeSelector` and required node affinity, as a node test.
struct RequiredNodeAffinity {
    node_selector: BTreeMap<String, String>,
    /// `None`: no required node affinity. Otherwise any term may match.
    terms: Option<Vec<NodeTerm>>,
}

struct NodeTerm {
    /// `None` when an expression does not parse: the term matches nothing.
    labels: Option<LabelSelector>,
    /// `metadata.name` requirements (the only supported field).
    fields: Option<LabelSelector>,
    empty: bool,
}

impl RequiredNodeAffinity {
    fn of(pod: &PodInfo) -> Self {
        let spec = Some(&*pod.pod.spec);
        let node_selector = spec
            .and_then(|s| s.get("nodeSelector"))
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        let terms = spec
            .and_then(|s| s.get("affinity"))
            .and_then(|a| a.get("nodeAffinity"))
            .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
            .filter(|r| !r.is_null())
            .map(|r| {
                r.get("nodeSelectorTerms")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(NodeTerm::parse)
                    .collect()
            });
        RequiredNodeAffinity {
            node_selector,
            terms,
        }
    }

    fn matches(&self, node: &NodeInfo) -> bool {
        let selector_ok = self
            .node_selector
            .iter()
            .all(|(k, v)| node.labels.get(k) == Some(v));
        selector_ok
            && self
                .terms
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches(node)))
    }
}

impl NodeTerm {
    fn parse(term: &Value) -> NodeTerm {
        let reqs = |field: &str| -> (Option<LabelSelector>, bool) {
            let items: Vec<&Value> = term
                .get(field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            let empty = items.is_empty();
            let parsed: Option<Vec<LabelRequirement>> = items.iter().map(|e| node_req(e)).collect();
            (parsed.map(LabelSelector::from_requirements), empty)
        };
        let (labels, no_labels) = reqs("matchExpressions");
        let (fields, no_fields) = reqs("matchFields");
        NodeTerm {
            labels,
            fields,
            empty: no_labels && no_fields,
        }
    }

    /// A term with no requirements matches no node.
    fn matches(&self, node: &NodeInfo) -> bool {
        if self.empty {
            return false;
        }
        let (Some(labels), Some(fields)) = (&self.labels, &self.fields) else {
            return false;
        };
        let name = node.name.as_str();
        labels.matches_map(&node.labels)
            && fields.matches(&|k| (k == "metadata.name").then_some(name))
    }
}

fn node_req(e: &Value) -> Option<LabelRequirement> {
    let key = e.get("key")?.as_str()?;
    let op = match e.get("operator")?.as_str()? {
        "In" => LabelOp::In,
        "NotIn" => LabelOp::NotIn,
        "Exists" => LabelOp::Exists,
        "DoesNotExist" => LabelOp::DoesNotExist,
        "Gt" => LabelOp::GreaterThan,
        "Lt" => LabelOp::LessThan,
        _ => return None,
    };
    let values = e
        .get("values")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    LabelRequirement::new(key, op, values).ok()
}

/// A NoSchedule/NoExecute taint on the node that no toleration of the pod
/// tolerates.
fn has_untolerated_taint(pod: &PodInfo, taints: &[Taint]) -> bool {
    let tolerations: Vec<&Value> = pod
        .pod
        .spec("tolerations")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .any(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
}

fn tolerates(tol: &Value, taint: &Taint) -> bool {
    let s = |k: &str| tol.get(k).and_then(Value::as_str).unwrap_or("");
    if !s("effect").is_empty() && s("effect") != taint.effect {
        return false;
    }
    if !s("key").is_empty() && s("key") != taint.key {
        return false;
    }
    match s("operator") {
        "Exists" => true,
        "" | "Equal" => !s("key").is_empty() && s("value") == taint.value,
        _ => false,
    }
}

/// What PreFilter leaves for Filter; vectors are indexed by constraint.
struct FilterState {
    constraints: Vec<Constraint>,
    /// Domain value -> matching pods, over eligible nodes only.
    counts: Vec<BTreeMap<String, i64>>,
}

impl FilterState {
    /// The global minimum the skew is measured against: the smallest domain
    /// count, or 0 while there are fewer eligible domains than minDomains.
    fn min_match(&self, i: usize) -> i64 {
        let counts = &self.counts[i];
        if (counts.len() as i64) < self.constraints[i].min_domains {
            return 0;
        }
        counts.values().copied().min().unwrap_or(0)
    }
}

/// What PreScore leaves for Score and NormalizeScore.
struct ScoreState {
    constraints: Vec<Constraint>,
    /// Per constraint, domain value -> matching pods, for the domains of
    /// feasible nodes (hostname domains are counted in Score directly).
    counts: Vec<BTreeMap<String, i64>>,
    /// Per constraint, `ln(number of domains + 2)`: constraints over more
    /// domains weigh more, so they dominate fine-grained differences.
    weights: Vec<f64>,
    /// Feasible nodes not scored (missing a required topology key).
    ignored: BTreeSet<String>,
    /// The same, by position among the feasible nodes, for NormalizeScore.
    ignored_at: Vec<bool>,
    namespace: String,
}

impl Plugin for PodTopologySpread {
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
        let constraints = match self.constraints(pod, When::DoNotSchedule) {
            Ok(c) => c,
            Err(e) => return Status::error(e),
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        let affinity = RequiredNodeAffinity::of(pod);
        let ns = &pod.key.namespace;
        let mut counts: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new(); constraints.len()];
        for node in &snap.nodes {
            // Nodes missing any constraint's key form no domain at all.
            if !has_all_keys(node, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !c.includes(pod, node, &affinity) {
                    continue;
                }
                let value = node.labels[&c.topology_key].clone();
                *counts[i].entry(value).or_default() += c.selector.count(node, ns);
            }
        }
        state.write(
            PRE_FILTER_KEY,
            FilterState {
                constraints,
                counts,
            },
        );
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<FilterState>(PRE_FILTER_KEY) else {
            return Status::success();
        };
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = node.labels.get(&c.topology_key) else {
                return Status::unresolvable(REASON_MISSING_LABEL);
            };
            let self_match = i64::from(c.selector.matches(pod));
            let here = s.counts[i].get(value).copied().unwrap_or(0);
            let skew = here + self_match - s.min_match(i);
            if skew > c.max_skew {
                return Status::unschedulable(REASON_CONSTRAINTS);
            }
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
        let constraints = match self.constraints(pod, When::ScheduleAnyway) {
            Ok(c) => c,
            Err(e) => return Status::error(e),
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        let require_all = self.require_all_topologies(pod);
        let mut counts: Vec<BTreeMap<String, i64>> = vec![BTreeMap::new(); constraints.len()];
        let mut ignored = BTreeSet::new();
        let mut ignored_at = Vec::with_capacity(feasible.len());
        // Domains are those of the feasible nodes.
        for node in feasible {
            let skip = require_all && !has_all_keys(node, &constraints);
            ignored_at.push(skip);
            if skip {
                ignored.insert(node.name.clone());
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == HOSTNAME {
                    continue;
                }
                let value = node
                    .labels
                    .get(&c.topology_key)
                    .map(String::as_str)
                    .unwrap_or("");
                // Most nodes share a domain already seen: no key to copy.
                if !counts[i].contains_key(value) {
                    counts[i].insert(value.to_string(), 0);
                }
            }
        }
        let weights = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let domains = if c.topology_key == HOSTNAME {
                    feasible.len() - ignored.len()
                } else {
                    counts[i].len()
                };
                ((domains + 2) as f64).ln()
            })
            .collect();
        // Pods are counted on every node of the cluster, but only into the
        // domains seen above.
        let affinity = RequiredNodeAffinity::of(pod);
        let ns = &pod.key.namespace;
        for node in &snap.nodes {
            if require_all && !has_all_keys(node, &constraints) {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                // Hostname domains are counted in Score, node by node.
                if c.topology_key == HOSTNAME || !c.includes(pod, node, &affinity) {
                    continue;
                }
                let value = node
                    .labels
                    .get(&c.topology_key)
                    .map(String::as_str)
                    .unwrap_or("");
                if let Some(n) = counts[i].get_mut(value) {
                    *n += c.selector.count(node, ns);
                }
            }
        }
        state.write(
            PRE_SCORE_KEY,
            ScoreState {
                constraints,
                counts,
                weights,
                ignored,
                ignored_at,
                namespace: ns.clone(),
            },
        );
        Status::success()
    }

    /// Sum over constraints whose key the node carries of
    /// `matching pods in its domain * weight + (maxSkew - 1)`, rounded; the
    /// `maxSkew - 1` term dampens differences for lenient constraints.
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> i64 {
        let Some(s) = state.read::<ScoreState>(PRE_SCORE_KEY) else {
            return 0;
        };
        if s.ignored.contains(&node.name) {
            return 0;
        }
        let mut score = 0.0;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = node.labels.get(&c.topology_key) else {
                continue;
            };
            let count = if c.topology_key == HOSTNAME {
                c.selector.count(node, &s.namespace)
            } else {
                s.counts[i].get(value).copied().unwrap_or(0)
            };
            score += count as f64 * s.weights[i] + (c.max_skew - 1) as f64;
        }
        score.round() as i64
    }

    /// Lower raw scores are better. With `min` and `max` the smallest and
    /// largest raw score of the scored nodes, a node gets
    /// `MAX_NODE_SCORE * (max + min - s) / max` (integer division), so the
    /// least crowded node gets 100 and the most crowded `100 * min / max`;
    /// every node gets 100 when `max` is 0, and ignored nodes get 0.
    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) {
        let Some(s) = state.read::<ScoreState>(PRE_SCORE_KEY) else {
            return;
        };
        let ignored = |i: usize| s.ignored_at.get(i).copied().unwrap_or(false);
        let mut min = i64::MAX;
        let mut max = 0;
        for (i, &score) in scores.iter().enumerate() {
            if ignored(i) {
                continue;
            }
            min = min.min(score);
            max = max.max(score);
        }
        for (i, score) in scores.iter_mut().enumerate() {
            *score = if ignored(i) {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *score) / max
            };
        }
    }
}
