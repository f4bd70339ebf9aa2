//! The event recorder: components report what they did to an object as
//! core/v1 Events (what `kubectl describe` and `kubectl get events` show).
//! Repeats of the same event on the same object raise its `count` and
//! `lastTimestamp` instead of creating another object, as upstream's
//! correlator does, and each object's events pass upstream's spam filter
//! (`spam.rs`). Writing is asynchronous and bounded: a component
//! never waits for an event, and under overload events are dropped, not
//! queued without limit.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::spam::SpamFilter;
use crate::{Api, Clock, ResourceRef, WriteOptions};

/// Events waiting to be written before new ones are dropped.
const QUEUE: usize = 10_000;
/// Distinct events the core/v1 recorder remembers for aggregation, the
/// least recently seen forgotten first (upstream's LRU caches hold as
/// many). The events.k8s.io recorder has no such bound: it forgets an
/// event once it has been quiet for [`SERIES_FINISH`].
const REMEMBERED: usize = 4096;

/// How repeats of an event are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventStyle {
    /// The core/v1 recorder (kube-controller-manager, kubelet): every
    /// repeat raises the stored count, within the spam filter's budget.
    Legacy,
    /// The events.k8s.io recorder (kube-scheduler): the first repeat is
    /// written at once, later ones are counted in memory and written every
    /// 30 minutes, or when the series has been quiet for 6 minutes and is
    /// forgotten.
    Series,
}

/// How often a series still being observed is written.
const SERIES_REFRESH: Duration = Duration::from_secs(30 * 60);
/// A series not observed for this long is written a last time and
/// forgotten (a later repeat starts a new event).
const SERIES_FINISH: Duration = Duration::from_secs(6 * 60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

struct Pending {
    involved: ObjectRef,
    kind: EventType,
    reason: Cow<'static, str>,
    message: Arc<str>,
}

/// The object an Event is about, as its `involvedObject` names it. A
/// component that reports often about objects it keeps in its own form
/// (the scheduler, about every failed attempt) builds this rather than a
/// JSON object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectRef {
    /// Fixed texts for a component that names one kind ("Pod", "v1").
    pub kind: Cow<'static, str>,
    pub api_version: Cow<'static, str>,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

impl ObjectRef {
    /// The reference to `obj`.
    pub fn of(obj: &Value) -> Self {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        ObjectRef {
            kind: text(obj.get("kind")).into(),
            api_version: text(obj.get("apiVersion")).into(),
            namespace: meta::namespace(obj).to_string(),
            name: meta::name(obj).to_string(),
            uid: meta::uid(obj).to_string(),
            resource_version: meta::resource_version(obj).to_string(),
        }
    }

    /// The ObjectReference as an Event holds it, empty fields left out.
    pub fn to_value(&self) -> Value {
        let mut r = serde_json::Map::new();
        for (field, value) in [
            ("kind", &*self.kind),
            ("namespace", &self.namespace),
            ("name", &self.name),
            ("uid", &self.uid),
            ("apiVersion", &*self.api_version),
            ("resourceVersion", &self.resource_version),
        ] {
            if !value.is_empty() {
                r.insert(field.into(), Value::from(value));
            }
        }
        Value::Object(r)
    }

    /// The namespace its Events go to.
    fn event_namespace(&self) -> &str {
        match self.namespace.as_str() {
            "" => "default",
            ns => ns,
        }
    }

    /// What names the object within its namespace for aggregation: its
    /// uid, or its name when it has none.
    fn identity(&self) -> &str {
        if self.uid.is_empty() {
            &self.name
        } else {
            &self.uid
        }
    }
}

/// Cheap to clone; every clone feeds the same writer.
#[derive(Clone)]
pub struct EventRecorder {
    tx: mpsc::Sender<Pending>,
}

impl EventRecorder {
    /// A core/v1 recorder for `component` (e.g. `kube-controller-manager`),
    /// and the writer future that must be polled for events to be written.
    pub fn new(
        api: Arc<dyn Api>,
        clock: Clock,
        component: &str,
    ) -> (Self, impl std::future::Future<Output = ()> + Send) {
        Self::with_style(api, clock, component, EventStyle::Legacy)
    }

    /// [`new`](Self::new) with a choice of how repeats are written.
    pub fn with_style(
        api: Arc<dyn Api>,
        clock: Clock,
        component: &str,
        style: EventStyle,
    ) -> (Self, impl std::future::Future<Output = ()> + Send) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let writer = Writer {
            api,
            clock,
            style,
            component: component.to_string(),
            seen: hashbrown::HashMap::new(),
            order: BTreeMap::new(),
            due: BTreeMap::new(),
            sequence: 0,
            stamps: 0,
            spam: SpamFilter::default(),
        };
        (EventRecorder { tx }, writer.run(rx))
    }

    /// Records an event about `obj`.
    pub fn record(
        &self,
        obj: &Value,
        kind: EventType,
        reason: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) {
        self.record_ref(ObjectRef::of(obj), kind, reason, Arc::from(message.into()));
    }

    /// [`record`](Self::record) about the object `involved` names. The
    /// message is shared, not copied: a scheduler reporting the same
    /// verdict on thousands of waiting pods keeps one text for them all.
    pub fn record_ref(
        &self,
        involved: ObjectRef,
        kind: EventType,
        reason: impl Into<Cow<'static, str>>,
        message: Arc<str>,
    ) {
        let pending = Pending {
            involved,
            kind,
            reason: reason.into(),
            message,
        };
        if let Err(e) = self.tx.try_send(pending) {
            let reason = e.into_inner().reason;
            tracing::debug!(%reason, "event dropped: the recorder is overloaded");
        }
    }
}

