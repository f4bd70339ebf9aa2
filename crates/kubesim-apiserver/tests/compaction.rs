//! The server forgets history as kube-apiserver's etcd compaction does:
//! every five minutes of its clock, down to the revision that was newest
//! five minutes before. Watches from older revisions get 410 Gone.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kubesim_runtime::{Api, ListOptions, ResourceRef, WatchEvent};
use serde_json::{json, Value};

mod support;

use support::api;

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

/// The resourceVersion of a new ConfigMap `name`.
async fn create(api: &Arc<dyn Api>, name: &str) -> String {
    let cm = api
        .create(
            &ResourceRef::core("configmaps"),
            "default",
            config_map(name),
            &Default::default(),
        )
        .await
        .unwrap();
    cm["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The first thing a watch from `rv` says: Ok(name of the first object
/// it reports) or the error code.
async fn watch_from(api: &Arc<dyn Api>, rv: &str) -> Result<String, u16> {
    let opts = ListOptions {
        resource_version: Some(rv.to_string()),
        ..Default::default()
    };
    let mut events = api
        .watch(&ResourceRef::core("configmaps"), "default", &opts)
        .await
        .map_err(|e| e.code)?;
    match events.next().await {
        Some(WatchEvent::Added(o)) => Ok(o["metadata"]["name"].as_str().unwrap().to_string()),
        Some(WatchEvent::Error(e)) => Err(e.code),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn history_older_than_the_last_compaction_is_gone() {
    let api = api().await;
    let a = create(&api, "a").await;
    tokio::time::advance(Duration::from_secs(4 * 60)).await;
    create(&api, "b").await;
    // Nothing is forgotten within five minutes.
    assert_eq!(watch_from(&api, "1").await, Ok("a".into()));
    // The first write after five minutes compacts down to the revision
    // newest at the first write (the server's bootstrap) and remembers
    // its own for the next compaction.
    tokio::time::advance(Duration::from_secs(2 * 60)).await;
    let c = create(&api, "c").await;
    assert_eq!(watch_from(&api, &a).await, Ok("b".into()));
    // Four minutes on, no compaction is due yet.
    tokio::time::advance(Duration::from_secs(4 * 60)).await;
    create(&api, "d").await;
    assert_eq!(watch_from(&api, &a).await, Ok("b".into()));
    // Five minutes after the last compaction, the next write forgets
    // everything up to `c`.
    tokio::time::advance(Duration::from_secs(60)).await;
    create(&api, "e").await;
    assert_eq!(watch_from(&api, &a).await, Err(410));
    let before_c = (c.parse::<u64>().unwrap() - 1).to_string();
    assert_eq!(watch_from(&api, &before_c).await, Err(410));
    assert_eq!(watch_from(&api, &c).await, Ok("d".into()));
}
