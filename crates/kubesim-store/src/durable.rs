//! Durability for [`MemStore`](crate::MemStore): every committed write is
//! queued, in revision order, to a writer thread that group-commits batches
//! into a redb database. A write is acknowledged to clients only once its
//! batch is durable (see `Store::wait_durable`), so `kill -9` loses nothing
//! that was acknowledged.
//!
//! redb was chosen over a home-grown log: it is pure Rust, ACID with
//! copy-on-write pages (no recovery code of ours to get wrong), and a
//! single-writer design that matches one commit thread.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::watch;

use crate::StoreError;

const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const REV_KEY: &str = "revision";
/// Upper bound of writes folded into one transaction.
const MAX_BATCH: usize = 4096;

pub(crate) enum Op {
    Put {
        rev: u64,
        resource: Arc<str>,
        key: Arc<str>,
        bytes: Bytes,
    },
    Delete {
        rev: u64,
        resource: Arc<str>,
        key: Arc<str>,
    },
}

impl Op {
    fn rev(&self) -> u64 {
        match self {
            Op::Put { rev, .. } | Op::Delete { rev, .. } => *rev,
        }
    }
}

/// One stored object as loaded at start.
pub struct LoadedObject {
    pub resource: String,
    pub key: String,
    pub rev: u64,
    pub bytes: Bytes,
}

/// The database contents at start.
pub struct Loaded {
    pub rev: u64,
    pub objects: Vec<LoadedObject>,
}

pub struct Persister {
    tx: Mutex<Option<mpsc::Sender<Op>>>,
    durable: watch::Receiver<u64>,
    failure: Arc<Mutex<Option<String>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

fn db_key(resource: &str, key: &str) -> String {
    format!("{resource}\u{0}{key}")
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl Persister {
    /// Opens (or creates) the database at `path` and reads its contents.
    pub fn open(path: &Path) -> Result<(Persister, Loaded), StoreError> {
        let db = Database::create(path).map_err(backend)?;
        let loaded = load(&db)?;
        let (tx, rx) = mpsc::channel::<Op>();
        let (durable_tx, durable) = watch::channel(loaded.rev);
        let failure = Arc::new(Mutex::new(None));
        let fail = failure.clone();
        let thread = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || writer(db, rx, durable_tx, fail))
            .map_err(backend)?;
        Ok((
            Persister {
                tx: Mutex::new(Some(tx)),
                durable,
                failure,
                thread: Mutex::new(Some(thread)),
            },
            loaded,
        ))
    }

    pub(crate) fn submit(&self, op: Op) {
        if let Some(tx) = self.tx.lock().as_ref() {
            // A send fails only after the writer died; the failure is
            // reported to whoever waits for durability.
            let _ = tx.send(op);
        }
    }

    pub(crate) fn wait(
        &self,
        rev: u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), StoreError>> + Send>> {
        let mut rx = self.durable.clone();
        let failure = self.failure.clone();
        Box::pin(async move {
            loop {
                if *rx.borrow_and_update() >= rev {
                    return Ok(());
                }
                if let Some(f) = failure.lock().clone() {
                    return Err(StoreError::Backend(f));
                }
                if rx.changed().await.is_err() {
                    let f = failure.lock().clone();
                    return Err(StoreError::Backend(
                        f.unwrap_or_else(|| "store writer stopped".into()),
                    ));
                }
            }
        })
    }

    /// Flushes everything queued and stops the writer.
    pub fn close(&self) {
        self.tx.lock().take();
        if let Some(t) = self.thread.lock().take() {
            let _ = t.join();
        }
    }
}

impl Drop for Persister {
    fn drop(&mut self) {
        self.close();
    }
}

fn load(db: &Database) -> Result<Loaded, StoreError> {
    let txn = db.begin_read().map_err(backend)?;
    let mut loaded = Loaded {
        rev: 0,
        objects: Vec::new(),
    };
    match txn.open_table(META) {
        Ok(meta) => {
            if let Some(v) = meta.get(REV_KEY).map_err(backend)? {
                loaded.rev = v.value();
            }
        }
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(loaded),
        Err(e) => return Err(backend(e)),
    }
    let table = match txn.open_table(OBJECTS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(loaded),
        Err(e) => return Err(backend(e)),
    };
    for entry in table.iter().map_err(backend)? {
        let (k, v) = entry.map_err(backend)?;
        let (resource, key) = k
            .value()
            .split_once('\u{0}')
            .map(|(r, k)| (r.to_string(), k.to_string()))
            .ok_or_else(|| StoreError::Backend("malformed key in database".into()))?;
        let value = v.value();
        if value.len() < 8 {
            return Err(StoreError::Backend("malformed value in database".into()));
        }
        let mut revb = [0u8; 8];
        revb.copy_from_slice(&value[..8]);
        loaded.objects.push(LoadedObject {
            resource,
            key,
            rev: u64::from_be_bytes(revb),
            bytes: Bytes::copy_from_slice(&value[8..]),
        });
    }
    Ok(loaded)
}

fn writer(
    db: Database,
    rx: mpsc::Receiver<Op>,
    durable: watch::Sender<u64>,
    failure: Arc<Mutex<Option<String>>>,
) {
    let mut batch: Vec<Op> = Vec::new();
    while let Ok(first) = rx.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let top = batch.iter().map(Op::rev).max().unwrap_or(0);
        match commit(&db, &batch) {
            Ok(()) => {
                durable.send_replace(top);
            }
            Err(e) => {
                tracing::error!(error = %e, "store commit failed");
                *failure.lock() = Some(e.to_string());
                // Wake waiters so they report the failure instead of hanging.
                durable.send_modify(|_| {});
                return;
            }
        }
        batch.clear();
    }
}

fn commit(db: &Database, batch: &[Op]) -> Result<(), StoreError> {
    let txn = db.begin_write().map_err(backend)?;
    {
        let mut objects = txn.open_table(OBJECTS).map_err(backend)?;
        let mut value = Vec::new();
        for op in batch {
            match op {
                Op::Put {
                    rev,
                    resource,
                    key,
                    bytes,
                } => {
                    value.clear();
                    value.extend_from_slice(&rev.to_be_bytes());
                    value.extend_from_slice(bytes);
                    objects
                        .insert(db_key(resource, key).as_str(), value.as_slice())
                        .map_err(backend)?;
                }
                Op::Delete { resource, key, .. } => {
                    objects
                        .remove(db_key(resource, key).as_str())
                        .map_err(backend)?;
                }
            }
        }
        let mut meta = txn.open_table(META).map_err(backend)?;
        let top = batch.iter().map(Op::rev).max().unwrap_or(0);
        meta.insert(REV_KEY, top).map_err(backend)?;
    }
    txn.commit().map_err(backend)?;
    Ok(())
}
