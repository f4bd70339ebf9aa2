//! The part of a pod the scheduler keeps. Every pending pod waits in the
//! queue and every bound pod sits in the cache for as long as it lives, so
//! keeping whole parsed pods (several times their JSON size) made the
//! scheduler the largest consumer of memory in the process. Plugins read
//! only placement-related fields; everything else (environment, commands,
//! probes, volume definitions, most of the status) is dropped on the way
//! in.

use serde_json::{Map, Value};

/// Metadata the scheduler reads: identity, labels, owners (default spread
/// constraints), deletion state, and what events name.
const METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "labels",
    "ownerReferences",
    "creationTimestamp",
    "deletionTimestamp",
];

/// Spec fields dropped: the scheduler reads none of them. Containers are
/// kept, trimmed by [`CONTAINER`].
const SPEC_DROPPED: &[&str] = &["volumes", "ephemeralContainers", "readinessGates"];

/// Container fields the scheduler reads: requests, host ports, images, and
/// whether an init container is a restartable sidecar.
const CONTAINER: &[&str] = &["name", "image", "resources", "ports", "restartPolicy"];

/// Status fields the scheduler reads.
const STATUS: &[&str] = &["phase", "nominatedNodeName", "startTime", "conditions"];

/// Conditions the scheduler reads: its own, and the preemption marker.
const CONDITIONS: &[&str] = &["PodScheduled", "DisruptionTarget"];

/// `pod` cut down to what scheduling reads, copying only what is kept.
pub fn scheduling_view(pod: &Value) -> Value {
    let Value::Object(top) = pod else {
        return pod.clone();
    };
    let mut out = Map::new();
    for (k, v) in top {
        let kept = match (k.as_str(), v) {
            ("apiVersion" | "kind", _) => v.clone(),
            ("metadata", Value::Object(md)) => Value::Object(only(md, |k| METADATA.contains(&k))),
            ("spec", Value::Object(spec)) => Value::Object(spec_view(spec)),
            ("status", Value::Object(status)) => Value::Object(status_view(status)),
            _ => continue,
        };
        out.insert(k.clone(), kept);
    }
    Value::Object(out)
}

fn only(m: &Map<String, Value>, keep: impl Fn(&str) -> bool) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn spec_view(spec: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in spec {
        match (k.as_str(), v) {
            (k, _) if SPEC_DROPPED.contains(&k) => {}
            ("containers" | "initContainers", Value::Array(cs)) => {
                let trimmed = cs
                    .iter()
                    .map(|c| match c {
                        Value::Object(c) => Value::Object(only(c, |k| CONTAINER.contains(&k))),
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
    out
}

fn status_view(status: &Map<String, Value>) -> Map<String, Value> {
    let mut out = only(status, |k| STATUS.contains(&k) && k != "conditions");
    if let Some(Value::Array(conds)) = status.get("conditions") {
        let kept: Vec<Value> = conds
            .iter()
            .filter(|c| {
                c.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| CONDITIONS.contains(&t))
            })
            .cloned()
            .collect();
        out.insert("conditions".into(), Value::Array(kept));
    }
    out
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
                "annotations": {"big": "x"}, "managedFields": [{}],
                "ownerReferences": [{"uid": "o", "controller": true}]},
            "spec": {"schedulerName": "s", "nodeSelector": {"z": "1"},
                "tolerations": [{"key": "k"}], "volumes": [{"name": "v"}],
                "containers": [{"name": "c", "image": "i", "env": [{"name": "E"}],
                    "resources": {"requests": {"cpu": "1"}}, "ports": [{"hostPort": 80}],
                    "livenessProbe": {}}],
                "initContainers": [{"name": "s", "image": "j", "restartPolicy": "Always",
                    "command": ["x"]}]},
            "status": {"phase": "Pending", "nominatedNodeName": "n", "qosClass": "Burstable",
                "conditions": [{"type": "PodScheduled", "status": "False"},
                    {"type": "Ready", "status": "False"}]}
        });
        let v = scheduling_view(&pod);
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"},
                    "ownerReferences": [{"uid": "o", "controller": true}]},
                "spec": {"schedulerName": "s", "nodeSelector": {"z": "1"},
                    "tolerations": [{"key": "k"}],
                    "containers": [{"name": "c", "image": "i",
                        "resources": {"requests": {"cpu": "1"}}, "ports": [{"hostPort": 80}]}],
                    "initContainers": [{"name": "s", "image": "j", "restartPolicy": "Always"}]},
                "status": {"phase": "Pending", "nominatedNodeName": "n",
                    "conditions": [{"type": "PodScheduled", "status": "False"}]}
            })
        );
    }
}
