//! The emulator does not trust what is stored: Nodes, Pods, Stages and
//! Leases of the wrong shape written under the API (as a store written
//! before the API checked types may hold) are skipped, and the emulator
//! keeps renewing the leases of good nodes and running good pods through
//! their stages.

mod common;

use kubesim_apiserver::service::planted;
use kubesim_apiserver::Server;
use kubesim_runtime::ResourceRef;
use serde_json::{json, Value};

use common::{start, Env};

/// Puts `obj` into the store as it is, past every check of the API.
fn plant(server: &Server, r: &ResourceRef, ns: &str, obj: Value) {
    let info = server
        .registry
        .get(&r.group, &r.version, &r.plural)
        .expect("resource");
    planted::plant(&*server.store, &info, ns, obj);
}

fn leases() -> ResourceRef {
    ResourceRef::new("coordination.k8s.io", "v1", "leases")
}

fn emulated(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"podCIDR": "10.244.7.0/24", "podCIDRs": ["10.244.7.0/24"]},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
}

impl Env {
    /// Polls (in simulated seconds) until `f` holds for the object.
    async fn wait_for(&self, r: &ResourceRef, ns: &str, name: &str, f: impl Fn(&Value) -> bool) {
        for _ in 0..300 {
            assert!(self.running(), "the emulator or the controllers stopped");
            if let Ok(o) = self.api.get(r, ns, name).await {
                if f(&o) {
                    return;
                }
            }
            self.sleep(1).await;
        }
        panic!(
            "{name} never reached the expected state: {:?}",
            self.api.get(r, ns, name).await
        );
    }

    async fn renew_time(&self, node: &str) -> String {
        let l = self
            .api
            .get(&leases(), "kube-node-lease", node)
            .await
            .expect("lease");
        l["spec"]["renewTime"]
            .as_str()
            .expect("renewTime")
            .to_string()
    }
}

#[tokio::test(start_paused = true)]
async fn malformed_objects_stop_neither_leases_nor_stages() {
    let env = start().await;
    let (nodes, pods) = (ResourceRef::core("nodes"), ResourceRef::core("pods"));
    let stages = kubesim_emulator::stage::stages_resource();
    // The Stage kind is defined by the emulator a moment after it starts.
    for _ in 0..60 {
        if env
            .server
            .registry
            .get(&stages.group, &stages.version, &stages.plural)
            .is_some()
        {
            break;
        }
        env.sleep(1).await;
    }

    // Emulated nodes of the wrong shape, met before any good one.
    let mut bad = emulated("bad-status");
    bad["status"] = json!("x");
    plant(&env.server, &nodes, "", bad);
    let mut bad = emulated("bad-labels");
    bad["metadata"]["labels"] = json!(["a", "b"]);
    plant(&env.server, &nodes, "", bad);
    let mut bad = emulated("bad-cidr");
    bad["spec"]["podCIDR"] = json!(5);
    bad["spec"]["podCIDRs"] = json!("10.244.8.0/24");
    plant(&env.server, &nodes, "", bad);
    // Stages of the wrong shape, some aimed at pods so the engine reads
    // them for every pod.
    for (name, spec) in [
        ("bad-spec", json!("x")),
        (
            "bad-ref",
            json!({"resourceRef": 5, "selector": [], "next": []}),
        ),
        (
            "bad-pod-stage",
            json!({"resourceRef": {"apiGroup": "v1", "kind": "Pod"},
                "selector": {"matchExpressions": "x", "matchLabels": 5},
                "delay": {"durationMilliseconds": "soon"},
                "next": {"statusTemplate": 5, "delete": "yes", "event": []}}),
        ),
    ] {
        plant(
            &env.server,
            &stages,
            "",
            json!({"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
                "metadata": {"name": name}, "spec": spec}),
        );
    }
    // Leases of the wrong shape: of a bad node, and of no node.
    plant(
        &env.server,
        &leases(),
        "kube-node-lease",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "bad-status", "ownerReferences": "x"}, "spec": "x"}),
    );
    plant(
        &env.server,
        &leases(),
        "kube-node-lease",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "stray", "labels": 5},
            "spec": {"renewTime": 5, "holderIdentity": [], "leaseDurationSeconds": "x"}}),
    );

    env.create(nodes.clone(), "", emulated("good")).await;
    env.wait_for(&nodes, "", "good", |n| {
        n["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
    .await;

    // Pods of the wrong shape bound to the good node, then a good one.
    plant(
        &env.server,
        &pods,
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad-containers"},
            "spec": {"nodeName": "good", "containers": 5}}),
    );
    plant(
        &env.server,
        &pods,
        "default",
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bad-status", "labels": ["x"]},
            "spec": {"nodeName": "good", "containers": [{"name": "c", "image": "i"}]},
            "status": ["Running"]}),
    );
    env.create(
        pods.clone(),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "good"},
            "spec": {"nodeName": "good", "containers": [{"name": "c", "image": "i"}]}}),
    )
    .await;
    env.wait_for(&pods, "default", "good", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;

    // The good node's lease is renewed, again and again.
    env.wait_for(&leases(), "kube-node-lease", "good", |l| {
        l["spec"]["renewTime"].is_string()
    })
    .await;
    let first = env.renew_time("good").await;
    env.sleep(25).await;
    let later = env.renew_time("good").await;
    assert!(
        later > first,
        "the lease was not renewed: {first} then {later}"
    );

    // Still working after meeting them all: a pod made now runs too.
    env.create(
        pods.clone(),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late"},
            "spec": {"nodeName": "good", "containers": [{"name": "c", "image": "i"}]}}),
    )
    .await;
    env.wait_for(&pods, "default", "late", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    assert!(env.running(), "the emulator or the controllers stopped");
    // Each bad Stage is named in a Warning Event, as kwok reports a Stage
    // it cannot use.
    let events = env
        .api
        .list(&ResourceRef::core("events"), "", &Default::default())
        .await
        .expect("events");
    let mut invalid: Vec<&str> = events["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["reason"] == "InvalidStage" && e["type"] == "Warning")
        .filter_map(|e| e["involvedObject"]["name"].as_str())
        .collect();
    invalid.sort_unstable();
    invalid.dedup();
    assert_eq!(invalid, ["bad-pod-stage", "bad-ref", "bad-spec"]);
}
