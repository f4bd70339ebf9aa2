//! TaintToleration: a node's NoSchedule and NoExecute taints keep off the
//! pods that do not tolerate them; PreferNoSchedule taints the pod does not
//! tolerate count against the node (fewer is better).

use serde_json::Value;

use crate::framework::{CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status};
use crate::plugins::helpers::{default_normalize, tolerated, tolerations, Toleration};

pub const NAME: &str = "TaintToleration";
const PREFER: &str = "TaintToleration/prefer";

pub struct TaintToleration;

impl TaintToleration {
    pub fn new(_args: &Value) -> Result<Self, String> {
        Ok(TaintToleration)
    }
}

struct Tolerations(Vec<Toleration>);
struct Preferring(Vec<Toleration>);

impl Plugin for TaintToleration {
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
        state.write(NAME, Tolerations(tolerations(&pod.pod.spec)));
        Status::success()
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.taints.is_empty() {
            return Status::success();
        }
        let parsed;
        let tols = match state.read::<Tolerations>(NAME) {
            Some(t) => &t.0,
            None => {
                parsed = tolerations(&pod.pod.spec);
                &parsed
            }
        };
        let untolerated = node
            .taints
            .iter()
            .find(|t| (t.effect == "NoSchedule" || t.effect == "NoExecute") && !tolerated(tols, t));
        match untolerated {
            None => Status::success(),
            Some(t) => Status::unresolvable(format!(
                "node(s) had untolerated taint {{{}: {}}}",
                t.key, t.value
            )),
        }
    }

    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
        _: &[&NodeInfo],
    ) -> Status {
        let prefer = tolerations(&pod.pod.spec)
            .into_iter()
            .filter(|t| t.effect.is_empty() || t.effect == "PreferNoSchedule")
            .collect();
        state.write(PREFER, Preferring(prefer));
        Status::success()
    }

    /// The number of PreferNoSchedule taints the pod does not tolerate.
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> i64 {
        if node.taints.is_empty() {
            return 0;
        }
        let empty = Vec::new();
        let tols = state
            .read::<Preferring>(PREFER)
            .map(|p| &p.0)
            .unwrap_or(&empty);
        node.taints
            .iter()
            .filter(|t| t.effect == "PreferNoSchedule" && !tolerated(tols, t))
            .count() as i64
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) {
        default_normalize(scores, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{node, pod};
    use serde_json::json;

    fn tainted(taints: Value) -> NodeInfo {
        node("n", json!({"spec": {"taints": taints}}))
    }

    #[test]
    fn untolerated_hard_taints_reject() {
        let p = pod(
            json!({"containers": [], "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}),
        );
        let mut s = CycleState::default();
        TaintToleration.pre_filter(&mut s, &p, &Snapshot::default());
        let ok = tainted(json!([{"key": "gpu", "value": "x", "effect": "NoSchedule"},
            {"key": "soft", "value": "y", "effect": "PreferNoSchedule"}]));
        assert!(TaintToleration.filter(&s, &p, &ok).is_success());
        let bad = tainted(json!([{"key": "k", "value": "v", "effect": "NoExecute"}]));
        let st = TaintToleration.filter(&s, &p, &bad);
        assert_eq!(st.reasons, ["node(s) had untolerated taint {k: v}"]);
        assert_eq!(st.code, Code::UnschedulableAndUnresolvable);
    }

    #[test]
    fn prefer_no_schedule_counts_reversed() {
        let p = pod(json!({"containers": [], "tolerations": [{"key": "a", "operator": "Exists"}]}));
        let mut s = CycleState::default();
        TaintToleration.pre_score(&mut s, &p, &Snapshot::default(), &[]);
        let nodes = [
            tainted(json!([])),
            tainted(
                json!([{"key": "a", "effect": "PreferNoSchedule"}, {"key": "b", "effect": "PreferNoSchedule"}]),
            ),
            tainted(
                json!([{"key": "b", "effect": "PreferNoSchedule"}, {"key": "c", "effect": "PreferNoSchedule"}]),
            ),
        ];
        let mut scores: Vec<i64> = nodes
            .iter()
            .map(|n| TaintToleration.score(&s, &p, n))
            .collect();
        // Untolerated: none, b, b and c.
        assert_eq!(scores, [0, 1, 2]);
        TaintToleration.normalize(&s, &p, &mut scores);
        // 100 - count * 100 / max
        assert_eq!(scores, [100, 50, 0]);
    }
}
