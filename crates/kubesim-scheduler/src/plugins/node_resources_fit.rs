//! NodeResourcesFit: the pod's requests must fit in what the node has left
//! (cpu, memory, ephemeral storage, pod count, extended resources); scores
//! nodes by how allocated they would be, with one of three strategies.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::Value;

use crate::framework::{CycleState, NodeInfo, Plugin, PodInfo, Points, Status, MAX_NODE_SCORE};

pub const NAME: &str = "NodeResourcesFit";

/// A resource and its weight in a score.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceWeight {
    pub name: String,
    pub weight: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Strategy {
    LeastAllocated,
    MostAllocated,
    /// Points (utilization 0..=100, score 0..=10) of a piecewise linear
    /// function.
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

pub struct NodeResourcesFit {
    pub strategy: Strategy,
    pub resources: Vec<ResourceWeight>,
    ignored: BTreeSet<String>,
    ignored_groups: BTreeSet<String>,
}

pub fn default_resources() -> Vec<ResourceWeight> {
    vec![
        ResourceWeight {
            name: "cpu".into(),
            weight: 1,
        },
        ResourceWeight {
            name: "memory".into(),
            weight: 1,
        },
    ]
}

/// Parses `resources: [{name, weight}]` (weight defaults to 1).
pub fn parse_resources(v: Option<&Value>, field: &str) -> Result<Vec<ResourceWeight>, String> {
    let Some(v) = v else {
        return Ok(default_resources());
    };
    let arr = v
        .as_array()
        .ok_or_else(|| format!("{field}: must be a list"))?;
    arr.iter()
        .enumerate()
        .map(|(i, r)| {
            let name = r
                .get("name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| format!("{field}[{i}].name: required"))?;
            let weight = match r.get("weight") {
                None | Some(Value::Null) => 1,
                Some(w) => w
                    .as_i64()
                    .filter(|w| (1..=100).contains(w))
                    .ok_or_else(|| format!("{field}[{i}].weight: must be an integer in 1..100"))?,
            };
            Ok(ResourceWeight {
                name: name.into(),
                weight,
            })
        })
        .collect()
}

fn string_set(v: Option<&Value>, field: &str) -> Result<BTreeSet<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(BTreeSet::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|s| {
                s.as_str()
                    .map(String::from)
                    .ok_or_else(|| format!("{field}: must be a list of strings"))
            })
            .collect(),
        _ => Err(format!("{field}: must be a list of strings")),
    }
}

impl NodeResourcesFit {
    /// From `NodeResourcesFitArgs`.
    pub fn new(args: &Value) -> Result<Self, String> {
        let strategy_v = args.get("scoringStrategy");
        let kind = strategy_v
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("LeastAllocated");
        let strategy = match kind {
            "LeastAllocated" => Strategy::LeastAllocated,
            "MostAllocated" => Strategy::MostAllocated,
            "RequestedToCapacityRatio" => {
                let shape = strategy_v
                    .and_then(|s| s.pointer("/requestedToCapacityRatio/shape"))
                    .and_then(Value::as_array)
                    .filter(|a| !a.is_empty())
                    .ok_or("scoringStrategy.requestedToCapacityRatio.shape: required for RequestedToCapacityRatio")?;
                let mut points = Vec::new();
                for (i, p) in shape.iter().enumerate() {
                    let u = p.get("utilization").and_then(Value::as_i64).unwrap_or(0);
                    let s = p.get("score").and_then(Value::as_i64).unwrap_or(0);
                    if !(0..=100).contains(&u) || !(0..=10).contains(&s) {
                        return Err(format!("scoringStrategy.requestedToCapacityRatio.shape[{i}]: utilization must be in 0..100 and score in 0..10"));
                    }
                    if points.last().is_some_and(|&(pu, _)| pu >= u) {
                        return Err(format!("scoringStrategy.requestedToCapacityRatio.shape[{i}].utilization: must be increasing"));
                    }
                    points.push((u, s));
                }
                Strategy::RequestedToCapacityRatio(points)
            }
            other => {
                return Err(format!(
                    "scoringStrategy.type: unknown {other:?} (LeastAllocated, MostAllocated or RequestedToCapacityRatio)"
                ))
            }
        };
        Ok(NodeResourcesFit {
            strategy,
            resources: parse_resources(
                strategy_v.and_then(|s| s.get("resources")),
                "scoringStrategy.resources",
            )?,
            ignored: string_set(args.get("ignoredResources"), "ignoredResources")?,
            ignored_groups: string_set(args.get("ignoredResourceGroups"), "ignoredResourceGroups")?,
        })
    }

