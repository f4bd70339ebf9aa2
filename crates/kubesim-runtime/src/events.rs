//! The event recorder: components report what they did to an object as
//! core/v1 Events (what `kubectl describe` and `kubectl get events` show).
//! Repeats of the same event on the same object raise its `count` and
//! `lastTimestamp` instead of creating another object, as upstream's
//! correlator does. Writing is asynchronous and bounded: a component never
//! waits for an event, and under overload events are dropped, not queued
//! without limit.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::{Api, Clock, ResourceRef, WriteOptions};

/// Events waiting to be written before new ones are dropped.
const QUEUE: usize = 10_000;
/// Distinct events remembered for aggregation.
const REMEMBERED: usize = 4096;

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
    involved: Value,
    namespace: String,
    kind: EventType,
    reason: String,
    message: String,
}

/// Cheap to clone; every clone feeds the same writer.
#[derive(Clone)]
pub struct EventRecorder {
    tx: mpsc::Sender<Pending>,
}

impl EventRecorder {
    /// A recorder for `component` (e.g. `default-scheduler`), and the writer
    /// future that must be polled for events to be written.
    pub fn new(
        api: Arc<dyn Api>,
        clock: Clock,
        component: &str,
    ) -> (Self, impl std::future::Future<Output = ()> + Send) {
        let (tx, rx) = mpsc::channel(QUEUE);
        let writer = Writer {
            api,
            clock,
            component: component.to_string(),
            seen: BTreeMap::new(),
            order: VecDeque::new(),
            sequence: 0,
        };
        (EventRecorder { tx }, writer.run(rx))
    }

    /// Records an event about `obj`.
    pub fn record(&self, obj: &Value, kind: EventType, reason: &str, message: impl Into<String>) {
        let ns = match meta::namespace(obj) {
            "" => "default",
            ns => ns,
        };
        let pending = Pending {
            involved: object_reference(obj),
            namespace: ns.to_string(),
            kind,
            reason: reason.to_string(),
            message: message.into(),
        };
        if self.tx.try_send(pending).is_err() {
            tracing::debug!(reason, "event dropped: the recorder is overloaded");
        }
    }
}

/// The ObjectReference an Event points at.
pub fn object_reference(obj: &Value) -> Value {
    let mut r = serde_json::Map::new();
    for (field, value) in [
        (
            "kind",
            obj.get("kind").and_then(Value::as_str).unwrap_or(""),
        ),
        ("namespace", meta::namespace(obj)),
        ("name", meta::name(obj)),
        ("uid", meta::uid(obj)),
        (
            "apiVersion",
            obj.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
        ),
        ("resourceVersion", meta::resource_version(obj)),
    ] {
        if !value.is_empty() {
            r.insert(field.into(), Value::String(value.into()));
        }
    }
    Value::Object(r)
}

/// What makes two events "the same" for aggregation.
type Identity = (String, String, &'static str, String, String);

struct Seen {
    name: String,
    count: u64,
}

struct Writer {
    api: Arc<dyn Api>,
    clock: Clock,
    component: String,
    seen: BTreeMap<Identity, Seen>,
    order: VecDeque<Identity>,
    sequence: u64,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Pending>) {
        while let Some(p) = rx.recv().await {
            self.write(p).await;
        }
    }

    async fn write(&mut self, p: Pending) {
        let events = ResourceRef::core("events");
        let now = meta::format_time(self.clock.now());
        let id: Identity = (
            p.namespace.clone(),
            p.involved
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or_else(|| p.involved.get("name").and_then(Value::as_str).unwrap_or(""))
                .to_string(),
            p.kind.as_str(),
            p.reason.clone(),
            p.message.clone(),
        );
        if let Some(seen) = self.seen.get_mut(&id) {
            seen.count += 1;
            let patch = json!({"count": seen.count, "lastTimestamp": now});
            let res = self
                .api
                .patch(
                    &events,
                    &p.namespace,
                    &seen.name,
                    PatchType::Merge,
                    patch.to_string().into_bytes(),
                    None,
                    &WriteOptions::default(),
                )
                .await;
            match res {
                Ok(_) => return,
                // Deleted meanwhile (e.g. with its namespace): start anew.
                Err(e) if e.code == 404 => {
                    self.seen.remove(&id);
                }
                Err(e) => {
                    tracing::debug!(error = %e.message, "event update failed");
                    return;
                }
            }
        }
        // Upstream names events `<object>.<unix nanos in hex>`; a sequence
        // number keeps names unique when simulated time stands still.
        self.sequence += 1;
        let nanos = self.clock.now().as_nanosecond() as u128 + self.sequence as u128;
        let object_name = p
            .involved
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("event");
        let name = format!("{object_name}.{nanos:x}");
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": p.namespace},
            "involvedObject": p.involved,
            "reason": p.reason,
            "message": p.message,
            "source": {"component": self.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": p.kind.as_str(),
            "reportingComponent": self.component,
            "reportingInstance": self.component,
        });
        match self
            .api
            .create(&events, &p.namespace, event, &WriteOptions::default())
            .await
        {
            Ok(_) => {
                self.seen.insert(id.clone(), Seen { name, count: 1 });
                self.order.push_back(id);
                while self.order.len() > REMEMBERED {
                    if let Some(old) = self.order.pop_front() {
                        self.seen.remove(&old);
                    }
                }
            }
            Err(e) => tracing::debug!(error = %e.message, "event create failed"),
        }
    }
}
