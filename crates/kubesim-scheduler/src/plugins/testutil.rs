//! Builders for plugin unit tests.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::framework::{NodeInfo, PodInfo};

fn merge(base: &mut Value, extra: &Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, e) => *b = e.clone(),
    }
}

/// A node with 4 cpu, 8Gi and 110 pods unless `extra` says otherwise
/// (`extra` is merged into the object).
pub fn node(name: &str, extra: Value) -> NodeInfo {
    let mut n = json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    });
    merge(&mut n, &extra);
    NodeInfo::from_node(Arc::new(n))
}

/// A pod with `spec`.
pub fn pod(spec: Value) -> PodInfo {
    named_pod("p", spec)
}

pub fn named_pod(name: &str, spec: Value) -> PodInfo {
    PodInfo::from_pod(Arc::new(json!({
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": spec,
    })))
}

/// A pod requesting `cpu` and `memory` in one container.
pub fn sized_pod(name: &str, cpu: &str, memory: &str) -> PodInfo {
    named_pod(
        name,
        json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}),
    )
}
