//! The CSINode a kubelet publishes for its node: same name, owned by the
//! node, listing the CSI drivers registered there (none on an emulated
//! node). A real kube-scheduler's volume plugins and the attach/detach
//! controller read it; the garbage collector removes it with its node.

use std::collections::BTreeSet;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{Api, Change, Informers, ResourceRef, WriteOptions};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::managed::NodeSelector;

/// The CSINode of node `name` with uid `uid`.
pub fn csi_node(name: &str, uid: &str) -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name,
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]},
        "spec": {"drivers": []},
    })
}

/// Publishes a CSINode for every emulated node, once per node object
/// (a node deleted and created again gets a new one for its new uid).
pub async fn run(api: Arc<dyn Api>, informers: Arc<Informers>, selector: NodeSelector) {
    let nodes = informers.get_metadata(&ResourceRef::core("nodes"));
    // Node uids already handled: a node's every status write reaches the
    // handler, and only its first sighting needs a write.
    let seen: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let (tx, mut rx) = mpsc::unbounded_channel::<(String, String)>();
    let s = seen.clone();
    nodes.on_change(move |c| {
        let node = c.object();
        let uid = meta::uid(node).to_string();
        if matches!(c, Change::Deleted(_)) {
            s.lock().remove(&uid);
            return;
        }
        if !selector.manages(node) || uid.is_empty() || !s.lock().insert(uid.clone()) {
            return;
        }
        let _ = tx.send((meta::name(node).to_string(), uid));
    });
    let csinodes = ResourceRef::new("storage.k8s.io", "v1", "csinodes");
    while let Some((name, uid)) = rx.recv().await {
        match api
            .create(
                &csinodes,
                "",
                csi_node(&name, &uid),
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => {}
            // Published before (a restarted cluster) or by someone else.
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::debug!(node = %name, error = %e.message, "cannot publish CSINode");
                seen.lock().remove(&uid);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csi_node_is_owned_by_its_node() {
        let c = csi_node("node-1", "u-1");
        assert_eq!(c["metadata"]["name"], "node-1");
        assert_eq!(c["metadata"]["ownerReferences"][0]["kind"], "Node");
        assert_eq!(c["metadata"]["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(c["spec"]["drivers"], json!([]));
    }
}
