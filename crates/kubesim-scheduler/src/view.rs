//! The part of a pod the scheduler keeps. Every pending pod waits in the
//! queue and every bound pod sits in the cache for as long as it lives, so
//! what is kept per pod decides much of the process's memory. Plugins
//! read only placement-related fields; everything else (environment,
//! commands, probes, volume definitions, most of the status) is dropped on
//! the way in.
//!
//! The spec is kept as JSON, cut to what plugins read and shared between
//! pods whose cut specs are equal ([`shared_spec`]): the pods of one job,
//! one Deployment or one shape of a workload differ in their names and
//! their nodes, not in what placement reads. The few metadata and status
//! fields read are kept typed. A `serde_json` tree of the whole view cost
//! about 7 KB a pod, so 20,000 running pods held some 140 MB.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Weak};

use kubesim_core::meta;
use parking_lot::Mutex;
use serde_json::{Map, Value};

/// Spec fields dropped: the scheduler reads none of them. Containers are
/// kept, trimmed by [`CONTAINER`]. `nodeName` is held apart
/// ([`crate::framework::PodInfo::node_name`]), so that pods alike share
/// one spec whatever node they run on.
const SPEC_DROPPED: &[&str] = &[
    "volumes",
    "ephemeralContainers",
    "readinessGates",
    "nodeName",
];

/// Container fields the scheduler reads: requests, host ports, images, and
/// whether an init container is a restartable sidecar.
const CONTAINER: &[&str] = &["name", "image", "resources", "ports", "restartPolicy"];

/// What the scheduler keeps of a pod beside the fields
/// [`crate::framework::PodInfo`] computes once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodView {
    /// `spec` cut to what scheduling reads (an object, perhaps empty),
    /// shared between pods whose cut specs are equal.
    pub spec: Arc<Value>,
    /// `metadata.resourceVersion`, for the object references of the
    /// Events the scheduler records about the pod.
    pub resource_version: Box<str>,
    /// `metadata.creationTimestamp` as written (batch policies order ties
    /// by it).
    pub creation_timestamp: Box<str>,
    /// `status.nominatedNodeName`, empty when there is none.
    pub nominated_node: Box<str>,
    /// `status.startTime` as written, empty before the pod starts.
    pub start_time: Box<str>,
    /// The `PodScheduled` condition, when the pod has one.
    pub scheduled: Option<Box<Condition>>,
    /// A `DisruptionTarget` condition set by the scheduler's preemption
    /// (`status: True`, `reason: PreemptionByScheduler`).
    pub preempted: bool,
}

/// The fields of a pod condition the scheduler compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub status: Box<str>,
    pub reason: Box<str>,
    pub message: Box<str>,
}

impl PodView {
    /// The view of `pod`.
    pub fn of(pod: &Value) -> PodView {
        Self::with_spec(pod, shared_spec(cut_spec(pod)))
    }

    /// The view of `pod`, whose cut spec is `spec` (already shared).
    pub fn with_spec(pod: &Value, spec: Arc<Value>) -> PodView {
        let text =
            |v: Option<&Value>| -> Box<str> { v.and_then(Value::as_str).unwrap_or("").into() };
        let status = pod.get("status");
        let conditions = status
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let of_type = |t: &str| {
            conditions
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some(t))
        };
        let is = |c: &Value, k: &str, want: &str| c.get(k).and_then(Value::as_str) == Some(want);
        PodView {
            spec,
            resource_version: meta::resource_version(pod).into(),
            creation_timestamp: text(meta::pointer(pod, "/metadata/creationTimestamp")),
            nominated_node: text(status.and_then(|s| s.get("nominatedNodeName"))),
            start_time: text(status.and_then(|s| s.get("startTime"))),
            scheduled: of_type("PodScheduled").map(|c| {
                Box::new(Condition {
                    status: text(c.get("status")),
                    reason: text(c.get("reason")),
                    message: text(c.get("message")),
                })
            }),
            preempted: of_type("DisruptionTarget").is_some_and(|c| {
                is(c, "status", "True") && is(c, "reason", "PreemptionByScheduler")
            }),
        }
    }

    /// A field of the cut spec.
    pub fn spec(&self, field: &str) -> Option<&Value> {
        self.spec.get(field)
    }
}

