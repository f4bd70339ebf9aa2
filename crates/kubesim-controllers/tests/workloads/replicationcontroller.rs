use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{DeleteOptions, ResourceRef};
use serde_json::{json, Value};

use crate::support::*;

fn rc() -> ResourceRef {
    ResourceRef::core("replicationcontrollers")
}

/// An RC without a selector: the server defaults it to the template labels.
fn replication_controller(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": name},
        "spec": {"replicas": replicas,
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": container("nginx")}}}})
}

#[tokio::test(start_paused = true)]
async fn keeps_n_owned_pods_and_reports_status() {
    let env = start(Some(Duration::from_secs(2))).await;
    let created = env
        .create(&rc(), "default", replication_controller("web", 3))
        .await;
    assert_eq!(created["spec"]["selector"], json!({"app": "web"}));
    env.eventually("3 available", || async {
        let s = env.get(&rc(), "default", "web").await.unwrap();
        s["status"]["availableReplicas"] == 3
    })
    .await;
    env.sleep(Duration::from_secs(30)).await;
    let ps = env.list(&pods(), "default", "app=web").await;
    assert_eq!(ps.len(), 3);
    for p in &ps {
        let n = meta::name(p);
        assert!(n.starts_with("web-") && n.len() == "web-".len() + 5, "{n}");
        assert_eq!(
            p["metadata"]["ownerReferences"],
            json!([{"apiVersion": "v1", "kind": "ReplicationController", "name": "web",
                "uid": created["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}])
        );
    }
    let s = env.get(&rc(), "default", "web").await.unwrap();
    assert_eq!(
        s["status"],
        json!({"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3,
            "availableReplicas": 3, "observedGeneration": 1})
    );

    env.merge(&rc(), "default", "web", json!({"spec": {"replicas": 1}}))
        .await;
    env.eventually("1 pod, status caught up", || async {
        let s = env.get(&rc(), "default", "web").await.unwrap();
        env.list(&pods(), "default", "app=web").await.len() == 1
            && s["status"]["replicas"] == 1
            && s["status"]["observedGeneration"] == 2
    })
    .await;
    env.merge(&rc(), "default", "web", json!({"spec": {"replicas": 2}}))
        .await;
    env.eventually("2 pods", || async {
        env.list(&pods(), "default", "app=web").await.len() == 2
    })
    .await;
    env.sleep(Duration::from_secs(30)).await;
    assert_eq!(env.list(&pods(), "default", "app=web").await.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_map_selector_adopts_only_pods_with_every_label() {
    let env = start(None).await;
    let pod = |name: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": container("nginx")}})
    };
    env.create(
        &pods(),
        "default",
        pod("both", json!({"app": "web", "tier": "front"})),
    )
    .await;
    env.create(&pods(), "default", pod("half", json!({"app": "web"})))
        .await;
    let mut obj = replication_controller("web", 2);
    obj["spec"]["selector"] = json!({"app": "web", "tier": "front"});
    obj["spec"]["template"]["metadata"]["labels"] = json!({"app": "web", "tier": "front"});
    let owner = env.create(&rc(), "default", obj).await;
    env.eventually("2 pods, one adopted", || async {
        let both = env.get(&pods(), "default", "both").await.unwrap();
        env.list(&pods(), "default", "app=web,tier=front")
            .await
            .len()
            == 2
            && both["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    })
    .await;
    env.sleep(Duration::from_secs(10)).await;
    let half = env.get(&pods(), "default", "half").await.unwrap();
    assert!(half["metadata"]["ownerReferences"].is_null(), "{half}");

    // Relabelled out of the selector: released, and replaced.
    env.merge(
        &pods(),
        "default",
        "both",
        json!({"metadata": {"labels": {"tier": "back"}}}),
    )
    .await;
    env.eventually("released and replaced", || async {
        let both = env.get(&pods(), "default", "both").await.unwrap();
        let refs = both["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len)
            .unwrap_or(0);
        refs == 0
            && env
                .list(&pods(), "default", "app=web,tier=front")
                .await
                .len()
                == 2
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn replicasets_and_replication_controllers_keep_their_own_pods() {
    let env = start(None).await;
    env.create(&rc(), "default", replication_controller("web", 2))
        .await;
    env.create(&rs(), "default", json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": container("nginx")}}}}))
        .await;
    env.eventually("3 pods", || async {
        env.list(&pods(), "default", "app=web").await.len() == 3
    })
    .await;
    env.sleep(Duration::from_secs(30)).await;
    let ps = env.list(&pods(), "default", "app=web").await;
    let owned_by = |kind: &str| {
        ps.iter()
            .filter(|p| p["metadata"]["ownerReferences"][0]["kind"] == kind)
            .count()
    };
    assert_eq!(ps.len(), 3);
    assert_eq!(owned_by("ReplicationController"), 2);
    assert_eq!(owned_by("ReplicaSet"), 1);
}

#[tokio::test(start_paused = true)]
async fn deleting_the_controller_deletes_its_pods() {
    let env = start(None).await;
    env.create(&rc(), "default", replication_controller("web", 2))
        .await;
    env.eventually("2 pods", || async {
        env.list(&pods(), "default", "app=web").await.len() == 2
    })
    .await;
    env.api
        .delete(
            &rc(),
            "default",
            "web",
            &DeleteOptions {
                propagation_policy: Some("Background".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    env.eventually("pods gone", || async {
        env.list(&pods(), "default", "app=web").await.is_empty()
    })
    .await;
    assert!(env.get(&rc(), "default", "web").await.is_none());
}

#[tokio::test(start_paused = true)]
async fn deleting_without_a_policy_orphans_the_pods_as_upstream() {
    let env = start(None).await;
    env.create(&rc(), "default", replication_controller("web", 2))
        .await;
    env.eventually("2 pods", || async {
        env.list(&pods(), "default", "app=web").await.len() == 2
    })
    .await;
    env.api
        .delete(&rc(), "default", "web", &DeleteOptions::default())
        .await
        .unwrap();
    env.eventually("pods released", || async {
        let pods = env.list(&pods(), "default", "app=web").await;
        pods.len() == 2
            && pods.iter().all(|p| {
                p.pointer("/metadata/ownerReferences")
                    .and_then(|o| o.as_array())
                    .is_none_or(|o| o.is_empty())
            })
    })
    .await;
    assert!(env.get(&rc(), "default", "web").await.is_none());
}
