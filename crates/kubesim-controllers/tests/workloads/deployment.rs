use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::Informers;
use serde_json::{json, Value};

use crate::support::*;

fn deployment(name: &str, replicas: i64, strategy: Value, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "strategy": strategy,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": container(image)}}}})
}

fn image_of(p: &Value) -> String {
    p.pointer("/spec/containers/0/image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

async fn set_image(env: &Env, name: &str, image: &str) {
    env.merge(
        &deploy(),
        "default",
        name,
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}),
    )
    .await;
}

/// What `kubectl rollout status` waits for.
async fn rolled_out(env: &Env, name: &str) -> bool {
    let Some(d) = env.get(&deploy(), "default", name).await else {
        return false;
    };
    let n = d["spec"]["replicas"].as_i64().unwrap_or(1);
    let s = &d["status"];
    s["observedGeneration"].as_i64() >= d["metadata"]["generation"].as_i64()
        && s["updatedReplicas"].as_i64() == Some(n)
        && s["replicas"].as_i64() == Some(n)
        && s["availableReplicas"].as_i64() == Some(n)
}

/// Calls `observe(pods)` on every change of the namespace's pods, with the
/// informer's view after the change.
fn watch_pods(
    env: &Env,
    observe: impl Fn(&[Arc<Value>]) + Send + Sync + 'static,
) -> tokio::task::JoinHandle<()> {
    let informers = Informers::new(env.api.clone(), env.clock.clone());
    let inf = informers.get(&pods());
    let cache = inf.cache();
    inf.on_change(move |_| {
        let ps: Vec<Arc<Value>> = cache
            .list_namespace("default")
            .into_iter()
            .filter(|p| !meta::is_deleting(p))
            .collect();
        observe(&ps);
    });
    tokio::spawn(async move { informers.run().await })
}

#[tokio::test(start_paused = true)]
async fn rolling_update_keeps_within_surge_and_unavailability() {
    let env = start(Some(Duration::from_secs(2))).await;
    // 4 replicas, maxSurge 25% -> 1 (rounded up), maxUnavailable 25% -> 1.
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}});
    env.create(
        &deploy(),
        "default",
        deployment("web", 4, strategy, "nginx:1"),
    )
    .await;
    env.eventually("first rollout", || rolled_out(&env, "web"))
        .await;

    let seen = Arc::new(Mutex::new((0usize, usize::MAX, 0usize)));
    let s = seen.clone();
    let watcher = watch_pods(&env, move |ps| {
        let total = ps.len();
        let ready = ps
            .iter()
            .filter(|p| p["status"]["conditions"][0]["status"] == "True")
            .count();
        let mut g = s.lock().unwrap();
        g.0 = g.0.max(total);
        g.1 = g.1.min(ready);
        g.2 += 1;
    });
    env.sleep(Duration::from_secs(1)).await;
    set_image(&env, "web", "nginx:2").await;
    env.eventually("second rollout", || async {
        rolled_out(&env, "web").await
            && env
                .list(&pods(), "default", "app=web")
                .await
                .iter()
                .all(|p| image_of(p) == "nginx:2")
    })
    .await;
    watcher.abort();
    let (max_total, min_ready, changes) = *seen.lock().unwrap();
    assert!(
        changes > 8,
        "the watcher saw the rollout ({changes} changes)"
    );
    assert!(
        max_total <= 5,
        "never more than replicas + maxSurge pods: {max_total}"
    );
    assert!(
        min_ready >= 3,
        "never fewer than replicas - maxUnavailable ready: {min_ready}"
    );

    let sets = env.list(&rs(), "default", "app=web").await;
    assert_eq!(sets.len(), 2);
    for set in &sets {
        let rev = &set["metadata"]["annotations"]["deployment.kubernetes.io/revision"];
        let hash = set["metadata"]["labels"]["pod-template-hash"]
            .as_str()
            .unwrap();
        assert_eq!(meta::name(set), format!("web-{hash}"));
        assert_eq!(
            set["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"],
            "4"
        );
        assert_eq!(
            set["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"],
            "5"
        );
        if set["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2" {
            assert_eq!(rev, "2");
            assert_eq!(set["spec"]["replicas"], 4);
        } else {
            assert_eq!(rev, "1");
            assert_eq!(set["spec"]["replicas"], 0);
        }
    }
    let d = env.get(&deploy(), "default", "web").await.unwrap();
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let conds = d["status"]["conditions"].as_array().unwrap();
    let reason = |t: &str| {
        conds
            .iter()
            .find(|c| c["type"] == t)
            .map(|c| c["reason"].clone())
    };
    assert_eq!(reason("Available"), Some(json!("MinimumReplicasAvailable")));
    assert_eq!(reason("Progressing"), Some(json!("NewReplicaSetAvailable")));
    assert_eq!(d["status"]["updatedReplicas"], 4);
    assert_eq!(d["status"]["readyReplicas"], 4);
    assert_eq!(d["status"]["unavailableReplicas"], 0);
}

