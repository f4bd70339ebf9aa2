//! StatefulSet stable storage: claims from volumeClaimTemplates, made
//! before their pods, mounted by them, and kept or collected as the
//! retention policy says.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{Change, DeleteOptions, Informers, ResourceRef};
use serde_json::{json, Value};

use crate::support::*;

fn claims() -> ResourceRef {
    ResourceRef::core("persistentvolumeclaims")
}

fn stateful_set(name: &str, replicas: i64, policy: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
        "spec": {"replicas": replicas, "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "persistentVolumeClaimRetentionPolicy": policy,
            "volumeClaimTemplates": [{"metadata": {"name": "data", "labels": {"tier": "db"}},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}],
            "template": {"metadata": {"labels": {"app": name}}, "spec": {
                "containers": [{"name": "c", "image": "redis:1",
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                // Replaced by the claim's volume; the other one is kept.
                "volumes": [{"name": "data", "emptyDir": {}},
                    {"name": "config", "configMap": {"name": "cfg"}}]}}}})
}

async fn claim_uid(env: &Env, name: &str) -> Option<String> {
    env.get(&claims(), "default", name)
        .await
        .map(|c| meta::uid(&c).to_string())
}

async fn owner_kinds(env: &Env, name: &str) -> Vec<String> {
    let c = env.get(&claims(), "default", name).await.unwrap();
    c["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "{}/{}",
                r["kind"].as_str().unwrap(),
                r["name"].as_str().unwrap()
            )
        })
        .collect()
}

async fn scale(env: &Env, name: &str, replicas: i64) {
    env.merge(
        &sts(),
        "default",
        name,
        json!({"spec": {"replicas": replicas}}),
    )
    .await;
}

async fn ready_replicas(env: &Env, name: &str, n: i64) {
    env.eventually(&format!("{n} ready"), || async {
        let s = env.get(&sts(), "default", name).await.unwrap();
        s["status"]["observedGeneration"] == s["metadata"]["generation"]
            && s["status"]["readyReplicas"] == n
            && s["status"]["replicas"] == n
    })
    .await;
}

/// Creations as (revision, `kind:name`).
type Journal = Arc<Mutex<Vec<(u64, String)>>>;

/// The revision at which each claim and pod was created, so that the
/// order of creations can be checked on the store's own clock.
fn creations(env: &Env) -> (Journal, tokio::task::JoinHandle<()>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let informers = Informers::new(env.api.clone(), env.clock.clone());
    for (r, prefix) in [(pods(), "pod"), (claims(), "pvc")] {
        let l = log.clone();
        informers.get(&r).on_change(move |c| {
            if let Change::Added(o) = c {
                let rv: u64 = meta::str_field(o, "resourceVersion")
                    .and_then(|v| v.parse().ok())
                    .unwrap();
                l.lock()
                    .unwrap()
                    .push((rv, format!("{prefix}:{}", meta::name(o))));
            }
        });
    }
    (log, tokio::spawn(async move { informers.run().await }))
}

