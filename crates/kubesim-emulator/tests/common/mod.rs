//! The emulator against the in-process API server in simulated time, with
//! the controllers watching, as the emulator's tests start it.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::meta;
use kubesim_emulator::{run, EmulatorConfig};
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

pub struct Env {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    /// The server, for tests that write to its store past the API.
    pub server: Arc<Server>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Env {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

pub async fn start() -> Env {
    start_with(EmulatorConfig::default()).await
}

pub async fn start_with(config: EmulatorConfig) -> Env {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    let controllers = tokio::spawn(kubesim_controllers::run_all(
        Arc::new(InProcess::new(server.clone(), "kube-controller-manager")),
        server.registry.clone(),
        clock.clone(),
        None,
    ));
    let emulator = tokio::spawn(run(
        Arc::new(InProcess::new(server.clone(), "kubesim-emulator")),
        clock.clone(),
        Rng::seeded(2),
        config,
    ));
    Env {
        api,
        clock,
        server,
        tasks: vec![controllers, emulator],
    }
}

pub fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).unwrap()
}

impl Env {
    /// Whether the controllers and the emulator are still running (a
    /// panic ends their task).
    pub fn running(&self) -> bool {
        self.tasks.iter().all(|t| !t.is_finished())
    }

    pub async fn sleep(&self, secs: u64) {
        self.clock.sleep(Duration::from_secs(secs)).await;
    }

    pub async fn create(&self, r: ResourceRef, ns: &str, obj: Value) {
        // The definitions appear a moment after the emulator starts.
        for _ in 0..50 {
            match self
                .api
                .create(&r, ns, obj.clone(), &WriteOptions::default())
                .await
            {
                Ok(_) => return,
                Err(e) if e.code == 404 => self.sleep(1).await,
                Err(e) => panic!("create {}: {}", meta::name(&obj), e.message),
            }
        }
        panic!("{} never served", r.plural);
    }

    pub async fn start_scenario(&self) {
        let now = meta::format_time(self.clock.now());
        self.create(
            ResourceRef::core("configmaps"),
            "kube-system",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "kubesim-scenario"}, "data": {"startTime": now}}),
        )
        .await;
    }

    pub async fn nodes(&self) -> Vec<Value> {
        let l = self
            .api
            .list(&ResourceRef::core("nodes"), "", &ListOptions::default())
            .await
            .unwrap();
        l["items"].as_array().cloned().unwrap_or_default()
    }
}
