//! The in-memory MVCC store, optionally backed by a durable persister.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use imbl::OrdMap;
use parking_lot::{Mutex, RwLock};
use tokio::sync::broadcast;

use crate::durable::{Loaded, Op, Persister};
use crate::history::History;
use crate::record::{Event, EventType, Record};
use crate::watch::{Resume, Subscription, WatchStream};
use crate::{Attrs, Committed, Snapshot, Store, StoreError, Usage, WriteOp};

/// Tuning of a [`MemStore`].
#[derive(Debug, Clone)]
pub struct Options {
    /// Events kept for watch resumption and old reads.
    pub history: usize,
    /// Bytes of replaced and deleted objects' records the history keeps
    /// alive, at most: the oldest events go first beyond it. Under churn
    /// of large objects this, not the event count, bounds the history's
    /// memory (a hundred thousand pod revisions are some 400 MiB).
    pub history_bytes: usize,
    /// Events each resource's live channel holds. A watcher that falls
    /// further behind catches up from the history, so this bounds only
    /// the memory of the channel (its slots are allocated up front).
    pub watch_buffer: usize,
    /// Reconstructed old snapshots kept for paging.
    pub snapshot_cache: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            history: 100_000,
            history_bytes: 256 << 20,
            watch_buffer: 1024,
            snapshot_cache: 16,
        }
    }
}

type Items = OrdMap<Arc<str>, Arc<Record>>;

/// One resource's objects.
#[derive(Default)]
struct Held {
    items: Items,
    /// The summed length of the records in `items`, kept with every write
    /// so that `/metrics` need not walk the objects.
    bytes: u64,
}

struct State {
    rev: u64,
    resources: HashMap<Arc<str>, Held>,
    history: History,
    channels: HashMap<Arc<str>, broadcast::Sender<Arc<Event>>>,
}

/// Computes a record's index attributes from its bytes (used when loading).
pub type Indexer = dyn Fn(&str, &[u8]) -> Attrs + Send + Sync;

pub struct MemStore {
    /// Shared with watch streams, which resubscribe through it when they
    /// fall behind their channel.
    state: Arc<RwLock<State>>,
    /// The newest revision, for waiters on any change (see
    /// [`Store::revisions`]).
    revs: tokio::sync::watch::Sender<u64>,
    opts: Options,
    snapshots: Mutex<VecDeque<(Arc<str>, Snapshot)>>,
    persister: Option<Persister>,
}

impl MemStore {
    /// A store that keeps everything in memory.
    pub fn ephemeral(opts: Options) -> Self {
        Self::build(opts, None, None, &|_, _| Attrs::default())
    }

    /// A store persisted in the database file at `path`; existing objects are
    /// loaded with their revisions, and `indexer` rebuilds their attributes.
    pub fn durable(
        path: &std::path::Path,
        opts: Options,
        indexer: &Indexer,
    ) -> Result<Self, StoreError> {
        let (persister, loaded) = Persister::open(path)?;
        Ok(Self::build(opts, Some(persister), Some(loaded), indexer))
    }

    fn build(
        opts: Options,
        persister: Option<Persister>,
        loaded: Option<Loaded>,
        indexer: &Indexer,
    ) -> Self {
        let mut resources: HashMap<Arc<str>, Held> = HashMap::new();
        let mut rev = 0;
        if let Some(l) = loaded {
            rev = l.rev;
            for o in l.objects {
                let attrs = indexer(&o.resource, &o.bytes);
                let held = resources.entry(Arc::from(o.resource.as_str())).or_default();
                held.bytes += o.bytes.len() as u64;
                let rec = Arc::new(Record {
                    rev: o.rev,
                    bytes: o.bytes,
                    attrs,
                });
                held.items.insert(Arc::from(o.key.as_str()), rec);
            }
        }
        MemStore {
            revs: tokio::sync::watch::Sender::new(rev),
            state: Arc::new(RwLock::new(State {
                rev,
                resources,
                history: History::new(opts.history, opts.history_bytes, rev),
                channels: HashMap::new(),
            })),
            snapshots: Mutex::new(VecDeque::new()),
            opts,
            persister,
        }
    }

