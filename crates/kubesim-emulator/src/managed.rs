//! Which Nodes the emulator acts as the kubelet for. A node is emulated
//! when the rule selects it (by default kubesim's marker or kwok's, so
//! kwok users' manifests work unchanged; or an annotation or label
//! selector; or every node) and, when the emulator is one shard of
//! several, when its shard owns the node's name.

use std::sync::Arc;

use kubesim_core::meta;
use kubesim_core::selector::LabelSelector;
use serde_json::Value;

use crate::shard::Shards;
use crate::stage::funcs::FuncContext;

/// kubesim's marker, as a label or an annotation (any value).
pub const EMULATED: &str = "kubesim.io/emulated";
/// kwok's marker, as a label or an annotation, with the value `fake`.
pub const KWOK_NODE: &str = "kwok.x-k8s.io/node";

/// Which nodes an emulator may act for, before sharding.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum NodeRule {
    /// Nodes marked with [`EMULATED`] or `kwok.x-k8s.io/node: fake`.
    #[default]
    Marked,
    /// Every node (a cluster with no real kubelets).
    All,
    /// Nodes whose annotations match the selector (kwok's
    /// `--manage-nodes-with-annotation-selector`).
    Annotations(LabelSelector),
    /// Nodes whose labels match the selector (kwok's
    /// `--manage-nodes-with-label-selector`).
    Labels(LabelSelector),
}

impl NodeRule {
    /// Whether the rule selects `node` (a whole Node or its metadata).
    pub fn selects(&self, node: &Value) -> bool {
        match self {
            NodeRule::All => true,
            NodeRule::Marked => ["labels", "annotations"].iter().any(|field| {
                let map = node.get("metadata").and_then(|m| m.get(*field));
                map.and_then(|m| m.get(EMULATED)).is_some()
                    || map.and_then(|m| m.get(KWOK_NODE)).and_then(Value::as_str) == Some("fake")
            }),
            NodeRule::Annotations(s) => s.matches(&|k| string_at(node, "annotations", k)),
            NodeRule::Labels(s) => s.matches(&|k| string_at(node, "labels", k)),
        }
    }
}

/// `metadata.<field>.<key>` of `node`, when a string.
fn string_at<'v>(node: &'v Value, field: &str, key: &str) -> Option<&'v str> {
    node.get("metadata")?.get(field)?.get(key)?.as_str()
}

/// The rule deciding which nodes this emulator acts for: a [`NodeRule`]
/// and, for one shard of several, the shard's share of the names.
#[derive(Debug, Clone, Default)]
pub struct NodeSelector {
    pub rule: NodeRule,
    pub shards: Option<Arc<Shards>>,
}

impl NodeSelector {
    /// Marked nodes, unsharded.
    pub fn marked() -> Self {
        NodeSelector::default()
    }

    /// Every node, unsharded.
    pub fn all() -> Self {
        NodeSelector {
            rule: NodeRule::All,
            shards: None,
        }
    }

    pub fn manages(&self, node: &Value) -> bool {
        self.rule.selects(node) && self.owns(meta::name(node))
    }

    /// Whether this emulator's shard owns the node `name` (always, when
    /// unsharded). Ownership moves when shards come and go.
    pub fn owns(&self, name: &str) -> bool {
        self.shards.as_ref().is_none_or(|s| s.owns(name))
    }

    /// [`manages`](Self::manages) for the node `name`, asked on every pod
    /// change: answered from what `funcs` remembers of the node rather
    /// than by decoding it.
    pub fn manages_known(&self, funcs: &FuncContext, name: &str) -> bool {
        funcs.node_selected(name) && self.owns(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn marked_nodes_by_label_or_annotation() {
        let s = NodeSelector::marked();
        assert!(s.manages(&json!({"metadata": {"labels": {"kubesim.io/emulated": ""}}})));
        assert!(s.manages(&json!({"metadata": {"annotations": {"kwok.x-k8s.io/node": "fake"}}})));
        assert!(!s.manages(&json!({"metadata": {"annotations": {"kwok.x-k8s.io/node": "real"}}})));
        assert!(!s.manages(&json!({"metadata": {"name": "n"}})));
        assert!(NodeSelector::all().manages(&json!({"metadata": {"name": "n"}})));
    }

    #[test]
    fn annotation_and_label_selectors() {
        let ann = NodeRule::Annotations(LabelSelector::parse("kwok.x-k8s.io/node=fake").unwrap());
        assert!(ann.selects(&json!({"metadata": {"annotations": {"kwok.x-k8s.io/node": "fake"}}})));
        assert!(!ann.selects(&json!({"metadata": {"labels": {"kwok.x-k8s.io/node": "fake"}}})));
        assert!(!ann.selects(&json!({"metadata": {"name": "n"}})));
        let labels = NodeRule::Labels(LabelSelector::parse("type=kwok,!real").unwrap());
        assert!(labels.selects(&json!({"metadata": {"labels": {"type": "kwok"}}})));
        assert!(!labels.selects(&json!({"metadata": {"labels": {"type": "kwok", "real": ""}}})));
        assert!(!labels.selects(&json!({"metadata": {"labels": {"type": "other"}}})));
    }
}
