//! Which Nodes the emulator acts as the kubelet for. A node is emulated
//! when it carries kubesim's marker or kwok's (so kwok users' manifests
//! work unchanged), or when the emulator is told to manage every node.

use crate::stage::funcs::FuncContext;
use serde_json::Value;

/// kubesim's marker, as a label or an annotation (any value).
pub const EMULATED: &str = "kubesim.io/emulated";
/// kwok's marker, as a label or an annotation, with the value `fake`.
pub const KWOK_NODE: &str = "kwok.x-k8s.io/node";

/// The rule deciding which nodes are emulated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum NodeSelector {
    /// Nodes marked with [`EMULATED`] or `kwok.x-k8s.io/node: fake`.
    #[default]
    Marked,
    /// Every node (a cluster with no real kubelets).
    All,
}

impl NodeSelector {
    pub fn manages(&self, node: &Value) -> bool {
        match self {
            NodeSelector::All => true,
            NodeSelector::Marked => {
                let meta = node.get("metadata");
                ["labels", "annotations"].iter().any(|field| {
                    let map = meta.and_then(|m| m.get(*field));
                    map.and_then(|m| m.get(EMULATED)).is_some()
                        || map.and_then(|m| m.get(KWOK_NODE)).and_then(Value::as_str)
                            == Some("fake")
                })
            }
        }
    }

    /// [`manages`](Self::manages) for the node `name`, asked on every pod
    /// change: answered from what `funcs` remembers of the node rather
    /// than by decoding it.
    pub fn manages_known(&self, funcs: &FuncContext, name: &str) -> bool {
        match self {
            NodeSelector::All => funcs.nodes.contains("", name),
            NodeSelector::Marked => funcs.node_marked(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marked_nodes_by_label_or_annotation() {
        let s = NodeSelector::Marked;
        assert!(s.manages(&json!({"metadata": {"labels": {"kubesim.io/emulated": ""}}})));
        assert!(s.manages(&json!({"metadata": {"annotations": {"kwok.x-k8s.io/node": "fake"}}})));
        assert!(!s.manages(&json!({"metadata": {"annotations": {"kwok.x-k8s.io/node": "real"}}})));
        assert!(!s.manages(&json!({"metadata": {"name": "n"}})));
        assert!(NodeSelector::All.manages(&json!({"metadata": {"name": "n"}})));
    }
}
