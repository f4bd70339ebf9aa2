//! Test environment: an in-process server, every controller, and a
//! stand-in kubelet that makes pods Running and Ready after a delay.

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use kubesim_core::selector::LabelSelector;
use kubesim_runtime::{Api, Clock, DeleteOptions, ListOptions, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

/// Pods with this annotation never become ready.
pub const NEVER_READY: &str = "test.kubesim.io/never-ready";

const TRIES: usize = 2000;
const STEP: Duration = Duration::from_millis(100);

pub struct Env {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

pub fn pods() -> ResourceRef {
    ResourceRef::core("pods")
}
pub fn rs() -> ResourceRef {
    ResourceRef::new("apps", "v1", "replicasets")
}
pub fn deploy() -> ResourceRef {
    ResourceRef::new("apps", "v1", "deployments")
}
pub fn sts() -> ResourceRef {
    ResourceRef::new("apps", "v1", "statefulsets")
}
pub fn ds() -> ResourceRef {
    ResourceRef::new("apps", "v1", "daemonsets")
}
pub fn nodes() -> ResourceRef {
    ResourceRef::core("nodes")
}

/// Starts the server and the controllers; with `ready_after`, also a
/// kubelet that makes each pod Running and Ready that long after creation.
pub async fn start(ready_after: Option<Duration>) -> Env {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let registry = server.registry.clone();
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server, "test"));
    let mut tasks = vec![tokio::spawn(kubesim_controllers::run_all(
        api.clone(),
        registry,
        clock.clone(),
        None,
    ))];
    if let Some(d) = ready_after {
        let (api, clock) = (api.clone(), clock.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                kubelet_pass(&*api, &clock, d).await;
                clock.sleep(Duration::from_millis(250)).await;
            }
        }));
    }
    Env { api, clock, tasks }
}

async fn kubelet_pass(api: &dyn Api, clock: &Clock, ready_after: Duration) {
    let Ok(list) = api.list(&pods(), "", &ListOptions::default()).await else {
        return;
    };
    let now = clock.now();
    for p in list["items"].as_array().into_iter().flatten() {
        if meta::is_deleting(p) {
            let _ = api
                .delete(
                    &pods(),
                    meta::namespace(p),
                    meta::name(p),
                    &DeleteOptions {
                        grace_period_seconds: Some(0),
                        ..Default::default()
                    },
                )
                .await;
            continue;
        }
        if p.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
            || meta::annotations(p).contains_key(NEVER_READY)
        {
            continue;
        }
        let created = meta::str_field(p, "creationTimestamp")
            .and_then(meta::parse_time)
            .unwrap_or(now);
        if created + jiff::SignedDuration::try_from(ready_after).unwrap() > now {
            continue;
        }
        set_ready(api, p, clock).await;
    }
}

/// Marks a pod Running and Ready now.
pub async fn set_ready(api: &dyn Api, p: &Value, clock: &Clock) {
    let now = meta::format_time(clock.now());
    let patch = json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": now}]}});
    let _ = api
        .patch(
            &pods(),
            meta::namespace(p),
            meta::name(p),
            PatchType::Merge,
            patch.to_string().into_bytes(),
            Some("status"),
            &WriteOptions::default(),
        )
        .await;
}

impl Env {
    pub async fn create(&self, r: &ResourceRef, ns: &str, obj: Value) -> Value {
        self.api
            .create(r, ns, obj, &WriteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("create: {}", e.message))
    }

    pub async fn get(&self, r: &ResourceRef, ns: &str, name: &str) -> Option<Value> {
        match self.api.get(r, ns, name).await {
            Ok(o) => Some(o),
            Err(e) if e.code == 404 => None,
            Err(e) => panic!("get {name}: {}", e.message),
        }
    }

    pub async fn merge(&self, r: &ResourceRef, ns: &str, name: &str, patch: Value) -> Value {
        self.api
            .patch(
                r,
                ns,
                name,
                PatchType::Merge,
                patch.to_string().into_bytes(),
                None,
                &WriteOptions::default(),
            )
            .await
            .unwrap_or_else(|e| panic!("patch {name}: {}", e.message))
    }

    /// Every object of `r` in `ns` matching `selector` (not being deleted).
    pub async fn list(&self, r: &ResourceRef, ns: &str, selector: &str) -> Vec<Value> {
        let list = self
            .api
            .list(
                r,
                ns,
                &ListOptions {
                    label_selector: (!selector.is_empty()).then(|| selector.to_string()),
                    ..Default::default()
                },
            )
            .await
            .expect("list");
        let sel = LabelSelector::parse(selector).unwrap();
        list["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|o| !meta::is_deleting(o) && sel.matches_map(&meta::labels(o)))
            .collect()
    }

    pub async fn sleep(&self, d: Duration) {
        self.clock.sleep(d).await
    }

    /// Polls until `cond` holds; fails after a bounded number of polls.
    pub async fn eventually<F, Fut>(&self, what: &str, cond: F)
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        for _ in 0..TRIES {
            if cond().await {
                return;
            }
            self.clock.sleep(STEP).await;
        }
        panic!("gave up waiting: {what}");
    }
}

pub fn container(image: &str) -> Value {
    json!([{"name": "c", "image": image}])
}

pub fn names(objs: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = objs.iter().map(|o| meta::name(o).to_string()).collect();
    v.sort();
    v
}
