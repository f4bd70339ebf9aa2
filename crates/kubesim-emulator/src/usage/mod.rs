//! Emulated resource usage: what each container, pod and node uses
//! (`model`, with the order of its sources), the kwok objects that say so
//! (`rules`: ResourceUsage, ClusterResourceUsage; `metric`: Metric, the
//! kubelet-style Prometheus endpoints) evaluated with CEL (`cel`), and the
//! publisher of the resource metrics API (`metrics.k8s.io` PodMetrics and
//! NodeMetrics) that `kubectl top` and the HorizontalPodAutoscaler read.
//!
//! Metrics objects are rewritten only when the usage changes, on a 15 s
//! beat (the resolution of metrics-server), so a steady cluster costs no
//! writes.

pub mod cel;
pub mod cumulative;
pub mod follow;
pub mod metric;
pub mod model;
pub mod rules;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, quantity::Quantity, ApiError};
use kubesim_runtime::{Api, Clock, DeleteOptions, ResourceRef, WriteOptions};
use serde_json::{json, Value};

use crate::apate::{types::bytes_quantity, Faults};
pub use model::Model;

pub const USAGE_CPU: &str = "kwok.x-k8s.io/usage-cpu";
pub const USAGE_MEMORY: &str = "kwok.x-k8s.io/usage-memory";
const BEAT: Duration = Duration::from_secs(15);
/// Share of the requests an emulated container uses by default.
const DEFAULT_FRACTION: f64 = 0.1;
const MIB: i128 = 1 << 20;

/// Usage of one container: millicores and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub cpu_milli: i128,
    pub memory: i128,
}

impl Usage {
    fn add(&mut self, o: Usage) {
        self.cpu_milli += o.cpu_milli;
        self.memory += o.memory;
    }

    fn json(&self) -> Value {
        json!({"cpu": format!("{}m", self.cpu_milli), "memory": format!("{}Ki", self.memory / 1024)})
    }
}

fn quantity(s: &str) -> Option<i128> {
    Quantity::parse(s).ok().map(|q| q.milli())
}

/// The usage each container of `pod` has when no usage object or Apate
/// configuration speaks of it: kwok's usage annotations, else a share of
/// its requests, floored at an idle process's 1m and 1Mi.
pub fn base_usage(pod: &Value) -> Vec<(String, Usage)> {
    let annotations = meta::annotations(pod);
    model::containers(pod)
        .iter()
        .map(|c| {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let request = |r: &str| {
                c.pointer(&format!("/resources/requests/{r}"))
                    .and_then(Value::as_str)
                    .and_then(quantity)
                    .unwrap_or(0)
            };
            let mut u = Usage {
                cpu_milli: ((request("cpu") as f64) * DEFAULT_FRACTION) as i128,
                memory: ((request("memory") as f64 / 1000.0) * DEFAULT_FRACTION) as i128,
            };
            if let Some(cpu) = annotations.get(USAGE_CPU).and_then(|s| quantity(s)) {
                u.cpu_milli = cpu;
            }
            if let Some(mem) = annotations.get(USAGE_MEMORY).and_then(|s| quantity(s)) {
                u.memory = mem / 1000;
            }
            u.cpu_milli = u.cpu_milli.max(1);
            u.memory = u.memory.max(MIB);
            (name, u)
        })
        .collect()
}

/// Apate's `pod_resources` for container `index` (Apate speaks only of a
/// pod's first container): millicores and bytes, each when given.
pub fn apate_usage(
    pod: &Value,
    index: usize,
    faults: &Faults,
) -> Option<(Option<i128>, Option<i128>)> {
    if index != 0 {
        return None;
    }
    let r = faults
        .pod(meta::namespace(pod), meta::name(pod))
        .and_then(|s| s.pod_resources)?;
    let cpu = r.cpu.map(|c| c as i128 * 1000);
    let memory = r
        .memory
        .as_deref()
        .and_then(|m| bytes_quantity(m).ok())
        .and_then(|m| m.parse().ok());
    Some((cpu, memory))
}

pub struct UsagePublisher {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    pub model: Arc<Model>,
}

impl UsagePublisher {
    pub async fn run(self) {
        let mut pods_written: BTreeMap<(String, String), Vec<(String, Usage)>> = BTreeMap::new();
        let mut nodes_written: BTreeMap<String, Usage> = BTreeMap::new();
        loop {
            self.clock.sleep(BEAT).await;
            if let Err(e) = self.publish(&mut pods_written, &mut nodes_written).await {
                tracing::debug!(error = %e.message, "publishing usage failed");
            }
            self.model.prune();
        }
    }

