//! Committed values handed to the in-process watchers of their resource.
//!
//! Every in-process informer used to decode each watch event's bytes,
//! although the server had the object as a value a moment earlier when it
//! serialized it. At commit, the server now builds each waiting watcher's
//! shape of the value (without managedFields, or metadata only; see
//! [`shaped`]) and puts it in that watcher's inbox; the watcher takes it
//! with the event of the same record, and its consumer gets the value
//! instead of decoding the bytes. A shape costs a copy of what the
//! consumer keeps, where decoding cost a parse of the whole object.
//!
//! Nothing outlives its delivery: an inbox belongs to one watcher and is
//! dropped with it, an entry leaves it when its event (or a later one)
//! reaches the watcher, and an inbox holds at most [`INBOX`] entries, so a
//! watcher that falls behind decodes the bytes of what was dropped. The
//! store and its history keep bytes only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};

use kubesim_runtime::decode::Decode;
use kubesim_store::{Committed, Record};
use parking_lot::Mutex;
use serde_json::Value;

use super::shaped::shaped;

/// Entries an inbox holds at most: as many as the frames a watcher's
/// channel buffers.
const INBOX: usize = 256;

/// The values waiting for one watcher, oldest first.
pub(crate) struct Inbox {
    shape: Decode,
    entries: Mutex<VecDeque<(Arc<Record>, Arc<Value>)>>,
}

impl Inbox {
    /// The value of `rec`, if it was handed over; entries of records
    /// committed before it are dropped, as the watcher is past them.
    pub(crate) fn take(&self, rec: &Arc<Record>) -> Option<Arc<Value>> {
        let mut entries = self.entries.lock();
        while let Some((r, _)) = entries.front() {
            if r.rev > rec.rev {
                return None;
            }
            let (r, v) = entries.pop_front()?;
            if Arc::ptr_eq(&r, rec) {
                return Some(v);
            }
        }
        None
    }
}

/// The inboxes of the in-process watchers, by storage resource.
#[derive(Default)]
pub(crate) struct Handoff {
    inboxes: Mutex<HashMap<Arc<str>, Vec<Weak<Inbox>>>>,
}

impl Handoff {
    /// An inbox for a watcher of `resource` (a storage key) that wants
    /// values shaped as `shape` decodes them; None for shapes not worth
    /// building (the full object is as costly to copy as to decode).
    pub(crate) fn open(&self, resource: &str, shape: Decode) -> Option<Arc<Inbox>> {
        if shape == Decode::Full {
            return None;
        }
        let inbox = Arc::new(Inbox {
            shape,
            entries: Mutex::new(VecDeque::new()),
        });
        let mut all = self.inboxes.lock();
        let list = all.entry(Arc::from(resource)).or_default();
        list.retain(|w| w.strong_count() > 0);
        list.push(Arc::downgrade(&inbox));
        Some(inbox)
    }

    /// Hands `obj`, just committed into `committed`'s record, to the
    /// watchers of its resource.
    pub(crate) fn commit(&self, committed: &Committed, obj: &Value) {
        let Some(ev) = &committed.event else { return };
        let open: Vec<Arc<Inbox>> = {
            let mut all = self.inboxes.lock();
            let Some(list) = all.get_mut(&ev.resource) else {
                return;
            };
            list.retain(|w| w.strong_count() > 0);
            if list.is_empty() {
                all.remove(&ev.resource);
                return;
            }
            list.iter().filter_map(Weak::upgrade).collect()
        };
        // Built outside the lock, once per shape.
        let mut built: Vec<(Decode, Arc<Value>)> = Vec::new();
        for inbox in open {
            let value = match built.iter().find(|(s, _)| *s == inbox.shape) {
                Some((_, v)) => v.clone(),
                None => {
                    let v = Arc::new(shaped(inbox.shape, obj));
                    built.push((inbox.shape, v.clone()));
                    v
                }
            };
            let mut entries = inbox.entries.lock();
            if entries.len() >= INBOX {
                entries.pop_front();
            }
            entries.push_back((ev.record.clone(), value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesim_store::{Attrs, Event, EventType};
    use serde_json::json;

    fn committed(rev: u64) -> Committed {
        let record = Arc::new(Record {
            rev,
            bytes: bytes::Bytes::from_static(b"{}"),
            attrs: Attrs::default(),
        });
        Committed {
            rev,
            event: Some(Arc::new(Event {
                rev,
                kind: EventType::Added,
                resource: Arc::from("pods"),
                key: Arc::from("ns/p"),
                record,
                prev: None,
            })),
        }
    }

    fn record(c: &Committed) -> Arc<Record> {
        c.event.as_ref().unwrap().record.clone()
    }

    fn obj(n: u64) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "managedFields": [{"manager": "m"}], "resourceVersion": n.to_string()},
            "spec": {"n": n}})
    }

    #[test]
    fn a_watcher_takes_its_shape_of_each_commit_once() {
        let h = Handoff::default();
        let all = h.open("pods", Decode::WithoutManagedFields).unwrap();
        let head = h.open("pods", Decode::MetadataOnly).unwrap();
        assert!(h.open("pods", Decode::Full).is_none());
        let (c1, c2, c3) = (committed(1), committed(2), committed(3));
        h.commit(&c1, &obj(1));
        h.commit(&c2, &obj(2));
        h.commit(&c3, &obj(3));
        // Another resource's commits reach nobody here.
        let mut other = committed(4);
        if let Some(ev) = other.event.as_mut() {
            Arc::get_mut(ev).unwrap().resource = Arc::from("nodes");
        }
        h.commit(&other, &obj(4));

        assert_eq!(
            *all.take(&record(&c1)).unwrap(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "resourceVersion": "1"}, "spec": {"n": 1}})
        );
        assert!(all.take(&record(&c1)).is_none(), "taken once");
        // The watcher skipped the second event (filtered out): its entry goes.
        assert_eq!(all.take(&record(&c3)).unwrap()["spec"]["n"], 3);
        assert!(all.entries.lock().is_empty());
        assert_eq!(
            *head.take(&record(&c2)).unwrap(),
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "resourceVersion": "2"}})
        );
        // A record this server did not hand over (same revision, other
        // record) gets nothing.
        assert!(head.take(&record(&committed(3))).is_none());
        assert!(head.entries.lock().is_empty());
    }

    #[test]
    fn inboxes_are_bounded_and_go_with_their_watcher() {
        let h = Handoff::default();
        let inbox = h.open("pods", Decode::MetadataOnly).unwrap();
        let commits: Vec<Committed> = (1..=INBOX as u64 + 10).map(committed).collect();
        for c in &commits {
            h.commit(c, &obj(c.rev));
        }
        assert_eq!(inbox.entries.lock().len(), INBOX);
        assert!(inbox.take(&record(&commits[0])).is_none(), "dropped");
        assert!(inbox.take(&record(&commits[20])).is_some());
        drop(inbox);
        h.commit(&committed(1000), &obj(1000));
        assert!(h.inboxes.lock().is_empty());
    }
}
