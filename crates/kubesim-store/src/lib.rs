//! The revisioned object store of kubesim.
//!
//! Objects are kept as canonical serialized bytes plus a few caller-defined
//! index attributes (labels, selectable fields), under one global revision
//! counter. Every write appends an event to a bounded history, which serves
//! watch resumption and reads at older revisions; events are fanned out to
//! watchers as shared `Arc`s, so each is serialized once.
//!
//! [`Store`] is the interface handlers use. [`MemStore`] implements it in
//! memory, optionally made durable by a [`durable::Persister`].
//!
//! The store must never parse the objects it holds or know what they mean:
//! it sees bytes and the attributes its caller computed, and decides
//! conflicts by revision alone. It depends on no other kubesim crate.

mod attrs;
pub mod durable;
mod history;
mod mem;
mod record;
mod watch;

pub use attrs::Attrs;
pub use mem::{MemStore, Options};
pub use record::{Event, EventType, Record};
pub use watch::WatchStream;

use std::sync::Arc;

use imbl::OrdMap;

/// Objects of one resource at one revision, ordered by key (`ns/name`).
#[derive(Clone)]
pub struct Snapshot {
    pub rev: u64,
    pub items: OrdMap<Arc<str>, Arc<Record>>,
}

/// What a write decides after seeing the current record.
pub enum WriteOp {
    /// Store these bytes (already carrying the new revision) and attributes.
    Put { bytes: bytes::Bytes, attrs: Attrs },
    /// Remove the object; `bytes` is its final state, carrying the new revision.
    Delete { bytes: bytes::Bytes },
    /// Change nothing (the decision function recorded why, if it failed).
    Abort,
}

/// What one resource holds in the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub objects: usize,
    /// The summed length of the objects' stored bytes.
    pub bytes: u64,
}

/// The outcome of a committed write.
#[derive(Clone)]
pub struct Committed {
    pub rev: u64,
    pub event: Option<Arc<Event>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The requested revision is older than the retained history.
    #[error("too old resource version: {requested} ({oldest})")]
    Expired { requested: u64, oldest: u64 },
    /// The requested revision is newer than the store.
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLarge { requested: u64, current: u64 },
    /// The durable backend failed; the write may not have persisted.
    #[error("storage failure: {0}")]
    Backend(String),
}

/// The storage interface the API server is written against.
///
/// `write` runs `decide` with the current record (if any) and the revision
/// the write would get; a backend with optimistic concurrency may call it
/// again after a conflict, so it must not have side effects beyond its return.
pub trait Store: Send + Sync + 'static {
    fn current_rev(&self) -> u64;
    /// Follows the newest revision: `changed()` resolves after any write to
    /// any resource. Lets a watcher with nothing to report sleep until
    /// there is something, instead of polling.
    fn revisions(&self) -> tokio::sync::watch::Receiver<u64>;
    fn get(&self, resource: &str, key: &str) -> Option<Arc<Record>>;
    /// A snapshot at `at` (None: the newest).
    fn snapshot(&self, resource: &str, at: Option<u64>) -> Result<Snapshot, StoreError>;
    fn write(
        &self,
        resource: &str,
        key: &str,
        decide: &mut dyn FnMut(Option<&Arc<Record>>, u64) -> WriteOp,
    ) -> Result<Committed, StoreError>;
    /// Events of `resource` with revision > `after`, then live ones.
    fn watch(&self, resource: &str, after: u64) -> Result<WatchStream, StoreError>;
    /// Resolves when every write up to `rev` is durable.
    fn wait_durable(
        &self,
        rev: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StoreError>> + Send>>;
    /// What each resource holds, for metrics, sorted by resource.
    fn usage(&self) -> Vec<(String, Usage)>;
    /// Forgets the history up to `rev`, as etcd's compaction does: reads
    /// and watches from below it answer [`StoreError::Expired`].
    fn compact(&self, rev: u64);
}
