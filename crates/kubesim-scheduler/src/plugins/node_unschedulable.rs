//! NodeUnschedulable: cordoned nodes (`spec.unschedulable`) take no new
//! pods, except pods tolerating the `node.kubernetes.io/unschedulable`
//! NoSchedule taint.

use crate::framework::{CycleState, NodeInfo, Plugin, PodInfo, Points, Status, Taint};
use crate::plugins::helpers::{tolerated, tolerations};

pub const NAME: &str = "NodeUnschedulable";
pub const REASON: &str = "node(s) were unschedulable";

pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        NAME
    }
    fn points(&self) -> Points {
        Points {
            filter: true,
            ..Points::default()
        }
    }
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !node.unschedulable {
            return Status::success();
        }
        let taint = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            value: String::new(),
            effect: "NoSchedule".into(),
        };
        if tolerated(&tolerations(&pod.pod.spec), &taint) {
            Status::success()
        } else {
            Status::unresolvable(REASON)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{node, pod};
    use serde_json::json;

    #[test]
    fn cordoned_nodes_need_the_toleration() {
        let s = CycleState::default();
        let n = node("a", json!({"spec": {"unschedulable": true}}));
        let plain = pod(json!({"containers": []}));
        assert_eq!(NodeUnschedulable.filter(&s, &plain, &n).reasons, [REASON]);
        let tolerant = pod(json!({"containers": [], "tolerations": [
            {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]}));
        assert!(NodeUnschedulable.filter(&s, &tolerant, &n).is_success());
        assert!(NodeUnschedulable
            .filter(&s, &plain, &node("b", json!({})))
            .is_success());
    }
}