    fn ignores(&self, name: &str) -> bool {
        self.ignored.contains(name)
            || name
                .split_once('/')
                .is_some_and(|(g, _)| self.ignored_groups.contains(g))
    }
}

/// What the node can give and what it would have given out with the pod
/// placed, for one resource. Scoring counts cpu/memory with the defaults
/// for pods without requests unless `use_requested`; an extended resource
/// the pod does not ask for is left out (0, 0).
pub fn allocatable_and_requested(
    node: &NodeInfo,
    pod: &PodInfo,
    resource: &str,
    use_requested: bool,
) -> (i64, i64) {
    let (node_req, pod_req) = if use_requested {
        (&node.requested, &pod.requests)
    } else {
        (&node.non_zero_requested, &pod.non_zero_requests)
    };
    match resource {
        "cpu" => (
            node.allocatable.milli_cpu,
            node_req.milli_cpu + pod_req.milli_cpu,
        ),
        "memory" => (node.allocatable.memory, node_req.memory + pod_req.memory),
        "ephemeral-storage" => (
            node.allocatable.ephemeral_storage,
            node.requested.ephemeral_storage + pod.requests.ephemeral_storage,
        ),
        other => {
            let p = pod.requests.get(other);
            if p == 0 {
                return (0, 0);
            }
            (node.allocatable.get(other), node.requested.get(other) + p)
        }
    }
}

/// LeastAllocated per resource: the share left free, 0..100
/// ((allocatable - requested) * 100 / allocatable; 0 when over-committed).
pub fn least_requested(requested: i64, allocatable: i64) -> i64 {
    if allocatable == 0 || requested > allocatable {
        return 0;
    }
    (allocatable - requested) * MAX_NODE_SCORE / allocatable
}

/// MostAllocated per resource: the share used, 0..100, capped at full.
pub fn most_requested(requested: i64, allocatable: i64) -> i64 {
    if allocatable == 0 {
        return 0;
    }
    requested.min(allocatable) * MAX_NODE_SCORE / allocatable
}

/// The piecewise linear function through `shape` (scores scaled from
/// 0..10 to 0..100), at utilization `p`: flat before the first point and
/// after the last, linear in between (integer arithmetic).
pub fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    let scale = MAX_NODE_SCORE / 10;
    for (i, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if i == 0 {
                return s * scale;
            }
            let (pu, ps) = shape[i - 1];
            return (ps * scale) + (s * scale - ps * scale) * (p - pu) / (u - pu);
        }
    }
    shape.last().map(|&(_, s)| s * scale).unwrap_or(0)
}