/// What makes two events "the same" for aggregation: the namespace, the
/// object (uid or name), the type, the reason and the message. Shared by
/// the map of remembered events and the queue that orders them.
#[derive(Hash, PartialEq, Eq)]
struct Identity {
    namespace: String,
    object: String,
    kind: &'static str,
    reason: Cow<'static, str>,
    message: Arc<str>,
}

/// An [`Identity`] borrowed from an event being recorded: a repeat is
/// looked up without copying its texts. It hashes as the identity does
/// (a struct's derived hash is its fields' in order, and each text hashes
/// as a `str`).
#[derive(Hash)]
struct IdentityRef<'a>(&'a str, &'a str, &'static str, &'a str, &'a str);

impl hashbrown::Equivalent<Arc<Identity>> for IdentityRef<'_> {
    fn equivalent(&self, id: &Arc<Identity>) -> bool {
        self.0 == id.namespace
            && self.1 == id.object
            && self.2 == id.kind
            && self.3 == id.reason
            && same_text(self.4, &id.message)
    }
}

/// Equal texts. A message shared by every pod that fails alike (the
/// scheduler's replayed verdicts) is the remembered one itself, found
/// equal without reading its bytes from a cold entry.
fn same_text(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// What the writer remembers of an event; its namespace is its
/// identity's.
struct Seen {
    name: String,
    count: u64,
    /// Series only: repeats counted but not yet written.
    unwritten: bool,
    last_observed: jiff::Timestamp,
    last_seen_at: Instant,
    written_at: Instant,
    /// Its key in [`Writer::order`] (core/v1, restamped at every repeat)
    /// or in [`Writer::due`] (events.k8s.io, fixed; every remembered
    /// event has one check there from its creation until it is forgotten).
    seq: u64,
}

impl Seen {
    /// When a series next needs the writer: its unwritten repeats at the
    /// refresh, or the end of the series once it has been quiet long
    /// enough. With nothing unwritten the last observation was written, so
    /// this is the end. It never moves earlier: observations and writes
    /// only move its terms later, so a check set for it is never late.
    fn due(&self) -> Instant {
        let end = self.last_seen_at + SERIES_FINISH;
        if self.unwritten {
            end.min(self.written_at + SERIES_REFRESH)
        } else {
            end
        }
    }
}

struct Writer {
    api: Arc<dyn Api>,
    clock: Clock,
    style: EventStyle,
    component: String,
    /// Hashed: only looked up, and a backlog of pods failing in turn keeps
    /// thousands, whose identities share long prefixes (namespace, then
    /// message) that a B-tree compares at every level.
    seen: hashbrown::HashMap<Arc<Identity>, Seen>,
    /// core/v1 only: remembered identities, least recently seen first,
    /// keyed by their `seq`.
    order: BTreeMap<u64, Arc<Identity>>,
    /// events.k8s.io only: one check per remembered identity, by time (then
    /// `seq`, to keep keys unique). A check may find its series observed
    /// since; it is then put back for later.
    due: BTreeMap<(Instant, u64), Arc<Identity>>,
    /// Makes event names unique (see [`Writer::write`]).
    sequence: u64,
    /// The last `seq` given.
    stamps: u64,
    spam: SpamFilter,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Pending>) {
        loop {
            // A timer only while some series has repeats to write.
            let tick = self
                .due
                .keys()
                .next()
                .map(|(at, _)| self.clock.sleep_until(*at));
            tokio::select! {
                biased;
                p = rx.recv() => match p {
                    Some(p) => self.write(p).await,
                    None => return,
                },
                _ = async {
                    match tick {
                        Some(t) => t.await,
                        None => std::future::pending().await,
                    }
                } => self.flush_series().await,
            }
        }
    }

    /// Writes the series due (those last written [`SERIES_REFRESH`] ago
    /// with repeats since) and forgets those quiet for [`SERIES_FINISH`],
    /// written a last time when they have unwritten repeats. A single
    /// event is forgotten the same way, as upstream's `finishSeries` does.
    async fn flush_series(&mut self) {
        let now = self.clock.instant();
        while let Some(entry) = self.due.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let id = entry.remove();
            let Some(seen) = self.seen.get_mut(&id) else {
                continue;
            };
            if seen.due() > now {
                // Observed again since the check was set: check later.
                self.due.insert((seen.due(), seen.seq), id);
                continue;
            }
            let write = seen.unwritten.then(|| {
                seen.unwritten = false;
                seen.written_at = now;
                (id.namespace.clone(), seen.name.clone(), series_patch(seen))
            });
            if now >= seen.last_seen_at + SERIES_FINISH {
                self.forget(&id);
            } else {
                self.due.insert((seen.due(), seen.seq), id);
            }
            if let Some((ns, name, body)) = write {
                if let Err(e) = self.patch_event(&ns, &name, body).await {
                    tracing::debug!(error = %e.message, "event series update failed");
                }
            }
        }
    }

    fn forget(&mut self, id: &Identity) {
        if let Some(seen) = self.seen.remove(id) {
            self.order.remove(&seen.seq);
        }
    }

    async fn patch_event(
        &self,
        ns: &str,
        name: &str,
        body: Value,
    ) -> Result<Value, kubesim_core::ApiError> {
        self.api
            .patch(
                &ResourceRef::core("events"),
                ns,
                name,
                PatchType::Merge,
                body.to_string().into_bytes(),
                None,
                &WriteOptions::default(),
            )
            .await
    }

    async fn write(&mut self, p: Pending) {
        let events = ResourceRef::core("events");
        let namespace = p.involved.event_namespace();
        let object = p.involved.identity();
        // This writer is one source, so the object alone keys its bucket;
        // the events.k8s.io recorder has no spam filter.
        if self.style == EventStyle::Legacy {
            let spam_key = format!("{namespace}/{object}");
            if !self.spam.allow(&spam_key, self.clock.instant()) {
                tracing::debug!(reason = %p.reason, "event dropped by the spam filter");
                return;
            }
        }
        let key = IdentityRef(namespace, object, p.kind.as_str(), &p.reason, &p.message);
        if let Some((id, seen)) = self.seen.get_key_value_mut(&key) {
            let id = id.clone();
            seen.count += 1;
            seen.last_observed = self.clock.now();
            seen.last_seen_at = self.clock.instant();
            if self.style == EventStyle::Legacy {
                // Least recently seen goes first.
                self.stamps += 1;
                self.order.remove(&seen.seq);
                seen.seq = self.stamps;
                self.order.insert(seen.seq, id.clone());
            }
            if self.style == EventStyle::Series && seen.count > 2 {
                // Its check, set for an earlier time than `due` now gives,
                // finds it and writes it when due.
                seen.unwritten = true;
                return;
            }
            seen.written_at = seen.last_seen_at;
            let (ns, name) = (id.namespace.clone(), seen.name.clone());
            let body = match self.style {
                EventStyle::Series => series_patch(seen),
                EventStyle::Legacy => json!({
                    "count": seen.count,
                    "lastTimestamp": meta::format_time(self.clock.now()),
                }),
            };
            match self.patch_event(&ns, &name, body).await {
                Ok(_) => return,
                // Deleted meanwhile (e.g. with its namespace): start anew.
                Err(e) if e.code == 404 => self.forget(&id),
                Err(e) => {
                    tracing::debug!(error = %e.message, "event update failed");
                    return;
                }
            }
        }
        let id = Arc::new(Identity {
            namespace: namespace.to_string(),
            object: object.to_string(),
            kind: p.kind.as_str(),
            reason: p.reason,
            message: p.message,
        });
        // Upstream names events `<object>.<unix nanos in hex>`; a sequence
        // number keeps names unique when simulated time stands still.
        self.sequence += 1;
        let nanos = self.clock.now().as_nanosecond() as u128 + self.sequence as u128;
        let object_name = match p.involved.name.as_str() {
            "" => "event",
            n => n,
        };
        let name = format!("{object_name}.{nanos:x}");
        let now = meta::format_time(self.clock.now());
        let component = || Value::String(self.component.clone());
        let event = meta::object([
            ("apiVersion", Value::from("v1")),
            ("kind", Value::from("Event")),
            ("metadata", json!({"name": name, "namespace": id.namespace})),
            ("involvedObject", p.involved.to_value()),
            ("reason", Value::from(&*id.reason)),
            ("message", Value::String(id.message.to_string())),
            ("source", json!({"component": self.component})),
            ("firstTimestamp", Value::String(now.clone())),
            ("lastTimestamp", Value::String(now)),
            ("count", Value::from(1)),
            ("type", Value::from(p.kind.as_str())),
            ("reportingComponent", component()),
            ("reportingInstance", component()),
        ]);
        match self
            .api
            .create(
                &events,
                &id.namespace,
                event,
                &WriteOptions::answer_version_only(),
            )
            .await
        {
            Ok(_) => {
                let at = self.clock.instant();
                self.stamps += 1;
                let seen = Seen {
                    name,
                    count: 1,
                    unwritten: false,
                    last_observed: self.clock.now(),
                    last_seen_at: at,
                    written_at: at,
                    seq: self.stamps,
                };
                match self.style {
                    EventStyle::Series => {
                        self.due.insert((seen.due(), seen.seq), id.clone());
                    }
                    EventStyle::Legacy => {
                        self.order.insert(seen.seq, id.clone());
                    }
                }
                self.seen.insert(id, seen);
                while self.order.len() > REMEMBERED {
                    if let Some((_, old)) = self.order.pop_first() {
                        self.seen.remove(&old);
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e.message, "event create failed"),
        }
    }
}

/// The update of a series: its count and when it was last observed, in
/// both the core/v1 fields and `series`, which events.k8s.io shows.
fn series_patch(seen: &Seen) -> Value {
    json!({
        "count": seen.count,
        "lastTimestamp": meta::format_time(seen.last_observed),
        "series": {
            "count": seen.count,
            "lastObservedTime": meta::format_micro_time(seen.last_observed),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_is_found_by_its_borrowed_identity() {
        let id = Arc::new(Identity {
            namespace: "default".into(),
            object: "uid-1".into(),
            kind: "Warning",
            reason: "FailedScheduling".into(),
            message: "0/3 nodes are available".into(),
        });
        let mut seen = hashbrown::HashMap::new();
        seen.insert(id.clone(), 7u32);
        let same = IdentityRef(
            "default",
            "uid-1",
            "Warning",
            "FailedScheduling",
            "0/3 nodes are available",
        );
        assert_eq!(seen.get(&same), Some(&7));
        let other = IdentityRef(
            "default",
            "uid-1",
            "Warning",
            "FailedScheduling",
            "0/4 nodes are available",
        );
        assert_eq!(seen.get(&other), None);
        assert_eq!(seen.get(&*id), Some(&7));
    }

    #[test]
    fn a_reference_leaves_out_empty_fields() {
        let pod = json!({"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "3"}});
        let r = ObjectRef::of(&pod);
        assert_eq!(r.event_namespace(), "ns");
        assert_eq!(r.identity(), "u");
        assert_eq!(
            r.to_value(),
            json!({"kind": "Pod", "namespace": "ns", "name": "p", "uid": "u",
                "apiVersion": "v1", "resourceVersion": "3"})
        );
        let node = ObjectRef::of(&json!({"kind": "Node", "metadata": {"name": "n1"}}));
        assert_eq!(node.event_namespace(), "default");
        assert_eq!(node.identity(), "n1");
        assert_eq!(node.to_value(), json!({"kind": "Node", "name": "n1"}));
    }
}
