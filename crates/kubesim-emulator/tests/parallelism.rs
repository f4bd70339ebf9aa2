//! `EmulatorConfig::pod_parallelism` (`kubesim emulate
//! --pod-play-stage-parallelism`) bounds how many pods have a stage's
//! request in flight at once, as kwok's option of the same name does: with
//! every pod write held for a simulated second, the most in flight at
//! once is the setting, neither fewer nor more.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::patch::PatchType;
use kubesim_core::ApiError;
use kubesim_emulator::{run, EmulatorConfig};
use kubesim_runtime::{
    Api, Clock, DeleteOptions, ListOptions, ResourceRef, Rng, WatchEvent, WriteOptions,
};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

/// The API as the emulator sees it: every write to a pod takes a
/// simulated second, and the writes in flight are counted. Watches and
/// lists use the trait's plain forms (objects parsed, not shared bytes),
/// which changes nothing the emulator does.
struct Held {
    inner: Arc<dyn Api>,
    clock: Clock,
    now: AtomicUsize,
    most: AtomicUsize,
}

impl Held {
    async fn hold<T>(&self, r: &ResourceRef, write: impl std::future::Future<Output = T>) -> T {
        if r.plural != "pods" {
            return write.await;
        }
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(n, Ordering::SeqCst);
        self.clock.sleep(Duration::from_secs(1)).await;
        let out = write.await;
        self.now.fetch_sub(1, Ordering::SeqCst);
        out
    }
}

#[async_trait::async_trait]
impl Api for Held {
    async fn get(&self, r: &ResourceRef, ns: &str, name: &str) -> Result<Value, ApiError> {
        self.inner.get(r, ns, name).await
    }
    async fn list(&self, r: &ResourceRef, ns: &str, opts: &ListOptions) -> Result<Value, ApiError> {
        self.inner.list(r, ns, opts).await
    }
    async fn create(
        &self,
        r: &ResourceRef,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.hold(r, self.inner.create(r, ns, obj, opts)).await
    }
    async fn update(
        &self,
        r: &ResourceRef,
        ns: &str,
        obj: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.hold(r, self.inner.update(r, ns, obj, subresource, opts))
            .await
    }
    async fn patch(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: Vec<u8>,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let write = self.inner.patch(r, ns, name, kind, body, subresource, opts);
        self.hold(r, write).await
    }
    async fn patch_value(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let write = self
            .inner
            .patch_value(r, ns, name, kind, body, subresource, opts);
        self.hold(r, write).await
    }
    async fn delete(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        self.hold(r, self.inner.delete(r, ns, name, opts)).await
    }
    async fn watch(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<BoxStream<'static, WatchEvent>, ApiError> {
        self.inner.watch(r, ns, opts).await
    }
}

/// The most pod writes in flight at once while 12 pods start on one node
/// with `parallelism`.
async fn most_in_flight(parallelism: usize) -> usize {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    let held = Arc::new(Held {
        inner: Arc::new(InProcess::new(server.clone(), "kubesim-emulator")),
        clock: clock.clone(),
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    });
    let emulator = tokio::spawn(run(
        held.clone(),
        clock.clone(),
        Rng::seeded(2),
        EmulatorConfig {
            pod_parallelism: parallelism,
            ..Default::default()
        },
    ));
    let write = WriteOptions::default();
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "n1", "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}});
    api.create(&ResourceRef::core("nodes"), "", node, &write)
        .await
        .unwrap();
    let pods = ResourceRef::core("pods");
    for i in 0..12 {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}});
        api.create(&pods, "default", pod, &write).await.unwrap();
    }
    let mut running = 0;
    for _ in 0..600 {
        let list = api
            .list(&pods, "default", &ListOptions::default())
            .await
            .unwrap();
        running = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        if running == 12 {
            break;
        }
        clock.sleep(Duration::from_secs(1)).await;
    }
    emulator.abort();
    assert_eq!(running, 12, "every pod runs");
    held.most.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn pods_in_flight_at_once_are_the_parallelism_set() {
    assert_eq!(most_in_flight(1).await, 1);
    assert_eq!(most_in_flight(4).await, 4);
}
