//! `apiserver_init_events_total`: the events a watch is sent before it
//! follows live changes (the initial state, or the history after its
//! resourceVersion), by group and resource.

use std::sync::Arc;

use futures::StreamExt;
use kubesim_apiserver::http::metrics::Metrics;
use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef, Rng, WatchEvent, WriteOptions};
use kubesim_store::{MemStore, Options, Store};
use serde_json::json;
use support::create_config_map;

mod support;

async fn cluster() -> (Arc<dyn Api>, Arc<Metrics>) {
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Options::default()));
    let server = Server::new(store, clock, Rng::seeded(1));
    server.bootstrap().await.unwrap();
    let metrics = Arc::new(Metrics::default());
    server.count_in_process_requests(metrics.clone());
    (Arc::new(InProcess::new(server, "test")), metrics)
}

/// The names of the next `n` events of a watch.
async fn names(
    events: &mut futures::stream::BoxStream<'static, WatchEvent>,
    n: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        match events.next().await {
            Some(WatchEvent::Added(o)) | Some(WatchEvent::Modified(o)) => {
                out.push(o["metadata"]["name"].as_str().unwrap().to_string())
            }
            other => panic!("expected an object, got {other:?}"),
        }
    }
    out
}

fn configmap_init_events(m: &Metrics) -> Option<u64> {
    let text = m.render(&[]);
    let line = text.lines().find(|l| {
        l.starts_with("apiserver_init_events_total{group=\"\",resource=\"configmaps\"}")
    })?;
    Some(line.rsplit(' ').next().unwrap().parse().unwrap())
}

#[tokio::test(start_paused = true)]
async fn initial_state_and_history_count_and_live_events_do_not() {
    let (api, metrics) = cluster().await;
    let cms = ResourceRef::core("configmaps");
    api.create(
        &ResourceRef::core("namespaces"),
        "",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}),
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    let first = create_config_map(&*api, "default", "a").await;
    create_config_map(&*api, "default", "b").await;
    create_config_map(&*api, "other", "elsewhere").await;
    assert_eq!(configmap_init_events(&metrics), None);

    // From the current state: its two objects in the namespace.
    let mut from_state = api
        .watch(&cms, "default", &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(names(&mut from_state, 2).await, ["a", "b"]);
    // Once a live event arrives, the initial ones have been counted.
    create_config_map(&*api, "default", "c").await;
    assert_eq!(names(&mut from_state, 1).await, ["c"]);
    assert_eq!(configmap_init_events(&metrics), Some(2));

    // From a resourceVersion: the history after it, in the namespace ("b"
    // and "c", not the other namespace's map).
    let from_rv = ListOptions {
        resource_version: Some(first),
        ..Default::default()
    };
    let mut from_history = api.watch(&cms, "default", &from_rv).await.unwrap();
    assert_eq!(names(&mut from_history, 2).await, ["b", "c"]);
    let now = create_config_map(&*api, "default", "d").await;
    assert_eq!(names(&mut from_history, 1).await, ["d"]);
    assert_eq!(configmap_init_events(&metrics), Some(4));

    // From the newest revision: nothing before the live events.
    let from_now = ListOptions {
        resource_version: Some(now),
        ..Default::default()
    };
    let mut live_only = api.watch(&cms, "default", &from_now).await.unwrap();
    // Let the watch begin before the write: a write committed before it
    // begins is history to it, and counted.
    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    create_config_map(&*api, "default", "e").await;
    assert_eq!(names(&mut live_only, 1).await, ["e"]);
    assert_eq!(names(&mut from_history, 1).await, ["e"]);
    assert_eq!(configmap_init_events(&metrics), Some(4));
}
