//! The bounded event history: watch resumption and reads at old revisions.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::record::Event;

pub(crate) struct History {
    events: VecDeque<Arc<Event>>,
    capacity: usize,
    /// Every revision <= this has been dropped: state at a revision below it
    /// can no longer be reconstructed.
    compacted: u64,
}

impl History {
    pub(crate) fn new(capacity: usize, start_rev: u64) -> Self {
        History {
            events: VecDeque::new(),
            capacity: capacity.max(1),
            compacted: start_rev,
        }
    }

    pub(crate) fn push(&mut self, ev: Arc<Event>) {
        if self.events.len() >= self.capacity {
            if let Some(old) = self.events.pop_front() {
                self.compacted = old.rev;
            }
        }
        self.events.push_back(ev);
    }

    /// Drops the events up to `rev`: the state at revisions below it can
    /// no longer be reconstructed, nor watched from.
    pub(crate) fn compact_to(&mut self, rev: u64) {
        while self.events.front().is_some_and(|e| e.rev <= rev) {
            self.events.pop_front();
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
    use crate::record::{EventType, Record};
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

    #[test]
    fn drops_oldest_and_tracks_compaction() {
        let mut h = History::new(2, 0);
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
        let mut h = History::new(10, 0);
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
