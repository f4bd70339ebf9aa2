//! The pod garbage collector in simulated time: past the threshold of
//! terminated pods, the evicted ones and then the oldest are deleted down
//! to it, on the controller's 20-second beat; running pods are left alone.
//! Pods whose node is gone are marked Failed and deleted once the node has
//! been missing for 40 s, and unscheduled pods being deleted go at once.

use kubesim_controllers::Options;
use kubesim_core::meta;
use kubesim_runtime::DeleteOptions;
use serde_json::{json, Value};

mod support;

use support::{condition, nodes, pods, start_with, Env};

/// Every controller but node lifecycle, which would taint the test's
/// nodes (they renew no Lease) and evict their pods.
async fn without_node_lifecycle() -> Env {
    start_with(Options {
        node_lifecycle: false,
        ..Options::default()
    })
    .await
}

fn bound_pod(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})
}

fn sorted_names(pods: Vec<Value>) -> Vec<String> {
    let mut n: Vec<String> = pods.iter().map(|p| meta::name(p).to_string()).collect();
    n.sort();
    n
}

#[tokio::test(start_paused = true)]
async fn terminated_pods_beyond_the_threshold_go_evicted_first_then_oldest() {
    let env = start_with(Options {
        node_lifecycle: false,
        terminated_pod_gc_threshold: 3,
        ..Default::default()
    })
    .await;
    env.create_node("n1").await;
    // Created a second apart, so that their creation times order them.
    let names = ["old", "mid", "new", "evicted", "late", "running"];
    for name in names {
        env.create(&pods(), "default", bound_pod(name, "n1")).await;
        env.sleep(1).await;
    }
    // Three terminated pods are within the threshold: nothing goes.
    for name in ["old", "mid", "new"] {
        env.patch_status("default", name, json!({"phase": "Succeeded"}))
            .await;
    }
    env.patch_status("default", "running", json!({"phase": "Running"}))
        .await;
    env.sleep(60).await;
    assert_eq!(
        sorted_names(env.list(&pods(), "default").await),
        ["evicted", "late", "mid", "new", "old", "running"]
    );

    // Two more: the evicted one goes first although it is newer, then the
    // oldest; the running pod is not counted.
    env.patch_status(
        "default",
        "evicted",
        json!({"phase": "Failed", "reason": "Evicted"}),
    )
    .await;
    env.patch_status("default", "late", json!({"phase": "Failed"}))
        .await;
    let remaining = env
        .wait_for("two pods collected", || async {
            let l = sorted_names(env.list(&pods(), "default").await);
            (l.len() == 4).then_some(l)
        })
        .await;
    assert_eq!(remaining, ["late", "mid", "new", "running"]);
    // And no more than that.
    env.sleep(60).await;
    assert_eq!(sorted_names(env.list(&pods(), "default").await), remaining);
}

#[tokio::test(start_paused = true)]
async fn pods_of_a_node_gone_for_40_seconds_fail_and_go() {
    let env = without_node_lifecycle().await;
    env.create_node("gone").await;
    env.create_node("stays").await;
    env.create(&pods(), "default", bound_pod("orphan", "gone"))
        .await;
    env.create(&pods(), "default", bound_pod("done", "gone"))
        .await;
    env.create(&pods(), "default", bound_pod("kept", "stays"))
        .await;
    env.patch_status(
        "default",
        "orphan",
        json!({"phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]}),
    )
    .await;
    env.patch_status("default", "done", json!({"phase": "Succeeded"}))
        .await;
    let mut watch = env
        .api
        .watch(&pods(), "default", &Default::default())
        .await
        .unwrap();
    env.sleep(30).await;
    env.api
        .delete(&nodes(), "", "gone", &DeleteOptions::default())
        .await
        .unwrap();
    // Missing for less than the quarantine: the pods stay.
    env.sleep(30).await;
    assert_eq!(
        sorted_names(env.list(&pods(), "default").await),
        ["done", "kept", "orphan"]
    );
    let left = env
        .wait_for("the orphans collected", || async {
            let l = sorted_names(env.list(&pods(), "default").await);
            (l.len() == 1).then_some(l)
        })
        .await;
    assert_eq!(left, ["kept"]);
    // The running orphan was marked Failed, with the reason, and kept its
    // other conditions; the finished one was deleted as it was.
    let mut failed = None;
    while let Some(ev) = futures::StreamExt::next(&mut watch).await {
        if let kubesim_runtime::WatchEvent::Modified(p) = ev {
            if meta::name(&p) == "orphan" && p["status"]["phase"] == "Failed" {
                failed = Some(p);
                break;
            }
        }
    }
    let failed = failed.expect("the orphan marked Failed");
    let target = condition(&failed, "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(target["reason"], "DeletionByPodGC");
    assert_eq!(target["status"], "True");
    assert!(condition(&failed, "Ready").is_some());
    let managers: Vec<&str> = failed["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert!(managers.contains(&"PodGC"), "{managers:?}");
}

#[tokio::test(start_paused = true)]
async fn unscheduled_pods_being_deleted_go_at_once() {
    let env = without_node_lifecycle().await;
    env.create(
        &pods(),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "held", "finalizers": ["example.com/hold"]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .await;
    env.api
        .delete(&pods(), "default", "held", &DeleteOptions::default())
        .await
        .unwrap();
    // The finalizer holds it; the collector marks it Failed and deletes it
    // again, which its finalizer still holds.
    let pod = env
        .wait_for("the held pod marked Failed", || async {
            let p = env.get(&pods(), "default", "held").await?;
            (p["status"]["phase"] == "Failed").then_some(p)
        })
        .await;
    assert!(meta::is_deleting(&pod));
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 0);
}
