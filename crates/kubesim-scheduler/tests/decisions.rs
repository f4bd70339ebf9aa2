//! Placement decisions of the scheduler against the in-process API server,
//! in simulated time. Each scenario states where pods must land and why.

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{
    Api, Clock, DeleteOptions, Informers, ListOptions, ResourceRef, Rng, WriteOptions,
};
use kubesim_scheduler::config::ProfileConfig;
use kubesim_scheduler::{Metrics, SchedulerConfig};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

struct Env {
    api: Arc<dyn Api>,
    clock: Clock,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start(config: SchedulerConfig) -> Env {
    start_with_metrics(config, None).await
}

async fn start_with_metrics(config: SchedulerConfig, metrics: Option<Arc<Metrics>>) -> Env {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    let sched_api: Arc<dyn Api> = Arc::new(InProcess::new(server, "default-scheduler"));
    let informers = Informers::new(sched_api.clone(), clock.clone());
    let task = tokio::spawn(kubesim_scheduler::run_with_metrics(
        sched_api,
        informers,
        clock.clone(),
        Rng::seeded(7),
        config,
        metrics,
    ));
    Env { api, clock, task }
}

impl Env {
    async fn node(&self, name: &str, cpu: &str, memory: &str, extra: Value) {
        let mut n = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"}},
        });
        merge(&mut n, &extra);
        self.api
            .create(&ResourceRef::core("nodes"), "", n, &WriteOptions::default())
            .await
            .expect("create node");
    }

    async fn pod(&self, name: &str, cpu: &str, memory: &str, spec: Value) {
        let mut p = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "app",
                "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
        });
        merge(&mut p["spec"], &spec);
        self.api
            .create(
                &ResourceRef::core("pods"),
                "default",
                p,
                &WriteOptions::default(),
            )
            .await
            .expect("create pod");
    }

    async fn get_pod(&self, name: &str) -> Value {
        self.api
            .get(&ResourceRef::core("pods"), "default", name)
            .await
            .expect("get pod")
    }

    /// The pod's node once bound, polling in simulated time.
    async fn node_of(&self, name: &str) -> Option<String> {
        for _ in 0..50 {
            let p = self.get_pod(name).await;
            if let Some(n) = p.pointer("/spec/nodeName").and_then(Value::as_str) {
                return Some(n.to_string());
            }
            self.clock.sleep(Duration::from_millis(100)).await;
        }
        None
    }

    /// Deletes a pod at once, as no kubelet is here to finish it.
    async fn delete_pod(&self, name: &str) {
        let now = DeleteOptions {
            grace_period_seconds: Some(0),
            ..Default::default()
        };
        self.api
            .delete(&ResourceRef::core("pods"), "default", name, &now)
            .await
            .expect("delete pod");
    }

    async fn settle(&self) {
        self.clock.sleep(Duration::from_secs(2)).await;
    }

    async fn unschedulable_message(&self, name: &str) -> String {
        let p = self.get_pod(name).await;
        assert!(p.pointer("/spec/nodeName").is_none(), "{name} is bound");
        p.pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c["type"] == "PodScheduled" && c["reason"] == "Unschedulable")
            })
            .and_then(|c| c["message"].as_str())
            .unwrap_or("")
            .to_string()
    }

    async fn events(&self, reason: &str) -> Vec<Value> {
        let list = self
            .api
            .list(
                &ResourceRef::core("events"),
                "default",
                &ListOptions::default(),
            )
            .await
            .unwrap();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["reason"] == reason)
            .cloned()
            .collect()
    }
}

fn merge(base: &mut Value, extra: &Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e.clone(),
    }
}

