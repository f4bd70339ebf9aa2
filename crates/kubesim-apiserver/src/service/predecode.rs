//! Decoding committed objects ahead of the write that will read them, on
//! the helper thread ([`Ahead`]).
//!
//! Nearly every write of an object that exists starts by decoding its
//! stored bytes (`managed_fields_text::decode_apart`), and in a simulation that decode
//! sits on the one thread every component runs on: a pod is bound just
//! after its creation, started just after its binding, finished later.
//! The value a decode gives depends on the record's bytes alone, so it can
//! be made as soon as the record is committed, on the machine's other
//! core, and taken by the write that needs it: that write gets exactly the
//! value it would have decoded, whichever thread decoded it, so what a run
//! computes does not depend on which side was faster. The managedFields
//! entries are parsed too, for the updates that record their writer.
//!
//! Records are known by identity: a stored revision is one `Arc<Record>`,
//! which a slot holds, so its address names that revision while the slot
//! lives. A commit drops the slots of the revision it replaced. Decodes not
//! taken (objects not written again soon) are dropped oldest first beyond
//! [`SLOTS`], updates prepared for requests that never came beyond
//! [`PREPARED`], and what they held is freed on the helper thread. The two
//! are bounded apart: sharing one bound, the decodes of objects written
//! next hours later pushed out updates whose requests were on their way.

use std::sync::Arc;

use kubesim_core::{ApiError, ResourceInfo};
use kubesim_runtime::{Ahead, Promise};
use kubesim_store::{Event, EventType, Record};
use parking_lot::{Mutex, MutexGuard};
use serde_json::Value;

use super::bounded::Bounded;
use super::managed_fields_text::{decode_apart, Managed};
use super::prepare_ahead::Prepared;
use super::Server;

/// Decoded or waiting records kept at most. The write a decode is for
/// comes soon or, as for a pod that runs for hours, much later: a few
/// hundred slots hold the first kind; the second only fill memory. On the
/// base member of the benchmark family at 30,000 jobs, 4,096 slots served
/// 13 % more writes than 512, in the same time, for 35 MiB more peak RSS
/// (docs/decisions/work-ahead.md).
const SLOTS: usize = 512;

/// A stored object decoded for a write: the value, its managedFields
/// text apart, and the entries that text holds when they were parsed
/// ahead too (tracking a write reads them).
type Decoded = Result<(Value, Managed, Option<Vec<Value>>), ApiError>;

pub(crate) struct Predecode {
    ahead: Ahead,
    /// Revisions being decoded or decoded, for the next write of each.
    decodes: Mutex<Slots<Promise<Decoded>, SLOTS>>,
    /// Updates callers announced, prepared (see `prepare_ahead`). Apart
    /// from the decodes, so that the decodes of objects not written again
    /// soon do not push out an update whose request is on its way.
    prepared: Mutex<Slots<Box<Prepared>, PREPARED>>,
    /// Whether a write waits for a decode the thread has not begun (for
    /// tests, which then know every offer is taken).
    patient: bool,
}

/// Updates prepared and kept at most, the oldest dropped first: an
/// announced request may never come.
const PREPARED: usize = 1024;

/// Work held for records by their address, the oldest dropped first.
type Slots<T, const N: usize> = Bounded<usize, Slot<T>, N>;

struct Slot<T> {
    /// Held so that its address names it while the slot lives; a later
    /// record may have the address once the slot is gone.
    record: Arc<Record>,
    held: T,
}

