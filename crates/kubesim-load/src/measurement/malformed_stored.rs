//! The measurements do not trust what is stored: Pods, Jobs and
//! ReplicaSets of the wrong shape written under the API (as a store written before the API
//! checked types may hold) are left out of what they count, so a barrier
//! does not wait for them forever and a latency is not made of them.

use std::time::Duration;

use kubesim_runtime::{DeleteOptions, ResourceRef};
use serde_json::{json, Value};

use super::jobs::jobs;
use super::pod_startup::PodStartupLatency;
use super::test_support::*;
use super::wait_controlled::WaitForControlledPodsRunning;
use super::wait_jobs::WaitForFinishedJobs;
use super::wait_pods::WaitForRunningPods;
use super::Measurement;
use crate::params::Params;

fn params(v: Value) -> Params {
    v.as_object().cloned().unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn wait_for_running_pods_does_not_wait_for_malformed_pods() {
    let (ctx, api, server) = ctx_and_server().await;
    // Selected by their labels, but of a shape no decoder reads: counted,
    // they would sit in "not scheduled" and "pending" for ever.
    plant(
        &server,
        &pods(),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bad-spec", "labels": {"app": "web"}},
            "spec": 5, "status": "x"}),
    );
    plant(
        &server,
        &pods(),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bad-phase", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": 5}}),
    );
    for name in ["a", "b"] {
        create_labeled_pod(&api, "default", name, json!({"app": "web"})).await;
        start_pod(&api, "default", name, &ctx.clock).await;
    }
    let wait = params(json!({"desiredPodCount": 2, "labelSelector": "app = web",
        "namespace": "default", "timeout": "30s", "refreshInterval": "1s"}));
    WaitForRunningPods
        .execute(&ctx, "w", &wait)
        .await
        .expect("the two good pods run");
}

#[tokio::test(start_paused = true)]
async fn pod_startup_latency_measures_only_well_formed_pods() {
    let (ctx, api, server) = ctx_and_server().await;
    let mut m = PodStartupLatency::default();
    let start = params(json!({"action": "start", "namespace": "default", "threshold": "10s"}));
    m.execute(&ctx, "PSL", &start).await.expect("start");
    // Seen bound and Running at once: counted, it would be a startup of
    // 0 ms.
    plant(
        &server,
        &pods(),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
            "spec": {"nodeName": "n1", "containers": 5}, "status": {"phase": "Running"}}),
    );
    // A good pod: 1 s to schedule, 2 s more to run.
    create_pod(&api, "default", "a", json!({})).await;
    ctx.clock.sleep(Duration::from_secs(1)).await;
    bind(&api, "default", "a", "n1").await;
    ctx.clock.sleep(Duration::from_secs(2)).await;
    run_pod(&api, "default", "a", &ctx.clock).await;
    ctx.clock.sleep(Duration::from_millis(10)).await;

    let gather = params(json!({"action": "gather"}));
    let sums = m.execute(&ctx, "PSL", &gather).await.expect("gather");
    let all: Value = serde_json::from_str(&sums[0].content).expect("json");
    let startup = all["dataItems"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["labels"]["Metric"] == "pod_startup")
        .expect("pod_startup");
    assert_eq!(
        startup["data"],
        json!({"Perc50": 3000.0, "Perc90": 3000.0, "Perc99": 3000.0})
    );
}

fn job(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {"group": "g"}},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "i"}]}}}
    })
}

#[tokio::test(start_paused = true)]
async fn wait_for_finished_jobs_skips_malformed_jobs() {
    let (ctx, api, server) = ctx_and_server().await;
    let bad = |name: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"group": "g"}},
            "spec": {"completions": "x", "template": 5}, "status": {"conditions": "x"}})
    };
    create(&api, &jobs(), "default", job("a")).await;
    create(&api, &jobs(), "default", job("gone")).await;
    // Met by the informer's first list.
    plant(&server, &jobs(), "default", bad("bad-listed"));
    let mut m = WaitForFinishedJobs::default();
    let start = params(json!({"action": "start", "labelSelector": "group = g"}));
    m.execute(&ctx, "w", &start).await.expect("start");
    // Met by its watch: a new one, and a good Job turned bad, then
    // deleted (its deletion still takes the good Job it was away).
    plant(&server, &jobs(), "default", bad("bad-watched"));
    plant(&server, &jobs(), "default", bad("gone"));
    ctx.clock.sleep(Duration::from_millis(10)).await;
    api.delete(&jobs(), "default", "gone", &DeleteOptions::default())
        .await
        .expect("delete");
    patch_status_of(
        &api,
        &jobs(),
        "default",
        "a",
        json!({"conditions": [{"type": "Complete", "status": "True"}]}),
    )
    .await;
    ctx.clock.sleep(Duration::from_secs(1)).await;
    let gather = params(json!({"action": "gather", "timeout": "5s"}));
    m.execute(&ctx, "w", &gather)
        .await
        .expect("only the good Job is waited for");
    // The bad Jobs are still there: they were skipped, not removed.
    let listed = api
        .list(&jobs(), "default", &Default::default())
        .await
        .expect("list");
    assert_eq!(listed["items"].as_array().map(Vec::len), Some(3));
}

#[tokio::test(start_paused = true)]
async fn wait_for_controlled_pods_running_skips_malformed_objects_and_pods() {
    let (ctx, api, server) = ctx_and_server().await;
    let replica_sets = ResourceRef::new("apps", "v1", "replicasets");
    let mut m = WaitForControlledPodsRunning::default();
    let start = params(json!({"action": "start", "apiVersion": "apps/v1",
        "kind": "ReplicaSet", "namespace": "default", "operationTimeout": "20s"}));
    m.execute(&ctx, "w", &start).await.expect("start");
    let rs = create(
        &api,
        &replica_sets,
        "default",
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "r"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "r"}},
                "template": {"metadata": {"labels": {"app": "r"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
    )
    .await;
    for name in ["r-0", "r-1"] {
        create_owned_pod(&api, "default", name, &rs).await;
        start_pod(&api, "default", name, &ctx.clock).await;
    }
    // A ReplicaSet no decoder reads, listed by gather: waited for, it
    // would never be seen by the informer nor run its pods.
    plant(
        &server,
        &replica_sets,
        "default",
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "bad"},
            "spec": {"replicas": "x", "template": 5}}),
    );
    // A pod of the good ReplicaSet no decoder reads: counted, it would be
    // one pod too many, never running.
    plant(
        &server,
        &pods(),
        "default",
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "r-bad", "ownerReferences": [{"apiVersion": "apps/v1",
                "kind": "ReplicaSet", "name": "r", "uid": rs["metadata"]["uid"],
                "controller": true}]},
            "spec": {"containers": 5}, "status": "x"}),
    );
    let gather = params(json!({"action": "gather"}));
    let out = m
        .execute(&ctx, "w", &gather)
        .await
        .expect("the good ReplicaSet's pods run");
    assert!(out.is_empty(), "no summary on success");
}
