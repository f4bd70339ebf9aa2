//! The HorizontalPodAutoscaler on PodMetrics the test writes, and
//! PodDisruptionBudget status, against the in-process server in simulated
//! time.

mod support;

use kubesim_core::meta;
use kubesim_runtime::{ResourceRef, WriteOptions};
use serde_json::{json, Value};
use support::{start, Env};

const NS: &str = "default";

fn rs() -> ResourceRef {
    ResourceRef::new("apps", "v1", "replicasets")
}

fn hpas() -> ResourceRef {
    ResourceRef::new("autoscaling", "v2", "horizontalpodautoscalers")
}

fn pdbs() -> ResourceRef {
    ResourceRef::new("policy", "v1", "poddisruptionbudgets")
}

fn metrics() -> ResourceRef {
    ResourceRef::new("metrics.k8s.io", "v1beta1", "pods")
}

/// A ReplicaSet whose pods (made by the ReplicaSet controller) all run;
/// returns their names.
async fn replica_set(env: &Env, name: &str, app: &str, replicas: usize) -> Vec<String> {
    env.create(
        &rs(),
        NS,
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}},
                "template": {"metadata": {"labels": {"app": app}},
                    "spec": {"containers": [{"name": "c", "image": "nginx",
                        "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}]}}}}),
    )
    .await;
    running_pods(env, name, replicas).await
}

/// Waits for `count` live pods of the ReplicaSet `name`, runs them all and
/// returns their names.
async fn running_pods(env: &Env, name: &str, count: usize) -> Vec<String> {
    let prefix = format!("{name}-");
    let names = env
        .wait_for(&format!("{count} pods of {name}"), || async {
            let live: Vec<String> = env
                .pods_of(NS, &prefix)
                .await
                .iter()
                .filter(|p| !meta::is_deleting(p))
                .map(|p| meta::name(p).to_string())
                .collect();
            (live.len() == count).then_some(live)
        })
        .await;
    for pod in &names {
        env.run_pod(NS, pod).await;
    }
    names
}

async fn set_cpu(env: &Env, pod: &str, cpu: &str) {
    let body = json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
        "metadata": {"name": pod, "namespace": NS},
        "timestamp": meta::format_time(env.clock.now()), "window": "15s",
        "containers": [{"name": "c", "usage": {"cpu": cpu, "memory": "32Mi"}}]});
    match env.get(&metrics(), NS, pod).await {
        Some(old) => {
            let mut b = body;
            b["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
            env.api
                .update(&metrics(), NS, b, None, &WriteOptions::default())
                .await
                .expect("update metrics");
        }
        None => {
            env.create(&metrics(), NS, body).await;
        }
    }
}

async fn spec_replicas(env: &Env, name: &str) -> i64 {
    env.get(&rs(), NS, name).await.unwrap()["spec"]["replicas"]
        .as_i64()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn hpa_scales_up_at_once_and_down_after_stabilization() {
    let env = start().await;
    for p in replica_set(&env, "web", "web", 2).await {
        set_cpu(&env, &p, "400m").await;
    }
    env.create(
        &hpas(),
        NS,
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web"},
                "minReplicas": 1, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50}}}]}}),
    )
    .await;
    // 400m of 500m = 80 % against 50 %: ceil(1.6 × 2) = 4.
    env.wait_for("scaled to 4", || async {
        (spec_replicas(&env, "web").await == 4).then_some(())
    })
    .await;
    let msgs = env.events(NS, "web", "SuccessfulRescale").await;
    assert_eq!(
        msgs,
        ["New size: 4; reason: cpu resource utilization (percentage of request) above target"]
    );
    let h = env
        .wait_for("status written", || async {
            let h = env.get(&hpas(), NS, "web").await?;
            (h["status"]["desiredReplicas"] == 4).then_some(h)
        })
        .await;
    assert_eq!(
        h["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
        80
    );
    assert!(h["status"]["lastScaleTime"].is_string());
    // The two new pods run too, all at 40 %: ceil(0.8 × 4) = 4 holds.
    let web = running_pods(&env, "web", 4).await;
    for p in &web {
        set_cpu(&env, p, "200m").await;
    }

    // Load drops to 10 %: the 300 s window holds the count at 4 for a while.
    env.sleep(20).await;
    for p in &web {
        set_cpu(&env, p, "50m").await;
    }
    let dropped = env.clock.now();
    env.sleep(270).await;
    assert_eq!(spec_replicas(&env, "web").await, 4, "stabilized");
    let h = env.get(&hpas(), NS, "web").await.unwrap();
    let able = h["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "AbleToScale")
        .unwrap()
        .clone();
    assert_eq!(able["reason"], "ScaleDownStabilized");
    // 10 % against 50 %: ceil(0.2 × 4) = 1, once the high recommendations
    // have aged out of the window.
    env.wait_for("scaled to 1", || async {
        (spec_replicas(&env, "web").await == 1).then_some(())
    })
    .await;
    let after = env.clock.now().duration_since(dropped).as_secs();
    assert!(
        (280..=340).contains(&after),
        "scaled down {after} s after the drop"
    );
    let msgs = env.events(NS, "web", "SuccessfulRescale").await;
    assert!(msgs.contains(&"New size: 1; reason: All metrics below target".to_string()));
}

async fn pdb_status(env: &Env, name: &str, want_allowed: i64) -> Value {
    env.wait_for(&format!("pdb {name} allows {want_allowed}"), || async {
        let p = env.get(&pdbs(), NS, name).await?;
        (p["status"]["disruptionsAllowed"] == want_allowed
            && p["status"]["observedGeneration"].is_i64())
        .then_some(p)
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn pdb_status_counts_healthy_pods() {
    let env = start().await;
    let db = replica_set(&env, "db", "db", 3).await;
    env.create(
        &pdbs(),
        NS,
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}}}),
    )
    .await;
    let p = pdb_status(&env, "db", 1).await;
    assert_eq!(p["status"]["currentHealthy"], 3);
    assert_eq!(p["status"]["desiredHealthy"], 2);
    assert_eq!(p["status"]["expectedPods"], 3);
    assert_eq!(p["status"]["conditions"][0]["type"], "DisruptionAllowed");
    assert_eq!(p["status"]["conditions"][0]["reason"], "SufficientPods");
    env.set_ready(NS, &db[0], false).await;
    let p = pdb_status(&env, "db", 0).await;
    assert_eq!(p["status"]["currentHealthy"], 2);
    assert_eq!(p["status"]["conditions"][0]["status"], "False");
    assert_eq!(p["status"]["conditions"][0]["reason"], "InsufficientPods");

    // maxUnavailable as a percentage counts against the ReplicaSet's
    // scale (3): 34 % of 3 rounds up to 2 unavailable, so 1 must stay.
    env.create(
        &pdbs(),
        NS,
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db-pct"},
            "spec": {"maxUnavailable": "34%", "selector": {"matchLabels": {"app": "db"}}}}),
    )
    .await;
    let p = pdb_status(&env, "db-pct", 1).await;
    assert_eq!(p["status"]["expectedPods"], 3);
    assert_eq!(p["status"]["desiredHealthy"], 1);
    assert_eq!(p["status"]["currentHealthy"], 2);
}
