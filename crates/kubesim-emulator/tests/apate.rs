//! Apate's own example configurations, applied unchanged to the in-process
//! server in simulated time, with the controllers watching.

mod common;

use kubesim_core::meta;
use kubesim_runtime::{ListOptions, ResourceRef, WriteOptions};
use serde_json::json;

use common::{start, yaml, Env};

impl Env {
    async fn condition(&self, node: &str, kind: &str) -> String {
        let n = self
            .api
            .get(&ResourceRef::core("nodes"), "", node)
            .await
            .unwrap();
        n["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .map(|c| c["status"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    }

    async fn renew_time(&self, node: &str) -> Option<String> {
        let l = self
            .api
            .get(
                &ResourceRef::new("coordination.k8s.io", "v1", "leases"),
                "kube-node-lease",
                node,
            )
            .await
            .ok()?;
        l["spec"]["renewTime"].as_str().map(str::to_string)
    }
}

fn nc() -> ResourceRef {
    ResourceRef::new("apate.opendc.org", "v1", "nodeconfigurations")
}

fn pc() -> ResourceRef {
    ResourceRef::new("apate.opendc.org", "v1", "podconfigurations")
}

/// Apate's examples/node_crd.yml, verbatim.
const NODE_CRD: &str = "apiVersion: apate.opendc.org/v1
kind: NodeConfiguration
metadata:
    name: test-deployment1
spec:
    replicas: 1
    resources:
        memory: 5G
        cpu: 5
        storage: 5T
        ephemeral_storage: 120G
        max_pods: 150
    tasks:
        - timestamp: 1s
          state:
              node_failed: true
";

/// Apate's examples/pod_crd.yml, verbatim.
const POD_CRD: &str = "apiVersion: apate.opendc.org/v1
kind: PodConfiguration
metadata:
    name: crd-deployment
spec:
    pod_resources:
        memory: 1G
    tasks:
        - timestamp: 1s
          state:
              pod_resources:
                  cpu: 1
                  memory: 5G
        - timestamp: 5s
          state:
              pod_status: FAILED
";

#[tokio::test(start_paused = true)]
async fn node_failure_at_one_second() {
    let env = start().await;
    env.create(nc(), "default", yaml(NODE_CRD)).await;
    env.sleep(2).await;
    let nodes = env.nodes().await;
    assert_eq!(nodes.len(), 1);
    let node = &nodes[0];
    let name = meta::name(node).to_string();
    assert_eq!(name, "test-deployment1-00000");
    assert_eq!(node["metadata"]["labels"]["emulated"], "yes");
    assert_eq!(node["metadata"]["labels"]["apate-name"], "test-deployment1");
    assert_eq!(node["spec"]["taints"][0]["key"], "emulated");
    assert_eq!(
        node["status"]["capacity"]["memory"],
        (5u64 << 30).to_string()
    );
    assert_eq!(node["status"]["capacity"]["pods"], "150");

    // Until the scenario starts the node is healthy: its lease renews.
    env.sleep(20).await;
    let before = env.renew_time(&name).await.expect("lease");
    env.sleep(20).await;
    assert!(env.renew_time(&name).await.unwrap() > before);

    env.start_scenario().await;
    env.sleep(2).await;
    let stopped = env.renew_time(&name).await.unwrap();
    env.sleep(30).await;
    assert_eq!(
        env.renew_time(&name).await.unwrap(),
        stopped,
        "a failed node stops its heartbeat"
    );
    // The node lifecycle controller notices after its 40 s grace.
    env.sleep(30).await;
    assert_eq!(env.condition(&name, "Ready").await, "Unknown");
    let n = env
        .api
        .get(&ResourceRef::core("nodes"), "", &name)
        .await
        .unwrap();
    let taints: Vec<&str> = n["spec"]["taints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["key"].as_str())
        .collect();
    assert!(
        taints.contains(&"node.kubernetes.io/unreachable"),
        "{taints:?}"
    );

    // Scaling the configuration down removes the node.
    env.api
        .patch(
            &nc(),
            "default",
            "test-deployment1",
            kubesim_core::patch::PatchType::Merge,
            br#"{"spec":{"replicas":0}}"#.to_vec(),
            None,
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    env.sleep(2).await;
    assert!(env.nodes().await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn pod_fails_at_five_seconds() {
    let env = start().await;
    env.create(pc(), "default", yaml(POD_CRD)).await;
    env.create(
        nc(),
        "default",
        yaml(&NODE_CRD.replace(
            "tasks:\n        - timestamp: 1s\n          state:\n              node_failed: true\n",
            "",
        )),
    )
    .await;
    env.sleep(2).await;
    env.create(
        ResourceRef::core("pods"),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "nginx", "labels": {"apate": "crd-deployment"}},
            "spec": {"nodeName": "test-deployment1-00000",
                "containers": [{"name": "nginx", "image": "nginx"}]}}),
    )
    .await;
    // Running, as a kubelet reports it.
    env.api
        .patch(
            &ResourceRef::core("pods"),
            "default",
            "nginx",
            kubesim_core::patch::PatchType::Merge,
            br#"{"status":{"phase":"Running"}}"#.to_vec(),
            Some("status"),
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    // Before the scenario, the direct state is in force: the usage
    // published at the next 15 s beat is its 1 GiB (cpu: the floor, no
    // requests); the node's is the sum.
    env.sleep(15).await;
    let metrics = ResourceRef::new("metrics.k8s.io", "v1beta1", "pods");
    let m = env
        .api
        .get(&metrics, "default", "nginx")
        .await
        .expect("pod metrics");
    assert_eq!(m["containers"][0]["usage"]["cpu"], "1m");
    assert_eq!(
        m["containers"][0]["usage"]["memory"],
        format!("{}Ki", 1u64 << 20)
    );
    let nm = ResourceRef::new("metrics.k8s.io", "v1beta1", "nodes");
    let n = env
        .api
        .get(&nm, "", "test-deployment1-00000")
        .await
        .expect("node metrics");
    assert_eq!(n["usage"]["memory"], format!("{}Ki", 1u64 << 20));
    env.start_scenario().await;
    env.sleep(4).await;
    let pods = ResourceRef::core("pods");
    let p = env.api.get(&pods, "default", "nginx").await.unwrap();
    assert_ne!(p["status"]["phase"], "Failed");
    env.sleep(2).await;
    let p = env.api.get(&pods, "default", "nginx").await.unwrap();
    assert_eq!(p["status"]["phase"], "Failed");
    assert_eq!(p["status"]["message"], "Emulated pod has failed");
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        1
    );
    // A failed pod uses nothing: its metrics go at the next beat.
    env.sleep(15).await;
    assert!(env.api.get(&metrics, "default", "nginx").await.is_err());
    let events = env
        .api
        .list(
            &ResourceRef::core("events"),
            "default",
            &ListOptions::default(),
        )
        .await
        .unwrap();
    assert!(events["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["reason"] == "EmulatedStatus" && e["involvedObject"]["name"] == "nginx"));
}
