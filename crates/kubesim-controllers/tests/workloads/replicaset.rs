use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::DeleteOptions;
use serde_json::{json, Value};

use crate::support::*;

fn replica_set(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": container("nginx")}}}})
}

#[tokio::test(start_paused = true)]
async fn creates_exactly_n_and_replaces_deleted_pods() {
    let env = start(None).await;
    env.create(&rs(), "default", replica_set("web", 3)).await;
    env.eventually("3 pods", || async {
        env.list(&pods(), "default", "app=web").await.len() == 3
    })
    .await;
    // Give the controller time to (wrongly) create more.
    env.sleep(Duration::from_secs(30)).await;
    let ps = env.list(&pods(), "default", "app=web").await;
    assert_eq!(ps.len(), 3);
    for p in &ps {
        let n = meta::name(p);
        assert!(n.starts_with("web-") && n.len() == "web-".len() + 5, "{n}");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    }
    let victim = meta::name(&ps[0]).to_string();
    env.api
        .delete(&pods(), "default", &victim, &DeleteOptions::default())
        .await
        .unwrap();
    env.eventually("a replacement", || async {
        let ps = env.list(&pods(), "default", "app=web").await;
        ps.len() == 3 && ps.iter().all(|p| meta::name(p) != victim)
    })
    .await;
    env.sleep(Duration::from_secs(30)).await;
    assert_eq!(env.list(&pods(), "default", "app=web").await.len(), 3);
    let s = env.get(&rs(), "default", "web").await.unwrap();
    assert_eq!(s["status"]["replicas"], 3);
    assert_eq!(s["status"]["fullyLabeledReplicas"], 3);
    assert_eq!(s["status"]["observedGeneration"], 1);
}

#[tokio::test(start_paused = true)]
async fn scale_down_deletes_not_ready_pods_first() {
    let env = start(None).await;
    env.create(&rs(), "default", replica_set("web", 4)).await;
    env.eventually("4 pods", || async {
        env.list(&pods(), "default", "app=web").await.len() == 4
    })
    .await;
    let ps = env.list(&pods(), "default", "app=web").await;
    // Two become ready; scaling to 2 must keep exactly those.
    let keep = names(&ps[..2]);
    for p in &ps[..2] {
        set_ready(&*env.api, p, &env.clock).await;
    }
    env.eventually("2 ready", || async {
        env.get(&rs(), "default", "web").await.unwrap()["status"]["readyReplicas"] == 2
    })
    .await;
    env.merge(&rs(), "default", "web", json!({"spec": {"replicas": 2}}))
        .await;
    env.eventually("2 pods", || async {
        env.list(&pods(), "default", "app=web").await.len() == 2
    })
    .await;
    env.sleep(Duration::from_secs(10)).await;
    assert_eq!(names(&env.list(&pods(), "default", "app=web").await), keep);
}

#[tokio::test(start_paused = true)]
async fn adopts_orphans_and_releases_relabelled_pods() {
    let env = start(None).await;
    let orphan = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "stray", "labels": {"app": "web"}},
        "spec": {"containers": container("nginx")}});
    env.create(&pods(), "default", orphan).await;
    let set = env.create(&rs(), "default", replica_set("web", 2)).await;
    env.eventually("2 pods, stray adopted", || async {
        let ps = env.list(&pods(), "default", "app=web").await;
        let stray = env.get(&pods(), "default", "stray").await.unwrap();
        ps.len() == 2 && stray["metadata"]["ownerReferences"][0]["uid"] == set["metadata"]["uid"]
    })
    .await;
    env.sleep(Duration::from_secs(10)).await;
    assert_eq!(env.list(&pods(), "default", "app=web").await.len(), 2);
    // Relabelled: released, and replaced.
    env.merge(
        &pods(),
        "default",
        "stray",
        json!({"metadata": {"labels": {"app": "other"}}}),
    )
    .await;
    env.eventually("released and replaced", || async {
        let stray = env.get(&pods(), "default", "stray").await.unwrap();
        let refs = stray["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len)
            .unwrap_or(0);
        refs == 0 && env.list(&pods(), "default", "app=web").await.len() == 2
    })
    .await;
}
