//! What the in-process API tests share.

use std::sync::Arc;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{Api, Clock, Rng};
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
