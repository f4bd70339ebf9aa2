#![no_main]
//! The in-process write path on arbitrary bodies: a create of the input as
//! one of several kinds, then the input's second half as a merge, a
//! strategic merge and an apply patch of a stored object. Whatever is
//! answered, no write may panic, answer a 5xx, or leave a stored object
//! that its k8s-openapi type cannot read.

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::{apps::v1 as apps, core::v1 as core};
use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

async fn api() -> Arc<dyn Api> {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let epoch = jiff::Timestamp::constant(1_767_225_600, 0);
    let server = Server::new(store, Clock::simulated(epoch), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    Arc::new(InProcess::new(server, "fuzz"))
}

fn readable(plural: &str, obj: &Value) -> bool {
    let v = obj.clone();
    match plural {
        "pods" => serde_json::from_value::<core::Pod>(v).is_ok(),
        "services" => serde_json::from_value::<core::Service>(v).is_ok(),
        "configmaps" => serde_json::from_value::<core::ConfigMap>(v).is_ok(),
        "deployments" => serde_json::from_value::<apps::Deployment>(v).is_ok(),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let kinds = [
        (ResourceRef::core("pods"), "Pod", "v1"),
        (ResourceRef::core("services"), "Service", "v1"),
        (ResourceRef::core("configmaps"), "ConfigMap", "v1"),
        (ResourceRef::new("apps", "v1", "deployments"), "Deployment", "apps/v1"),
    ];
    let (r, kind, av) = &kinds[usize::from(data[0]) % kinds.len()];
    let rest = &data[1..];
    let (first, second) = rest.split_at(rest.len() / 2);
    runtime().block_on(async {
        let api = api().await;
        let check = |e: &kubesim_core::ApiError| assert!(e.code < 500, "{}: {}", e.code, e.message);
        if let Ok(mut body) = serde_json::from_slice::<Value>(first) {
            if let Some(m) = body.as_object_mut() {
                m.insert("apiVersion".into(), json!(av));
                m.insert("kind".into(), json!(kind));
                m.insert("metadata".into(), json!({"name": "x"}));
            }
            if let Err(e) = api.create(r, "default", body, &WriteOptions::default()).await {
                check(&e);
            }
        }
        let base = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}});
        let cms = ResourceRef::core("configmaps");
        let _ = api.create(&cms, "default", base, &WriteOptions::default()).await;
        let opts = WriteOptions { field_manager: Some("fuzz".into()), force: true, ..Default::default() };
        for (target, kind) in [(r, PatchType::Merge), (r, PatchType::Strategic), (r, PatchType::Apply), (&cms, PatchType::Merge)] {
            if let Err(e) = api.patch(target, "default", "x", kind, second.to_vec(), None, &opts).await {
                check(&e);
            }
        }
        for target in [r, &cms] {
            let list = api.list(target, "", &ListOptions::default()).await.expect("list");
            for obj in list["items"].as_array().into_iter().flatten() {
                assert!(readable(&target.plural, obj), "stored unreadable {}: {obj}", target.plural);
            }
        }
    });
});
