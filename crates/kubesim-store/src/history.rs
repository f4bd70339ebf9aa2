//! The bounded event history: watch resumption and reads at old revisions.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::record::{Event, EventType};

pub(crate) struct History {
    events: VecDeque<Arc<Event>>,
    capacity: usize,
    /// Bytes of records the history alone keeps alive, at most.
    retired_budget: usize,
    /// Bytes of records that are no longer any object's current state
    /// (replaced or deleted) and live on only through the events held.
    retired: usize,
    /// Every revision <= this has been dropped: state at a revision below it
    /// can no longer be reconstructed.
    compacted: u64,
}

/// Bytes of records an event keeps alive that no object holds as its
/// current state: the state it replaced or deleted, and a deletion's
/// final state. They are freed when the event leaves the history (the
/// event before it for the same key, if still held, shares the replaced
/// record, and leaves first).
fn retired_by(ev: &Event) -> usize {
    let prev = ev.prev.as_ref().map_or(0, |r| r.bytes.len());
    match ev.kind {
        EventType::Deleted => prev + ev.record.bytes.len(),
        EventType::Added | EventType::Modified => prev,
    }
}

impl History {
    pub(crate) fn new(capacity: usize, retired_budget: usize, start_rev: u64) -> Self {
        History {
            events: VecDeque::new(),
            capacity: capacity.max(1),
            retired_budget,
            retired: 0,
            compacted: start_rev,
        }
    }

    /// Appends `ev`, then drops the oldest events while more are held than
    /// the capacity, or while the records only they keep alive exceed the
    /// budget (the newest event always stays).
    pub(crate) fn push(&mut self, ev: Arc<Event>) {
        self.retired += retired_by(&ev);
        self.events.push_back(ev);
        while self.events.len() > self.capacity
            || (self.retired > self.retired_budget && self.events.len() > 1)
        {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        if let Some(old) = self.events.pop_front() {
            self.retired -= retired_by(&old);
            self.compacted = old.rev;
        }
    }

    /// Drops the events up to `rev`: the state at revisions below it can
    /// no longer be reconstructed, nor watched from.
    pub(crate) fn compact_to(&mut self, rev: u64) {
        while self.events.front().is_some_and(|e| e.rev <= rev) {
            self.pop_front();
        }
        self.compacted = self.compacted.max(rev);
    }

    /// The oldest revision whose state is still known.
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }

    /// Events with revision > `after`, oldest first.
    pub(crate) fn since(&self, after: u64) -> impl DoubleEndedIterator<Item = &Arc<Event>> {
        let start = self.events.partition_point(|e| e.rev <= after);
        self.events.range(start..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use crate::Attrs;

    fn ev(rev: u64) -> Arc<Event> {
        Arc::new(Event {
            rev,
            kind: EventType::Added,
            resource: "pods".into(),
            key: "a".into(),
            record: Arc::new(Record {
                rev,
                bytes: Default::default(),
                attrs: Attrs::default(),
            }),
            prev: None,
        })
    }

    fn record(rev: u64, len: usize) -> Arc<Record> {
        Arc::new(Record {
            rev,
            bytes: vec![b'x'; len].into(),
            attrs: Attrs::default(),
        })
    }

    /// A write of `len` bytes at `rev` replacing (or, with `kind`
    /// Deleted, deleting) `prev`.
    fn change(rev: u64, kind: EventType, len: usize, prev: Option<&Arc<Record>>) -> Arc<Event> {
        Arc::new(Event {
            rev,
            kind,
            resource: "pods".into(),
            key: "a".into(),
            record: record(rev, len),
            prev: prev.cloned(),
        })
    }

    #[test]
    fn replaced_and_deleted_records_count_against_the_budget() {
        let mut h = History::new(100, 250, 0);
        let added = change(1, EventType::Added, 100, None);
        h.push(added.clone());
        // Current states cost nothing, however large.
        assert_eq!(h.retired, 0);
        let modified = change(2, EventType::Modified, 100, Some(&added.record));
        h.push(modified.clone());
        assert_eq!(h.retired, 100);
        // The deletion retires the state it removed and its own final
        // state (300 in all), over budget: the oldest event went, then the
        // next, which held the first replaced record.
        h.push(change(3, EventType::Deleted, 100, Some(&modified.record)));
        let revs: Vec<u64> = h.since(0).map(|e| e.rev).collect();
        assert_eq!(revs, vec![3]);
        assert_eq!(h.retired, 200);
        assert_eq!(h.compacted(), 2);
    }

    #[test]
    fn the_newest_event_stays_whatever_it_retires() {
        let mut h = History::new(100, 10, 0);
        let added = change(1, EventType::Added, 5, None);
        h.push(added.clone());
        h.push(change(2, EventType::Deleted, 50, Some(&added.record)));
        let revs: Vec<u64> = h.since(0).map(|e| e.rev).collect();
        assert_eq!(revs, vec![2]);
        assert_eq!(h.compacted(), 1);
        // Compacting it away returns the count to nothing.
        h.compact_to(2);
        assert_eq!(h.retired, 0);
        assert_eq!(h.since(0).count(), 0);
    }

    #[test]
    fn drops_oldest_and_tracks_compaction() {
        let mut h = History::new(2, usize::MAX, 0);
        h.push(ev(1));
        h.push(ev(2));
        h.push(ev(3));
        assert_eq!(h.compacted(), 1);
        let revs: Vec<u64> = h.since(1).map(|e| e.rev).collect();
        assert_eq!(revs, vec![2, 3]);
        assert_eq!(h.since(3).count(), 0);
    }

    #[test]
    fn compaction_drops_the_events_up_to_its_revision() {
        let mut h = History::new(10, usize::MAX, 0);
        for rev in 1..=5 {
            h.push(ev(rev));
        }
        h.compact_to(3);
        assert_eq!(h.compacted(), 3);
        let revs: Vec<u64> = h.since(0).map(|e| e.rev).collect();
        assert_eq!(revs, vec![4, 5]);
        // Never backwards.
        h.compact_to(2);
        assert_eq!(h.compacted(), 3);
        assert_eq!(h.since(0).count(), 2);
    }
}
