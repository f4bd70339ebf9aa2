//! The object cache behind an informer. Objects are kept as serialized JSON
//! (a parsed pod costs ten times its JSON) plus the few fields lookups need
//! parsed: labels, the controlling owner's uid, and a pod's node. Reads
//! parse on demand, so look objects up through the narrowest accessor
//! ([`Cache::select`], [`Cache::controlled_by`], [`Cache::on_node`]) rather
//! than parsing a whole namespace to filter it.
//!
//! `metadata.managedFields` is dropped on the way out: no control loop
//! reads it. When the transport hands over the object's serialized form
//! (in process, the API server's stored bytes), the cache keeps those
//! bytes, shared rather than copied; otherwise it serializes the object
//! itself. A shaped cache (e.g. metadata only) applies its shape on parse.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use kubesim_core::meta;
use kubesim_core::selector::LabelSelector;
use kubesim_store::Attrs;
use parking_lot::RwLock;
use serde_json::Value;

use crate::decode::{self, Decode};
use crate::informer::{Change, KeyRef, KeyedMap, ObjectKey, Transform};

/// Number of fixed strings at the front of [`Entry::packed`].
const FIXED: usize = 3;

#[derive(Clone)]
struct Entry {
    json: Bytes,
    /// The resourceVersion, the controlling owner's uid and the pod's node
    /// ("" when none), then label keys and values in turn: one allocation
    /// rather than one per string, which matters with a hundred thousand
    /// pods in each of several caches.
    packed: Attrs,
}

fn label_of<'a>(labels: &'a Attrs, key: &str) -> Option<&'a str> {
    let mut it = labels.iter().skip(FIXED);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        if k == key {
            return Some(v);
        }
    }
    None
}

impl Entry {
    /// `obj` as cached, with its serialized form if the caller has it.
    fn of(obj: &Value, json: Option<Bytes>) -> Self {
        let controller = meta::pointer(obj, "/metadata/ownerReferences")
            .and_then(Value::as_array)
            .and_then(|refs| {
                refs.iter()
                    .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
            })
            .and_then(|r| r.get("uid"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let node = meta::pointer(obj, "/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let labels = meta::labels(obj);
        let fixed = [meta::resource_version(obj), controller, node];
        Entry {
            json: json.unwrap_or_else(|| {
                Bytes::from(
                    serde_json::to_vec(obj)
                        .unwrap_or_default()
                        .into_boxed_slice(),
                )
            }),
            packed: Attrs::new(
                fixed
                    .into_iter()
                    .chain(labels.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()])),
            ),
        }
    }

    fn fixed(&self, i: usize) -> &str {
        self.packed.iter().nth(i).unwrap_or("")
    }

    fn resource_version(&self) -> &str {
        self.fixed(0)
    }

    fn controller(&self) -> Option<&str> {
        Some(self.fixed(1)).filter(|c| !c.is_empty())
    }

    fn node(&self) -> Option<&str> {
        Some(self.fixed(2)).filter(|n| !n.is_empty())
    }

    fn parse(&self, shape: Option<(Transform, Decode)>) -> Arc<Value> {
        // The bytes were serialized from a Value, so they parse back.
        Arc::new(match shape {
            Some((t, decode)) => t(decode.bytes(&self.json).unwrap_or(Value::Null)),
            None => decode::without_managed_fields(&self.json).unwrap_or(Value::Null),
        })
    }

    fn labels_match(&self, selector: &LabelSelector) -> bool {
        selector.matches(&|k| label_of(&self.packed, k))
    }
}

/// A cached object whose few indexed fields are at hand and which is
/// parsed only when first read (through `Deref`): an object's state before
/// a change, or one of a listing whose readers mostly need only labels,
/// owners or resourceVersions. Most handlers only compare labels, owners
/// or nodes, and parsing every replaced object cost more than they did.
#[derive(Clone)]
pub struct Lazy {
    entry: Entry,
    shape: Option<(Transform, Decode)>,
    parsed: OnceLock<Arc<Value>>,
}

impl Lazy {
    fn new(entry: Entry, shape: Option<(Transform, Decode)>) -> Self {
        Lazy {
            entry,
            shape,
            parsed: OnceLock::new(),
        }
    }