#[tokio::test(start_paused = true)]
async fn claims_come_before_pods_and_outlive_them() {
    let env = start(Some(Duration::from_secs(1))).await;
    let (log, watcher) = creations(&env);
    env.create(&sts(), "default", stateful_set("web", 2, json!(null)))
        .await;
    ready_replicas(&env, "web", 2).await;

    let mut seen = log.lock().unwrap().clone();
    seen.sort();
    let order: Vec<&str> = seen.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        order,
        ["pvc:data-web-0", "pod:web-0", "pvc:data-web-1", "pod:web-1"]
    );
    for i in 0..2 {
        let c = env
            .get(&claims(), "default", &format!("data-web-{i}"))
            .await
            .unwrap();
        assert_eq!(c["metadata"]["labels"], json!({"tier": "db", "app": "web"}));
        assert_eq!(c["spec"]["resources"]["requests"]["storage"], "1Gi");
        assert_eq!(c["status"]["phase"], "Pending", "nothing binds claims");
        assert!(c["metadata"].get("ownerReferences").is_none());
        let p = env
            .get(&pods(), "default", &format!("web-{i}"))
            .await
            .unwrap();
        // (Admission appends the service account token's volume.)
        assert_eq!(
            p["spec"]["volumes"].as_array().unwrap()[..2],
            json!([
                {"name": "data", "persistentVolumeClaim": {"claimName": format!("data-web-{i}")}},
                {"name": "config", "configMap": {"name": "cfg", "defaultMode": 420}}])
            .as_array()
            .unwrap()[..],
        );
    }
    let events = env.list(&ResourceRef::core("events"), "default", "").await;
    assert!(events.iter().any(|e| e["reason"] == "SuccessfulCreate"
        && e["message"] == "create Claim data-web-1 Pod web-1 in StatefulSet web success"));

    // Scaled down and back: the claim stays and the new pod gets it again.
    let uid = claim_uid(&env, "data-web-1").await.unwrap();
    scale(&env, "web", 1).await;
    ready_replicas(&env, "web", 1).await;
    env.sleep(Duration::from_secs(30)).await;
    assert_eq!(claim_uid(&env, "data-web-1").await, Some(uid.clone()));
    scale(&env, "web", 2).await;
    ready_replicas(&env, "web", 2).await;
    assert_eq!(claim_uid(&env, "data-web-1").await, Some(uid.clone()));
    assert_eq!(env.list(&claims(), "default", "app=web").await.len(), 2);

    // The set goes, its pods with it, the claims stay.
    env.api
        .delete(&sts(), "default", "web", &DeleteOptions::default())
        .await
        .unwrap();
    env.eventually("pods gone", || async {
        env.list(&pods(), "default", "app=web").await.is_empty()
    })
    .await;
    env.sleep(Duration::from_secs(30)).await;
    assert_eq!(claim_uid(&env, "data-web-1").await, Some(uid));
    assert_eq!(env.list(&claims(), "default", "app=web").await.len(), 2);
    watcher.abort();
}

#[tokio::test(start_paused = true)]
async fn retention_policy_hands_claims_to_the_collector() {
    let env = start(Some(Duration::from_secs(1))).await;
    let delete = json!({"whenDeleted": "Delete", "whenScaled": "Delete"});
    env.create(&sts(), "default", stateful_set("db", 3, delete))
        .await;
    ready_replicas(&env, "db", 3).await;
    for i in 0..3 {
        assert_eq!(
            owner_kinds(&env, &format!("data-db-{i}")).await,
            ["StatefulSet/db"]
        );
    }

    // Scaling down: the claims of the removed ordinals follow their pods.
    let kept = claim_uid(&env, "data-db-0").await;
    let old = claim_uid(&env, "data-db-1").await;
    scale(&env, "db", 1).await;
    env.eventually("claims 1 and 2 collected", || async {
        claim_uid(&env, "data-db-1").await.is_none() && claim_uid(&env, "data-db-2").await.is_none()
    })
    .await;
    assert_eq!(claim_uid(&env, "data-db-0").await, kept);
    // Scaling up again starts from fresh storage.
    scale(&env, "db", 2).await;
    ready_replicas(&env, "db", 2).await;
    let fresh = claim_uid(&env, "data-db-1").await;
    assert!(fresh.is_some() && fresh != old);

    // Retain on deletion: our references go.
    env.merge(
        &sts(),
        "default",
        "db",
        json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain"}}}),
    )
    .await;
    env.eventually("no owners", || async {
        owner_kinds(&env, "data-db-0").await.is_empty()
            && owner_kinds(&env, "data-db-1").await.is_empty()
    })
    .await;
    // And back to Delete: deleting the set deletes the claims.
    env.merge(
        &sts(),
        "default",
        "db",
        json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}}),
    )
    .await;
    env.eventually("owned by the set", || async {
        owner_kinds(&env, "data-db-0").await == ["StatefulSet/db"]
    })
    .await;
    env.api
        .delete(&sts(), "default", "db", &DeleteOptions::default())
        .await
        .unwrap();
    env.eventually("claims gone with the set", || async {
        env.list(&claims(), "default", "app=db").await.is_empty()
            && env.list(&pods(), "default", "app=db").await.is_empty()
    })
    .await;
}