/// `pod`'s spec cut to what scheduling reads, not yet shared.
pub fn cut_spec(pod: &Value) -> Value {
    let Some(Value::Object(spec)) = pod.get("spec") else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (k, v) in spec {
        match (k.as_str(), v) {
            (k, _) if SPEC_DROPPED.contains(&k) => {}
            ("containers" | "initContainers", Value::Array(cs)) => {
                let trimmed = cs
                    .iter()
                    .map(|c| match c {
                        Value::Object(c) => Value::Object(
                            c.iter()
                                .filter(|(k, _)| CONTAINER.contains(&k.as_str()))
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        ),
                        other => other.clone(),
                    })
                    .collect();
                out.insert(k.clone(), Value::Array(trimmed));
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Cut specs in use, by a hash of their content. Entries are weak, so a
/// spec no pod holds any more is freed; dead entries are swept whenever
/// the table has doubled since the last sweep.
struct Specs {
    /// Equal specs hash alike (`serde_json`'s `Hash` agrees with its
    /// `Eq`); a bucket holds more than one spec only on a collision.
    by_hash: HashMap<u64, Vec<Weak<Value>>>,
    sweep_at: usize,
}

/// Shared by every scheduler in the process: the values are immutable and
/// found by content, so sharing them across schedulers changes nothing.
static SPECS: LazyLock<Mutex<Specs>> = LazyLock::new(|| {
    Mutex::new(Specs {
        by_hash: HashMap::new(),
        sweep_at: 1024,
    })
});

/// The shared copy of `spec`: one in use already when an equal spec is,
/// else `spec` itself, remembered for the pods alike that follow. Sharing
/// changes no result, only how many copies are held.
pub fn shared_spec(spec: Value) -> Arc<Value> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    spec.hash(&mut hasher);
    let hash = hasher.finish();
    let mut specs = SPECS.lock();
    let bucket = specs.by_hash.entry(hash).or_default();
    if let Some(found) = bucket
        .iter()
        .filter_map(Weak::upgrade)
        .find(|s| **s == spec)
    {
        return found;
    }
    let shared = Arc::new(spec);
    bucket.push(Arc::downgrade(&shared));
    if specs.by_hash.len() >= specs.sweep_at {
        specs.by_hash.retain(|_, b| {
            b.retain(|w| w.strong_count() > 0);
            !b.is_empty()
        });
        specs.sweep_at = (2 * specs.by_hash.len()).max(1024);
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_what_placement_reads_and_drops_the_rest() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"},
                "resourceVersion": "7", "creationTimestamp": "2024-01-01T00:00:00Z",
                "annotations": {"big": "x"}, "managedFields": [{}],
                "ownerReferences": [{"uid": "o", "controller": true}]},
            "spec": {"schedulerName": "s", "nodeSelector": {"z": "1"}, "nodeName": "n1",
                "tolerations": [{"key": "k"}], "volumes": [{"name": "v"}],
                "containers": [{"name": "c", "image": "i", "env": [{"name": "E"}],
                    "resources": {"requests": {"cpu": "1"}}, "ports": [{"hostPort": 80}],
                    "livenessProbe": {}}],
                "initContainers": [{"name": "s", "image": "j", "restartPolicy": "Always",
                    "command": ["x"]}]},
            "status": {"phase": "Running", "nominatedNodeName": "n", "qosClass": "Burstable",
                "startTime": "2024-01-01T00:00:05Z",
                "conditions": [{"type": "PodScheduled", "status": "False",
                        "reason": "Unschedulable", "message": "0/3 nodes"},
                    {"type": "Ready", "status": "False"},
                    {"type": "DisruptionTarget", "status": "True",
                        "reason": "PreemptionByScheduler"}]}
        });
        let v = PodView::of(&pod);
        assert_eq!(
            *v.spec,
            json!({"schedulerName": "s", "nodeSelector": {"z": "1"},
                "tolerations": [{"key": "k"}],
                "containers": [{"name": "c", "image": "i",
                    "resources": {"requests": {"cpu": "1"}}, "ports": [{"hostPort": 80}]}],
                "initContainers": [{"name": "s", "image": "j", "restartPolicy": "Always"}]})
        );
        assert_eq!(&*v.resource_version, "7");
        assert_eq!(&*v.creation_timestamp, "2024-01-01T00:00:00Z");
        assert_eq!(&*v.nominated_node, "n");
        assert_eq!(&*v.start_time, "2024-01-01T00:00:05Z");
        assert_eq!(
            v.scheduled.as_deref(),
            Some(&Condition {
                status: "False".into(),
                reason: "Unschedulable".into(),
                message: "0/3 nodes".into()
            })
        );
        assert!(v.preempted);
    }

    #[test]
    fn an_empty_pod_has_an_empty_view() {
        let v = PodView::of(&json!({"metadata": {"name": "p"}}));
        assert_eq!(*v.spec, json!({}));
        assert!(v.scheduled.is_none() && !v.preempted && v.nominated_node.is_empty());
    }

    #[test]
    fn pods_alike_share_one_spec_on_any_node() {
        let pod = |name: &str, node: &str, cpu: &str| {
            json!({"metadata": {"name": name},
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i",
                    "command": [name], "resources": {"requests": {"cpu": cpu}}}]}})
        };
        let a = PodView::of(&pod("a", "n1", "1"));
        let b = PodView::of(&pod("b", "n2", "1"));
        let c = PodView::of(&pod("c", "n1", "2"));
        assert!(
            Arc::ptr_eq(&a.spec, &b.spec),
            "equal cut specs are one copy"
        );
        // Equal whatever the order their keys were written in.
        let reordered = PodView::of(&json!({"metadata": {"name": "r"},
            "spec": {"containers": [{"resources": {"requests": {"cpu": "1"}},
                "image": "i", "name": "c"}], "nodeName": "n3"}}));
        assert!(Arc::ptr_eq(&a.spec, &reordered.spec));
        assert!(!Arc::ptr_eq(&a.spec, &c.spec));
        assert_ne!(a.spec, c.spec);
        // A spec no pod holds is freed, and an equal one later is new.
        let weak = Arc::downgrade(&c.spec);
        drop(c);
        assert!(weak.upgrade().is_none());
        let c2 = PodView::of(&pod("c", "n1", "2"));
        assert_eq!(
            *c2.spec,
            json!({"containers": [{"name": "c", "image": "i",
            "resources": {"requests": {"cpu": "2"}}}]})
        );
    }
}
