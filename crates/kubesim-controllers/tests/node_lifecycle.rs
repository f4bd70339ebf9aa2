//! The node lifecycle and taint eviction controllers in simulated time: a
//! node that stops renewing its Lease becomes Unknown after 40 s, is
//! tainted unreachable, and its pods are evicted when their default 300 s
//! tolerations run out.

use std::time::Duration;

use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{ResourceRef, WriteOptions};
use serde_json::{json, Value};

mod support;

use support::nodes;

fn leases() -> ResourceRef {
    ResourceRef::new("coordination.k8s.io", "v1", "leases")
}

async fn renew(c: &support::Env, node: &str) {
    let now = meta::format_micro_time(c.clock.now());
    let patch = json!({"spec": {"renewTime": now}}).to_string();
    c.api
        .patch(
            &leases(),
            "kube-node-lease",
            node,
            PatchType::Merge,
            patch.into_bytes(),
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("renew");
}

fn taint_keys(node: &Value) -> Vec<String> {
    node["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            format!(
                "{}:{}",
                t["key"].as_str().unwrap(),
                t["effect"].as_str().unwrap()
            )
        })
        .collect()
}

fn ready(node: &Value) -> String {
    node["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn silent_nodes_become_unknown_and_lose_their_pods() {
    let c = support::start().await;
    let now = meta::format_time(c.clock.now());
    c.create_node("n1").await;
    c.patch_status_of(&nodes(), "", "n1", json!({"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now, "lastTransitionTime": now}]}))
        .await;
    c.create(
        &leases(),
        "kube-node-lease",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40,
            "renewTime": meta::format_micro_time(c.clock.now())}}),
    )
    .await;
    // One pod with the default 300 s tolerations (added by the API server),
    // one that tolerates unreachable for only 10 s.
    for (name, tolerations) in [
        ("default-tolerations", Value::Null),
        (
            "short",
            json!([{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]),
        ),
    ] {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}});
        if !tolerations.is_null() {
            p["spec"]["tolerations"] = tolerations;
        }
        c.create(&ResourceRef::core("pods"), "default", p).await;
    }

    // Heartbeats every 10 s keep the node Ready for a minute.
    for _ in 0..6 {
        c.clock.sleep(Duration::from_secs(10)).await;
        renew(&c, "n1").await;
    }
    let n = c.get(&nodes(), "", "n1").await.unwrap();
    assert_eq!(ready(&n), "True");
    assert!(taint_keys(&n).is_empty());

    // Silence: 39 s is still within the grace period, 41 s is not.
    c.clock.sleep(Duration::from_secs(39)).await;
    assert_eq!(ready(&c.get(&nodes(), "", "n1").await.unwrap()), "True");
    c.clock.sleep(Duration::from_secs(2)).await;
    let n = c.get(&nodes(), "", "n1").await.unwrap();
    assert_eq!(ready(&n), "Unknown");
    assert_eq!(
        taint_keys(&n),
        [
            "node.kubernetes.io/unreachable:NoSchedule",
            "node.kubernetes.io/unreachable:NoExecute"
        ]
    );

    // The short toleration runs out first; the default one at 300 s.
    c.clock.sleep(Duration::from_secs(11)).await;
    let pods = ResourceRef::core("pods");
    assert!(c
        .get(&pods, "default", "short")
        .await
        .is_none_or(|p| meta::is_deleting(&p)));
    assert!(c
        .get(&pods, "default", "default-tolerations")
        .await
        .is_some_and(|p| !meta::is_deleting(&p)));
    c.clock.sleep(Duration::from_secs(290)).await;
    assert!(c
        .get(&pods, "default", "default-tolerations")
        .await
        .is_none_or(|p| meta::is_deleting(&p)));

    // The kubelet comes back: Ready again, taints gone.
    renew(&c, "n1").await;
    let now = meta::format_time(c.clock.now());
    c.patch_status_of(&nodes(), "", "n1", json!({"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now, "lastTransitionTime": now}]}))
        .await;
    c.clock.sleep(Duration::from_secs(1)).await;
    assert!(taint_keys(&c.get(&nodes(), "", "n1").await.unwrap()).is_empty());
}
