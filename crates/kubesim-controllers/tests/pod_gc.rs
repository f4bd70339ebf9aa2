//! The pod garbage collector in simulated time: past the threshold of
//! terminated pods, the evicted ones and then the oldest are deleted down
//! to it, on the controller's 20-second beat; running pods are left alone.

use kubesim_controllers::Options;
use kubesim_core::meta;
use serde_json::json;

mod support;

use support::{pods, start_with};

#[tokio::test(start_paused = true)]
async fn terminated_pods_beyond_the_threshold_go_evicted_first_then_oldest() {
    let env = start_with(Options {
        node_lifecycle: false,
        terminated_pod_gc_threshold: 3,
    })
    .await;
    // Created a second apart, so that their creation times order them.
    let names = ["old", "mid", "new", "evicted", "late", "running"];
    for name in names {
        env.create(
            &pods(),
            "default",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}}),
        )
        .await;
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
    let left = |pods: Vec<serde_json::Value>| {
        let mut n: Vec<String> = pods.iter().map(|p| meta::name(p).to_string()).collect();
        n.sort();
        n
    };
    assert_eq!(
        left(env.list(&pods(), "default").await),
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
            let l = left(env.list(&pods(), "default").await);
            (l.len() == 4).then_some(l)
        })
        .await;
    assert_eq!(remaining, ["late", "mid", "new", "running"]);
    // And no more than that.
    env.sleep(60).await;
    assert_eq!(left(env.list(&pods(), "default").await), remaining);
}
