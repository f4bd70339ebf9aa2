//! Informers: a local cache of one resource kept current by list-then-watch,
//! with handlers told of every change. Control loops read the cache instead
//! of the API and react to handler calls instead of polling, as upstream's
//! shared informers let them.
//!
//! One informer per resource is shared by every loop in a process
//! ([`Informers`]), so N controllers watching pods cost one watch and one
//! copy of each pod.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use kubesim_core::meta;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::watch;

pub use crate::cache::Cache;
use crate::cache::Lazy;
use crate::decode::Decode;
use crate::{Api, Clock, ListOptions, ResourceRef, ShapeCheck, WatchEvent};

/// `namespace/name` (namespace empty for cluster-scoped objects), ordered so
/// that iteration over a cache is deterministic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: &str, name: &str) -> Self {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
    pub fn of(obj: &Value) -> Self {
        Self::new(meta::namespace(obj), meta::name(obj))
    }
}

/// A borrowed `(namespace, name)` that finds an [`ObjectKey`] in a
/// [`KeyedMap`] without building a key (lookups by name are on the paths
/// of nearly every change): it hashes as the derived `Hash` of
/// `ObjectKey` does (namespace, then name).
#[derive(Hash)]
pub struct KeyRef<'a>(pub &'a str, pub &'a str);

impl From<&KeyRef<'_>> for ObjectKey {
    fn from(k: &KeyRef<'_>) -> Self {
        ObjectKey::new(k.0, k.1)
    }
}

impl hashbrown::Equivalent<ObjectKey> for KeyRef<'_> {
    fn equivalent(&self, key: &ObjectKey) -> bool {
        self.0 == key.namespace && self.1 == key.name
    }
}

/// Objects by key, hashed: for lookups on the paths of every change, where
/// a B-tree's string comparisons cost more. Its iteration order is not
/// fixed: nothing that reaches an output may iterate one.
pub type KeyedMap<V> = hashbrown::HashMap<ObjectKey, V>;

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// A change seen by an informer. `Deleted` carries the last known state.
#[derive(Debug, Clone)]
pub enum Change {
    Added(Arc<Value>),
    Modified { old: Lazy, new: Arc<Value> },
    Deleted(Arc<Value>),
}

impl Change {
    /// The object as it is now (or was last, when deleted).
    pub fn object(&self) -> &Arc<Value> {
        match self {
            Change::Added(o) | Change::Deleted(o) => o,
            Change::Modified { new, .. } => new,
        }
    }
}

pub type Handler = Arc<dyn Fn(&Change) + Send + Sync>;

/// Names a registered handler, for [`Informer::remove_handler`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandlerId(u64);

/// Delay before listing again after the API failed.
const RETRY: Duration = Duration::from_secs(1);
/// Page size of the initial list.
const PAGE: i64 = 500;

pub struct Informer {
    api: Arc<dyn Api>,
    resource: ResourceRef,
    namespace: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    clock: Clock,
    /// Applied to every object before it is cached (e.g. keep only
    /// metadata, for a consumer that needs nothing else).
    transform: Option<Transform>,
    /// Decodes what the transport hands over in serialized form, skipping
    /// what the cache would drop.
    decode: Decode,
    cache: Arc<Cache>,
    /// Each with the id [`on_change`](Informer::on_change) returned.
    handlers: Mutex<Vec<(HandlerId, Handler)>>,
    next_handler: std::sync::atomic::AtomicU64,
    synced: watch::Sender<bool>,
    /// With [`checked`](Informer::checked): what every object must pass
    /// to be cached.
    checked: Option<ShapeCheck>,
}

pub type Transform = fn(Value) -> Value;

/// What an informer keeps of each object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Shape {
    Full,
    /// [`metadata_only`].
    Metadata,
    /// [`ownership_only`].
    Ownership,
}

/// Keeps the identity, owner references, finalizers and deletion state of
/// an object: all the garbage collector needs, at a fraction of the size.
pub fn ownership_only(obj: Value) -> Value {
    let mut obj = metadata_only(obj);
    if let Some(Value::Object(md)) = obj.get_mut("metadata") {
        md.retain(|k, _| {
            matches!(
                k.as_str(),
                "name"
                    | "namespace"
                    | "uid"
                    | "resourceVersion"
                    | "ownerReferences"
                    | "finalizers"
                    | "deletionTimestamp"
                    | "deletionGracePeriodSeconds"
            )
        });
    }
    obj
}