    /// Flushes pending writes and stops the durable writer, if any.
    pub fn close(&self) {
        if let Some(p) = &self.persister {
            p.close();
        }
    }

    fn cached_snapshot(&self, resource: &str, rev: u64) -> Option<Snapshot> {
        self.snapshots
            .lock()
            .iter()
            .find(|(r, s)| &**r == resource && s.rev == rev)
            .map(|(_, s)| s.clone())
    }

    fn cache_snapshot(&self, resource: &str, snap: &Snapshot) {
        let mut c = self.snapshots.lock();
        if c.len() >= self.opts.snapshot_cache.max(1) {
            c.pop_front();
        }
        c.push_back((Arc::from(resource), snap.clone()));
    }
}

/// The events of `resource` after `after` still in the history, and a
/// subscription to the ones to come. Under the write lock, which orders
/// it against writers: every event is either in the backlog or delivered
/// live (duplicates skipped).
fn subscribe(
    st: &mut State,
    resource: &str,
    after: u64,
    buffer: usize,
) -> Result<Subscription, StoreError> {
    if after < st.history.compacted() {
        return Err(StoreError::Expired {
            requested: after,
            oldest: st.history.compacted(),
        });
    }
    let backlog: VecDeque<Arc<Event>> = st
        .history
        .since(after)
        .filter(|e| &*e.resource == resource)
        .cloned()
        .collect();
    let rx = match st.channels.get(resource) {
        Some(tx) => tx.subscribe(),
        None => {
            let (tx, rx) = broadcast::channel(buffer);
            st.channels.insert(Arc::from(resource), tx);
            rx
        }
    };
    Ok((backlog, rx))
}

impl Store for MemStore {
    fn current_rev(&self) -> u64 {
        self.state.read().rev
    }

    fn revisions(&self) -> tokio::sync::watch::Receiver<u64> {
        self.revs.subscribe()
    }

    fn get(&self, resource: &str, key: &str) -> Option<Arc<Record>> {
        self.state
            .read()
            .resources
            .get(resource)?
            .items
            .get(key)
            .cloned()
    }

    fn snapshot(&self, resource: &str, at: Option<u64>) -> Result<Snapshot, StoreError> {
        let st = self.state.read();
        let current = st
            .resources
            .get(resource)
            .map(|h| h.items.clone())
            .unwrap_or_default();
        let at = match at {
            None => {
                return Ok(Snapshot {
                    rev: st.rev,
                    items: current,
                })
            }
            Some(r) if r >= st.rev => {
                if r > st.rev {
                    return Err(StoreError::TooLarge {
                        requested: r,
                        current: st.rev,
                    });
                }
                return Ok(Snapshot {
                    rev: st.rev,
                    items: current,
                });
            }
            Some(r) => r,
        };
        if at < st.history.compacted() {
            return Err(StoreError::Expired {
                requested: at,
                oldest: st.history.compacted(),
            });
        }
        if let Some(s) = self.cached_snapshot(resource, at) {
            return Ok(s);
        }
        // Undo, newest first, every change of this resource made after `at`.
        let mut items = current;
        for ev in st.history.since(at).rev() {
            if &*ev.resource != resource {
                continue;
            }
            match &ev.prev {
                Some(prev) => {
                    items.insert(ev.key.clone(), prev.clone());
                }
                None => {
                    items.remove(&ev.key);
                }
            }
        }
        drop(st);
        let snap = Snapshot { rev: at, items };
        self.cache_snapshot(resource, &snap);
        Ok(snap)
    }

