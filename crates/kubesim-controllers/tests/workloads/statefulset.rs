use std::sync::{Arc, Mutex};
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::Informers;
use serde_json::{json, Value};

use crate::support::*;

fn stateful_set(name: &str, replicas: i64, policy: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
        "spec": {"replicas": replicas, "serviceName": name, "podManagementPolicy": policy,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": container("redis:1")}}}})
}

fn ready(p: &Value) -> bool {
    p["status"]["phase"] == "Running" && p["status"]["conditions"][0]["status"] == "True"
}

/// Records pod creations (with whether every lower ordinal was ready at
/// that moment) and deletions, in order.
fn journal(env: &Env) -> (Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let l = log.clone();
    let informers = Informers::new(env.api.clone(), env.clock.clone());
    let inf = informers.get(&pods());
    let cache = inf.cache();
    inf.on_change(move |c| {
        let name = meta::name(c.object()).to_string();
        match c {
            kubesim_runtime::Change::Added(_) => {
                let ord: i64 = name.rsplit('-').next().unwrap().parse().unwrap();
                let prefix = name.rsplit_once('-').unwrap().0.to_string();
                let lower_ready = (0..ord).all(|i| {
                    cache
                        .get("default", &format!("{prefix}-{i}"))
                        .is_some_and(|p| ready(&p))
                });
                l.lock().unwrap().push(format!(
                    "+{name}{}",
                    if lower_ready { "" } else { " early" }
                ));
            }
            kubesim_runtime::Change::Deleted(_) => l.lock().unwrap().push(format!("-{name}")),
            _ => {}
        }
    });
    (log, tokio::spawn(async move { informers.run().await }))
}

#[tokio::test(start_paused = true)]
async fn ordered_creation_scale_down_and_rolling_update() {
    let env = start(Some(Duration::from_secs(2))).await;
    let (log, watcher) = journal(&env);
    env.create(&sts(), "default", stateful_set("db", 3, "OrderedReady"))
        .await;
    env.eventually("3 ready", || async {
        let s = env.get(&sts(), "default", "db").await.unwrap();
        s["status"]["readyReplicas"] == 3
    })
    .await;
    assert_eq!(*log.lock().unwrap(), ["+db-0", "+db-1", "+db-2"]);
    let ps = env.list(&pods(), "default", "app=db").await;
    assert_eq!(names(&ps), ["db-0", "db-1", "db-2"]);
    let s = env.get(&sts(), "default", "db").await.unwrap();
    let rev = s["status"]["updateRevision"].as_str().unwrap().to_string();
    assert!(rev.starts_with("db-"));
    assert_eq!(s["status"]["currentRevision"], rev.as_str());
    for p in &ps {
        assert_eq!(
            p["metadata"]["labels"]["controller-revision-hash"],
            rev.as_str()
        );
        assert_eq!(
            p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
            meta::name(p)
        );
        assert_eq!(p["spec"]["hostname"], meta::name(p));
        assert_eq!(p["spec"]["subdomain"], "db");
    }
    // The revision is recorded as a ControllerRevision.
    let cr = env
        .get(
            &kubesim_runtime::ResourceRef::new("apps", "v1", "controllerrevisions"),
            "default",
            &rev,
        )
        .await
        .expect("controller revision");
    assert_eq!(cr["revision"], 1);

    // Rolling update, highest ordinal first, one at a time.
    log.lock().unwrap().clear();
    env.merge(&sts(), "default", "db",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "redis:2"}]}}}})).await;
    env.eventually("updated", || async {
        let s = env.get(&sts(), "default", "db").await.unwrap();
        s["status"]["observedGeneration"] == s["metadata"]["generation"]
            && s["status"]["updateRevision"] != rev.as_str()
            && s["status"]["updatedReplicas"] == 3
            && s["status"]["readyReplicas"] == 3
            && s["status"]["currentRevision"] == s["status"]["updateRevision"]
    })
    .await;
    assert_eq!(
        *log.lock().unwrap(),
        ["-db-2", "+db-2", "-db-1", "+db-1", "-db-0", "+db-0"]
    );

    // Scale down: highest ordinal first.
    log.lock().unwrap().clear();
    env.merge(&sts(), "default", "db", json!({"spec": {"replicas": 1}}))
        .await;
    env.eventually("1 left", || async {
        env.list(&pods(), "default", "app=db").await.len() == 1
    })
    .await;
    assert_eq!(*log.lock().unwrap(), ["-db-2", "-db-1"]);
    env.eventually("status", || async {
        let s = env.get(&sts(), "default", "db").await.unwrap();
        s["status"]["replicas"] == 1 && s["status"]["currentReplicas"] == 1
    })
    .await;
    watcher.abort();
}

#[tokio::test(start_paused = true)]
async fn partitioned_update_stops_at_the_partition() {
    let env = start(Some(Duration::from_secs(1))).await;
    let mut set = stateful_set("p", 3, "OrderedReady");
    set["spec"]["updateStrategy"] =
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}});
    env.create(&sts(), "default", set).await;
    env.eventually("3 ready", || async {
        env.get(&sts(), "default", "p").await.unwrap()["status"]["readyReplicas"] == 3
    })
    .await;
    env.merge(&sts(), "default", "p",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "redis:2"}]}}}})).await;
    env.eventually("p-2 updated", || async {
        let s = env.get(&sts(), "default", "p").await.unwrap();
        s["status"]["observedGeneration"] == s["metadata"]["generation"]
            && s["status"]["updatedReplicas"] == 1
            && s["status"]["readyReplicas"] == 3
    })
    .await;
    env.sleep(Duration::from_secs(20)).await;
    let images: Vec<String> = {
        let mut ps = env.list(&pods(), "default", "app=p").await;
        ps.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
        ps.iter()
            .map(|p| {
                p["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(images, ["redis:1", "redis:1", "redis:2"]);
    let s = env.get(&sts(), "default", "p").await.unwrap();
    assert_eq!(s["status"]["currentReplicas"], 2);
    assert_ne!(
        s["status"]["currentRevision"],
        s["status"]["updateRevision"]
    );
}

#[tokio::test(start_paused = true)]
async fn parallel_policy_creates_without_waiting() {
    let env = start(None).await;
    env.create(&sts(), "default", stateful_set("par", 3, "Parallel"))
        .await;
    env.eventually("3 pods", || async {
        env.list(&pods(), "default", "app=par").await.len() == 3
    })
    .await;
    assert_eq!(
        names(&env.list(&pods(), "default", "app=par").await),
        ["par-0", "par-1", "par-2"]
    );
    // Nothing is ready, yet a scale-down removes them all at once.
    env.merge(&sts(), "default", "par", json!({"spec": {"replicas": 0}}))
        .await;
    env.eventually("none", || async {
        env.list(&pods(), "default", "app=par").await.is_empty()
    })
    .await;
}