/// The reason a node lacking `resource` gives. The built-in resources'
/// are fixed texts, not formatted: a pod that fits nowhere is refused by
/// every node of the cluster.
fn insufficient(resource: &str) -> Cow<'static, str> {
    match resource {
        "cpu" => "Insufficient cpu".into(),
        "memory" => "Insufficient memory".into(),
        "ephemeral-storage" => "Insufficient ephemeral-storage".into(),
        other => format!("Insufficient {other}").into(),
    }
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        NAME
    }
    fn points(&self) -> Points {
        Points {
            filter: true,
            score: true,
            ..Points::default()
        }
    }

    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let mut reasons: Vec<Cow<'static, str>> = Vec::new();
        let mut unresolvable = false;
        let alloc = &node.allocatable;
        if node.pods.len() as i64 + 1 > alloc.pods {
            reasons.push("Too many pods".into());
        }
        let req = &pod.requests;
        let used = &node.requested;
        // (name, asked, allocatable, already requested)
        let mut check = |name: &str, ask: i64, total: i64, used: i64| {
            if ask > 0 && ask > total - used {
                reasons.push(insufficient(name));
                // More than the node has at all: no eviction can help.
                unresolvable |= ask > total;
            }
        };
        check("cpu", req.milli_cpu, alloc.milli_cpu, used.milli_cpu);
        check("memory", req.memory, alloc.memory, used.memory);
        check(
            "ephemeral-storage",
            req.ephemeral_storage,
            alloc.ephemeral_storage,
            used.ephemeral_storage,
        );
        for (name, &ask) in &req.scalar {
            if self.ignores(name) {
                continue;
            }
            check(name, ask, alloc.get(name), used.get(name));
        }
        if reasons.is_empty() {
            return Status::success();
        }
        let mut s = if unresolvable {
            Status::unresolvable("")
        } else {
            Status::unschedulable("")
        };
        s.reasons = reasons;
        s
    }

    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        let mut total = 0;
        let mut weights = 0;
        for r in &self.resources {
            let (alloc, req) = allocatable_and_requested(node, pod, &r.name, false);
            if alloc == 0 {
                continue;
            }
            let s = match &self.strategy {
                Strategy::LeastAllocated => least_requested(req, alloc),
                Strategy::MostAllocated => most_requested(req, alloc),
                Strategy::RequestedToCapacityRatio(shape) => {
                    let util = if req > alloc { 100 } else { req * 100 / alloc };
                    broken_linear(shape, util)
                }
            };
            total += s * r.weight;
            weights += r.weight;
        }
        if weights == 0 {
            return 0;
        }
        match self.strategy {
            // This strategy rounds the weighted mean; the others truncate.
            Strategy::RequestedToCapacityRatio(_) => (total as f64 / weights as f64).round() as i64,
            _ => total / weights,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{named_pod, node, sized_pod};
    use serde_json::json;
    use std::sync::Arc;

    fn fit(args: Value) -> NodeResourcesFit {
        NodeResourcesFit::new(&args).unwrap()
    }

    #[test]
    fn filter_reports_each_insufficient_resource() {
        let s = CycleState::default();
        let p = fit(json!({}));
        let mut n = node(
            "a",
            json!({"status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "1", "nvidia.com/gpu": "1"}}}),
        );
        n.add_pod(Arc::new(sized_pod("x", "1", "1Gi")));
        let big = named_pod(
            "p",
            json!({"containers": [{"name": "c", "resources": {"requests": {
            "cpu": "1500m", "memory": "1Gi", "nvidia.com/gpu": "2"}}}]}),
        );
        let st = p.filter(&s, &big, &n);
        assert_eq!(
            st.reasons,
            [
                "Too many pods",
                "Insufficient cpu",
                "Insufficient nvidia.com/gpu"
            ]
        );
        // Two GPUs on a one-GPU node: eviction cannot help.
        assert_eq!(st.code, Code::UnschedulableAndUnresolvable);
        let ignoring = fit(json!({"ignoredResourceGroups": ["nvidia.com"]}));
        let small = named_pod(
            "q",
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": "5"}}}]}),
        );
        let mut roomy = node("b", json!({}));
        roomy.add_pod(Arc::new(sized_pod("x", "1", "1Gi")));
        assert!(ignoring.filter(&s, &small, &roomy).is_success());
        let st = p.filter(&s, &sized_pod("r", "3500m", "0"), &roomy);
        assert_eq!(
            (st.code, st.reasons.clone()),
            (Code::Unschedulable, vec!["Insufficient cpu".into()])
        );
    }

    #[test]
    fn least_allocated_scores() {
        // Node 4 cpu / 8Gi with 1 cpu / 2Gi requested; the pod asks 1 cpu / 2Gi.
        // cpu: (4000 - 2000) * 100 / 4000 = 50; memory: (8 - 4) * 100 / 8 = 50.
        // mean (50 + 50) / 2 = 50.
        let mut n = node("a", json!({}));
        n.add_pod(Arc::new(sized_pod("x", "1", "2Gi")));
        let p = sized_pod("p", "1", "2Gi");
        let s = CycleState::default();
        assert_eq!(fit(json!({})).score(&s, &p, &n), 50);
        // cpu 3000/4000 -> 25 ; memory 1Gi/8Gi used -> (8-1-2... ) computed:
        // pod 2 cpu / 1Gi on the same node: cpu (4000-3000)*100/4000 = 25,
        // memory (8-3)*100/8 = 62 (62.5 truncated); (25 + 62) / 2 = 43.
        assert_eq!(
            fit(json!({})).score(&s, &sized_pod("q", "2", "1Gi"), &n),
            43
        );
    }

    #[test]
    fn most_allocated_and_weights() {
        let mut n = node("a", json!({}));
        n.add_pod(Arc::new(sized_pod("x", "1", "2Gi")));
        let p = sized_pod("p", "1", "2Gi");
        let s = CycleState::default();
        // cpu 2000*100/4000 = 50, memory 4Gi*100/8Gi = 50.
        let most = fit(json!({"scoringStrategy": {"type": "MostAllocated"}}));
        assert_eq!(most.score(&s, &p, &n), 50);
        // Weights cpu 3, memory 1 with the pod at 2 cpu / 0: cpu 3000*100/4000 = 75,
        // memory (2Gi + 0) -> 25; (75*3 + 25) / 4 = 62 (62.5 truncated).
        let weighted = fit(json!({"scoringStrategy": {"type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}]}}));
        let q = named_pod(
            "q",
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "0"}}}]}),
        );
        assert_eq!(weighted.score(&s, &q, &n), 62);
    }

    #[test]
    fn best_effort_pods_count_defaults_when_scoring() {
        // Empty 4 cpu / 8Gi node, pod without requests: 100m and 200Mi.
        // cpu (4000 - 100) * 100 / 4000 = 97; memory (8192 - 200) * 100 / 8192 = 97.
        let n = node("a", json!({}));
        let p = named_pod("p", json!({"containers": [{"name": "c"}]}));
        assert_eq!(fit(json!({})).score(&CycleState::default(), &p, &n), 97);
    }

    #[test]
    fn requested_to_capacity_ratio_shape() {
        // Shape (0, 0) -> (100, 10): score = utilization, scaled to 0..100.
        let shape = vec![(0, 0), (100, 10)];
        assert_eq!(broken_linear(&shape, 30), 30);
        // Shape (0, 10) -> (50, 0) -> (100, 10): at 25% halfway down = 50.
        let v = vec![(0, 10), (50, 0), (100, 10)];
        assert_eq!(broken_linear(&v, 25), 50);
        assert_eq!(broken_linear(&v, 75), 50);
        let p = fit(
            json!({"scoringStrategy": {"type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}}}),
        );
        // Pod 1 cpu / 1Gi on the empty 4 cpu / 8Gi node: cpu 25% -> 25,
        // memory 12% (12.5 truncated) -> 12; mean 18.5 rounds to 19.
        let s = CycleState::default();
        assert_eq!(
            p.score(&s, &sized_pod("p", "1", "1Gi"), &node("a", json!({}))),
            19
        );
    }

    #[test]
    fn bad_args_name_the_field() {
        let e = NodeResourcesFit::new(&json!({"scoringStrategy": {"type": "Bogus"}}))
            .err()
            .unwrap();
        assert!(e.starts_with("scoringStrategy.type"), "{e}");
        let e = NodeResourcesFit::new(
            &json!({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}),
        )
        .err()
        .unwrap();
        assert!(e.contains("shape"), "{e}");
    }
}
