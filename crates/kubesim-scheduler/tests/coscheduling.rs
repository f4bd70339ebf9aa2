//! Gang scheduling (the Coscheduling plugin) against the in-process API
//! server, in simulated time: pods of a PodGroup bind all together or not
//! at all, and pods outside groups are scheduled as before.

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{Api, Clock, Informers, ResourceRef, Rng, WriteOptions};
use kubesim_scheduler::coscheduling::{self, crd};
use kubesim_scheduler::SchedulerConfig;
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

/// scheduler-plugins' example configuration for Coscheduling, under the
/// configuration API v1 (`testdata/SOURCE.md`).
const CONFIG: &str =
    include_str!("../../../testdata/scheduler-plugins/coscheduling/scheduler-config-v1.yaml");

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
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    if config.uses_coscheduling() {
        crd::ensure(&api).await.expect("PodGroup kind");
    }
    let sched_api: Arc<dyn Api> = Arc::new(InProcess::new(server, "default-scheduler"));
    let informers = Informers::new(sched_api.clone(), clock.clone());
    let task = tokio::spawn(kubesim_scheduler::run(
        sched_api,
        informers,
        clock.clone(),
        Rng::seeded(7),
        config,
    ));
    Env { api, clock, task }
}

impl Env {
    async fn node(&self, name: &str, cpu: &str) {
        let n = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
        });
        self.api
            .create(&ResourceRef::core("nodes"), "", n, &WriteOptions::default())
            .await
            .expect("create node");
    }

    async fn pod_group(&self, name: &str, min_member: i64) {
        let g = json!({
            "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 10},
        });
        self.api
            .create(&crd::resource(), "default", g, &WriteOptions::default())
            .await
            .expect("create pod group");
    }

    /// A pod of `cpu` in `group` (the current label, or the older one).
    async fn pod(&self, name: &str, cpu: &str, group: Option<(&str, &str)>) {
        let labels = match group {
            Some((label, g)) => json!({label: g}),
            None => json!({}),
        };
        let p = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "app",
                "resources": {"requests": {"cpu": cpu}}}]},
        });
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

    async fn node_of(&self, name: &str) -> Option<String> {
        self.get_pod(name)
            .await
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .map(str::to_string)
    }

    /// Lets the scheduler run for a while of simulated time.
    async fn settle(&self) {
        self.clock.sleep(Duration::from_secs(3)).await;
    }

    async fn unschedulable_message(&self, name: &str) -> String {
        let p = self.get_pod(name).await;
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
}

fn gang_config() -> SchedulerConfig {
    let c = SchedulerConfig::parse(CONFIG).expect("config");
    assert!(c.uses_coscheduling());
    c
}

const G: &str = coscheduling::LABEL;

#[tokio::test(start_paused = true)]
async fn a_group_that_fits_binds_every_member_on_its_own_node() {
    let env = start(gang_config()).await;
    for n in ["n1", "n2", "n3"] {
        env.node(n, "4").await;
    }
    env.pod_group("job", 3).await;
    for p in ["a", "b", "c"] {
        env.pod(p, "3", Some((G, "job"))).await;
    }
    env.settle().await;
    let mut nodes = Vec::new();
    for p in ["a", "b", "c"] {
        nodes.push(
            env.node_of(p)
                .await
                .unwrap_or_else(|| panic!("{p} unbound")),
        );
    }
    nodes.sort();
    assert_eq!(nodes, ["n1", "n2", "n3"]);
}

#[tokio::test(start_paused = true)]
async fn a_group_that_does_not_fit_binds_none_and_says_why() {
    let env = start(gang_config()).await;
    env.node("n1", "4").await;
    env.node("n2", "4").await;
    env.pod_group("job", 3).await;
    // The older label is read as well.
    for p in ["a", "b", "c"] {
        env.pod(p, "3", Some((coscheduling::LEGACY_LABEL, "job")))
            .await;
    }
    env.settle().await;
    for p in ["a", "b", "c"] {
        assert_eq!(env.node_of(p).await, None, "{p} was bound");
        assert_eq!(
            env.unschedulable_message(p).await,
            "0/2 nodes are available: 2 Insufficient cpu. PodGroup default/job gets rejected due to Pod c is unschedulable: 2 of minMember 3 pods fit.",
            "{p}"
        );
    }
    // A third node lets the whole group in.
    env.node("n3", "4").await;
    env.settle().await;
    for p in ["a", "b", "c"] {
        assert!(env.node_of(p).await.is_some(), "{p} unbound");
    }
}

#[tokio::test(start_paused = true)]
async fn members_wait_for_a_late_one() {
    let env = start(gang_config()).await;
    for n in ["n1", "n2", "n3"] {
        env.node(n, "4").await;
    }
    env.pod_group("job", 3).await;
    env.pod("a", "1", Some((G, "job"))).await;
    env.pod("b", "1", Some((G, "job"))).await;
    // Longer than any backoff: they keep waiting.
    env.clock.sleep(Duration::from_secs(30)).await;
    for p in ["a", "b"] {
        assert_eq!(env.node_of(p).await, None, "{p} was bound");
        assert_eq!(
            env.unschedulable_message(p).await,
            format!("pre-filter pod {p} cannot find enough sibling pods, current pods number: 2, minMember of group: 3")
        );
    }
    env.pod("c", "1", Some((G, "job"))).await;
    env.settle().await;
    for p in ["a", "b", "c"] {
        assert!(env.node_of(p).await.is_some(), "{p} unbound");
    }
    // A member beyond minMember, once the group runs, is placed alone.
    env.pod("d", "1", Some((G, "job"))).await;
    env.settle().await;
    assert!(env.node_of("d").await.is_some());
}

#[tokio::test(start_paused = true)]
async fn pods_outside_groups_are_unaffected() {
    let env = start(gang_config()).await;
    env.node("n1", "4").await;
    env.pod_group("job", 3).await;
    env.pod("a", "1", Some((G, "job"))).await;
    // No group label, and a label naming no PodGroup: both lone pods.
    env.pod("plain", "1", None).await;
    env.pod("orphan", "1", Some((G, "nosuchgroup"))).await;
    env.settle().await;
    assert_eq!(env.node_of("plain").await.as_deref(), Some("n1"));
    assert_eq!(env.node_of("orphan").await.as_deref(), Some("n1"));
    assert_eq!(env.node_of("a").await, None);
}

#[tokio::test(start_paused = true)]
async fn without_the_plugin_labels_change_nothing() {
    let env = start(SchedulerConfig::default()).await;
    env.node("n1", "4").await;
    env.node("n2", "4").await;
    for p in ["a", "b", "c"] {
        env.pod(p, "3", Some((G, "job"))).await;
    }
    env.settle().await;
    let bound = [
        env.node_of("a").await,
        env.node_of("b").await,
        env.node_of("c").await,
    ];
    assert_eq!(bound.iter().filter(|b| b.is_some()).count(), 2);
}
