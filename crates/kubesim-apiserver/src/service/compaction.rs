//! The store's history compacted as kube-apiserver compacts etcd: every
//! five minutes of the server's clock, down to the revision that was the
//! newest at the previous compaction. Watches and reads at old revisions
//! thus reach back at least five minutes (at most ten), and a long run
//! keeps only that much history instead of the store's whole allowance.
//!
//! It runs on the write path rather than on a timer: a timer would wake a
//! simulation every five simulated minutes for nothing, and without writes
//! there is nothing to forget.

use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::Server;

/// kube-apiserver's default `--etcd-compaction-interval`.
pub(crate) const INTERVAL: Duration = Duration::from_secs(5 * 60);

/// When the next compaction is due, and down to which revision.
#[derive(Default)]
pub(crate) struct Compactor {
    next: Mutex<Option<(Instant, u64)>>,
}

impl Server {
    /// Compacts if the interval has passed since the last compaction (or
    /// since the first write); called after each commit.
    pub(crate) fn compact_if_due(&self) {
        let now = self.clock.instant();
        let mut next = self.compactor.next.lock();
        match *next {
            Some((due, _)) if now < due => return,
            Some((_, rev)) => self.store.compact(rev),
            None => {}
        }
        *next = Some((now + INTERVAL, self.store.current_rev()));
    }
}