    /// An object already parsed (one a controller just wrote, say), for
    /// readers that take cached objects.
    pub fn parsed(obj: Arc<Value>) -> Self {
        let lazy = Lazy::new(Entry::of(&obj, None), None);
        let _ = lazy.parsed.set(obj);
        lazy
    }

    /// The whole object, parsed once.
    pub fn object(&self) -> &Arc<Value> {
        self.parsed.get_or_init(|| self.entry.parse(self.shape))
    }

    pub fn resource_version(&self) -> &str {
        self.entry.resource_version()
    }

    /// The uid of the controlling owner.
    pub fn controller(&self) -> Option<&str> {
        self.entry.controller()
    }

    /// `spec.nodeName` (None when unset or empty).
    pub fn node(&self) -> Option<&str> {
        self.entry.node()
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        label_of(&self.entry.packed, key)
    }

    /// Whether `selector` matches the labels.
    pub fn labels_match(&self, selector: &LabelSelector) -> bool {
        self.entry.labels_match(selector)
    }

    /// Whether `obj` has the same labels, compared as `meta::labels`
    /// gives them but without building either map.
    pub fn same_labels(&self, obj: &Value) -> bool {
        let theirs = meta::metadata(obj)
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object);
        let mut it = self.entry.packed.iter().skip(FIXED);
        let mut n = 0;
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            if theirs.and_then(|m| m.get(k)).and_then(Value::as_str) != Some(v) {
                return false;
            }
            n += 1;
        }
        let strings = theirs.map_or(0, |m| m.values().filter(|v| v.is_string()).count());
        strings == n
    }

    /// The labels, as `meta::labels` gives them.
    pub fn labels(&self) -> BTreeMap<String, String> {
        let mut it = self.entry.packed.iter().skip(FIXED);
        let mut out = BTreeMap::new();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            out.insert(k.to_string(), v.to_string());
        }
        out
    }
}

impl std::ops::Deref for Lazy {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.object()
    }
}

impl std::fmt::Debug for Lazy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}

/// The objects by key, hashed for the lookups every change makes (a
/// node's existence, an object's resourceVersion), and their keys in
/// order for whatever is listed: nothing iterates the hashed map, so its
/// order reaches no output.
#[derive(Default)]
struct Inner {
    objects: KeyedMap<Entry>,
    order: BTreeSet<ObjectKey>,
    by_controller: BTreeMap<String, BTreeSet<ObjectKey>>,
    by_node: BTreeMap<String, BTreeSet<ObjectKey>>,
}

impl Inner {
    fn get(&self, namespace: &str, name: &str) -> Option<&Entry> {
        self.objects.get(&KeyRef(namespace, name))
    }

    /// Every object, in key order.
    fn ordered(&self) -> impl Iterator<Item = (&ObjectKey, &Entry)> {
        self.keyed(self.order.iter())
    }

