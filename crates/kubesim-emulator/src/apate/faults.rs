//! The emulated state in force, per node and per pod, as the scenario
//! has set it so far; read by the kubelet's actions (stages, leases).

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use kubesim_core::meta;
use parking_lot::RwLock;
use serde_json::Value;

use super::types::{NodeEffect, PodState, Response};

/// What the kubelet does about an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Goes ahead, after the node's network latency.
    Proceed(Duration),
    /// Never answers: the action does not happen.
    Hang,
    /// Answers with an error: for a pod's creation, the pod fails.
    Fail,
}

/// The kind of kubelet action, for choosing the response flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodAction {
    Create,
    Update,
    Delete,
}

#[derive(Default)]
pub struct Faults {
    scenario_start: RwLock<Option<Timestamp>>,
    nodes: RwLock<BTreeMap<String, NodeEffect>>,
    pods: RwLock<BTreeMap<(String, String), PodState>>,
}

impl Faults {
    pub fn scenario_start(&self) -> Option<Timestamp> {
        *self.scenario_start.read()
    }

    pub(crate) fn set_scenario_start(&self, t: Option<Timestamp>) -> bool {
        let mut s = self.scenario_start.write();
        let changed = *s != t;
        *s = t;
        changed
    }

    pub(crate) fn set_node(&self, node: &str, effect: Option<NodeEffect>) {
        let mut nodes = self.nodes.write();
        match effect {
            Some(e) => nodes.insert(node.to_string(), e),
            None => nodes.remove(node),
        };
    }

    pub(crate) fn set_pod(&self, ns: &str, name: &str, state: Option<PodState>) {
        let mut pods = self.pods.write();
        let key = (ns.to_string(), name.to_string());
        match state {
            Some(s) => pods.insert(key, s),
            None => pods.remove(&key),
        };
    }

    pub fn node(&self, name: &str) -> NodeEffect {
        self.nodes.read().get(name).cloned().unwrap_or_default()
    }

    pub fn pod(&self, ns: &str, name: &str) -> Option<PodState> {
        self.pods
            .read()
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Whether the node's heartbeat is not answered (failed node, failed
    /// heartbeat, or a ping response of TIMEOUT or ERROR).
    pub fn silenced(&self, node: &str) -> bool {
        matches!(
            self.nodes
                .read()
                .get(node)
                .map(|e| e.responses.node_ping_response),
            Some(Response::Timeout | Response::Error)
        )
    }

    /// What the kubelet of the pod's node does about `action` on it: the
    /// worse of the node's and the pod's responses, after the node's
    /// latency.
    pub fn pod_gate(&self, pod: &Value, action: PodAction) -> Gate {
        let node = meta::path(pod, "spec.nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let effect = self.node(node);
        let from_node = match action {
            PodAction::Create => effect.responses.create_pod_response,
            PodAction::Update => effect.responses.update_pod_response,
            PodAction::Delete => effect.responses.delete_pod_response,
        };
        let from_pod = self
            .pod(meta::namespace(pod), meta::name(pod))
            .map(|s| match action {
                PodAction::Create => s.create_pod_response,
                PodAction::Update => s.update_pod_response,
                PodAction::Delete => s.delete_pod_response,
            })
            .unwrap_or_default();
        gate(from_node.worst(from_pod), effect.latency)
    }

    /// What the node's kubelet does about updating the node itself.
    pub fn node_gate(&self, node: &str) -> Gate {
        let effect = self.node(node);
        gate(effect.responses.node_ping_response, effect.latency)
    }
}

fn gate(r: Response, latency: Duration) -> Gate {
    match r {
        Response::Timeout => Gate::Hang,
        Response::Error => Gate::Fail,
        Response::Normal | Response::Unset => Gate::Proceed(latency),
    }
}