#[tokio::test(start_paused = true)]
async fn recreate_removes_old_pods_before_creating_new_ones() {
    let env = start(Some(Duration::from_secs(2))).await;
    env.create(
        &deploy(),
        "default",
        deployment("db", 3, json!({"type": "Recreate"}), "pg:1"),
    )
    .await;
    env.eventually("first rollout", || rolled_out(&env, "db"))
        .await;
    let overlap = Arc::new(Mutex::new(false));
    let o = overlap.clone();
    let watcher = watch_pods(&env, move |ps| {
        let old = ps.iter().any(|p| image_of(p) == "pg:1");
        let new = ps.iter().any(|p| image_of(p) == "pg:2");
        if old && new {
            *o.lock().unwrap() = true;
        }
    });
    env.sleep(Duration::from_secs(1)).await;
    set_image(&env, "db", "pg:2").await;
    env.eventually("second rollout", || async {
        rolled_out(&env, "db").await
            && env
                .list(&pods(), "default", "app=db")
                .await
                .iter()
                .all(|p| image_of(p) == "pg:2")
    })
    .await;
    watcher.abort();
    assert!(!*overlap.lock().unwrap(), "old and new pods coexisted");
    assert_eq!(env.list(&pods(), "default", "app=db").await.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn history_is_pruned_and_rollback_reuses_the_old_replica_set() {
    let env = start(Some(Duration::from_secs(1))).await;
    let mut d = deployment("api", 2, json!({"type": "RollingUpdate"}), "v1");
    d["spec"]["revisionHistoryLimit"] = json!(1);
    env.create(&deploy(), "default", d).await;
    env.eventually("v1", || rolled_out(&env, "api")).await;
    for v in ["v2", "v3", "v4"] {
        set_image(&env, "api", v).await;
        env.eventually(v, || async {
            rolled_out(&env, "api").await
                && env
                    .list(&pods(), "default", "app=api")
                    .await
                    .iter()
                    .all(|p| image_of(p) == v)
        })
        .await;
    }
    let revisions = |sets: &[Value]| {
        let mut v: Vec<(String, String)> = sets
            .iter()
            .map(|s| {
                (
                    s["spec"]["template"]["spec"]["containers"][0]["image"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    s["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    env.eventually("old revisions pruned", || async {
        env.list(&rs(), "default", "app=api").await.len() == 2
    })
    .await;
    let sets = env.list(&rs(), "default", "app=api").await;
    assert_eq!(
        revisions(&sets),
        [("v3".into(), "3".into()), ("v4".into(), "4".into())]
    );
    let v3 = sets
        .iter()
        .find(|s| s["spec"]["template"]["spec"]["containers"][0]["image"] == "v3")
        .unwrap();
    let v3_uid = meta::uid(v3).to_string();
    // Rolling back to v3 reuses its ReplicaSet under a new revision.
    set_image(&env, "api", "v3").await;
    env.eventually("back to v3", || async {
        rolled_out(&env, "api").await
            && env
                .list(&pods(), "default", "app=api")
                .await
                .iter()
                .all(|p| image_of(p) == "v3")
    })
    .await;
    let sets = env.list(&rs(), "default", "app=api").await;
    assert_eq!(
        revisions(&sets),
        [("v3".into(), "5".into()), ("v4".into(), "4".into())]
    );
    assert!(sets.iter().any(|s| meta::uid(s) == v3_uid));
    let d = env.get(&deploy(), "default", "api").await.unwrap();
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "5"
    );
}

#[tokio::test(start_paused = true)]
async fn a_rollout_that_never_becomes_ready_exceeds_its_deadline() {
    let env = start(Some(Duration::from_secs(1))).await;
    let mut d = deployment("stuck", 2, json!({"type": "RollingUpdate"}), "bad");
    d["spec"]["progressDeadlineSeconds"] = json!(30);
    d["spec"]["template"]["metadata"]["annotations"] = json!({NEVER_READY: "yes"});
    env.create(&deploy(), "default", d).await;
    let progressing = || async {
        let d = env.get(&deploy(), "default", "stuck").await.unwrap();
        d["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Progressing").cloned())
            .unwrap_or(Value::Null)
    };
    env.eventually("progressing", || async {
        progressing().await["status"] == "True"
    })
    .await;
    let start = env.clock.now();
    env.eventually("deadline exceeded", || async {
        progressing().await["reason"] == "ProgressDeadlineExceeded"
    })
    .await;
    let waited = env.clock.now().duration_since(start).as_secs();
    assert!(
        (29..=33).contains(&waited),
        "reported {waited}s after the start"
    );
    let c = progressing().await;
    assert_eq!(c["status"], "False");
    let d = env.get(&deploy(), "default", "stuck").await.unwrap();
    let avail = d["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Available")
        .unwrap()
        .clone();
    assert_eq!(avail["reason"], "MinimumReplicasUnavailable");
    assert_eq!(d["status"]["unavailableReplicas"], 2);
}

#[tokio::test(start_paused = true)]
async fn scaling_mid_rollout_and_at_rest() {
    let env = start(Some(Duration::from_secs(2))).await;
    env.create(
        &deploy(),
        "default",
        deployment("s", 2, json!({"type": "RollingUpdate"}), "a"),
    )
    .await;
    env.eventually("2", || rolled_out(&env, "s")).await;
    env.merge(&deploy(), "default", "s", json!({"spec": {"replicas": 5}}))
        .await;
    env.eventually("5", || async {
        rolled_out(&env, "s").await && env.list(&pods(), "default", "app=s").await.len() == 5
    })
    .await;
    env.sleep(Duration::from_secs(10)).await;
    assert_eq!(env.list(&pods(), "default", "app=s").await.len(), 5);
    assert_eq!(env.list(&rs(), "default", "app=s").await.len(), 1);
}
