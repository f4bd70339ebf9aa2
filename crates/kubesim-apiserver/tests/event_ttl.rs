//! Events expire an hour after their last write, as kube-apiserver's
//! `--event-ttl` makes them; watchers see the expiry as a deletion.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef, Rng, WatchEvent};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

fn events() -> ResourceRef {
    ResourceRef::core("events")
}

fn event(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Tested", "message": "m", "type": "Normal", "count": 1})
}

async fn exists(api: &Arc<dyn Api>, name: &str) -> bool {
    match api.get(&events(), "default", name).await {
        Ok(_) => true,
        Err(e) if e.code == 404 => false,
        Err(e) => panic!("{}", e.message),
    }
}

/// Any write: expiry happens on the write path.
async fn write_something(api: &Arc<dyn Api>, name: &str) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    api.create(
        &ResourceRef::core("configmaps"),
        "default",
        cm,
        &Default::default(),
    )
    .await
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn events_go_an_hour_after_their_last_write() {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated(jiff::Timestamp::constant(1_767_225_600, 0));
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    let w = Default::default();
    for name in ["first", "renewed"] {
        api.create(&events(), "default", event(name), &w)
            .await
            .unwrap();
    }
    let from = ListOptions {
        resource_version: Some(server.store.current_rev().to_string()),
        ..Default::default()
    };
    let mut watch = api.watch(&events(), "default", &from).await.unwrap();

    // Half an hour on, "renewed" is written again: its hour starts over.
    clock.sleep(Duration::from_secs(30 * 60)).await;
    let count = json!({"count": 2}).to_string().into_bytes();
    api.patch(
        &events(),
        "default",
        "renewed",
        PatchType::Merge,
        count,
        None,
        &w,
    )
    .await
    .unwrap();
    clock.sleep(Duration::from_secs(29 * 60)).await;
    write_something(&api, "at-59m").await;
    assert!(exists(&api, "first").await, "not yet an hour");

    clock.sleep(Duration::from_secs(2 * 60)).await;
    write_something(&api, "at-61m").await;
    assert!(!exists(&api, "first").await, "an hour after its write");
    assert!(exists(&api, "renewed").await, "written again at 30 minutes");
    let served = ResourceRef::new("events.k8s.io", "v1", "events");
    let code = api.get(&served, "default", "first").await.unwrap_err().code;
    assert_eq!(code, 404, "gone in every version it is served in");

    clock.sleep(Duration::from_secs(30 * 60)).await;
    write_something(&api, "at-91m").await;
    assert!(!exists(&api, "renewed").await);

    // Watchers saw the update, then each expiry as a deletion.
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match watch.next().await.expect("event") {
            WatchEvent::Modified(o) => seen.push(format!("MODIFIED {}", o["metadata"]["name"])),
            WatchEvent::Deleted(o) => seen.push(format!("DELETED {}", o["metadata"]["name"])),
            WatchEvent::Bookmark(_) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            r#"MODIFIED "renewed""#,
            r#"DELETED "first""#,
            r#"DELETED "renewed""#
        ]
    );
}