    fn write(
        &self,
        resource: &str,
        key: &str,
        decide: &mut dyn FnMut(Option<&Arc<Record>>, u64) -> WriteOp,
    ) -> Result<Committed, StoreError> {
        let mut guard = self.state.write();
        let st = &mut *guard;
        let new_rev = st.rev + 1;
        let (res_key, held) = match st.resources.get_key_value(resource) {
            Some((k, _)) => {
                let k = k.clone();
                let held = st.resources.get_mut(&k).expect("present");
                (k, held)
            }
            None => {
                let k: Arc<str> = Arc::from(resource);
                (k.clone(), st.resources.entry(k).or_default())
            }
        };
        let items = &mut held.items;
        let current = items.get(key).cloned();
        let key: Arc<str> = match items.get_key_value(key) {
            Some((k, _)) => k.clone(),
            None => Arc::from(key),
        };
        let (kind, record, op) = match decide(current.as_ref(), new_rev) {
            WriteOp::Abort => {
                return Ok(Committed {
                    rev: st.rev,
                    event: None,
                })
            }
            WriteOp::Put { bytes, attrs } => {
                let record = Arc::new(Record {
                    rev: new_rev,
                    bytes: bytes.clone(),
                    attrs,
                });
                items.insert(key.clone(), record.clone());
                held.bytes += record.bytes.len() as u64;
                if let Some(cur) = &current {
                    held.bytes -= cur.bytes.len() as u64;
                }
                let kind = if current.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                let op = Op::Put {
                    rev: new_rev,
                    resource: res_key.clone(),
                    key: key.clone(),
                    bytes,
                };
                (kind, record, op)
            }
            WriteOp::Delete { bytes } => {
                let Some(cur) = current.as_ref() else {
                    return Ok(Committed {
                        rev: st.rev,
                        event: None,
                    });
                };
                items.remove(&key);
                held.bytes -= cur.bytes.len() as u64;
                let record = Arc::new(Record {
                    rev: new_rev,
                    bytes,
                    attrs: cur.attrs.clone(),
                });
                let op = Op::Delete {
                    rev: new_rev,
                    resource: res_key.clone(),
                    key: key.clone(),
                };
                (EventType::Deleted, record, op)
            }
        };
        st.rev = new_rev;
        let event = Arc::new(Event {
            rev: new_rev,
            kind,
            resource: res_key.clone(),
            key,
            record,
            prev: current,
        });
        st.history.push(event.clone());
        if let Some(ch) = st.channels.get(&res_key) {
            // No receivers is fine: nobody watches this resource right now.
            let _ = ch.send(event.clone());
        }
        // Under the state lock, so waiters see revisions in order.
        self.revs.send_replace(new_rev);
        if let Some(p) = &self.persister {
            p.submit(op);
        }
        Ok(Committed {
            rev: new_rev,
            event: Some(event),
        })
    }

    fn watch(&self, resource: &str, after: u64) -> Result<WatchStream, StoreError> {
        let buffer = self.opts.watch_buffer.max(16);
        let (backlog, rx) = subscribe(&mut self.state.write(), resource, after, buffer)?;
        // A watcher that falls behind its channel catches up from the
        // history, while the history still reaches back far enough.
        let state = Arc::downgrade(&self.state);
        let resource: Arc<str> = Arc::from(resource);
        let resume: Resume = Box::new(move |after| {
            let state = state.upgrade()?;
            let mut st = state.write();
            subscribe(&mut st, &resource, after, buffer).ok()
        });
        Ok(WatchStream::new(backlog, rx, after, Some(resume)))
    }