    /// The objects of `namespace`, in name order.
    fn in_namespace<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Entry)> + 'a {
        let keys = self
            .order
            .range(ObjectKey::new(namespace, "")..)
            .take_while(move |k| k.namespace == namespace);
        self.keyed(keys)
    }

    fn keyed<'a>(
        &'a self,
        keys: impl Iterator<Item = &'a ObjectKey> + 'a,
    ) -> impl Iterator<Item = (&'a ObjectKey, &'a Entry)> + 'a {
        keys.filter_map(|k| self.objects.get(k).map(|e| (k, e)))
    }

    fn insert(&mut self, key: ObjectKey, e: Entry) -> Option<Entry> {
        // Most changes (status writes) keep the owner and the node: the
        // entry is replaced where it is, with one lookup and no index churn.
        if let Some(slot) = self.objects.get_mut(&key) {
            if slot.controller() == e.controller() && slot.node() == e.node() {
                return Some(std::mem::replace(slot, e));
            }
        }
        // A new owner or node is indexed anew; the key keeps its place in
        // `order`.
        let old = self.objects.remove(&key);
        match &old {
            Some(o) => self.unindex(&key, o),
            None => {
                self.order.insert(key.clone());
            }
        }
        if let Some(c) = e.controller() {
            self.by_controller
                .entry(c.to_string())
                .or_default()
                .insert(key.clone());
        }
        if let Some(n) = e.node() {
            self.by_node
                .entry(n.to_string())
                .or_default()
                .insert(key.clone());
        }
        self.objects.insert(key, e);
        old
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<Entry> {
        let old = self.objects.remove(key)?;
        self.order.remove(key);
        self.unindex(key, &old);
        Some(old)
    }

    /// Drops `key` from the owner and node indexes `old` put it in.
    fn unindex(&mut self, key: &ObjectKey, old: &Entry) {
        let unindex = |index: &mut BTreeMap<String, BTreeSet<ObjectKey>>, v: Option<&str>| {
            if let Some(v) = v {
                if let Some(set) = index.get_mut(v) {
                    set.remove(key);
                    if set.is_empty() {
                        index.remove(v);
                    }
                }
            }
        };
        unindex(&mut self.by_controller, old.controller());
        unindex(&mut self.by_node, old.node());
    }

    fn parse_keys<'a>(
        &self,
        keys: impl Iterator<Item = &'a ObjectKey>,
        shape: Option<(Transform, Decode)>,
    ) -> Vec<Arc<Value>> {
        keys.filter_map(|k| self.objects.get(k))
            .map(|e| e.parse(shape))
            .collect()
    }
}

/// The cached objects of one resource.
#[derive(Default)]
pub struct Cache {
    inner: RwLock<Inner>,
    /// Applied to every object read, when the cache keeps a shape of them,
    /// with the decoder that skips what the shape drops.
    shape: Option<(Transform, Decode)>,
}

fn strip(mut obj: Value) -> Value {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    obj
}

impl Cache {
    /// A cache whose objects are read through `shape`, as its informer
    /// shapes the objects it reports; `decode` reads the serialized objects
    /// and may skip what `shape` drops.
    pub(crate) fn shaped(shape: Transform, decode: Decode) -> Self {
        Cache {
            inner: RwLock::default(),
            shape: Some((shape, decode)),
        }
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<Value>> {
        self.inner
            .read()
            .get(namespace, name)
            .map(|e| e.parse(self.shape))
    }

    /// The cached object's resourceVersion, without parsing it: lets a
    /// reader keep what it derived from an object until the object changes.
    pub fn resource_version(&self, namespace: &str, name: &str) -> Option<String> {
        self.with_resource_version(namespace, name, str::to_string)
    }

    /// `f` of the cached object's resourceVersion, without copying it (a
    /// reader comparing it with the one it last saw), under the cache's
    /// read lock: `f` must not reach this cache's informer.
    pub fn with_resource_version<R>(
        &self,
        namespace: &str,
        name: &str,
        f: impl FnOnce(&str) -> R,
    ) -> Option<R> {
        self.inner
            .read()
            .get(namespace, name)
            .map(|e| f(e.resource_version()))
    }

    pub fn contains(&self, namespace: &str, name: &str) -> bool {
        self.inner.read().get(namespace, name).is_some()
    }

    /// Every object, in key order. Parses them all: fine for nodes or
    /// services, costly for pods.
    pub fn list(&self) -> Vec<Arc<Value>> {
        self.inner
            .read()
            .ordered()
            .map(|(_, e)| e.parse(self.shape))
            .collect()
    }

    /// The objects of one namespace, in name order (parses them all).
    pub fn list_namespace(&self, namespace: &str) -> Vec<Arc<Value>> {
        let inner = self.inner.read();
        inner
            .in_namespace(namespace)
            .map(|(_, e)| e.parse(self.shape))
            .collect()
    }

    /// The objects of `namespace` (all namespaces when None) whose labels
    /// `selector` matches, in key order; only those are parsed.
    pub fn select(&self, namespace: Option<&str>, selector: &LabelSelector) -> Vec<Arc<Value>> {
        let inner = self.inner.read();
        let matching = |(_, e): &(&ObjectKey, &Entry)| e.labels_match(selector);
        match namespace {
            Some(ns) => inner
                .in_namespace(ns)
                .filter(matching)
                .map(|(_, e)| e.parse(self.shape))
                .collect(),
            None => inner
                .ordered()
                .filter(matching)
                .map(|(_, e)| e.parse(self.shape))
                .collect(),
        }
    }

    /// The objects whose controlling owner has `uid`, in key order.
    pub fn controlled_by(&self, uid: &str) -> Vec<Arc<Value>> {
        let inner = self.inner.read();
        match inner.by_controller.get(uid) {
            Some(keys) => inner.parse_keys(keys.iter(), self.shape),
            None => Vec::new(),
        }
    }

    /// [`controlled_by`](Self::controlled_by), unparsed: a controller
    /// that keeps what it derives from each object by resourceVersion
    /// parses only the objects that changed.
    pub fn controlled_by_lazy(&self, uid: &str) -> Vec<(ObjectKey, Lazy)> {
        let inner = self.inner.read();
        let Some(keys) = inner.by_controller.get(uid) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|k| {
                let e = inner.objects.get(k)?;
                Some((k.clone(), Lazy::new(e.clone(), self.shape)))
            })
            .collect()
    }

