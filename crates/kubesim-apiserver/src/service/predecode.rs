//! Decoding committed objects ahead of the write that will read them, on a
//! thread of its own.
//!
//! Nearly every write of an object that exists starts by decoding its
//! stored bytes (`apart::decode_apart`), and in a simulation that decode
//! sits on the one thread every component runs on: a pod is bound just
//! after its creation, started just after its binding, finished later.
//! The value a decode gives depends on the record's bytes alone, so it can
//! be made as soon as the record is committed, on the machine's other
//! core, and taken by the write that needs it: that write gets exactly the
//! value it would have decoded, whichever thread decoded it, so what a run
//! computes does not depend on which side was faster.
//!
//! Records are known by identity: a stored revision is one `Arc<Record>`,
//! which a slot holds, so its address names that revision while the slot
//! lives. A commit drops the slot of the revision it replaced. Slots not
//! taken (objects not written again soon) are dropped oldest first beyond
//! [`SLOTS`], by the decoding thread, which also frees what they held.
//!
//! Waking a sleeping thread for each commit cost more than the decodes
//! saved (a system call per write), so the thread looks for offers for a
//! while before it sleeps: while a simulation runs, it keeps the second
//! core busy.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kubesim_core::ApiError;
use kubesim_store::{Event, EventType, Record};
use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::apart::{decode_apart, Managed};
use super::Server;

/// Decoded or waiting records kept at most: about 60 MiB of decoded pods,
/// and enough for the running pods of a simulation on a thousand nodes to
/// keep theirs until they finish.
const SLOTS: usize = 4096;

/// A stored object decoded for a write: the value, its managedFields
/// text apart, and the entries that text holds when they were parsed
/// ahead too (tracking a write reads them).
type Decoded = Result<(Value, Managed, Option<Vec<Value>>), ApiError>;

/// The decoding thread's handle; dropping it ends the thread.
pub(crate) struct Predecode {
    shared: Arc<Shared>,
}

struct Shared {
    patient: bool,
    state: Mutex<State>,
    /// Offers made so far: the thread watches it without the lock.
    offered: AtomicU64,
    /// The decoding thread waits here for offers.
    work: Condvar,
    /// A write waits here for the decode the thread is making for it.
    done: Condvar,
}

#[derive(Default)]
struct State {
    slots: HashMap<usize, Slot>,
    /// Offers not yet decoded, newest last: the newest is decoded first,
    /// as the write that reads it is the likeliest to come soon.
    queue: Vec<(usize, u64)>,
    /// Every offer in order, for dropping the oldest slots.
    order: VecDeque<(usize, u64)>,
    next: u64,
    /// Entries parsed ahead for writes that do not read them, for the
    /// thread to free.
    discard: Vec<Vec<Value>>,
    /// The thread sleeps on `work` (rather than looking for offers).
    asleep: bool,
    closed: bool,
}

struct Slot {
    record: Arc<Record>,
    /// The offer that made the slot: an address may name a later record
    /// once the slot is gone, and the queue and order must not take that
    /// one for it.
    seq: u64,
    state: Phase,
}

enum Phase {
    Queued,
    Decoding,
    Done(Decoded),
}

impl Server {
    /// Decodes committed objects on a thread of their own, for the writes
    /// that will read them. For a simulation, whose components all share
    /// one thread; once on, it stays on.
    pub fn decode_ahead(&self) {
        self.predecode.get_or_init(Predecode::start);
    }

    /// A stored object decoded for a write that records no managedFields
    /// entry (a binding, a deletion), its managedFields apart.
    pub(crate) fn decode_for_write(&self, rec: &Arc<Record>) -> Result<(Value, Managed), ApiError> {
        match self.predecode.get().and_then(|p| p.take(rec, false)) {
            Some(decoded) => decoded.map(|(v, m, _)| (v, m)),
            None => decode_apart(rec),
        }
    }

    /// A stored object decoded for an update, its managedFields apart, with
    /// their entries when they were parsed ahead.
    pub(crate) fn decode_for_update(&self, rec: &Arc<Record>) -> Decoded {
        match self.predecode.get().and_then(|p| p.take(rec, true)) {
            Some(decoded) => decoded,
            None => decode_apart(rec).map(|(v, m)| (v, m, None)),
        }
    }

    /// After the commit of `obj`: its new revision queued for decoding,
    /// unless it is unlikely to be written again soon: Events hardly ever
    /// are, and a finished pod only when it is deleted, long after.
    pub(super) fn decode_later(&self, obj: &Value, event: Option<&Event>) {
        let (Some(p), Some(ev)) = (self.predecode.get(), event) else {
            return;
        };
        let later = match &*ev.resource {
            "events" => false,
            "pods" => !matches!(
                obj.get("status")
                    .and_then(|s| s.get("phase"))
                    .and_then(Value::as_str),
                Some("Succeeded" | "Failed")
            ),
            _ => true,
        };
        p.offer(ev, later);
    }
}

