//! An in-process API server with every controller running, in simulated
//! time, for the controller integration tests.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{Api, Clock, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use serde_json::Value;

pub const EPOCH: &str = "2026-01-01T00:00:00Z";

/// An API server on a simulated clock; call from a
/// `#[tokio::test(start_paused = true)]` test.
pub async fn server() -> (Arc<dyn Api>, Clock, Arc<Server>) {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated(EPOCH.parse().expect("epoch"));
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    (api, clock, server)
}

/// The server with every controller running until the returned guard drops.
pub struct Cluster {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    controllers: tokio::task::JoinHandle<()>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.controllers.abort();
    }
}

pub async fn cluster() -> Cluster {
    let (api, clock, server) = server().await;
    let ctrl_api: Arc<dyn Api> =
        Arc::new(InProcess::new(server.clone(), "kube-controller-manager"));
    let controllers = tokio::spawn(kubesim_controllers::run_all(
        ctrl_api,
        server.registry.clone(),
        clock.clone(),
        None,
    ));
    Cluster {
        api,
        clock,
        controllers,
    }
}

impl Cluster {
    pub async fn create(&self, r: &ResourceRef, ns: &str, obj: Value) -> Value {
        self.api
            .create(r, ns, obj, &WriteOptions::default())
            .await
            .expect("create")
    }

    pub async fn get(&self, r: &ResourceRef, ns: &str, name: &str) -> Option<Value> {
        self.api.get(r, ns, name).await.ok()
    }

    /// Lets simulated time pass (every timer due meanwhile fires).
    pub async fn advance(&self, d: Duration) {
        self.clock.sleep(d).await;
    }

    /// Merge-patches the status of a pod or node.
    pub async fn patch_status(&self, r: &ResourceRef, ns: &str, name: &str, patch: Value) -> Value {
        self.api
            .patch(
                r,
                ns,
                name,
                kubesim_core::patch::PatchType::Merge,
                patch.to_string().into_bytes(),
                Some("status"),
                &WriteOptions::default(),
            )
            .await
            .expect("patch status")
    }
}
