//! NodePorts: a pod's host ports must be free on the node.

use crate::framework::{CycleState, HostPort, NodeInfo, Plugin, PodInfo, Points, Snapshot, Status};

pub const NAME: &str = "NodePorts";
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

pub struct NodePorts;

/// Two uses of a port clash when protocol and port are equal and either
/// binds every address (0.0.0.0) or both bind the same address.
fn clashes(want: &HostPort, used: &HostPort) -> bool {
    want.0 == used.0
        && want.2 == used.2
        && (want.1 == used.1 || want.1 == "0.0.0.0" || used.1 == "0.0.0.0")
}

impl Plugin for NodePorts {
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
        if pod.host_ports.is_empty() {
            Status::skip()
        } else {
            Status::success()
        }
    }
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let clash = pod
            .host_ports
            .iter()
            .any(|w| node.used_ports.iter().any(|u| clashes(w, u)));
        if clash {
            Status::unschedulable(REASON)
        } else {
            Status::success()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::testutil::{named_pod, node};
    use serde_json::json;
    use std::sync::Arc;

    fn with_port(name: &str, ip: &str, port: i64, proto: &str) -> PodInfo {
        named_pod(
            name,
            json!({"containers": [{"name": "c", "ports": [
            {"containerPort": 80, "hostPort": port, "hostIP": ip, "protocol": proto}]}]}),
        )
    }

    #[test]
    fn port_clashes() {
        let s = CycleState::default();
        let mut n = node("n", json!({}));
        n.add_pod(Arc::new(with_port("a", "10.0.0.1", 8080, "TCP")));
        // (wanted ip, port, protocol, fits)
        let table = [
            ("10.0.0.1", 8080, "TCP", false),
            ("0.0.0.0", 8080, "TCP", false),
            ("10.0.0.2", 8080, "TCP", true),
            ("10.0.0.1", 8080, "UDP", true),
            ("10.0.0.1", 8081, "TCP", true),
        ];
        for (ip, port, proto, fits) in table {
            let st = NodePorts.filter(&s, &with_port("p", ip, port, proto), &n);
            assert_eq!(st.is_success(), fits, "{ip}:{port}/{proto}");
        }
    }
}