impl Server {
    /// Decodes committed objects on `ahead`'s thread, for the writes that
    /// will read them. For a simulation, whose components all share one
    /// thread; once on, it stays on.
    pub fn decode_ahead(&self, ahead: &Ahead) {
        self.predecode
            .get_or_init(|| Predecode::new(ahead.clone(), false));
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

    /// Queues the stored objects a caller is about to write, in that order,
    /// for decoding (a pod garbage collector's pass: its deletions read no
    /// managedFields entries).
    pub(crate) fn decode_soon(&self, resource: &ResourceInfo, objects: &[(&str, &str)]) {
        let Some(p) = self.predecode.get() else {
            return;
        };
        // The newest offer is decoded first.
        for (ns, name) in objects.iter().rev() {
            if let Ok(rec) = self.get_record(resource, ns, name) {
                p.queue(rec, false);
            }
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

/// What `slots` hold for the revision `rec`, taken.
fn take<T, const N: usize>(slots: &Mutex<Slots<T, N>>, rec: &Arc<Record>) -> Option<T> {
    slots
        .lock()
        .remove_if(&id(rec), |s| Arc::ptr_eq(&s.record, rec))
        .map(|s| s.held)
}

impl Predecode {
    fn new(ahead: Ahead, patient: bool) -> Predecode {
        Predecode {
            ahead,
            decodes: Mutex::default(),
            prepared: Mutex::default(),
            patient,
        }
    }

    /// After a commit: the revision it replaced is no longer worth
    /// decoding, and the new one is queued if `decode` and the object is
    /// not gone.
    fn offer(&self, event: &Event, decode: bool) {
        // Rare, as every write that replaces a revision has taken its
        // decode.
        if let Some(prev) = &event.prev {
            let decode = self.decodes.lock().remove(&id(prev));
            let prepared = self.prepared.lock().remove(&id(prev));
            if decode.is_some() || prepared.is_some() {
                self.ahead.drop_later((decode, prepared));
            }
        }
        if decode && event.kind != EventType::Deleted {
            self.queue(event.record.clone(), true);
        }
    }

    /// Queues `record` for decoding, unless it is already, with its
    /// managedFields entries parsed if `entries`.
    fn queue(&self, record: Arc<Record>, entries: bool) {
        let st = self.decodes.lock();
        if st.contains_key(&id(&record)) {
            return;
        }
        let decoded = self.ahead.spawn({
            let record = record.clone();
            move || {
                decode_apart(&record).map(|(v, m)| {
                    let parsed = match &m {
                        Some(text) if entries => Some(kubesim_core::patch::managed_entries(text)),
                        _ => None,
                    };
                    (v, m, parsed)
                })
            }
        });
        self.put(st, record, decoded);
    }

    /// Keeps the update prepared for `record`.
    pub(super) fn keep(&self, record: Arc<Record>, prepared: Prepared) {
        self.put(self.prepared.lock(), record, Box::new(prepared));
    }

    /// Holds `held` for `record` in `slots`; what no longer fits is freed
    /// on the helper thread.
    fn put<T: Send + 'static, const N: usize>(
        &self,
        mut slots: MutexGuard<'_, Slots<T, N>>,
        record: Arc<Record>,
        held: T,
    ) {
        let gone = slots.insert(id(&record), Slot { record, held });
        drop(slots);
        if !gone.is_empty() {
            self.ahead.drop_later(gone);
        }
    }

    /// The update prepared for `rec`, if there is one and it `fits` the
    /// request at hand; taken either way.
    pub(super) fn take_prepared(
        &self,
        rec: &Arc<Record>,
        fits: impl FnOnce(&Prepared) -> bool,
    ) -> Option<Box<Prepared>> {
        match take(&self.prepared, rec)? {
            p if fits(&p) => Some(p),
            held => {
                self.ahead.drop_later(held);
                None
            }
        }
    }

    /// The decode of `rec` if the thread has made or is making it (waiting
    /// for it then), with the parsed entries if the caller wants them; None
    /// if the caller is to decode it itself.
    fn take(&self, rec: &Arc<Record>, entries: bool) -> Option<Decoded> {
        let decoding = take(&self.decodes, rec)?;
        let decoded = if self.patient {
            decoding.get()
        } else {
            decoding.try_get()?
        };
        match decoded {
            Ok((v, m, Some(list))) if !entries => {
                self.ahead.drop_later(list);
                Some(Ok((v, m, None)))
            }
            d => Some(d),
        }
    }
}

#[cfg(test)]
impl Predecode {
    /// Whether an update is kept prepared for `rec`.
    pub(super) fn holds_prepared(&self, rec: &Arc<Record>) -> bool {
        self.prepared
            .lock()
            .get(&id(rec))
            .is_some_and(|s| Arc::ptr_eq(&s.record, rec))
    }
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
        let p = Predecode::new(Ahead::start(), true);
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
    fn objects_about_to_be_written_are_decoded_without_their_entries() {
        let p = Predecode::new(Ahead::start(), true);
        let rec = record(7, "Succeeded");
        p.queue(rec.clone(), false);
        // Queued once however often it is announced.
        p.queue(rec.clone(), false);
        assert_eq!(p.decodes.lock().len(), 1);
        let (v, m, entries) = p.take(&rec, false).unwrap().unwrap();
        let (want_v, want_m) = decode_apart(&rec).unwrap();
        assert_eq!(v, want_v);
        assert_eq!(m.unwrap().get(), want_m.unwrap().get());
        assert!(entries.is_none());
    }

    #[test]
    fn replaced_deleted_and_unoffered_revisions_are_not_kept() {
        let p = Predecode::new(Ahead::start(), true);
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
        assert!(p.decodes.lock().is_empty());
    }

    #[test]
    fn the_oldest_slots_go_beyond_the_bound() {
        let p = Predecode::new(Ahead::start(), true);
        let records: Vec<_> = (0..SLOTS as u64 + 10)
            .map(|i| record(i, "Running"))
            .collect();
        for r in &records {
            p.offer(&event(EventType::Added, r, None), true);
        }
        assert_eq!(p.decodes.lock().len(), SLOTS);
        // The oldest went; the newest are decoded as on demand.
        assert!(p.take(&records[0], true).is_none());
        let newest = records.last().unwrap();
        same(p.take(newest, true).unwrap(), newest);
    }

    #[test]
    fn decodes_do_not_push_out_prepared_updates() {
        let p = Predecode::new(Ahead::start(), true);
        let waiting = record(0, "Running");
        p.keep(waiting.clone(), Prepared::nothing());
        let records: Vec<_> = (1..=SLOTS as u64 * 2)
            .map(|i| record(i, "Running"))
            .collect();
        for r in &records {
            p.offer(&event(EventType::Added, r, None), true);
        }
        assert_eq!(p.decodes.lock().len(), SLOTS);
        assert!(p.holds_prepared(&waiting));
        // Taken by the request it was made for, and then gone.
        assert!(p.take_prepared(&waiting, |_| true).is_some());
        assert!(!p.holds_prepared(&waiting));
        // A replaced revision's prepared update goes with it.
        let next = record(SLOTS as u64 * 2 + 1, "Running");
        p.keep(next.clone(), Prepared::nothing());
        let after = record(SLOTS as u64 * 2 + 2, "Succeeded");
        p.offer(&event(EventType::Modified, &after, Some(&next)), false);
        assert!(!p.holds_prepared(&next));
    }
}
