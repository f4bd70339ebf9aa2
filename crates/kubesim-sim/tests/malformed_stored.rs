//! The controllers and the scheduler do not trust what is stored: objects
//! of the wrong shape written under the API (as a store written before the
//! API checked types may hold) are skipped, and every loop keeps working
//! for the others. A whole simulation meets them too, planted while it
//! runs, and still finishes its jobs and writes its outputs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::service::planted;
use kubesim_cluster::{Cluster, ClusterOptions, Components, ControllerManager, SchedulerPart};
use kubesim_core::Registry;
use kubesim_runtime::{Clock, ListOptions, ResourceRef, Rng, WriteOptions};
use kubesim_sim::engine::{simulate, FinalState, Setup, SimJob};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

const TRIES: usize = 400;
const STEP: Duration = Duration::from_millis(25);

/// Puts `obj` into the store as it is, past every check of the API.
fn plant(store: &dyn Store, registry: &Registry, group: &str, plural: &str, ns: &str, obj: Value) {
    let r = registry.get(group, "v1", plural).expect("resource");
    planted::plant(store, &r, ns, obj);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_objects_stop_neither_controllers_nor_scheduler() {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let cluster = Cluster::bootstrap(ClusterOptions {
        store: store.clone(),
        clock: Clock::wall(),
        rng: Rng::seeded(1),
    })
    .await
    .expect("bootstrap");
    let registry = cluster.server.registry.clone();
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
    let clock = cluster.server.clock.clone();
    let api = cluster.api("kube-controller-manager");
    let mut running = cluster
        .start(Components {
            controllers: Some(ControllerManager {
                root_ca: Some("test-ca".into()),
                ..Default::default()
            }),
            scheduler: Some(SchedulerPart {
                config: Default::default(),
                builtin: true,
                metrics: None,
            }),
            emulator: None,
        })
        .await
        .expect("start");
    // No component's task ends while the cluster runs.
    let mut all_running = move || running.tasks.try_join_next().is_none();
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
        assert!(all_running(), "a component stopped");
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
    assert!(all_running(), "a component stopped");
}

/// Objects of the wrong shape for every kind the simulation's loops
/// follow: pods (one bound to a node that runs jobs, one carrying a job's
/// index label, which the run's recorder reads), nodes, Jobs and
/// ReplicaSets.
fn plant_mid_run(store: &dyn Store, registry: &Registry) {
    for (group, plural, ns, obj) in [
        (
            "",
            "pods",
            "default",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "bad-spec", "labels": ["x"]}, "spec": 5, "status": "x"}),
        ),
        (
            "",
            "pods",
            "default",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad-bound"},
                "spec": {"nodeName": "n0", "containers": 5,
                    "schedulerName": []}, "status": ["Running"]}),
        ),
        (
            "",
            "pods",
            "default",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad-pending"},
                "spec": {"containers": [{"name": "c", "image": "i",
                    "resources": {"requests": {"cpu": []}}}], "tolerations": "x"},
                "status": {"phase": 5, "conditions": "x"}}),
        ),
        (
            "",
            "pods",
            "default",
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "bad-job-pod", "labels": {"kubesim.io/job-index": "11"}},
                "spec": {"nodeName": "n1", "containers": {"c": 1}},
                "status": {"phase": ["Running"]}}),
        ),
        (
            "",
            "nodes",
            "",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bad-n", "labels": 5},
                "spec": {"podCIDR": 5, "taints": "x"}, "status": "x"}),
        ),
        (
            "batch",
            "jobs",
            "default",
            json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "bad-j"}, "spec": {"parallelism": "x", "template": []}}),
        ),
        (
            "apps",
            "replicasets",
            "default",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "bad-rs"}, "spec": {"replicas": "x", "template": 5}}),
        ),
    ] {
        plant(store, registry, group, plural, ns, obj);
    }
}

#[test]
fn a_simulation_meeting_malformed_objects_mid_run_finishes_and_writes_its_outputs() {
    let node = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"capacity": {"cpu": "1", "memory": "4Gi", "pods": "110"},
                       "allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"}}})
    };
    // Twelve 1-cpu jobs of 10 s on two 1-cpu nodes: a queue that drains
    // in six rounds, so the bad objects land with most jobs still to run.
    let jobs: Vec<SimJob> = (0..12)
        .map(|i| SimJob {
            id: i.to_string(),
            workload: "w0".into(),
            profile: "delay".into(),
            submit: 0.0,
            res: 1,
            hosts: 1,
            walltime: None,
            run_time: 10.0,
            cpu_millis: 1000,
            memory_bytes: 0,
            scheduler: None,
            manifest: None,
            work: None,
        })
        .collect();
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let mut setup = Setup::new(vec![node("n0"), node("n1")]);
    setup.store = Some(store.clone());
    let planted = Arc::new(AtomicBool::new(false));
    let p = planted.clone();
    // Planted from the run's own thread once the first jobs are done, so
    // every loop has been running a while and the run stays deterministic.
    setup.progress = Some(Box::new(move |done, _| {
        if done >= 2 && !p.swap(true, Ordering::SeqCst) {
            plant_mid_run(&*store, &Registry::new());
        }
    }));
    let run = simulate(setup, jobs).expect("the run");
    assert!(planted.load(Ordering::SeqCst), "nothing was planted");
    let states: Vec<FinalState> = run.outcomes.iter().map(|o| o.state).collect();
    assert_eq!(states, vec![FinalState::CompletedSuccessfully; 12]);
    // Two at a time, 10 s each: the bad objects slowed nothing down.
    assert_eq!(run.simulated.round(), 60.0);

    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("malformed_stored_run");
    let _ = std::fs::remove_dir_all(&out);
    kubesim_sim::output::write_all(&out, &run).expect("outputs");
    let csv = std::fs::read_to_string(out.join("jobs.csv")).expect("jobs.csv");
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 12, "{csv}");
    assert!(
        rows.iter().all(|r| r.contains("COMPLETED_SUCCESSFULLY")),
        "{csv}"
    );
    for f in ["schedule.csv", "gantt.svg", "report.html"] {
        assert!(out.join(f).is_file(), "{f} not written");
    }
}
