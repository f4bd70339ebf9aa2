//! Committed values handed to the in-process watchers of their resource.
//!
//! Every in-process informer used to decode each watch event's bytes,
//! although the server had the object as a value a moment earlier when it
//! serialized it. Now the server builds each open watcher's shape of the
//! value about to be committed (without managedFields, or metadata only;
//! see [`shaped`]) and, once it is committed, stamps its revision and puts
//! it in that watcher's inbox; the watcher takes it with the event of the
//! same record, and its consumer gets the value instead of decoding the
//! bytes. A shape costs a copy of what the consumer keeps, where decoding
//! cost a parse of the whole object. The shapes are built before the write
//! so that the entry is in the inbox by the time a watcher running on
//! another thread sees the event, or very nearly (a watcher that is faster
//! decodes the bytes, as before).
//!
//! Nothing outlives its delivery: an inbox belongs to one watcher and is
//! dropped with it, an entry leaves it when its event (or a later one)
//! reaches the watcher, and an inbox holds at most [`INBOX`] entries. A
//! watcher further behind than that (informers under a burst of writes
//! over HTTP) is given nothing more until it catches up, and decodes the
//! bytes of those events: building values it would only drop would cost
//! the writer without saving the watcher anything. The store and its
//! history keep bytes only.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};

use kubesim_runtime::decode::Decode;
use kubesim_store::{Committed, Record};
use parking_lot::Mutex;
use serde_json::Value;

use super::decoded_without_parsing::{shaped, shaped_owned};

/// Entries an inbox holds at most: as many as the frames a watcher's
/// channel buffers.
const INBOX: usize = 256;

/// The values waiting for one watcher, oldest first.
pub(crate) struct Inbox {
    shape: Decode,
    entries: Mutex<VecDeque<(Arc<Record>, Arc<Value>)>>,
}

impl Inbox {
    fn full(&self) -> bool {
        self.entries.lock().len() >= INBOX
    }

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

    /// The shapes of `obj`, about to be committed to `resource` (a storage
    /// key), for the watchers open now; None when there are none. `obj`
    /// must hold a `metadata.resourceVersion` (of any value) where the
    /// commit writes the real one, so that stamping it later keeps the
    /// key order.
    pub(crate) fn prepare(&self, resource: &str, obj: &Value) -> Option<Prepared> {
        let inboxes = self.open_inboxes(resource)?;
        // Built outside the lock, once per shape.
        let shapes = distinct_shapes(&inboxes)
            .into_iter()
            .map(|d| (d, shaped(d, obj)))
            .collect();
        Some(Prepared { inboxes, shapes })
    }

    /// Hands `obj`, just committed to `resource` (a storage key) as
    /// `committed` and stamped with its revision, to the watchers open
    /// now, when its writer needs it no more: the last shape is built by
    /// moving `obj` instead of copying it. The entries reach the inboxes
    /// after the event has been published, so a watcher on another thread
    /// may decode that event's bytes instead; on the thread of the writer
    /// (the simulation's), it finds them there.
    pub(crate) fn hand_over(&self, resource: &str, obj: Value, committed: &Committed) {
        let Some(inboxes) = self.open_inboxes(resource) else {
            return;
        };
        let mut wanted = distinct_shapes(&inboxes);
        let Some(last) = wanted.pop() else { return };
        let mut shapes: Vec<(Decode, Value)> =
            wanted.into_iter().map(|d| (d, shaped(d, &obj))).collect();
        shapes.push((last, shaped_owned(last, obj)));
        self.deliver(Prepared { inboxes, shapes }, committed);
    }

    /// The inboxes of `resource`'s watchers that have room; None when
    /// there are none.
    fn open_inboxes(&self, resource: &str) -> Option<Vec<Arc<Inbox>>> {
        let inboxes: Vec<Arc<Inbox>> = {
            let mut all = self.inboxes.lock();
            let list = all.get_mut(resource)?;
            list.retain(|w| w.strong_count() > 0);
            if list.is_empty() {
                all.remove(resource);
                return None;
            }
            list.iter()
                .filter_map(Weak::upgrade)
                .filter(|i| !i.full())
                .collect()
        };
        (!inboxes.is_empty()).then_some(inboxes)
    }

