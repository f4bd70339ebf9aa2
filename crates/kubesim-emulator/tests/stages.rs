//! The Stage engine in simulated time: kwok's default lifecycle for nodes
//! and pods, Job pods finishing after their run duration, graceful
//! deletion, Stages added at run time, and kwok's own stage files.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use kubesim_core::meta;
use kubesim_emulator::stage::{stage_objects_from_yaml, stages_resource, Stage};
use kubesim_emulator::EmulatorConfig;
use kubesim_runtime::{DeleteOptions, ListOptions, ResourceRef, WriteOptions};
use serde_json::{json, Value};

use common::{start, start_with, Env};

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"podCIDR": "10.244.7.0/24", "podCIDRs": ["10.244.7.0/24"]},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                   "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}})
}

fn pod(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}],
                 "initContainers": [{"name": "init", "image": "busybox"}]}})
}

impl Env {
    async fn get(&self, r: &ResourceRef, ns: &str, name: &str) -> Option<Value> {
        self.api.get(r, ns, name).await.ok()
    }

    /// Polls (in simulated seconds) until `f` holds for the object.
    async fn wait(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        f: impl Fn(&Value) -> bool,
    ) -> Value {
        for _ in 0..600 {
            if let Some(o) = self.get(r, ns, name).await {
                if f(&o) {
                    return o;
                }
            }
            self.sleep(1).await;
        }
        panic!(
            "{name} never reached the expected state: {:?}",
            self.get(r, ns, name).await
        );
    }
}

