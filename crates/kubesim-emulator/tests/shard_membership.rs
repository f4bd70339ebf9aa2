//! Shard membership through Leases, against the in-process server in
//! simulated time: two shards see each other; a shard that stops renewing
//! drops out within its Lease duration and a renewal; a process started
//! again for it takes its Lease back once the old holder's has run out; a
//! second process for a held shard waits as a standby until the holder
//! gives the Lease up.

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_emulator::shard::{hold, release, ShardLease, Shards};
use kubesim_runtime::{Api, Clock, Rng};
use kubesim_store::{MemStore, Store};
use tokio::task::JoinHandle;

async fn server() -> (Arc<dyn Api>, Clock) {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap());
    let server = Server::new(store, clock.clone(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server, "test"));
    (api, clock)
}

fn lease(identity: &str) -> ShardLease {
    ShardLease {
        namespace: "kube-system".into(),
        group: "test".into(),
        identity: identity.into(),
        duration: Duration::from_secs(10),
    }
}

fn start(
    api: &Arc<dyn Api>,
    clock: &Clock,
    me: u32,
    identity: &str,
) -> (Arc<Shards>, JoinHandle<()>) {
    let shards = Shards::new(me);
    let task = tokio::spawn(hold(
        api.clone(),
        clock.clone(),
        shards.clone(),
        lease(identity),
    ));
    (shards, task)
}

#[tokio::test(start_paused = true)]
async fn shards_join_leave_return_and_wait_as_standbys() {
    let (api, clock) = server().await;
    let (s0, t0) = start(&api, &clock, 0, "a");
    let (s1, t1) = start(&api, &clock, 1, "b");
    clock.sleep(Duration::from_secs(4)).await;
    assert_eq!(*s0.members(), vec![0, 1]);
    assert_eq!(*s1.members(), vec![0, 1]);

    // Shard 1 stops renewing (its process died): shard 0 drops it within
    // a Lease duration and two renewal periods, and owns every name.
    t1.abort();
    let died = clock.instant();
    while *s0.members() != vec![0] {
        assert!(
            clock.instant() - died < Duration::from_secs(17),
            "shard 1 not dropped"
        );
        clock.sleep(Duration::from_millis(500)).await;
    }
    assert!((0..100).all(|i| s0.owns(&format!("node-{i}"))));

    // Started again (a new process, a new identity): it takes its Lease
    // back once the old holder's has run out, and both see both again.
    let (s1, _t1) = start(&api, &clock, 1, "b2");
    clock.sleep(Duration::from_secs(15)).await;
    assert_eq!(*s1.members(), vec![0, 1]);
    assert_eq!(*s0.members(), vec![0, 1]);

    // A second process for shard 0 waits: it acts for no name of shard 0.
    let (standby, _t) = start(&api, &clock, 0, "a2");
    clock.sleep(Duration::from_secs(15)).await;
    assert_eq!(*standby.members(), vec![1], "the standby took a held shard");
    assert!((0..100).all(|i| !standby.owns(&format!("node-{i}"))));

    // The holder gives the Lease up as it exits: the standby takes it at
    // its next look, long before a Lease duration.
    t0.abort();
    release(&*api, &s0, &lease("a")).await;
    let released = clock.instant();
    while !standby.members().contains(&0) {
        assert!(
            clock.instant() - released < Duration::from_secs(5),
            "the standby did not take over"
        );
        clock.sleep(Duration::from_millis(500)).await;
    }
}