    /// Hands the prepared shapes to their watchers once the write is
    /// committed, stamped with its revision.
    pub(crate) fn deliver(&self, prepared: Prepared, committed: &Committed) {
        let Some(ev) = &committed.event else { return };
        let rv = committed.rev.to_string();
        let shapes: Vec<(Decode, Arc<Value>)> = prepared
            .shapes
            .into_iter()
            .filter_map(|(shape, mut v)| {
                let md = v.get_mut("metadata")?.as_object_mut()?;
                // Replaced in place; a shape without it is not delivered.
                *md.get_mut("resourceVersion")? = Value::String(rv.clone());
                Some((shape, Arc::new(v)))
            })
            .collect();
        for inbox in prepared.inboxes {
            let Some((_, value)) = shapes.iter().find(|(s, _)| *s == inbox.shape) else {
                continue;
            };
            let mut entries = inbox.entries.lock();
            if entries.len() < INBOX {
                entries.push_back((ev.record.clone(), value.clone()));
            }
        }
    }
}

/// The shapes `inboxes` want, each once, in the order first wanted.
fn distinct_shapes(inboxes: &[Arc<Inbox>]) -> Vec<Decode> {
    let mut shapes: Vec<Decode> = Vec::new();
    for inbox in inboxes {
        if !shapes.contains(&inbox.shape) {
            shapes.push(inbox.shape);
        }
    }
    shapes
}

/// What [`Handoff::prepare`] built, waiting for the commit.
pub(crate) struct Prepared {
    inboxes: Vec<Arc<Inbox>>,
    shapes: Vec<(Decode, Value)>,
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
            "metadata": {"name": "p", "managedFields": [{"manager": "m"}], "resourceVersion": ""},
            "spec": {"n": n}})
    }

    /// What a write does: prepare, commit, deliver.
    fn commit(h: &Handoff, c: &Committed, obj: &Value) {
        let resource = c.event.as_ref().unwrap().resource.clone();
        if let Some(p) = h.prepare(&resource, obj) {
            h.deliver(p, c);
        }
    }

    #[test]
    fn a_watcher_takes_its_shape_of_each_commit_once() {
        let h = Handoff::default();
        let all = h.open("pods", Decode::WithoutManagedFields).unwrap();
        let head = h.open("pods", Decode::MetadataOnly).unwrap();
        assert!(h.open("pods", Decode::Full).is_none());
        let (c1, c2, c3) = (committed(1), committed(2), committed(3));
        commit(&h, &c1, &obj(1));
        commit(&h, &c2, &obj(2));
        commit(&h, &c3, &obj(3));
        // Another resource's commits reach nobody here.
        let mut other = committed(4);
        if let Some(ev) = other.event.as_mut() {
            Arc::get_mut(ev).unwrap().resource = Arc::from("nodes");
        }
        commit(&h, &other, &obj(4));

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
    fn handing_over_gives_each_watcher_what_preparing_gives() {
        let (copied, moved) = (Handoff::default(), Handoff::default());
        let shapes = [Decode::WithoutManagedFields, Decode::MetadataOnly];
        let open = |h: &Handoff| shapes.map(|d| h.open("pods", d).unwrap());
        let (a, b) = (open(&copied), open(&moved));
        let c = committed(5);
        let mut stamped = obj(5);
        stamped["metadata"]["resourceVersion"] = json!("5");
        commit(&copied, &c, &stamped);
        moved.hand_over("pods", stamped, &c);
        for (a, b) in a.iter().zip(&b) {
            let (a, b) = (a.take(&record(&c)).unwrap(), b.take(&record(&c)).unwrap());
            assert_eq!(a.to_string(), b.to_string());
        }
        // Nobody watching: nothing is built.
        Handoff::default().hand_over("pods", obj(6), &committed(6));
    }

    #[test]
    fn inboxes_are_bounded_and_go_with_their_watcher() {
        let h = Handoff::default();
        let inbox = h.open("pods", Decode::MetadataOnly).unwrap();
        let commits: Vec<Committed> = (1..=INBOX as u64 + 10).map(committed).collect();
        for c in &commits {
            commit(&h, c, &obj(c.rev));
        }
        assert_eq!(inbox.entries.lock().len(), INBOX);
        // The first ones are kept for when the watcher gets to them; the
        // rest were not built.
        assert!(inbox.take(&record(&commits[0])).is_some());
        assert!(inbox.take(&record(&commits[INBOX - 1])).is_some());
        assert!(inbox.take(&record(&commits[INBOX])).is_none());
        assert!(inbox.entries.lock().is_empty());
        drop(inbox);
        commit(&h, &committed(1000), &obj(1000));
        assert!(h.inboxes.lock().is_empty());
    }
}