/// Keeps `apiVersion`, `kind` and `metadata` only, as upstream's metadata
/// informers do (PartialObjectMetadata).
pub fn metadata_only(obj: Value) -> Value {
    match obj {
        Value::Object(mut m) => {
            m.retain(|k, _| k == "apiVersion" || k == "kind" || k == "metadata");
            if let Some(Value::Object(md)) = m.get_mut("metadata") {
                md.remove("managedFields");
            }
            Value::Object(m)
        }
        other => other,
    }
}

impl Informer {
    /// An informer on every object of `resource` (all namespaces).
    pub fn new(api: Arc<dyn Api>, resource: ResourceRef, clock: Clock) -> Arc<Self> {
        Self::filtered(api, resource, "", None, None, clock)
    }

    /// An informer restricted to a namespace and/or selectors.
    pub fn filtered(
        api: Arc<dyn Api>,
        resource: ResourceRef,
        namespace: &str,
        label_selector: Option<String>,
        field_selector: Option<String>,
        clock: Clock,
    ) -> Arc<Self> {
        Arc::new(Informer {
            api,
            resource,
            namespace: namespace.into(),
            label_selector,
            field_selector,
            clock,
            transform: None,
            decode: Decode::WithoutManagedFields,
            cache: Arc::default(),
            handlers: Mutex::new(Vec::new()),
            next_handler: Default::default(),
            synced: watch::channel(false).0,
            checked: None,
        })
    }

    /// This informer skips objects that do not decode as their kind
    /// ([`ShapeCheck`]): each is logged and left out of the cache and the
    /// handlers' view, and a deletion of one that was cached while well
    /// formed still removes it. For consumers that read objects as
    /// client-go's typed informers would (the load runner's measurements);
    /// the check walks every object, so the control loops, which read
    /// fields leniently and survive what they cannot read, go without it.
    pub fn checked(mut self: Arc<Self>) -> Arc<Self> {
        if let Some(i) = Arc::get_mut(&mut self) {
            i.checked = Some(ShapeCheck::new(&i.resource));
        }
        self
    }

    /// Whether `obj` may be cached (see [`checked`](Self::checked)).
    fn admits(&self, obj: &Value) -> bool {
        self.checked.as_ref().is_none_or(|c| c.admits(obj))
    }

    fn with_transform(mut self: Arc<Self>, t: Transform) -> Arc<Self> {
        if let Some(i) = Arc::get_mut(&mut self) {
            // Both shapes keep metadata at most.
            i.transform = Some(t);
            i.decode = Decode::MetadataOnly;
            i.cache = Arc::new(Cache::shaped(t, Decode::MetadataOnly));
        }
        self
    }

    fn shape(&self, obj: Value) -> Value {
        match self.transform {
            Some(t) => t(obj),
            None => obj,
        }
    }

    pub fn resource(&self) -> &ResourceRef {
        &self.resource
    }

    pub fn cache(&self) -> Arc<Cache> {
        self.cache.clone()
    }