    /// The objects of `namespace` with no controlling owner whose labels
    /// `selector` matches, in key order: those a controller may adopt.
    pub fn orphans(&self, namespace: &str, selector: &LabelSelector) -> Vec<Arc<Value>> {
        let inner = self.inner.read();
        inner
            .in_namespace(namespace)
            .filter(|(_, e)| e.controller().is_none() && e.labels_match(selector))
            .map(|(_, e)| e.parse(self.shape))
            .collect()
    }

    /// The pods bound to `node`, in key order.
    pub fn on_node(&self, node: &str) -> Vec<Arc<Value>> {
        let inner = self.inner.read();
        match inner.by_node.get(node) {
            Some(keys) => inner.parse_keys(keys.iter(), self.shape),
            None => Vec::new(),
        }
    }

    /// Whether any pod is bound to `node`, without parsing one.
    pub fn any_on_node(&self, node: &str) -> bool {
        self.inner
            .read()
            .by_node
            .get(node)
            .is_some_and(|keys| !keys.is_empty())
    }

    /// One label of one object, without parsing it: None when the object
    /// is not cached, Some(None) when it lacks the label.
    pub fn label(&self, namespace: &str, name: &str, key: &str) -> Option<Option<String>> {
        self.inner
            .read()
            .get(namespace, name)
            .map(|e| label_of(&e.packed, key).map(String::from))
    }

    /// The labels of one object, without parsing it.
    pub fn labels(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>> {
        self.inner.read().get(namespace, name).map(|e| {
            let mut it = e.packed.iter().skip(FIXED);
            let mut out = BTreeMap::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.insert(k.to_string(), v.to_string());
            }
            out
        })
    }

