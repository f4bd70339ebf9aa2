use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;

fn node(name: &str, labels: Value, taints: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints}})
}

fn daemon_set(name: &str, image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"nodeSelector": {"disk": "ssd"}, "containers": container(image)}}}})
}

fn target(p: &Value) -> String {
    kubesim_controllers::daemonset::target_node(p).unwrap_or_default()
}

async fn targets(env: &Env, sel: &str) -> Vec<String> {
    let mut v: Vec<String> = env
        .list(&pods(), "default", sel)
        .await
        .iter()
        .map(target)
        .collect();
    v.sort();
    v
}

#[tokio::test(start_paused = true)]
async fn one_pod_per_eligible_node_following_node_changes() {
    let env = start(Some(Duration::from_secs(1))).await;
    env.create(&nodes(), "", node("n1", json!({"disk": "ssd"}), json!([])))
        .await;
    env.create(
        &nodes(),
        "",
        node(
            "n2",
            json!({"disk": "ssd"}),
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
        ),
    )
    .await;
    env.create(&nodes(), "", node("n3", json!({"disk": "hdd"}), json!([])))
        .await;
    // A cordoned node still runs daemons: unschedulable is tolerated.
    env.create(
        &nodes(),
        "",
        node(
            "n5",
            json!({"disk": "ssd"}),
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),
        ),
    )
    .await;
    env.create(&ds(), "default", daemon_set("agent", "a:1"))
        .await;
    env.eventually("pods on n1 and n5", || async {
        targets(&env, "app=agent").await == ["n1", "n5"]
    })
    .await;
    let p = &env.list(&pods(), "default", "app=agent").await[0];
    assert!(
        p["spec"]
            .get("nodeName")
            .is_none_or(|n| n.is_null() || n == ""),
        "placed by affinity, not nodeName"
    );
    let tols = p["spec"]["tolerations"].as_array().unwrap();
    assert!(tols
        .iter()
        .any(|t| t["key"] == "node.kubernetes.io/not-ready" && t["effect"] == "NoExecute"));
    assert!(p["metadata"]["labels"]["controller-revision-hash"].is_string());

    // A new eligible node gets a pod; a node that stops matching loses it.
    env.create(&nodes(), "", node("n4", json!({"disk": "ssd"}), json!([])))
        .await;
    env.eventually("pod on n4", || async {
        targets(&env, "app=agent").await == ["n1", "n4", "n5"]
    })
    .await;
    env.merge(
        &nodes(),
        "",
        "n1",
        json!({"metadata": {"labels": {"disk": "hdd"}}}),
    )
    .await;
    env.eventually("n1 drained", || async {
        targets(&env, "app=agent").await == ["n4", "n5"]
    })
    .await;
    env.eventually("status", || async {
        let s = env.get(&ds(), "default", "agent").await.unwrap()["status"].clone();
        s["desiredNumberScheduled"] == 2
            && s["currentNumberScheduled"] == 2
            && s["numberReady"] == 2
            && s["numberAvailable"] == 2
            && s["numberMisscheduled"] == 0
            && s["updatedNumberScheduled"] == 2
    })
    .await;
    env.sleep(Duration::from_secs(10)).await;
    assert_eq!(env.list(&pods(), "default", "app=agent").await.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn rolling_update_replaces_one_node_at_a_time() {
    let env = start(Some(Duration::from_secs(2))).await;
    for n in ["n1", "n2", "n3"] {
        env.create(&nodes(), "", node(n, json!({"disk": "ssd"}), json!([])))
            .await;
    }
    env.create(&ds(), "default", daemon_set("agent", "a:1"))
        .await;
    env.eventually("3 ready", || async {
        env.get(&ds(), "default", "agent").await.unwrap()["status"]["numberAvailable"] == 3
    })
    .await;
    let mut max_down = 0;
    env.merge(
        &ds(),
        "default",
        "agent",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "a:2"}]}}}}),
    )
    .await;
    for _ in 0..600 {
        let ps = env.list(&pods(), "default", "app=agent").await;
        let ready = ps
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        max_down = max_down.max(3 - ready.min(3));
        if ps.len() == 3
            && ready == 3
            && ps
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "a:2")
        {
            break;
        }
        env.sleep(Duration::from_millis(100)).await;
    }
    let ps = env.list(&pods(), "default", "app=agent").await;
    assert!(ps
        .iter()
        .all(|p| p["spec"]["containers"][0]["image"] == "a:2"));
    assert!(
        max_down <= 1,
        "at most maxUnavailable nodes without a ready pod: {max_down}"
    );
    env.eventually("updated status", || async {
        env.get(&ds(), "default", "agent").await.unwrap()["status"]["updatedNumberScheduled"] == 3
    })
    .await;
}

/// Updates a DaemonSet surging `max_surge` over `count` nodes (pods Ready
/// 2 s after creation, available 5 s later) and returns the most nodes
/// seen running two pods at once. Every observed state must have a Ready
/// pod on every node.
async fn surge_update(count: usize, max_surge: Value) -> usize {
    let env = start(Some(Duration::from_secs(2))).await;
    let names: Vec<String> = (1..=count).map(|i| format!("n{i}")).collect();
    for n in &names {
        env.create(&nodes(), "", node(n, json!({"disk": "ssd"}), json!([])))
            .await;
    }
    let mut set = daemon_set("agent", "a:1");
    set["spec"]["minReadySeconds"] = json!(5);
    set["spec"]["updateStrategy"]["rollingUpdate"] =
        json!({"maxSurge": max_surge, "maxUnavailable": 0});
    env.create(&ds(), "default", set).await;
    env.eventually("all available", || async {
        env.get(&ds(), "default", "agent").await.unwrap()["status"]["numberAvailable"]
            == count as i64
    })
    .await;
    env.merge(
        &ds(),
        "default",
        "agent",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "a:2"}]}}}}),
    )
    .await;
    let mut most_doubled = 0;
    let mut done = false;
    for _ in 0..1200 {
        let ps = env.list(&pods(), "default", "app=agent").await;
        let on = |n: &String| ps.iter().filter(|p| &target(p) == n).collect::<Vec<_>>();
        let doubled = names.iter().filter(|n| on(n).len() == 2).count();
        most_doubled = most_doubled.max(doubled);
        for n in &names {
            let here = on(n);
            assert!(here.len() <= 2, "at most an old and a new pod on {n}");
            assert!(
                here.iter().any(|p| p["status"]["phase"] == "Running"
                    && p["status"]["conditions"][0]["status"] == "True"),
                "{n} without a ready pod"
            );
        }
        if ps.len() == count
            && ps
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "a:2")
        {
            done = true;
            break;
        }
        env.sleep(Duration::from_millis(100)).await;
    }
    assert!(done, "the update finished");
    env.eventually("status caught up", || async {
        let s = env.get(&ds(), "default", "agent").await.unwrap()["status"].clone();
        s["updatedNumberScheduled"] == count as i64 && s["numberAvailable"] == count as i64
    })
    .await;
    most_doubled
}

#[tokio::test(start_paused = true)]
async fn surge_update_starts_the_new_pod_before_the_old_one_goes() {
    assert_eq!(surge_update(3, json!(1)).await, 1);
}

#[tokio::test(start_paused = true)]
async fn surge_percentages_round_up() {
    // 30% of 4 nodes is 1.2: two nodes surge at once.
    assert_eq!(surge_update(4, json!("30%")).await, 2);
}