    /// Registers `handler`. Objects already cached are replayed to it as
    /// `Added`, so a handler added late misses nothing.
    pub fn on_change(&self, handler: impl Fn(&Change) + Send + Sync + 'static) -> HandlerId {
        let handler: Handler = Arc::new(handler);
        let id = HandlerId(
            self.next_handler
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        // Holding the handler lock while replaying keeps a concurrent change
        // from reaching the handler before the replay of older state.
        let mut handlers = self.handlers.lock();
        for obj in self.cache.list() {
            self.tell(&handler, &Change::Added(obj));
        }
        handlers.push((id, handler));
        id
    }

    /// Unregisters a handler: it is told of no change after this returns.
    pub fn remove_handler(&self, id: HandlerId) {
        self.handlers.lock().retain(|(h, _)| *h != id);
    }

    /// Calls `handler`. One that panics on an object (of a shape no write
    /// through the API can store, read from an older store) is logged and
    /// the object skipped for it: the other objects and handlers go on.
    fn tell(&self, handler: &Handler, change: &Change) {
        let call = std::panic::AssertUnwindSafe(|| handler(change));
        if let Err(panic) = std::panic::catch_unwind(call) {
            let obj = change.object();
            tracing::error!(
                resource = %self.resource.plural,
                namespace = %meta::namespace(obj),
                name = %meta::name(obj),
                panic = %crate::panic_message(&*panic),
                "an informer handler panicked on an object; it is skipped"
            );
        }
    }

    pub fn has_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until the first list has filled the cache.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    fn emit(&self, change: Change) {
        let handlers = self.handlers.lock();
        for (_, h) in handlers.iter() {
            self.tell(h, &change);
        }
    }

    fn options(&self) -> ListOptions {
        ListOptions {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            ..Default::default()
        }
    }

    /// Lists every page at one snapshot; returns the objects and the
    /// snapshot's resourceVersion.
    /// Every object and the list's resourceVersion; the `first` list of a
    /// remote server's informer comes from its watch cache, whole (the
    /// server ignores a limit there). A relist, after an expired watch,
    /// reads through, as the cache may be behind what was already seen.
    async fn list_all(
        &self,
        first: bool,
    ) -> Result<(Vec<(Value, Option<Bytes>)>, String), kubesim_core::ApiError> {
        let mut opts = self.options();
        if first && self.api.lists_from_cache() {
            opts.resource_version = Some("0".into());
        } else {
            opts.limit = Some(PAGE);
        }
        let mut out = Vec::new();
        loop {
            let (list, bytes) = self
                .api
                .list_with_bytes(&self.resource, &self.namespace, &opts)
                .await?;
            let rv = meta::resource_version(&list).to_string();
            let next = list
                .pointer("/metadata/continue")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if let Value::Object(mut m) = list {
                if let Some(Value::Array(items)) = m.remove("items") {
                    // Each object keeps its own bytes (when the transport
                    // gave them), so the skipped leave with theirs.
                    out.extend(
                        items
                            .into_iter()
                            .zip(bytes.into_iter().chain(std::iter::repeat(None)))
                            .filter(|(o, _)| self.admits(o))
                            .map(|(o, b)| (self.shape(o), b)),
                    );
                }
            }
            if next.is_empty() {
                return Ok((out, rv));
            }
            opts.continue_token = Some(next);
        }
    }

    /// Makes the cache equal to `objects`, telling handlers what changed.
    /// Readers see the old or the new cache, never a partial one.
    fn replace(&self, objects: Vec<(Value, Option<Bytes>)>) {
        for c in self.cache.replace(objects) {
            self.emit(c);
        }
    }

    /// `json`: the object's serialized form, if the transport had it.
    fn apply(&self, event: WatchEvent, json: Option<bytes::Bytes>) -> Option<Change> {
        match event {
            WatchEvent::Added(o) | WatchEvent::Modified(o) if !self.admits(&o) => None,
            // The last well-formed state, if any was cached, is the one
            // the deletion reports.
            WatchEvent::Deleted(o) if !self.admits(&o) => {
                let last = self.cache.get(meta::namespace(&o), meta::name(&o))?;
                Some(self.cache.delete(Value::clone(&last)))
            }
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                Some(self.cache.upsert_with(self.shape(o), json))
            }
            WatchEvent::Deleted(o) => Some(self.cache.delete(self.shape(o))),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => None,
        }
    }

    /// Keeps the cache current forever: list, then watch from the list's
    /// resourceVersion; a watch that ends is resumed where it stopped, one
    /// that expired (410) or failed starts over with a list.
    pub async fn run(self: Arc<Self>) {
        let mut first = true;
        loop {
            if !first {
                // Each relist lists everything again: worth seeing when a
                // store's history is too short for its watchers.
                tracing::debug!(resource = %self.resource.plural, "informer relists");
            }
            let (objects, mut rv) = match self.list_all(first).await {
                Ok(x) => {
                    first = false;
                    x
                }
                // A resource no longer served (its CRD went away) is not
                // worth a warning; it may come back.
                Err(e) if e.code == 404 => {
                    self.clock.sleep(RETRY * 10).await;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(resource = %self.resource.plural, error = %e.message, "informer list failed");
                    self.clock.sleep(RETRY).await;
                    continue;
                }
            };
            self.replace(objects);
            self.synced.send_replace(true);
            // Watch until it must relist.
            loop {
                let mut opts = self.options();
                opts.resource_version = Some(rv.clone());
                opts.allow_bookmarks = self.api.watches_expire();
                let mut stream = match self
                    .api
                    .watch_decoded(&self.resource, &self.namespace, &opts, self.decode)
                    .await
                {
                    Ok(s) => s,
                    Err(e) => {
                        if e.code != 410 {
                            tracing::warn!(resource = %self.resource.plural, error = %e.message, "informer watch failed");
                            self.clock.sleep(RETRY).await;
                        }
                        break;
                    }
                };
                let mut relist = false;
                while let Some((ev, json)) = stream.next().await {
                    match &ev {
                        WatchEvent::Bookmark(v) => rv = v.clone(),
                        WatchEvent::Error(e) => {
                            if e.code != 410 {
                                tracing::warn!(resource = %self.resource.plural, error = %e.message, "informer watch error");
                            }
                            relist = true;
                            break;
                        }
                        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                            rv = meta::resource_version(o).to_string();
                        }
                    }
                    if let Some(change) = self.apply(ev, json) {
                        self.emit(change);
                    }
                }
                if relist {
                    break;
                }
            }
        }
    }
}

