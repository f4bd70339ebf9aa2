//! The controllers and the scheduler do not trust what is stored: objects
//! of the wrong shape written under the API (as a store written before the
//! API checked types may hold) are skipped, and every loop keeps working
//! for the others.

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::Registry;
use kubesim_runtime::{Api, Clock, Informers, ListOptions, ResourceRef, Rng, WriteOptions};
use kubesim_store::{Attrs, MemStore, Store, WriteOp};
use serde_json::{json, Value};

const TRIES: usize = 400;
const STEP: Duration = Duration::from_millis(25);

/// Puts `obj` into the store as it is, past every check of the API.
fn plant(store: &dyn Store, registry: &Registry, group: &str, plural: &str, ns: &str, obj: Value) {
    let r = registry.get(group, "v1", plural).expect("resource");
    let name = obj["metadata"]["name"].as_str().expect("name").to_string();
    let key = if ns.is_empty() {
        name
    } else {
        format!("{ns}/{name}")
    };
    store
        .write(&r.storage_key(), &key, &mut |_, rev| {
            let mut o = obj.clone();
            o["metadata"]["resourceVersion"] = json!(rev.to_string());
            o["metadata"]["uid"] = json!(format!("planted-{rev}"));
            if !ns.is_empty() {
                o["metadata"]["namespace"] = json!(ns);
            }
            WriteOp::Put {
                bytes: serde_json::to_vec(&o).expect("json").into(),
                attrs: Attrs::default(),
            }
        })
        .expect("planted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_objects_stop_neither_controllers_nor_scheduler() {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let server = Server::new(store.clone(), Clock::wall(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let registry = server.registry.clone();
    for (group, plural, obj) in [
        (
            "apps",
            "deployments",
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "bad-d", "labels": 5},
            "spec": {"replicas": "x", "selector": {"matchLabels": {"a": "b"}}, "template": 5}}),
        ),
        (
            "apps",
            "replicasets",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "bad-rs", "ownerReferences": "x"}, "spec": []}),
        ),
        (
            "apps",
            "statefulsets",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "bad-ss"}, "spec": {"replicas": [], "template": {"spec": 1}}}),
        ),
        (
            "apps",
            "daemonsets",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "bad-ds"}, "spec": {"selector": "x", "template": []}}),
        ),
        (
            "",
            "pods",
            json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "bad-p", "labels": {"a": 1}, "ownerReferences": [5]},
            "spec": 5, "status": "x"}),
        ),
        (
            "",
            "services",
            json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "bad-s"}, "spec": {"type": "NodePort", "ports": 5, "selector": []}}),
        ),
        (
            "batch",
            "jobs",
            json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "bad-j"}, "spec": {"completions": "x", "template": "x"}}),
        ),
        (
            "batch",
            "cronjobs",
            json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "bad-cj"}, "spec": {"schedule": 5, "jobTemplate": []}}),
        ),
        (
            "",
            "persistentvolumeclaims",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "bad-pvc"}, "spec": 1}),
        ),
    ] {
        plant(&*store, &registry, group, plural, "default", obj);
    }
    plant(
        &*store,
        &registry,
        "",
        "nodes",
        "",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bad-n"},
            "spec": {"taints": "x"}, "status": {"conditions": 5}}),
    );
    let clock = server.clock.clone();
    let sched_api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "default-scheduler"));
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server, "kube-controller-manager"));
    let controllers = tokio::spawn(kubesim_controllers::run_all(
        api.clone(),
        registry,
        clock.clone(),
        Some("test-ca".into()),
    ));
    let scheduler = tokio::spawn(kubesim_scheduler::run(
        sched_api.clone(),
        Informers::new(sched_api, clock.clone()),
        clock.clone(),
        Rng::seeded(7),
        Default::default(),
    ));
    api.create(
        &ResourceRef::core("nodes"),
        "",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "good-n"},
            "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                "capacity": {"cpu": "8", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]}}),
        &WriteOptions::default(),
    )
    .await
    .expect("node");

    let deploys = ResourceRef::new("apps", "v1", "deployments");
    api.create(
        &deploys,
        "default",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "good"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "good"}},
                "template": {"metadata": {"labels": {"app": "good"}},
                    "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        &WriteOptions::default(),
    )
    .await
    .expect("create");
    let pods = ResourceRef::core("pods");
    let mut made = 0;
    for _ in 0..TRIES {
        assert!(!controllers.is_finished(), "the controllers stopped");
        assert!(!scheduler.is_finished(), "the scheduler stopped");
        let list = api
            .list(&pods, "default", &ListOptions::default())
            .await
            .expect("list");
        made = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| {
                p["metadata"]["labels"]["app"] == "good" && p["spec"]["nodeName"] == "good-n"
            })
            .count();
        if made == 2 {
            break;
        }
        clock.sleep(STEP).await;
    }
    assert_eq!(made, 2, "the good Deployment's pods, bound");
    // The loops still work after meeting the bad objects: a pod made now
    // is bound too.
    api.create(
        &pods,
        "default",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "late"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        &WriteOptions::default(),
    )
    .await
    .expect("late pod");
    let mut bound = false;
    for _ in 0..TRIES {
        let p = api.get(&pods, "default", "late").await.expect("get");
        if p["spec"]["nodeName"] == "good-n" {
            bound = true;
            break;
        }
        clock.sleep(STEP).await;
    }
    assert!(bound, "a pod made after the bad objects was not bound");
    assert!(!controllers.is_finished(), "the controllers stopped");
    assert!(!scheduler.is_finished(), "the scheduler stopped");
    controllers.abort();
    scheduler.abort();
}