fn id(rec: &Arc<Record>) -> usize {
    Arc::as_ptr(rec) as usize
}

impl Predecode {
    /// Starts the decoding thread.
    fn start() -> Predecode {
        Predecode::started(false)
    }

    /// With `patient`, a write waits for a decode the thread has not
    /// started yet too (for tests, which then know every offer is taken).
    fn started(patient: bool) -> Predecode {
        let shared = Arc::new(Shared {
            patient,
            state: Mutex::new(State::default()),
            offered: AtomicU64::new(0),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let s = shared.clone();
        std::thread::Builder::new()
            .name("kubesim-predecode".into())
            .spawn(move || s.run())
            .expect("spawn the decoding thread");
        Predecode { shared }
    }

    /// After a commit: the revision it replaced is no longer worth
    /// decoding, and the new one is queued if `decode` and the object is
    /// not gone.
    fn offer(&self, event: &Event, decode: bool) {
        let mut st = self.shared.state.lock();
        if let Some(prev) = &event.prev {
            // Dropped here only when nothing took it; rare, as every write
            // that replaces a revision has taken its decode.
            st.slots.remove(&id(prev));
        }
        if !decode || event.kind == EventType::Deleted {
            return;
        }
        let key = id(&event.record);
        let seq = st.next;
        st.next += 1;
        st.slots.insert(
            key,
            Slot {
                record: event.record.clone(),
                seq,
                state: Phase::Queued,
            },
        );
        st.queue.push((key, seq));
        st.order.push_back((key, seq));
        let asleep = st.asleep;
        drop(st);
        self.shared.offered.fetch_add(1, Ordering::Release);
        // Waking a sleeping thread is a system call, dearer than the
        // decode itself; it is needed only after the thread found no work
        // for a while.
        if asleep {
            self.shared.work.notify_one();
        }
    }

    /// The decode of `rec` if the thread has made or is making it (waiting
    /// for it then), with the parsed entries if the caller wants them; None
    /// if the caller is to decode it itself.
    fn take(&self, rec: &Arc<Record>, entries: bool) -> Option<Decoded> {
        let key = id(rec);
        let mut st = self.shared.state.lock();
        loop {
            let slot = st.slots.get(&key)?;
            if !Arc::ptr_eq(&slot.record, rec) {
                return None;
            }
            match slot.state {
                Phase::Decoding => self.shared.done.wait(&mut st),
                Phase::Queued if self.shared.patient => self.shared.done.wait(&mut st),
                // Not started: the caller decodes now rather than wait.
                Phase::Queued | Phase::Done(_) => break,
            }
        }
        match st.slots.remove(&key).map(|s| s.state) {
            Some(Phase::Done(Ok((v, m, parsed)))) => {
                let parsed = match parsed {
                    Some(list) if !entries => {
                        st.discard.push(list);
                        None
                    }
                    p => p,
                };
                Some(Ok((v, m, parsed)))
            }
            Some(Phase::Done(Err(e))) => Some(Err(e)),
            _ => None,
        }
    }
}

impl Drop for Predecode {
    fn drop(&mut self) {
        self.shared.state.lock().closed = true;
        self.shared.work.notify_one();
    }
}

impl Shared {
    fn run(&self) {
        let mut st = self.state.lock();
        loop {
            if st.closed {
                return;
            }
            let Some((key, seq)) = st.queue.pop() else {
                st = self.idle(st);
                continue;
            };
            let record = match st.slots.get_mut(&key) {
                Some(slot) if slot.seq == seq && matches!(slot.state, Phase::Queued) => {
                    slot.state = Phase::Decoding;
                    slot.record.clone()
                }
                _ => continue,
            };
            drop(st);
            let decoded = decode_apart(&record).map(|(v, m)| {
                let entries = m.as_deref().map(kubesim_core::patch::managed_entries);
                (v, m, entries)
            });
            st = self.state.lock();
            if let Some(slot) = st.slots.get_mut(&key) {
                if slot.seq == seq {
                    slot.state = Phase::Done(decoded);
                }
            }
            self.done.notify_all();
            let dropped = evict(&mut st);
            let discarded = std::mem::take(&mut st.discard);
            if !dropped.is_empty() || !discarded.is_empty() {
                drop(st);
                drop((dropped, discarded));
                st = self.state.lock();
            }
        }
    }
}

impl Shared {
    /// Waits for an offer: looks again for a while (offers come every few
    /// microseconds while a simulation runs), then sleeps until woken.
    fn idle<'a>(
        &'a self,
        st: parking_lot::MutexGuard<'a, State>,
    ) -> parking_lot::MutexGuard<'a, State> {
        let seen = self.offered.load(Ordering::Acquire);
        drop(st);
        for _ in 0..SPINS {
            std::hint::spin_loop();
            if self.offered.load(Ordering::Acquire) != seen {
                break;
            }
        }
        let mut st = self.state.lock();
        while st.queue.is_empty() && !st.closed {
            st.asleep = true;
            self.work.wait(&mut st);
            st.asleep = false;
        }
        st
    }
}