    async fn publish(
        &self,
        pods_written: &mut BTreeMap<(String, String), Vec<(String, Usage)>>,
        nodes_written: &mut BTreeMap<String, Usage>,
    ) -> Result<(), ApiError> {
        let pod_metrics = ResourceRef::new("metrics.k8s.io", "v1beta1", "pods");
        let node_metrics = ResourceRef::new("metrics.k8s.io", "v1beta1", "nodes");
        let now = meta::format_time(self.clock.now());
        let mut seen_pods = BTreeMap::new();
        let mut seen_nodes = BTreeMap::new();
        // In name order: the cache keeps its objects sorted.
        let nodes = self.model.nodes.list();
        for node in nodes.iter().filter(|n| self.model.selector.manages(n)) {
            let node_name = meta::name(node).to_string();
            let mut total = Usage::default();
            for pod in self.model.running_pods(&node_name) {
                let usage = self.model.pod_usage(&pod);
                for (_, u) in &usage {
                    total.add(*u);
                }
                let key = (
                    meta::namespace(&pod).to_string(),
                    meta::name(&pod).to_string(),
                );
                if pods_written.get(&key) != Some(&usage) {
                    let obj = json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
                        "metadata": {"name": key.1, "namespace": key.0, "labels": meta::labels(&pod)},
                        "timestamp": now, "window": "15s",
                        "containers": usage.iter().map(|(n, u)| json!({"name": n, "usage": u.json()})).collect::<Vec<_>>()});
                    put(&self.api, &pod_metrics, &key.0, &key.1, obj).await?;
                }
                seen_pods.insert(key, usage);
            }
            if nodes_written.get(&node_name) != Some(&total) {
                let obj = json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "NodeMetrics",
                    "metadata": {"name": node_name, "labels": meta::labels(node)},
                    "timestamp": now, "window": "15s", "usage": total.json()});
                put(&self.api, &node_metrics, "", &node_name, obj).await?;
            }
            seen_nodes.insert(node_name, total);
        }
        for (ns, name) in pods_written.keys().filter(|k| !seen_pods.contains_key(*k)) {
            gone(&self.api, &pod_metrics, ns, name).await?;
        }
        for name in nodes_written
            .keys()
            .filter(|k| !seen_nodes.contains_key(*k))
        {
            gone(&self.api, &node_metrics, "", name).await?;
        }
        *pods_written = seen_pods;
        *nodes_written = seen_nodes;
        Ok(())
    }
}

/// Creates or replaces a metrics object.
async fn put(
    api: &Arc<dyn Api>,
    r: &ResourceRef,
    ns: &str,
    name: &str,
    obj: Value,
) -> Result<(), ApiError> {
    let body = obj.to_string().into_bytes();
    match api
        .patch(
            r,
            ns,
            name,
            kubesim_core::patch::PatchType::Merge,
            body,
            None,
            &WriteOptions::default(),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => api
            .create(r, ns, obj, &WriteOptions::default())
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    }
}

async fn gone(api: &Arc<dyn Api>, r: &ResourceRef, ns: &str, name: &str) -> Result<(), ApiError> {
    match api.delete(r, ns, name, &DeleteOptions::default()).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_then_requests() {
        let pod = json!({"metadata": {"name": "p", "namespace": "d"},
            "spec": {"containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
                {"name": "b"}]}});
        let u = base_usage(&pod);
        assert_eq!(
            u[0].1,
            Usage {
                cpu_milli: 50,
                memory: 256 * MIB / 10
            }
        );
        // No requests: an idle process's floor.
        assert_eq!(
            u[1].1,
            Usage {
                cpu_milli: 1,
                memory: MIB
            }
        );
        let mut annotated = pod.clone();
        annotated["metadata"]["annotations"] = json!({USAGE_CPU: "250m", USAGE_MEMORY: "100Mi"});
        let u = base_usage(&annotated);
        assert_eq!(
            u[0].1,
            Usage {
                cpu_milli: 250,
                memory: 100 * MIB
            }
        );
        assert_eq!(
            u[1].1,
            Usage {
                cpu_milli: 250,
                memory: 100 * MIB
            }
        );
    }
}
