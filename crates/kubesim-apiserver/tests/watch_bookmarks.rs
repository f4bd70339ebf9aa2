//! Bookmarks and timeouts of in-process watches, in simulated time.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef, Rng, WatchEvent};
use kubesim_store::{MemStore, Options, Store};
use support::create_config_map;

mod support;

async fn cluster() -> (Arc<dyn Api>, Clock) {
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Options::default()));
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.unwrap();
    (Arc::new(InProcess::new(server, "test")), clock)
}

/// The next bookmark within `within` of simulated time, if any; any other
/// event fails the test.
async fn bookmark(
    events: &mut futures::stream::BoxStream<'static, WatchEvent>,
    within: Duration,
) -> Option<String> {
    match tokio::time::timeout(within, events.next()).await {
        Err(_) => None,
        Ok(Some(WatchEvent::Bookmark(rv))) => Some(rv),
        Ok(other) => panic!("expected a bookmark, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_idle_watch_gets_bookmarks_only_when_the_store_moves_and_never_times_out() {
    let (api, clock) = cluster().await;
    let rv = create_config_map(&*api, "default", "a").await;
    let secrets = ResourceRef::core("secrets");
    let opts = ListOptions {
        resource_version: Some(rv.clone()),
        allow_bookmarks: true,
        ..Default::default()
    };
    let mut events = api.watch(&secrets, "default", &opts).await.unwrap();

    // Nothing happened since the watch began: a bookmark would repeat `rv`.
    assert_eq!(bookmark(&mut events, Duration::from_secs(600)).await, None);

    // A write to another resource moves the store: within a bookmark
    // period the watch learns the new revision, though it saw no event.
    let newer = create_config_map(&*api, "default", "b").await;
    let before = clock.instant();
    assert_eq!(
        bookmark(&mut events, Duration::from_secs(61)).await,
        Some(newer)
    );
    assert!(clock.instant() - before <= Duration::from_secs(60));

    // Then quiet again, for longer than kube-apiserver's longest watch
    // timeout: no repeated bookmark, and the stream stays open.
    assert_eq!(bookmark(&mut events, Duration::from_secs(7200)).await, None);
    let third = create_config_map(&*api, "default", "c").await;
    assert_eq!(
        bookmark(&mut events, Duration::from_secs(61)).await,
        Some(third)
    );
}
