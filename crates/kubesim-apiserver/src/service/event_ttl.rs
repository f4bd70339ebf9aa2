//! Events live an hour after their last write, as kube-apiserver's
//! `--event-ttl` (1 h) makes them: it writes each Event under an etcd
//! lease of that length, and etcd deletes the Event when the lease runs
//! out, which watchers see as a deletion.
//!
//! The server notes each Event's expiry as it commits it, and deletes the
//! expired ones on the write path (as it compacts the history), not on a
//! timer: a timer would wake a simulation for nothing, and without writes
//! the only difference is when an idle cluster's old Events disappear.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use kubesim_store::{EventType, WriteOp};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::{at_revision, decode_apart, encode_with, restamped, Server};

/// kube-apiserver's default `--event-ttl`.
pub(crate) const EVENT_TTL: Duration = Duration::from_secs(60 * 60);

/// The storage resource whose objects expire.
const EVENTS: &str = "events";

/// The Events' leases in the order they run out: every lease is an hour
/// from a write, and the clock only moves forward, so the order of writes
/// is the order of expiry. A rewritten or deleted Event's older lease is
/// left where it is: it names the revision it was taken at, and expiring
/// a key no longer at that revision does nothing. One queue entry a write
/// replaces an entry in each of two trees, by key and by time (the
/// short-jobs member holds 100,000 live Events).
#[derive(Default)]
pub(crate) struct EventTtl {
    inner: Mutex<VecDeque<Lease>>,
}

struct Lease {
    until: Instant,
    key: Arc<str>,
    rev: u64,
}

impl Server {
    /// After a commit of `event`: an Event written gets a fresh hour, one
    /// deleted needs none; then the expired Events go.
    pub(crate) fn after_write_ttl(&self, event: Option<&kubesim_store::Event>) {
        let now = self.clock.instant();
        if let Some(ev) = event.filter(|ev| &*ev.resource == EVENTS) {
            if ev.kind != EventType::Deleted {
                self.event_ttl.inner.lock().push_back(Lease {
                    until: now + EVENT_TTL,
                    key: ev.key.clone(),
                    rev: ev.rev,
                });
            }
        }
        self.expire_events(now);
    }

    /// Gives every stored Event a fresh hour: a restarted server does not
    /// know when they were written (upstream's leases outlive it in etcd).
    pub(crate) fn lease_stored_events(&self) {
        let Ok(snap) = self.store.snapshot(EVENTS, None) else {
            return;
        };
        let until = self.clock.instant() + EVENT_TTL;
        let mut leases = self.event_ttl.inner.lock();
        for (key, rec) in snap.items.iter() {
            leases.push_back(Lease {
                until,
                key: key.clone(),
                rev: rec.rev,
            });
        }
    }

    /// Deletes the Events whose hour has run out by `now`.
    fn expire_events(&self, now: Instant) {
        loop {
            let due = {
                let mut leases = self.event_ttl.inner.lock();
                match leases.front() {
                    Some(l) if l.until <= now => leases.pop_front(),
                    _ => return,
                }
            };
            if let Some(l) = due {
                self.expire(&l.key, l.rev);
            }
        }
    }

    /// Deletes the Event at `key` if it is still the version written at
    /// `rev`, leaving it with the deletion's revision as its final state.
    fn expire(&self, key: &str, rev: u64) {
        let written = self.store.write(EVENTS, key, &mut |cur, at| match cur {
            // Only the resourceVersion changes: the bytes are stamped
            // where they are, not decoded and written again.
            Some(c) if c.rev == rev => match restamped(&c.bytes, at) {
                Some(bytes) => WriteOp::Delete { bytes },
                None => match decode_apart(c) {
                    Ok((obj, managed)) => WriteOp::Delete {
                        bytes: encode_with(&at_revision(obj, at), managed.as_deref()),
                    },
                    Err(_) => WriteOp::Abort,
                },
            },
            _ => WriteOp::Abort,
        });
        if let Err(e) = written {
            tracing::warn!(event = key, error = %e, "expiring an Event");
        }
    }
}