    pub fn keys(&self) -> Vec<ObjectKey> {
        self.inner.read().order.iter().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.inner.read().objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores `obj`; the change to report. Informers call it; so may a
    /// test filling a cache by hand.
    pub fn upsert(&self, obj: Value) -> Change {
        self.upsert_with(obj, None)
    }

    /// [`upsert`](Self::upsert), keeping `json` (the object's serialized
    /// form, before any shaping) instead of serializing `obj` again.
    pub(crate) fn upsert_with(&self, obj: Value, json: Option<Bytes>) -> Change {
        let obj = strip(obj);
        let key = ObjectKey::of(&obj);
        let entry = Entry::of(&obj, json);
        let new = Arc::new(obj);
        match self.inner.write().insert(key, entry) {
            Some(old) => Change::Modified {
                old: Lazy::new(old, self.shape),
                new,
            },
            None => Change::Added(new),
        }
    }

    /// Drops the object `obj` names; the change to report carries `obj`,
    /// the final state the deletion's event gives, as client-go's informers
    /// report it (rather than parsing the cached bytes again).
    pub(crate) fn delete(&self, obj: Value) -> Change {
        let key = ObjectKey::of(&obj);
        let _gone = self.inner.write().remove(&key);
        Change::Deleted(Arc::new(strip(obj)))
    }

    /// Makes the cache hold exactly `objects`; the changes, in key order
    /// (deletions and modifications of known keys, then additions).
    /// Each object comes with its serialized form when the transport had
    /// it (see [`upsert_with`](Self::upsert_with)).
    pub(crate) fn replace(&self, objects: Vec<(Value, Option<Bytes>)>) -> Vec<Change> {
        let fresh: BTreeMap<ObjectKey, (Value, Option<Bytes>)> = objects
            .into_iter()
            .map(|(o, json)| (ObjectKey::of(&o), (strip(o), json)))
            .collect();
        let mut inner = self.inner.write();
        let old = std::mem::take(&mut *inner);
        // The fresh objects move into the changes, uncopied: a relist of a
        // hundred thousand pods would otherwise clone each one.
        let mut modified = BTreeMap::new();
        let mut added = Vec::new();
        for (k, (new, json)) in fresh {
            let e = Entry::of(&new, json);
            match old.objects.get(&k) {
                Some(prev) if e.resource_version() != prev.resource_version() => {
                    modified.insert(
                        k.clone(),
                        (Lazy::new(prev.clone(), self.shape), Arc::new(new)),
                    );
                }
                Some(_) => {}
                None => added.push(Change::Added(Arc::new(new))),
            }
            inner.insert(k, e);
        }
        let mut changes = Vec::new();
        for (k, prev) in old.ordered() {
            match modified.remove(k) {
                Some((old, new)) => changes.push(Change::Modified { old, new }),
                None if !inner.objects.contains_key(k) => {
                    changes.push(Change::Deleted(prev.parse(self.shape)))
                }
                None => {}
            }
        }
        changes.extend(added);
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, app: &str, owner: &str, node: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1",
            "labels": {"app": app},
            "managedFields": [{"manager": "x"}],
            "ownerReferences": [{"uid": owner, "controller": true}]},
            "spec": {"nodeName": node}})
    }

    #[test]
    fn lookups_by_label_owner_and_node() {
        let c = Cache::default();
        c.upsert(pod("a", "web", "rs1", "n1"));
        c.upsert(pod("b", "db", "rs2", "n1"));
        c.upsert(pod("c", "web", "rs1", "n2"));
        let names = |v: Vec<Arc<Value>>| {
            v.iter()
                .map(|o| meta::name(o).to_string())
                .collect::<Vec<_>>()
        };
        let web = LabelSelector::parse("app=web").unwrap();
        assert_eq!(names(c.select(Some("ns"), &web)), ["a", "c"]);
        assert_eq!(names(c.select(Some("other"), &web)), Vec::<String>::new());
        assert_eq!(names(c.controlled_by("rs1")), ["a", "c"]);
        assert_eq!(names(c.on_node("n1")), ["a", "b"]);
        // Moving a pod updates the indexes.
        let Change::Modified { old, new } = c.upsert(pod("a", "db", "rs2", "n2")) else {
            panic!("a is known")
        };
        // The prior state answers from the index before it is parsed.
        assert_eq!(old.label("app"), Some("web"));
        assert_eq!(old.node(), Some("n1"));
        assert_eq!(old.controller(), Some("rs1"));
        assert_eq!(old.labels(), meta::labels(old.object()));
        assert!(old.same_labels(old.object()));
        assert!(!old.same_labels(&new));
        let mut more = (*old.object().clone()).clone();
        more["metadata"]["labels"]["tier"] = json!("x");
        assert!(!old.same_labels(&more));
        // Values that are not strings are no labels, as meta::labels reads.
        more["metadata"]["labels"]["tier"] = json!(1);
        assert!(old.same_labels(&more));
        assert_eq!(old["metadata"]["labels"]["app"], "web");
        assert_eq!(new["metadata"]["labels"]["app"], "db");
        assert_eq!(names(c.controlled_by("rs1")), ["c"]);
        assert_eq!(names(c.on_node("n2")), ["a", "c"]);
        // A moved pod keeps its one place in the listing.
        assert_eq!(names(c.list()), ["a", "b", "c"]);
        assert_eq!(c.keys().len(), 3);
        assert!(c.get("ns", "a").unwrap()["metadata"]
            .get("managedFields")
            .is_none());
        c.delete(pod("c", "", "", ""));
        assert!(c.controlled_by("rs1").is_empty());
        assert_eq!(c.len(), 2);
    }

    #[test]
    fn borrowed_names_find_keys_and_listing_keeps_key_order() {
        use std::hash::BuildHasher;
        let h = hashbrown::DefaultHashBuilder::default();
        // A split that moves a character across the parts hashes apart.
        for (ns, name) in [("ns", "a"), ("", "node-1"), ("n", "sa"), ("ns", "")] {
            assert_eq!(
                h.hash_one(KeyRef(ns, name)),
                h.hash_one(ObjectKey::new(ns, name))
            );
        }
        let c = Cache::default();
        for (ns, name) in [("b", "z"), ("a", "y"), ("b", "x"), ("", "w")] {
            let mut p = pod(name, "web", "rs1", "n1");
            p["metadata"]["namespace"] = json!(ns);
            c.upsert(p);
        }
        assert!(c.contains("b", "x"));
        assert!(!c.contains("b", "y"));
        assert!(!c.contains("", "bx"));
        assert_eq!(c.resource_version("a", "y").as_deref(), Some("1"));
        let keys: Vec<String> = c.keys().iter().map(ToString::to_string).collect();
        assert_eq!(keys, ["w", "a/y", "b/x", "b/z"]);
        let names = |v: Vec<Arc<Value>>| {
            v.iter()
                .map(|o| meta::name(o).to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(c.list()), ["w", "y", "x", "z"]);
        assert_eq!(names(c.list_namespace("b")), ["x", "z"]);
        c.delete(pod("x", "", "", ""));
        assert!(c.contains("b", "x"));
        let mut gone = pod("x", "", "", "");
        gone["metadata"]["namespace"] = json!("b");
        c.delete(gone);
        assert!(!c.contains("b", "x"));
        assert_eq!(names(c.list_namespace("b")), ["z"]);
    }

    #[test]
    fn replace_reports_the_difference() {
        let c = Cache::default();
        c.upsert(pod("a", "web", "rs1", "n1"));
        c.upsert(pod("b", "web", "rs1", "n1"));
        let mut b2 = pod("b", "web", "rs1", "n1");
        b2["metadata"]["resourceVersion"] = json!("2");
        let changes = c.replace(vec![(b2, None), (pod("c", "web", "rs1", "n1"), None)]);
        let kinds: Vec<String> = changes
            .iter()
            .map(|ch| match ch {
                Change::Added(o) => format!("+{}", meta::name(o)),
                Change::Modified { new, .. } => format!("~{}", meta::name(new)),
                Change::Deleted(o) => format!("-{}", meta::name(o)),
            })
            .collect();
        assert_eq!(kinds, ["-a", "~b", "+c"]);
        assert_eq!(c.controlled_by("rs1").len(), 2);
    }
}