/// Times the thread looks for offers before it sleeps.
const SPINS: usize = 20_000;

/// Takes the oldest slots out beyond [`SLOTS`], for the caller to free
/// outside the lock.
fn evict(st: &mut State) -> Vec<Slot> {
    let mut out = Vec::new();
    // Offers the thread fell too far behind on are not worth decoding.
    if st.queue.len() > 2 * SLOTS {
        let stale = st.queue.len() - SLOTS;
        st.queue.drain(..stale);
    }
    while st.slots.len() > SLOTS || st.order.len() > 2 * SLOTS {
        let Some((key, seq)) = st.order.pop_front() else {
            break;
        };
        if st.slots.get(&key).is_some_and(|s| s.seq == seq) {
            out.extend(st.slots.remove(&key));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::encode;
    use super::*;
    use kubesim_store::Attrs;
    use serde_json::json;

    fn record(rev: u64, phase: &str) -> Arc<Record> {
        let obj = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "resourceVersion": rev.to_string(),
                "managedFields": [{"manager": "m", "operation": "Update",
                    "fieldsV1": {"f:status": {"f:phase": {}}}}]},
            "status": {"phase": phase}});
        Arc::new(Record {
            rev,
            bytes: encode(&obj),
            attrs: Attrs::default(),
        })
    }

    fn event(kind: EventType, record: &Arc<Record>, prev: Option<&Arc<Record>>) -> Event {
        Event {
            rev: record.rev,
            kind,
            resource: "pods".into(),
            key: "default/p".into(),
            record: record.clone(),
            prev: prev.cloned(),
        }
    }

    /// `ahead` is what decoding `rec` on demand gives, and its entries
    /// are those the text holds.
    fn same(ahead: Decoded, rec: &Record) {
        let (v, m, entries) = ahead.unwrap();
        let (want_v, want_m) = decode_apart(rec).unwrap();
        assert_eq!(v, want_v);
        let text = |m: &Managed| m.as_ref().map(|r| r.get().to_string());
        assert_eq!(text(&m), text(&want_m));
        let want_entries = kubesim_core::patch::managed_entries(&m.unwrap());
        assert_eq!(want_entries.len(), 1);
        assert_eq!(entries, Some(want_entries));
    }

    #[test]
    fn an_offered_revision_is_decoded_as_on_demand() {
        let p = Predecode::started(true);
        let first = record(1, "Pending");
        p.offer(&event(EventType::Added, &first, None), true);
        same(p.take(&first, true).expect("decoded ahead"), &first);
        // Taken once: a second write of the same revision decodes it.
        assert!(p.take(&first, true).is_none());
        // A write that records no entry leaves the parsed ones to the thread.
        let second = record(2, "Running");
        p.offer(&event(EventType::Modified, &second, Some(&first)), true);
        let (_, _, entries) = p.take(&second, false).unwrap().unwrap();
        assert!(entries.is_none());
    }

    #[test]
    fn replaced_deleted_and_unoffered_revisions_are_not_kept() {
        let p = Predecode::started(true);
        let first = record(1, "Pending");
        let second = record(2, "Running");
        p.offer(&event(EventType::Added, &first, None), true);
        p.offer(&event(EventType::Modified, &second, Some(&first)), true);
        assert!(p.take(&first, true).is_none());
        let third = record(3, "Succeeded");
        p.offer(&event(EventType::Modified, &third, Some(&second)), false);
        assert!(p.take(&second, true).is_none());
        assert!(p.take(&third, true).is_none());
        let gone = record(4, "Succeeded");
        p.offer(&event(EventType::Deleted, &gone, Some(&third)), true);
        assert!(p.take(&gone, true).is_none());
        assert!(p.shared.state.lock().slots.is_empty());
    }

    #[test]
    fn the_oldest_slots_go_beyond_the_bound() {
        let p = Predecode::started(true);
        let records: Vec<_> = (0..SLOTS as u64 + 10)
            .map(|i| record(i, "Running"))
            .collect();
        for r in &records {
            p.offer(&event(EventType::Added, r, None), true);
        }
        // The newest is decoded first, and each decode drops what is over
        // the bound: waiting for it leaves at most the bound.
        let newest = records.last().unwrap();
        same(p.take(newest, true).unwrap(), newest);
        assert!(p.shared.state.lock().slots.len() <= SLOTS);
    }
}
