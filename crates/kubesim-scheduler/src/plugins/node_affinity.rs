//! NodeAffinity: `spec.nodeSelector` and required node affinity terms as a
//! filter; preferred terms as a score (sum of the weights of the matching
//! terms, normalized so the best node gets 100).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::framework::{CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status};
use crate::plugins::helpers::{default_normalize, Term};

pub const NAME: &str = "NodeAffinity";
const PREFERRED: &str = "NodeAffinity/preferred";
pub const REASON: &str = "node(s) didn't match Pod's node affinity/selector";

pub struct NodeAffinity;

impl NodeAffinity {
    pub fn new(_args: &Value) -> Result<Self, String> {
        Ok(NodeAffinity)
    }
}

/// What the filter checks, parsed once per cycle.
struct Required {
    selector: BTreeMap<String, String>,
    /// ORed; None when the pod has no required affinity.
    terms: Option<Vec<Term>>,
}

struct Preferred(Vec<(i64, Term)>);

impl Required {
    fn matches(&self, node: &NodeInfo) -> bool {
        self.selector
            .iter()
            .all(|(k, v)| node.labels.get(k) == Some(v))
            && self
                .terms
                .as_ref()
                .is_none_or(|ts| ts.iter().any(|t| t.matches(&node.labels, &node.name)))
    }
}

fn required(spec: &Value) -> Required {
    let selector = spec
        .get("nodeSelector")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    let terms = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Term::parse).collect());
    Required { selector, terms }
}

impl Plugin for NodeAffinity {
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

    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> Status {
        let r = required(&pod.pod.spec);
        if r.selector.is_empty() && r.terms.is_none() {
            return Status::skip();
        }
        state.write(NAME, r);
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let ok = match state.read::<Required>(NAME) {
            Some(r) => r.matches(node),
            None => required(&pod.pod.spec).matches(node),
        };
        if ok {
            Status::success()
        } else {
            Status::unresolvable(REASON)
        }
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
        _: &[&NodeInfo],
    ) -> Status {
        let terms: Vec<(i64, Term)> = pod
            .pod
            .spec
            .pointer("/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let w = p.get("weight").and_then(Value::as_i64).unwrap_or(0);
                (w != 0).then(|| (w, Term::parse(p.get("preference").unwrap_or(&Value::Null))))
            })
            .collect();
        if terms.is_empty() {
            return Status::skip();
        }
        state.write(PREFERRED, Preferred(terms));
        Status::success()
    }

    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> i64 {
        state
            .read::<Preferred>(PREFERRED)
            .map(|p| {
                p.0.iter()
                    .filter(|(_, t)| t.matches(&node.labels, &node.name))
                    .map(|(w, _)| *w)
                    .sum()
            })
            .unwrap_or(0)
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) {
        default_normalize(scores, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{node, pod};
    use serde_json::json;

    #[test]
    fn selector_and_required_terms() {
        let p = pod(json!({"containers": [], "nodeSelector": {"disk": "ssd"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
        ]}}}}));
        let mut s = CycleState::default();
        assert!(NodeAffinity
            .pre_filter(&mut s, &p, &Snapshot::default())
            .is_success());
        let n = |labels: Value| node("n", json!({"metadata": {"labels": labels}}));
        assert!(NodeAffinity
            .filter(&s, &p, &n(json!({"disk": "ssd", "zone": "b"})))
            .is_success());
        assert_eq!(
            NodeAffinity
                .filter(&s, &p, &n(json!({"disk": "ssd", "zone": "c"})))
                .reasons,
            [REASON]
        );
        assert!(!NodeAffinity
            .filter(&s, &p, &n(json!({"zone": "a"})))
            .is_success());
        let none = pod(json!({"containers": []}));
        assert_eq!(
            NodeAffinity.pre_filter(&mut CycleState::default(), &none, &Snapshot::default()),
            Status::skip()
        );
    }

    #[test]
    fn preferred_terms_score_and_normalize() {
        let p = pod(
            json!({"containers": [], "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
                {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}},
            ]}}}),
        );
        let mut s = CycleState::default();
        assert!(NodeAffinity
            .pre_score(&mut s, &p, &Snapshot::default(), &[])
            .is_success());
        let nodes = [
            node(
                "x",
                json!({"metadata": {"labels": {"zone": "a", "disk": "1"}}}),
            ),
            node("y", json!({"metadata": {"labels": {"zone": "a"}}})),
            node("z", json!({"metadata": {"labels": {"disk": "1"}}})),
        ];
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| NodeAffinity.score(&s, &p, n))
            .collect();
        assert_eq!(scores, [4, 3, 1]);
        NodeAffinity.normalize(&s, &p, &mut scores);
        // x 4*100/4, y 3*100/4, z 1*100/4
        assert_eq!(scores, [100, 75, 25]);
    }
}
