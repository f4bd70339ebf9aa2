//! RoundRobin: an alternative policy that places pods on the feasible
//! nodes in turn (by node name, wrapping around), ignoring load. Used by a
//! profile whose only Score plugin it is; see the crate documentation.

use parking_lot::Mutex;
use serde_json::Value;

use crate::framework::{
    CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status, MAX_NODE_SCORE,
};

pub const NAME: &str = "RoundRobin";

pub struct RoundRobin {
    /// The node chosen last.
    last: Mutex<String>,
}

impl RoundRobin {
    pub fn new(_args: &Value) -> Result<Self, String> {
        Ok(RoundRobin {
            last: Mutex::new(String::new()),
        })
    }
}

struct Turn(String);

impl Plugin for RoundRobin {
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

    /// Picks the feasible node whose name follows the last one chosen.
    fn pre_score(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        _: &Snapshot,
        feasible: &[&NodeInfo],
    ) -> Status {
        let mut last = self.last.lock();
        let next = feasible
            .iter()
            .map(|n| n.name.as_str())
            .filter(|n| *n > last.as_str())
            .min()
            .or_else(|| feasible.iter().map(|n| n.name.as_str()).min());
        if let Some(n) = next {
            *last = n.to_string();
            state.write(NAME, Turn(n.to_string()));
        }
        Status::success()
    }

    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> i64 {
        match state.read::<Turn>(NAME) {
            Some(t) if t.0 == node.name => MAX_NODE_SCORE,
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{node, pod};
    use serde_json::json;

    #[test]
    fn takes_turns_over_the_feasible_nodes() {
        let rr = RoundRobin::new(&json!({})).unwrap();
        let all: Vec<NodeInfo> = ["a", "b", "c"].iter().map(|n| node(n, json!({}))).collect();
        let p = pod(json!({"containers": []}));
        let mut picks = Vec::new();
        for round in 0..5 {
            // In round 3 node b is not feasible: c is next, then a.
            let feasible: Vec<&NodeInfo> =
                all.iter().filter(|n| round != 3 || n.name != "b").collect();
            let mut s = CycleState::default();
            rr.pre_score(&mut s, &p, &Snapshot::default(), &feasible);
            let best = feasible.iter().max_by_key(|n| rr.score(&s, &p, n)).unwrap();
            picks.push(best.name.clone());
        }
        assert_eq!(picks, ["a", "b", "c", "a", "b"]);
    }
}
