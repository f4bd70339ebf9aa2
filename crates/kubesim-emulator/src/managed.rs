//! Which Nodes the emulator acts as the kubelet for. A node is emulated
//! when it carries kubesim's marker or kwok's (so kwok users' manifests
//! work unchanged), or when the emulator is told to manage every node.

use kubesim_runtime::Cache;
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

    /// [`manages`](Self::manages) for the node `name` in `nodes`, asked on
    /// every pod change: the labels answer without decoding the node in
    /// the usual case; only a node they do not mark is read whole for its
    /// annotations.
    pub fn manages_cached(&self, nodes: &Cache, name: &str) -> bool {
        match self {
            NodeSelector::All => nodes.contains("", name),
            NodeSelector::Marked => {
                nodes.label("", name, EMULATED).is_some_and(|l| l.is_some())
                    || nodes
                        .label("", name, KWOK_NODE)
                        .is_some_and(|l| l.as_deref() == Some("fake"))
                    || nodes.get("", name).is_some_and(|n| self.manages(&n))
            }
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
