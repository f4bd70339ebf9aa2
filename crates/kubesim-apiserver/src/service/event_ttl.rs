//! Events live an hour after their last write, as kube-apiserver's
//! `--event-ttl` (1 h) makes them: it writes each Event under an etcd
//! lease of that length, and etcd deletes the Event when the lease runs
//! out, which watchers see as a deletion.
//!
//! The server notes each Event's expiry as it commits it, and deletes the
//! expired ones on the write path (as it compacts the history), not on a
//! timer: a timer would wake a simulation for nothing, and without writes
//! the only difference is when an idle cluster's old Events disappear.

use std::collections::{BTreeMap, BTreeSet};
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

/// Each live Event's expiry and the revision it was set by.
#[derive(Default)]
pub(crate) struct EventTtl {
    inner: Mutex<Leases>,
}

#[derive(Default)]
struct Leases {
    by_key: BTreeMap<Arc<str>, (Instant, u64)>,
    by_expiry: BTreeSet<(Instant, Arc<str>)>,
}

impl Leases {
    fn lease(&mut self, key: Arc<str>, at: Instant, rev: u64) {
        self.by_expiry.insert((at, key.clone()));
        self.by_key.insert(key, (at, rev));
    }

    fn forget(&mut self, key: &str) {
        if let Some((k, (at, _))) = self.by_key.remove_entry(key) {
            self.by_expiry.remove(&(at, k));
        }
    }
}

impl Server {
    /// After a commit of `event`: an Event written gets a fresh hour, one
    /// deleted needs none; then the expired Events go.
    pub(crate) fn after_write_ttl(&self, event: Option<&kubesim_store::Event>) {
        let now = self.clock.instant();
        if let Some(ev) = event.filter(|ev| &*ev.resource == EVENTS) {
            let mut leases = self.event_ttl.inner.lock();
            leases.forget(&ev.key);
            if ev.kind != EventType::Deleted {
                leases.lease(ev.key.clone(), now + EVENT_TTL, ev.rev);
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
        let at = self.clock.instant() + EVENT_TTL;
        let mut leases = self.event_ttl.inner.lock();
        for (key, rec) in snap.items.iter() {
            leases.forget(key);
            leases.lease(key.clone(), at, rec.rev);
        }
    }

    /// Deletes the Events whose hour has run out by `now`.
    fn expire_events(&self, now: Instant) {
        loop {
            let due = {
                let mut leases = self.event_ttl.inner.lock();
                let Some((at, key)) = leases.by_expiry.first().cloned() else {
                    return;
                };
                if at > now {
                    return;
                }
                leases.by_expiry.pop_first();
                leases.by_key.remove(&key).map(|(_, rev)| (key, rev))
            };
            if let Some((key, rev)) = due {
                self.expire(&key, rev);
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
