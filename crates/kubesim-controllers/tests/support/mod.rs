//! An in-process API server with every controller running, in simulated
//! time, and the kubelet's side of pod status played by the test.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{Api, Clock, DeleteOptions, ListOptions, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

/// Polls at most this many times, `STEP` of simulated time apart.
pub const TRIES: usize = 2000;
pub const STEP: Duration = Duration::from_millis(100);
pub const EPOCH: &str = "2026-01-01T00:00:00Z";

pub struct Env {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    controllers: tokio::task::JoinHandle<()>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.controllers.abort();
    }
}

/// An API server on a simulated clock, without controllers; call from a
/// `#[tokio::test(start_paused = true)]` test.
pub async fn server() -> (Arc<dyn Api>, Clock, Arc<Server>) {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated(EPOCH.parse().expect("epoch"));
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    (api, clock, server)
}

pub async fn start() -> Env {
    start_with(kubesim_controllers::Options::default()).await
}

/// [`start`] with a choice of controller options.
pub async fn start_with(options: kubesim_controllers::Options) -> Env {
    let (_, clock, server) = server().await;
    let registry = server.registry.clone();
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server, "kube-controller-manager"));
    let informers = kubesim_runtime::Informers::new(api.clone(), clock.clone());
    let controllers = tokio::spawn(kubesim_controllers::run_with(
        api.clone(),
        informers,
        registry,
        clock.clone(),
        None,
        options,
    ));
    Env {
        api,
        clock,
        controllers,
    }
}

pub fn pods() -> ResourceRef {
    ResourceRef::core("pods")
}

pub fn nodes() -> ResourceRef {
    ResourceRef::core("nodes")
}

impl Env {
    /// Creates a bare Node named `name`.
    pub async fn create_node(&self, name: &str) -> Value {
        self.create(
            &nodes(),
            "",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}),
        )
        .await
    }

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

    pub async fn list(&self, r: &ResourceRef, ns: &str) -> Vec<Value> {
        let l = self
            .api
            .list(r, ns, &ListOptions::default())
            .await
            .expect("list");
        l["items"].as_array().cloned().unwrap_or_default()
    }

    /// Pods whose name starts with `prefix`, in name order.
    pub async fn pods_of(&self, ns: &str, prefix: &str) -> Vec<Value> {
        self.list(&pods(), ns)
            .await
            .into_iter()
            .filter(|p| meta::name(p).starts_with(prefix))
            .collect()
    }

    pub async fn sleep(&self, secs: u64) {
        self.clock.sleep(Duration::from_secs(secs)).await;
    }

    /// Polls until `cond` yields Some; fails the test after `TRIES` polls.
    pub async fn wait_for<T, F, Fut>(&self, what: &str, cond: F) -> T
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        for _ in 0..TRIES {
            if let Some(v) = cond().await {
                return v;
            }
            self.clock.sleep(STEP).await;
        }
        panic!("gave up waiting: {what}");
    }

    /// Merge-patches the status of a pod.
    pub async fn patch_status(&self, ns: &str, name: &str, status: Value) {
        self.patch_status_of(&pods(), ns, name, status).await
    }

    /// Merge-patches the status of any object.
    pub async fn patch_status_of(&self, r: &ResourceRef, ns: &str, name: &str, status: Value) {
        let body = json!({"status": status}).to_string().into_bytes();
        match self
            .api
            .patch(
                r,
                ns,
                name,
                PatchType::Merge,
                body,
                Some("status"),
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => panic!("patch status of {name}: {}", e.message),
        }
    }

    /// Plays kubelet: the pod runs and is Ready.
    pub async fn run_pod(&self, ns: &str, name: &str) {
        let now = meta::format_time(self.clock.now());
        self.patch_status(
            ns,
            name,
            json!({"phase": "Running", "startTime": now,
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}),
        )
        .await;
    }

    pub async fn set_ready(&self, ns: &str, name: &str, ready: bool) {
        let now = meta::format_time(self.clock.now());
        let s = if ready { "True" } else { "False" };
        self.patch_status(
            ns,
            name,
            json!({"conditions": [
            {"type": "Ready", "status": s, "lastTransitionTime": now}]}),
        )
        .await;
    }

    /// Plays kubelet: the pod's containers exit.
    pub async fn finish_pod(&self, ns: &str, name: &str, success: bool) {
        let now = meta::format_time(self.clock.now());
        let phase = if success { "Succeeded" } else { "Failed" };
        self.patch_status(
            ns,
            name,
            json!({"phase": phase,
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now}]}),
        )
        .await;
    }

    /// Plays kubelet: pods being deleted finish terminating.
    pub async fn reap(&self, ns: &str) {
        for p in self.list(&pods(), ns).await {
            if meta::is_deleting(&p) {
                let opts = DeleteOptions {
                    grace_period_seconds: Some(0),
                    ..Default::default()
                };
                let _ = self.api.delete(&pods(), ns, meta::name(&p), &opts).await;
            }
        }
    }

    /// Events about `name` with `reason`, their messages.
    pub async fn events(&self, ns: &str, name: &str, reason: &str) -> Vec<String> {
        self.list(&ResourceRef::core("events"), ns)
            .await
            .into_iter()
            .filter(|e| e["involvedObject"]["name"] == name && e["reason"] == reason)
            .map(|e| e["message"].as_str().unwrap_or("").to_string())
            .collect()
    }
}

pub fn phase(p: &Value) -> &str {
    p.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn is_finished(p: &Value) -> bool {
    matches!(phase(p), "Succeeded" | "Failed")
}

pub fn condition<'a>(obj: &'a Value, kind: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind && c["status"] == "True")
}