#[tokio::test(start_paused = true)]
async fn resource_fit_across_node_sizes() {
    let env = start(SchedulerConfig::default()).await;
    env.node("small", "2", "16Gi", json!({})).await;
    env.node("medium", "4", "16Gi", json!({})).await;
    env.node("large", "8", "16Gi", json!({})).await;
    // 3 cpu / 1Gi: small cannot hold it. LeastAllocated: medium
    // (25 + 93) / 2 = 59, large (62 + 93) / 2 = 77; BalancedAllocation:
    // medium |0.75 - 0.0625| / 2 -> 65, large |0.375 - 0.0625| / 2 -> 84.
    // Large wins on both.
    env.pod("three", "3", "1Gi", json!({})).await;
    assert_eq!(env.node_of("three").await.as_deref(), Some("large"));
    // 5 cpu: only large has 5 cpu left (8 - 3).
    env.pod("five", "5", "1Gi", json!({})).await;
    assert_eq!(env.node_of("five").await.as_deref(), Some("large"));
    // 9 cpu fits nowhere; every node says why.
    env.pod("nine", "9", "1Gi", json!({})).await;
    env.settle().await;
    assert_eq!(
        env.unschedulable_message("nine").await,
        "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    let failed = env.events("FailedScheduling").await;
    assert!(failed
        .iter()
        .any(|e| e["involvedObject"]["name"] == "nine" && e["type"] == "Warning"));
    let scheduled = env.events("Scheduled").await;
    assert!(scheduled.iter().any(|e| e["message"]
        == "Successfully assigned default/three to large"
        && e["source"]["component"] == "default-scheduler"));
    // The binding set PodScheduled=True.
    let three = env.get_pod("three").await;
    let conds = three["status"]["conditions"].as_array().unwrap();
    assert!(conds
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["status"] == "True"));
}

#[tokio::test(start_paused = true)]
async fn node_selector_and_affinity() {
    let env = start(SchedulerConfig::default()).await;
    for (n, zone) in [("a", "z1"), ("b", "z2"), ("c", "z3")] {
        env.node(
            n,
            "4",
            "8Gi",
            json!({"metadata": {"labels": {"zone": zone}}}),
        )
        .await;
    }
    // nodeSelector zone=z2: only b matches.
    env.pod("sel", "1", "1Gi", json!({"nodeSelector": {"zone": "z2"}}))
        .await;
    assert_eq!(env.node_of("sel").await.as_deref(), Some("b"));
    // Required zone in {z1, z3}, preferred z3 with weight 10: c gets
    // NodeAffinity 100 * 2 while a gets 0; a is emptier, but
    // LeastAllocated/Balanced differences between a and c are zero (both
    // empty), so c wins.
    env.pod(
        "aff",
        "1",
        "1Gi",
        json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z3"]}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z3"]}]}}]}}}),
    )
    .await;
    assert_eq!(env.node_of("aff").await.as_deref(), Some("c"));
    // No node in zone z9.
    env.pod("none", "1", "1Gi", json!({"nodeSelector": {"zone": "z9"}}))
        .await;
    env.settle().await;
    assert_eq!(
        env.unschedulable_message("none").await,
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
}

