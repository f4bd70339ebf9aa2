//! NodeResourcesBalancedAllocation: prefers nodes whose resources would be
//! used evenly (cpu as full as memory), to leave room for any pod shape.

use serde_json::Value;

use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status, MAX_NODE_SCORE,
};
use crate::plugins::node_resources_fit::{
    allocatable_and_requested, parse_resources, ResourceWeight,
};

pub const NAME: &str = "NodeResourcesBalancedAllocation";

pub struct BalancedAllocation {
    resources: Vec<ResourceWeight>,
}

impl BalancedAllocation {
    pub fn new(args: &Value) -> Result<Self, String> {
        Ok(BalancedAllocation {
            resources: parse_resources(args.get("resources"), "resources")?,
        })
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
    }
    fn points(&self) -> Points {
        Points {
            pre_score: true,
            score: true,
            ..Points::default()
        }
    }

    /// A pod that requests none of the resources does not change balance.
    fn pre_score(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
        _: &[&NodeInfo],
    ) -> Status {
        if self
            .resources
            .iter()
            .all(|r| pod.requests.get(&r.name) == 0)
        {
            Status::skip()
        } else {
            Status::success()
        }
    }

    /// Each resource's fraction in use with the pod placed (requests as
    /// asked, capped at 1); the score is (1 - standard deviation of the
    /// fractions) * 100. With two resources the deviation is simply half
    /// their difference.
    fn score(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> i64 {
        // Scored for hundreds of nodes per pod: the fractions stay on the
        // stack unless a profile weighs more than eight resources.
        let mut fixed = [0f64; 8];
        let mut many = Vec::new();
        let mut n = 0;
        for r in &self.resources {
            let (alloc, req) = allocatable_and_requested(node, pod, &r.name, true);
            if alloc == 0 {
                continue;
            }
            let f = (req as f64 / alloc as f64).min(1.0);
            if n < fixed.len() {
                fixed[n] = f;
            } else {
                if many.is_empty() {
                    many.extend_from_slice(&fixed);
                }
                many.push(f);
            }
            n += 1;
        }
        let all = if many.is_empty() {
            &fixed[..n]
        } else {
            &many[..]
        };
        let std = match all.len() {
            0 | 1 => 0.0,
            2 => ((all[0] - all[1]) / 2.0).abs(),
            len => {
                let mean = all.iter().sum::<f64>() / len as f64;
                let var = all.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / len as f64;
                var.sqrt()
            }
        };
        ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{named_pod, node, sized_pod};
    use serde_json::json;

    #[test]
    fn balanced_scores() {
        let b = BalancedAllocation::new(&json!({})).unwrap();
        let s = CycleState::default();
        let mut n = node("a", json!({}));
        n.add_pod(std::sync::Arc::new(sized_pod("x", "1", "2Gi")));
        // cpu 2/4 = 0.5, memory 3Gi/8Gi = 0.375: std |0.5 - 0.375| / 2 =
        // 0.0625; (1 - 0.0625) * 100 = 93.75 -> 93.
        assert_eq!(b.score(&s, &sized_pod("p", "1", "1Gi"), &n), 93);
        // Perfectly even: cpu 2/4, memory 4Gi/8Gi -> 100.
        assert_eq!(b.score(&s, &sized_pod("p", "1", "2Gi"), &n), 100);
        // Three resources: cpu 0.5, memory 0.5, storage 1.0 (capped):
        // mean 2/3, variance ((1/6)^2 * 2 + (1/3)^2) / 3 = 1/18,
        // std 0.2357; (1 - 0.2357) * 100 = 76.4 -> 76.
        let three = BalancedAllocation::new(&json!({"resources": [
            {"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}]}))
        .unwrap();
        let sn = node(
            "s",
            json!({"status": {"allocatable": {"ephemeral-storage": "1Gi"}}}),
        );
        let p = named_pod(
            "p",
            json!({"containers": [{"name": "c", "resources": {"requests": {
            "cpu": "2", "memory": "4Gi", "ephemeral-storage": "2Gi"}}}]}),
        );
        assert_eq!(three.score(&s, &p, &sn), 76);
    }

    #[test]
    fn best_effort_pods_skip() {
        let b = BalancedAllocation::new(&json!({})).unwrap();
        let p = named_pod("p", json!({"containers": [{"name": "c"}]}));
        let st = b.pre_score(&mut CycleState::default(), &p, &Snapshot::default(), &[]);
        assert_eq!(st, Status::skip());
    }
}
