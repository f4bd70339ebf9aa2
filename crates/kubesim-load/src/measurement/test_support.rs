//! What the measurements' tests share: a context on the in-process
//! cluster, and playing scheduler and kubelet for pods created through
//! the API (the test cluster runs no controllers).

use std::sync::Arc;

use kubesim_apiserver::service::planted;
use kubesim_apiserver::Server;
use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{Api, Clock, DeleteOptions, ResourceRef, Rng, WriteOptions};
use serde_json::{json, Value};

use super::Ctx;
use crate::cluster::testing::cluster;

pub async fn ctx() -> (Ctx, Arc<dyn Api>) {
    let (ctx, api, _) = ctx_and_server().await;
    (ctx, api)
}

/// [`ctx`], with the server, for tests that write to its store.
pub async fn ctx_and_server() -> (Ctx, Arc<dyn Api>, Arc<Server>) {
    let (cluster, clock) = cluster().await;
    let api = crate::Cluster::api(cluster.as_ref());
    let server = cluster.server.clone();
    let ctx = Ctx {
        cluster,
        clock,
        rng: Rng::seeded(1),
        config_name: "test".into(),
        nodes: 1,
        namespace_prefix: String::new(),
        server_pid: None,
        prometheus: None,
        informers: Default::default(),
    };
    (ctx, api, server)
}

/// Puts `obj` into the store as it is, past every check of the API.
pub fn plant(server: &Server, r: &ResourceRef, ns: &str, obj: Value) {
    let info = server
        .registry
        .get(&r.group, &r.version, &r.plural)
        .expect("resource");
    planted::plant(&*server.store, &info, ns, obj);
}

pub fn pods() -> ResourceRef {
    ResourceRef::core("pods")
}

/// A pod whose spec is one container plus `spec` merged in.
pub fn pod(name: &str, labels: Value, owner: Option<&Value>, spec: Value) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    });
    if let (Some(s), Some(extra)) = (p["spec"].as_object_mut(), spec.as_object()) {
        s.extend(extra.clone());
    }
    if let Some(o) = owner {
        p["metadata"]["ownerReferences"] = json!([{
            "apiVersion": o["apiVersion"], "kind": o["kind"], "name": meta::name(o),
            "uid": meta::uid(o), "controller": true}]);
    }
    p
}

pub async fn create(api: &Arc<dyn Api>, r: &ResourceRef, ns: &str, obj: Value) -> Value {
    api.create(r, ns, obj, &WriteOptions::default())
        .await
        .unwrap_or_else(|e| panic!("create: {}", e.message))
}

pub async fn create_pod(api: &Arc<dyn Api>, ns: &str, name: &str, spec: Value) -> Value {
    create(api, &pods(), ns, pod(name, json!({}), None, spec)).await
}

pub async fn create_labeled_pod(api: &Arc<dyn Api>, ns: &str, name: &str, labels: Value) -> Value {
    create(api, &pods(), ns, pod(name, labels, None, json!({}))).await
}

pub async fn create_owned_pod(api: &Arc<dyn Api>, ns: &str, name: &str, owner: &Value) -> Value {
    create(
        api,
        &pods(),
        ns,
        pod(name, json!({}), Some(owner), json!({})),
    )
    .await
}

/// Plays the scheduler: binds the pod to `node`.
pub async fn bind(api: &Arc<dyn Api>, ns: &str, name: &str, node: &str) {
    let binding = json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": name, "namespace": ns},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    });
    create(api, &ResourceRef::core("bindings"), ns, binding).await;
}

pub async fn patch_status(api: &Arc<dyn Api>, ns: &str, name: &str, status: Value) {
    patch_status_of(api, &pods(), ns, name, status).await
}

pub async fn patch_status_of(
    api: &Arc<dyn Api>,
    r: &ResourceRef,
    ns: &str,
    name: &str,
    status: Value,
) {
    let body = json!({ "status": status }).to_string().into_bytes();
    api.patch(
        r,
        ns,
        name,
        PatchType::Merge,
        body,
        Some("status"),
        &WriteOptions::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("patch status of {name}: {}", e.message));
}

/// Plays the kubelet: the pod runs and is Ready.
pub async fn run_pod(api: &Arc<dyn Api>, ns: &str, name: &str, clock: &Clock) {
    let now = meta::format_time(clock.now());
    let status = json!({"phase": "Running", "startTime": now,
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]});
    patch_status(api, ns, name, status).await
}

/// Binds and runs a pod at once.
pub async fn start_pod(api: &Arc<dyn Api>, ns: &str, name: &str, clock: &Clock) {
    bind(api, ns, name, "n1").await;
    run_pod(api, ns, name, clock).await;
}

/// Removes an object at once (no grace period).
pub async fn delete_now(api: &Arc<dyn Api>, r: &ResourceRef, ns: &str, name: &str) {
    let opts = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    api.delete(r, ns, name, &opts)
        .await
        .unwrap_or_else(|e| panic!("delete {name}: {}", e.message));
}

/// A Prometheus that answers every query with the samples of the first
/// fragment the query contains, and records what it was asked.
pub struct Canned {
    answers: Vec<(&'static str, Result<Vec<crate::prom::PromSample>, String>)>,
    pub asked: parking_lot::Mutex<Vec<(String, jiff::Timestamp)>>,
}

impl Canned {
    pub fn new(
        answers: Vec<(&'static str, Result<Vec<crate::prom::PromSample>, String>)>,
    ) -> Arc<Self> {
        Arc::new(Canned {
            answers,
            asked: Default::default(),
        })
    }

    /// The same samples for every query.
    pub fn always(samples: Vec<crate::prom::PromSample>) -> Arc<Self> {
        Self::new(vec![("", Ok(samples))])
    }

    /// The queries asked so far.
    pub fn queries(&self) -> Vec<String> {
        self.asked.lock().iter().map(|(q, _)| q.clone()).collect()
    }
}

#[async_trait::async_trait]
impl crate::prom::Querier for Canned {
    async fn query(
        &self,
        promql: &str,
        at: jiff::Timestamp,
    ) -> Result<Vec<crate::prom::PromSample>, String> {
        self.asked.lock().push((promql.to_string(), at));
        self.answers
            .iter()
            .find(|(frag, _)| promql.contains(frag))
            .map(|(_, a)| a.clone())
            .unwrap_or(Ok(Vec::new()))
    }
}

/// A sample with `labels` and `value`.
pub fn sample(labels: &[(&str, &str)], value: f64) -> crate::prom::PromSample {
    crate::prom::PromSample {
        metric: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
    }
}