/// The shared informers of one process, one per resource (and filter).
pub struct Informers {
    api: Arc<dyn Api>,
    clock: Clock,
    /// Keyed by resource and whether the informer keeps metadata only.
    started: Mutex<BTreeMap<(ResourceRef, Shape), Arc<Informer>>>,
    spawner: Mutex<Option<tokio::sync::mpsc::UnboundedSender<Arc<Informer>>>>,
    pending: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Arc<Informer>>>>,
    /// Set once the informers stop being driven.
    done: tokio::sync::watch::Sender<bool>,
}

impl Informers {
    pub fn new(api: Arc<dyn Api>, clock: Clock) -> Arc<Self> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        Arc::new(Informers {
            api,
            clock,
            started: Mutex::new(BTreeMap::new()),
            spawner: Mutex::new(Some(tx)),
            pending: Mutex::new(Some(rx)),
            done: tokio::sync::watch::Sender::new(false),
        })
    }

    pub fn api(&self) -> Arc<dyn Api> {
        self.api.clone()
    }

    pub fn clock(&self) -> Clock {
        self.clock.clone()
    }

    /// The informer on every object of `resource`, created on first use;
    /// it runs once [`run`](Self::run) is being polled.
    pub fn get(&self, resource: &ResourceRef) -> Arc<Informer> {
        self.get_shaped(resource, Shape::Full)
    }

    /// The informer on the metadata of every object of `resource`
    /// ([`metadata_only`]), for consumers such as the garbage collector
    /// that must follow every kind but need little of each object.
    pub fn get_metadata(&self, resource: &ResourceRef) -> Arc<Informer> {
        self.get_shaped(resource, Shape::Metadata)
    }

    /// The informer on `resource` keeping `shape` of each object, or at
    /// least that much: a narrower shape is served by the full informer
    /// when one already runs, since a full object holds every field a
    /// narrower consumer reads, and a second watch would decode and cache
    /// each change twice. A full informer asked for after a narrower one
    /// does not replace it, so a process that runs both asks for the full
    /// one before starting its components.
    pub fn get_shaped(&self, resource: &ResourceRef, shape: Shape) -> Arc<Informer> {
        let mut started = self.started.lock();
        let full = (resource.clone(), Shape::Full);
        if let Some(i) = started.get(&full) {
            return i.clone();
        }
        let key = (resource.clone(), shape);
        if let Some(i) = started.get(&key) {
            return i.clone();
        }
        let mut i = Informer::new(self.api.clone(), resource.clone(), self.clock.clone());
        match shape {
            Shape::Full => {}
            Shape::Metadata => i = i.with_transform(metadata_only),
            Shape::Ownership => i = i.with_transform(ownership_only),
        }
        started.insert(key, i.clone());
        if let Some(tx) = self.spawner.lock().as_ref() {
            let _ = tx.send(i.clone());
        }
        i
    }

    /// Waits until every informer requested so far has synced.
    pub async fn wait_synced(&self) {
        let all: Vec<Arc<Informer>> = self.started.lock().values().cloned().collect();
        for i in all {
            i.wait_synced().await;
        }
    }

    /// Runs every informer, including those requested later, until dropped.
    /// Several components may call it: the first drives the informers, and
    /// the others wait as long as it does, so that each caller's task ends
    /// only when the informers stop, whichever task got to them first.
    pub async fn run(&self) {
        let taken = self.pending.lock().take();
        let Some(mut rx) = taken else {
            let mut done = self.done.subscribe();
            let _ = done.wait_for(|d| *d).await;
            return;
        };
        let mut running = futures::stream::FuturesUnordered::new();
        loop {
            tokio::select! {
                // A fixed polling order: the same inputs give the same run.
                biased;
                Some(i) = rx.recv() => running.push(i.run()),
                Some(()) = running.next(), if !running.is_empty() => {}
                else => break,
            }
        }
        self.done.send_replace(true);
    }
}