    fn wait_durable(
        &self,
        rev: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StoreError>> + Send>> {
        match &self.persister {
            Some(p) => p.wait(rev),
            None => Box::pin(async { Ok(()) }),
        }
    }

    fn usage(&self) -> Vec<(String, Usage)> {
        let st = self.state.read();
        let mut v: Vec<(String, Usage)> = st
            .resources
            .iter()
            .map(|(k, h)| {
                let usage = Usage {
                    objects: h.items.len(),
                    bytes: h.bytes,
                };
                (k.to_string(), usage)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn compact(&self, rev: u64) {
        let mut st = self.state.write();
        let rev = rev.min(st.rev);
        st.history.compact_to(rev);
        // Snapshots below it can no longer be asked for.
        self.snapshots.lock().retain(|(_, s)| s.rev >= rev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn put(s: &MemStore, key: &str, body: &str) -> u64 {
        let body = body.to_string();
        s.write("pods", key, &mut |_, _| WriteOp::Put {
            bytes: Bytes::from(body.clone()),
            attrs: Attrs::default(),
        })
        .unwrap()
        .rev
    }

    fn del(s: &MemStore, key: &str) -> u64 {
        s.write("pods", key, &mut |_, _| WriteOp::Delete {
            bytes: Bytes::from_static(b"gone"),
        })
        .unwrap()
        .rev
    }

    fn keys(s: &Snapshot) -> Vec<String> {
        s.items.keys().map(|k| k.to_string()).collect()
    }

    #[test]
    fn revisions_are_global_and_monotonic() {
        let s = MemStore::ephemeral(Options::default());
        assert_eq!(put(&s, "a", "1"), 1);
        assert_eq!(put(&s, "b", "1"), 2);
        assert_eq!(put(&s, "a", "2"), 3);
        assert_eq!(s.get("pods", "a").unwrap().rev, 3);
        assert_eq!(s.current_rev(), 3);
    }

    #[test]
    fn old_snapshots_are_reconstructed() {
        let s = MemStore::ephemeral(Options::default());
        put(&s, "a", "1");
        put(&s, "b", "1");
        put(&s, "a", "2");
        del(&s, "b");
        put(&s, "c", "1");
        let at2 = s.snapshot("pods", Some(2)).unwrap();
        assert_eq!(keys(&at2), vec!["a", "b"]);
        assert_eq!(&at2.items.get("a").unwrap().bytes[..], b"1");
        let now = s.snapshot("pods", None).unwrap();
        assert_eq!(keys(&now), vec!["a", "c"]);
        assert!(matches!(
            s.snapshot("pods", Some(99)),
            Err(StoreError::TooLarge { .. })
        ));
    }

    #[test]
    fn compacted_revisions_expire() {
        let s = MemStore::ephemeral(Options {
            history: 2,
            ..Options::default()
        });
        for i in 0..5 {
            put(&s, &format!("k{i}"), "x");
        }
        assert!(matches!(
            s.snapshot("pods", Some(1)),
            Err(StoreError::Expired { .. })
        ));
        assert!(s.snapshot("pods", Some(3)).is_ok());
        assert!(matches!(
            s.watch("pods", 1),
            Err(StoreError::Expired { .. })
        ));
    }

    #[test]
    fn compaction_expires_older_revisions_and_keeps_newer_ones() {
        let s = MemStore::ephemeral(Options::default());
        for i in 0..5 {
            put(&s, &format!("k{i}"), "x");
        }
        let before = s.snapshot("pods", Some(2)).unwrap();
        assert_eq!(before.items.len(), 2);
        s.compact(3);
        assert!(matches!(
            s.snapshot("pods", Some(2)),
            Err(StoreError::Expired { oldest: 3, .. })
        ));
        assert!(matches!(
            s.watch("pods", 2),
            Err(StoreError::Expired { .. })
        ));
        assert_eq!(s.snapshot("pods", Some(3)).unwrap().items.len(), 3);
        assert!(s.watch("pods", 3).is_ok());
        // Beyond the newest revision it stops at the newest.
        s.compact(100);
        assert_eq!(s.snapshot("pods", None).unwrap().items.len(), 5);
        assert!(s.watch("pods", 5).is_ok());
    }

    #[tokio::test]
    async fn a_watcher_behind_its_channel_catches_up_from_the_history() {
        let s = MemStore::ephemeral(Options {
            watch_buffer: 16,
            ..Options::default()
        });
        let mut w = s.watch("pods", 0).unwrap();
        let mut other = s.watch("nodes", 0).unwrap();
        for i in 0..100 {
            put(&s, &format!("k{i}"), "x");
            if i % 10 == 0 {
                s.write("nodes", "n", &mut |_, _| WriteOp::Put {
                    bytes: Bytes::from_static(b"{}"),
                    attrs: Attrs::default(),
                })
                .unwrap();
            }
        }
        let mut keys = Vec::new();
        while let Some(e) = w.try_next() {
            assert_eq!(&*e.resource, "pods");
            keys.push(e.key.to_string());
        }
        let want: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
        assert_eq!(keys, want);
        let mut n = 0;
        while other.try_next().is_some() {
            n += 1;
        }
        assert_eq!(n, 10);
        // It follows live events again afterwards.
        put(&s, "late", "x");
        assert_eq!(&*w.next().await.unwrap().key, "late");
    }

    #[tokio::test]
    async fn a_watcher_behind_the_history_ends() {
        let s = MemStore::ephemeral(Options {
            watch_buffer: 16,
            history: 32,
            ..Options::default()
        });
        let mut w = s.watch("pods", 0).unwrap();
        for i in 0..100 {
            put(&s, &format!("k{i}"), "x");
        }
        assert!(w.next().await.is_none());
        assert!(w.try_next().is_none());
    }

    #[tokio::test]
    async fn watch_replays_then_follows() {
        let s = MemStore::ephemeral(Options::default());
        put(&s, "a", "1");
        put(&s, "b", "1");
        let mut w = s.watch("pods", 1).unwrap();
        put(&s, "c", "1");
        del(&s, "a");
        // Only "b" was in the history when the watch began.
        assert_eq!(w.backlog_end(), 2);
        assert_eq!(s.watch("pods", 4).unwrap().backlog_end(), 4);
        let mut seen = Vec::new();
        for _ in 0..3 {
            let e = w.next().await.unwrap();
            seen.push((e.rev, e.kind, e.key.to_string()));
        }
        assert_eq!(
            seen,
            vec![
                (2, EventType::Added, "b".to_string()),
                (3, EventType::Added, "c".to_string()),
                (4, EventType::Deleted, "a".to_string()),
            ]
        );
    }

    #[test]
    fn usage_follows_puts_updates_and_deletes() {
        let s = MemStore::ephemeral(Options::default());
        put(&s, "a", "12345");
        put(&s, "b", "123");
        put(&s, "a", "12"); // replaces 5 bytes by 2
        s.write("configmaps", "c", &mut |_, _| WriteOp::Put {
            bytes: Bytes::from_static(b"1234567"),
            attrs: Attrs::default(),
        })
        .unwrap();
        let usage = |objects, bytes| Usage { objects, bytes };
        assert_eq!(
            s.usage(),
            vec![
                ("configmaps".to_string(), usage(1, 7)),
                ("pods".to_string(), usage(2, 5)),
            ]
        );
        del(&s, "b");
        // Deleting what is not there changes nothing.
        del(&s, "missing");
        s.write("pods", "a", &mut |_, _| WriteOp::Abort).unwrap();
        assert_eq!(s.usage()[1], ("pods".to_string(), usage(1, 2)));
        del(&s, "a");
        assert_eq!(s.usage()[1], ("pods".to_string(), usage(0, 0)));
    }

    #[test]
    fn abort_changes_nothing() {
        let s = MemStore::ephemeral(Options::default());
        let c = s.write("pods", "a", &mut |_, _| WriteOp::Abort).unwrap();
        assert!(c.event.is_none());
        assert_eq!(s.current_rev(), 0);
    }

    #[tokio::test]
    async fn durable_store_survives_reopen() {
        let dir = std::env::temp_dir().join(format!("kubesim-store-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("db.redb");
        {
            let s = MemStore::durable(&path, Options::default(), &|_, _| Attrs::default()).unwrap();
            put(&s, "a", "1");
            put(&s, "b", "2");
            let r = del(&s, "a");
            s.wait_durable(r).await.unwrap();
            s.close();
        }
        let s = MemStore::durable(&path, Options::default(), &|_, _| Attrs::default()).unwrap();
        assert_eq!(s.current_rev(), 3);
        assert!(s.get("pods", "a").is_none());
        let b = s.get("pods", "b").unwrap();
        assert_eq!(b.rev, 2);
        assert_eq!(&b.bytes[..], b"2");
        // The loaded objects are counted as written ones are.
        assert_eq!(
            s.usage(),
            vec![(
                "pods".to_string(),
                Usage {
                    objects: 1,
                    bytes: 1
                }
            )]
        );
        // History starts empty after a restart: older revisions are gone.
        assert!(matches!(
            s.watch("pods", 1),
            Err(StoreError::Expired { .. })
        ));
        s.close();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
