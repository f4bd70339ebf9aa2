//! What the in-process API tests share (each uses some of it).

#![allow(dead_code)]

use std::sync::Arc;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{Api, Clock, ResourceRef, Rng};
use kubesim_store::{MemStore, Store};

/// An in-memory server on a simulated clock that stands still unless the
/// test (run with time paused) lets it move, reached in process.
pub async fn api() -> Arc<dyn Api> {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let epoch = jiff::Timestamp::constant(1_767_225_600, 0);
    let server = Server::new(store, Clock::simulated(epoch), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    Arc::new(InProcess::new(server, "test"))
}

/// Binds pod `name` of `default` to `node`; the API's answer.
pub async fn bind(api: &dyn Api, name: &str, node: &str) -> serde_json::Value {
    let binding = serde_json::json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": name}, "target": {"name": node}});
    let bindings = ResourceRef::core("bindings");
    api.create(&bindings, "default", binding, &Default::default())
        .await
        .unwrap()
}

/// Creates ConfigMap `name` in `namespace`; its resourceVersion.
pub async fn create_config_map(api: &dyn Api, namespace: &str, name: &str) -> String {
    let cm = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace}});
    let made = api
        .create(
            &ResourceRef::core("configmaps"),
            namespace,
            cm,
            &Default::default(),
        )
        .await
        .unwrap();
    made["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}