#[tokio::test(start_paused = true)]
async fn taints_and_tolerations() {
    let env = start(SchedulerConfig::default()).await;
    env.node(
        "gpu",
        "8",
        "32Gi",
        json!({"metadata": {"labels": {"kind": "gpu"}},
               "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]}}),
    )
    .await;
    env.node(
        "plain",
        "2",
        "4Gi",
        json!({"metadata": {"labels": {"kind": "plain"}}}),
    )
    .await;
    // Without a toleration the bigger, emptier gpu node is out.
    env.pod("web", "1", "1Gi", json!({})).await;
    assert_eq!(env.node_of("web").await.as_deref(), Some("plain"));
    // Tolerating the taint and selecting the gpu node.
    env.pod(
        "train",
        "1",
        "1Gi",
        json!({"nodeSelector": {"kind": "gpu"},
               "tolerations": [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]}),
    )
    .await;
    assert_eq!(env.node_of("train").await.as_deref(), Some("gpu"));
    // Selecting the gpu node without the toleration: one node rejects by
    // selector, the other by taint; reasons sorted as strings.
    env.pod("bad", "1", "1Gi", json!({"nodeSelector": {"kind": "gpu"}}))
        .await;
    env.settle().await;
    assert_eq!(
        env.unschedulable_message("bad").await,
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
1 node(s) had untolerated taint {gpu: true}. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
}

async fn spread(config: SchedulerConfig) -> (usize, usize) {
    let env = start(config).await;
    // cpu and memory in the same proportion, so BalancedAllocation is
    // equal everywhere and only the NodeResourcesFit strategy decides.
    env.node("n1", "4", "4Gi", json!({})).await;
    env.node("n2", "4", "4Gi", json!({})).await;
    for i in 0..4 {
        env.pod(&format!("p{i}"), "1", "1Gi", json!({})).await;
    }
    let mut on_n1 = 0;
    for i in 0..4 {
        if env.node_of(&format!("p{i}")).await.as_deref() == Some("n1") {
            on_n1 += 1;
        }
    }
    (on_n1, 4 - on_n1)
}

#[tokio::test(start_paused = true)]
async fn least_allocated_spreads_most_allocated_packs() {
    // LeastAllocated: after the first pod (a tie), the other node is
    // emptier, so pods alternate: 2 and 2.
    assert_eq!(spread(SchedulerConfig::default()).await, (2, 2));
    // MostAllocated: after the first pod its node is fuller and keeps
    // winning: 4 and 0 (which node first is the seeded tie-break).
    let cfg = SchedulerConfig::parse(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n\
- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n",
    )
    .unwrap();
    let (a, b) = spread(cfg).await;
    assert_eq!(a.max(b), 4);
}

/// Attempts that found no node, from the scheduler's metrics.
fn unschedulable_attempts(m: &Metrics) -> u64 {
    let mut text = String::new();
    m.render(&mut text);
    text.lines()
        .find(|l| {
            l.starts_with("scheduler_schedule_attempts_total{")
                && l.contains("result=\"unschedulable\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .map_or(0, |n| n.parse().expect("a count"))
}

#[tokio::test(start_paused = true)]
async fn a_finished_pod_requeues_waiting_pods_once_not_again_when_deleted() {
    // kube-scheduler watches pods with the field selector
    // `status.phase!=Succeeded,status.phase!=Failed`: a pod that finishes
    // leaves its view then, and its deletion later is no event to it.
    let metrics = Arc::new(Metrics::default());
    let env = start_with_metrics(SchedulerConfig::default(), Some(metrics.clone())).await;
    env.node("n", "2", "4Gi", json!({})).await;
    env.pod("a", "1", "1Gi", json!({})).await;
    env.pod("b", "1", "1Gi", json!({})).await;
    assert_eq!(env.node_of("a").await.as_deref(), Some("n"));
    assert_eq!(env.node_of("b").await.as_deref(), Some("n"));
    env.pod("big", "2", "1Gi", json!({})).await;
    env.settle().await;
    assert_eq!(unschedulable_attempts(&metrics), 1);
    // `a` finishes: its cpu is free, so `big` is tried again (and still
    // does not fit beside `b`).
    env.api
        .patch(
            &ResourceRef::core("pods"),
            "default",
            "a",
            kubesim_core::patch::PatchType::Merge,
            br#"{"status":{"phase":"Succeeded"}}"#.to_vec(),
            Some("status"),
            &WriteOptions::default(),
        )
        .await
        .expect("finish a");
    env.clock.sleep(Duration::from_secs(20)).await;
    assert_eq!(unschedulable_attempts(&metrics), 2);
    // Deleting the finished pod frees nothing more: no attempt.
    env.delete_pod("a").await;
    env.clock.sleep(Duration::from_secs(20)).await;
    assert_eq!(unschedulable_attempts(&metrics), 2);
    // A running pod's deletion still counts: `big` then fits.
    env.delete_pod("b").await;
    assert_eq!(env.node_of("big").await.as_deref(), Some("n"));
}

#[tokio::test(start_paused = true)]
async fn unschedulable_until_a_node_is_added() {
    // 4 cpu exceeds the node's allocatable, which no eviction can cure:
    // preemption says it would not help.
    let env = start(SchedulerConfig::default()).await;
    env.node("small", "1", "2Gi", json!({})).await;
    env.pod("big", "4", "1Gi", json!({})).await;
    env.settle().await;
    assert_eq!(
        env.unschedulable_message("big").await,
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    );
    // The node addition moves the pod back to the active queue at once
    // (well before the 5-minute flush).
    env.node("roomy", "8", "16Gi", json!({})).await;
    assert_eq!(env.node_of("big").await.as_deref(), Some("roomy"));
}

#[tokio::test(start_paused = true)]
async fn profiles_by_scheduler_name_and_round_robin() {
    let mut cfg = SchedulerConfig::default();
    cfg.profiles.push(ProfileConfig::round_robin("round-robin"));
    let env = start(cfg).await;
    for n in ["a", "b", "c"] {
        env.node(n, "8", "16Gi", json!({})).await;
    }
    // Round robin: in turn by node name, whatever the load.
    for i in 0..6 {
        env.pod(
            &format!("rr{i}"),
            "100m",
            "100Mi",
            json!({"schedulerName": "round-robin"}),
        )
        .await;
        let want = ["a", "b", "c"][i % 3];
        assert_eq!(env.node_of(&format!("rr{i}")).await.as_deref(), Some(want));
    }
    // A scheduler nobody serves here: left Pending, untouched.
    env.pod("other", "1", "1Gi", json!({"schedulerName": "external"}))
        .await;
    env.settle().await;
    let p = env.get_pod("other").await;
    assert!(p.pointer("/spec/nodeName").is_none());
    assert!(p.pointer("/status/conditions").is_none());
}

#[tokio::test(start_paused = true)]
async fn volume_restrictions_keep_a_disk_to_one_writer_per_node() {
    let env = start(SchedulerConfig::default()).await;
    // "big" is far roomier: on scores alone every pod would go there.
    env.node("big", "16", "64Gi", json!({})).await;
    env.node("small", "4", "16Gi", json!({})).await;
    let disk = |read_only: bool| {
        json!({"volumes": [{"name": "d",
            "gcePersistentDisk": {"pdName": "data", "readOnly": read_only}}]})
    };
    env.pod("writer", "1", "1Gi", disk(false)).await;
    assert_eq!(env.node_of("writer").await.as_deref(), Some("big"));
    // The same disk read-write again: big already has it, small is left.
    env.pod("writer2", "1", "1Gi", disk(false)).await;
    assert_eq!(env.node_of("writer2").await.as_deref(), Some("small"));
    // A reader cannot join writers (only readers share a GCE disk).
    // Equal priorities: no victims for preemption.
    env.pod("reader", "1", "1Gi", disk(true)).await;
    env.settle().await;
    assert_eq!(
        env.unschedulable_message("reader").await,
        "0/2 nodes are available: 2 node(s) had no available disk. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
    // The writer on big goes: the deletion moves the reader back at once.
    env.delete_pod("writer").await;
    assert_eq!(env.node_of("reader").await.as_deref(), Some("big"));
    // Readers share: a second reader prefers big again.
    env.pod("reader2", "1", "1Gi", disk(true)).await;
    assert_eq!(env.node_of("reader2").await.as_deref(), Some("big"));
}

#[tokio::test(start_paused = true)]
async fn volume_restrictions_give_a_read_write_once_pod_claim_one_pod() {
    let env = start(SchedulerConfig::default()).await;
    env.node("a", "4", "16Gi", json!({})).await;
    env.node("b", "4", "16Gi", json!({})).await;
    for (name, mode) in [("solo", "ReadWriteOncePod"), ("shared", "ReadWriteOnce")] {
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"accessModes": [mode], "resources": {"requests": {"storage": "1Gi"}}}});
        env.api
            .create(
                &ResourceRef::core("persistentvolumeclaims"),
                "default",
                pvc,
                &WriteOptions::default(),
            )
            .await
            .expect("create claim");
    }
    let claim = |name: &str| json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": name}}]});
    env.pod("first", "1", "1Gi", claim("solo")).await;
    assert!(env.node_of("first").await.is_some());
    // Any node, not only first's: the claim has one pod cluster-wide.
    env.pod("second", "1", "1Gi", claim("solo")).await;
    env.settle().await;
    assert_eq!(
        env.unschedulable_message("second").await,
        "0/2 nodes are available: 2 node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
    // ReadWriteOnce (and claims that do not exist) restrict nothing here.
    for (pod, name) in [("rwo1", "shared"), ("rwo2", "shared"), ("nope", "missing")] {
        env.pod(pod, "1", "1Gi", claim(name)).await;
        assert!(env.node_of(pod).await.is_some(), "{pod}");
    }
    env.delete_pod("first").await;
    assert!(env.node_of("second").await.is_some());
}
