//! NodeName: a pod that names its node (`spec.nodeName`) fits only there.

use crate::framework::{CycleState, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status};

pub const NAME: &str = "NodeName";
pub const REASON: &str = "node(s) didn't match the requested node name";

pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }
    fn points(&self) -> Points {
        Points {
            pre_filter: true,
            filter: true,
            ..Points::default()
        }
    }
    fn pre_filter(&self, _: &mut CycleState, pod: &PodInfo, _: &Snapshot) -> Status {
        if pod.node_name.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.node_name.is_empty() || pod.node_name == node.name {
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
    fn only_the_named_node_fits() {
        let p = pod(json!({"nodeName": "a", "containers": []}));
        let s = CycleState::default();
        assert!(NodeName.filter(&s, &p, &node("a", json!({}))).is_success());
        let st = NodeName.filter(&s, &p, &node("b", json!({})));
        assert_eq!(st.reasons, [REASON]);
    }
}