fn ready(o: &Value) -> bool {
    o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

#[tokio::test(start_paused = true)]
async fn nodes_become_ready_and_pods_run_with_addresses_from_the_pod_cidr() {
    let env = start().await;
    let nodes = ResourceRef::core("nodes");
    let pods = ResourceRef::core("pods");
    env.create(nodes.clone(), "", node("n1")).await;
    let n = env.wait(&nodes, "", "n1", ready).await;
    let types: Vec<&str> = n["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.len(), 5, "{types:?}");
    assert_eq!(n["status"]["phase"], "Running");
    assert_eq!(n["status"]["capacity"]["cpu"], "8");
    let kinds: Vec<&str> = n["status"]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"InternalIP") && kinds.contains(&"Hostname"));

    env.create(pods.clone(), "default", pod("p1", "n1")).await;
    env.create(pods.clone(), "default", pod("p2", "n1")).await;
    let p1 = env
        .wait(&pods, "default", "p1", |p| {
            p["status"]["phase"] == "Running"
        })
        .await;
    let p2 = env
        .wait(&pods, "default", "p2", |p| {
            p["status"]["phase"] == "Running"
        })
        .await;
    assert!(ready(&p1));
    // The kubelet hands out addresses from the node's pod CIDR, one each.
    let ip1 = p1["status"]["podIP"].as_str().unwrap();
    let ip2 = p2["status"]["podIP"].as_str().unwrap();
    assert!(
        ip1.starts_with("10.244.7.") && ip2.starts_with("10.244.7."),
        "{ip1} {ip2}"
    );
    assert_ne!(ip1, ip2);
    assert!(p1["status"]["containerStatuses"][0]["state"]["running"].is_object());
    assert_eq!(
        p1["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );
    // The scheduler's condition survives the kubelet's strategic patch.
    assert_eq!(
        p1["status"]["hostIP"],
        n["status"]["addresses"][0]["address"]
    );
}

#[tokio::test(start_paused = true)]
async fn pods_on_unmanaged_nodes_are_left_alone() {
    let env = start().await;
    let nodes = ResourceRef::core("nodes");
    let pods = ResourceRef::core("pods");
    let mut real = node("real");
    real["metadata"]["annotations"] = json!({});
    env.create(nodes.clone(), "", real).await;
    env.create(pods.clone(), "default", pod("p", "real")).await;
    env.sleep(30).await;
    let n = env.get(&nodes, "", "real").await.unwrap();
    assert!(!ready(&n));
    let p = env.get(&pods, "default", "p").await.unwrap();
    assert_eq!(p["status"]["phase"], "Pending");
}

#[tokio::test(start_paused = true)]
async fn run_duration_completes_pods_and_deletion_finishes() {
    let env = start().await;
    let nodes = ResourceRef::core("nodes");
    let pods = ResourceRef::core("pods");
    env.create(nodes.clone(), "", node("n1")).await;
    env.wait(&nodes, "", "n1", ready).await;
    let mut p = pod("job", "n1");
    p["metadata"]["annotations"] = json!({"kubesim.io/run-duration": "170s"});
    p["spec"]["restartPolicy"] = json!("Never");
    env.create(pods.clone(), "default", p).await;
    let running = env
        .wait(&pods, "default", "job", |p| {
            p["status"]["phase"] == "Running"
        })
        .await;
    let started = meta::parse_time(running["status"]["startTime"].as_str().unwrap()).unwrap();
    let done = env
        .wait(&pods, "default", "job", |p| {
            p["status"]["phase"] == "Succeeded"
        })
        .await;
    let finished = done["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
        .as_str()
        .unwrap();
    let ran = meta::parse_time(finished)
        .unwrap()
        .duration_since(started)
        .as_secs();
    assert_eq!(ran, 170, "ran {ran}s");

    // A graceful delete (30 s by default) is finished by the kubelet.
    let mut svc = pod("svc", "n1");
    svc["metadata"]["finalizers"] = json!([]);
    env.create(pods.clone(), "default", svc).await;
    env.wait(&pods, "default", "svc", |p| {
        p["status"]["phase"] == "Running"
    })
    .await;
    let gone = env
        .api
        .delete(&pods, "default", "svc", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(gone["metadata"]["deletionTimestamp"].is_string());
    env.sleep(2).await;
    assert!(env.get(&pods, "default", "svc").await.is_none());
}

/// Pods of several run durations on one node, run to completion: every
/// pod as stored at the end. Some start seconds apart, some at once (so
/// that several take an address from the node's pool at one instant).
async fn finished_pods(config: EmulatorConfig) -> Vec<String> {
    let env = start_with(config).await;
    let nodes = ResourceRef::core("nodes");
    let pods = ResourceRef::core("pods");
    env.create(nodes.clone(), "", node("n1")).await;
    env.wait(&nodes, "", "n1", ready).await;
    let durations = [170, 45, 3600, 1, 30, 30, 60, 5];
    for (i, secs) in durations.into_iter().enumerate() {
        let mut p = pod(&format!("job{i}"), "n1");
        p["metadata"]["annotations"] = json!({"kubesim.io/run-duration": format!("{secs}s")});
        p["spec"]["restartPolicy"] = json!("Never");
        env.create(pods.clone(), "default", p).await;
        if i < 4 {
            env.sleep(7).await;
        }
    }
    env.sleep(3700).await;
    let list = env
        .api
        .list(&pods, "default", &ListOptions::default())
        .await
        .unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), durations.len());
    assert!(items.iter().all(|p| p["status"]["phase"] == "Succeeded"));
    let ips: BTreeSet<&str> = items
        .iter()
        .map(|p| p["status"]["podIP"].as_str().unwrap())
        .collect();
    assert_eq!(ips.len(), durations.len(), "each pod its own address");
    items.iter().map(Value::to_string).collect()
}

#[tokio::test(start_paused = true)]
async fn delayed_starts_and_run_durations_finish_every_pod_the_same_way_twice() {
    // The built-in stages, with pods starting two seconds after they are
    // bound: every pod finishes with an address of its own (checked by
    // `finished_pods`), and a second cluster ends exactly as the first.
    let mut stages = kubesim_emulator::stage::default_stage_objects();
    for s in &mut stages {
        if s["metadata"]["name"] == "pod-ready" {
            s["spec"]["delay"] = json!({"durationMilliseconds": 2000});
        }
    }
    let config = || EmulatorConfig {
        stages: Some(stages.clone()),
        ..Default::default()
    };
    let first = finished_pods(config()).await;
    assert_eq!(first.len(), 8);
    assert_eq!(first, finished_pods(config()).await);
}

#[tokio::test(start_paused = true)]
async fn stages_created_at_run_time_apply_to_any_kind() {
    let env = start().await;
    // A stage for ConfigMaps: mark them after two seconds.
    let stage = json!({"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Stage",
        "metadata": {"name": "cm-seen"},
        "spec": {"resourceRef": {"apiGroup": "v1", "kind": "ConfigMap"},
            "selector": {"matchLabels": {"watch": "me"},
                "matchExpressions": [{"key": ".data.seen", "operator": "DoesNotExist"}]},
            "delay": {"durationMilliseconds": 2000},
            "steps": [{"patch": {"template": "data:\n  seen: \"{{ .metadata.name }}\""}},
                      {"event": {"type": "Normal", "reason": "Seen", "message": "stage ran"}}]}});
    env.create(stages_resource(), "", stage).await;
    let cms = ResourceRef::core("configmaps");
    for (name, labels) in [("a", json!({"watch": "me"})), ("b", json!({}))] {
        env.api
            .create(
                &cms,
                "default",
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "labels": labels}, "data": {}}),
                &WriteOptions::default(),
            )
            .await
            .unwrap();
    }
    env.sleep(1).await;
    assert!(env.get(&cms, "default", "a").await.unwrap()["data"]["seen"].is_null());
    let a = env
        .wait(&cms, "default", "a", |c| c["data"]["seen"] == "a")
        .await;
    assert_eq!(a["data"]["seen"], "a");
    assert!(env.get(&cms, "default", "b").await.unwrap()["data"]["seen"].is_null());
}

#[test]
fn kwoks_stage_files_load() {
    let root = testdata().join("kwok/kustomize/stage");
    let mut loaded = 0;
    for dir in [
        "node/fast",
        "node/heartbeat",
        "node/heartbeat-with-lease",
        "node/chaos",
        "pod/fast",
        "pod/general",
        "pod/chaos",
        "volume/fast",
    ] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if !text.contains("kind: Stage") {
                // The StorageClass the volume stages serve.
                continue;
            }
            let objs = stage_objects_from_yaml(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for o in &objs {
                Stage::from_object(o).unwrap();
            }
            loaded += objs.len();
        }
    }
    // 1 + 1 + 1 + 1 node stages, 3 fast + 6 general + 2 chaos pod stages,
    // 4 volume stages (CEL selectors, `steps` with `apply`).
    assert_eq!(loaded, 19);
}
