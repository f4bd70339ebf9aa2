//! The node lifecycle controller: a node whose kubelet stops renewing its
//! Lease (and stops posting status) for the grace period is marked
//! `Ready=Unknown`, its pods stop being Ready, and it is tainted
//! `node.kubernetes.io/unreachable` (NoSchedule and NoExecute) so that
//! the scheduler avoids it and the taint eviction controller empties it.
//! A node reporting `Ready=False` gets the `not-ready` taints instead; the
//! taints go when it is Ready again.
//!
//! As upstream, a heartbeat is noticed by its change, timed by this
//! controller's own clock (not by the kubelet's timestamps), and a node
//! seen for the first time (also after a restart) gets a full grace period.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{run_workers, ObjectKey, Requeue, ResourceRef, WorkQueue, WriteOptions};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::{pods, Context};

/// How long a node may go without a heartbeat (upstream's
/// `--node-monitor-grace-period`).
pub const GRACE: Duration = Duration::from_secs(40);
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
const LEASE_NAMESPACE: &str = "kube-node-lease";
/// The conditions a kubelet posts, set to Unknown when it goes silent.
const KUBELET_CONDITIONS: [&str; 4] = ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// The last heartbeat seen of a node: what it looked like, and when.
struct Probe {
    lease_renew: String,
    ready_heartbeat: String,
    at: tokio::time::Instant,
}

pub async fn run(ctx: Arc<Context>) {
    let nodes = ctx.informers.get(&ResourceRef::core("nodes"));
    let leases = ctx
        .informers
        .get(&ResourceRef::new("coordination.k8s.io", "v1", "leases"));
    let pods_inf = ctx.informers.get(&ResourceRef::core("pods"));
    let queue = WorkQueue::new(ctx.clock.clone());
    let q = queue.clone();
    nodes.on_change(move |c| q.add(ObjectKey::new("", meta::name(c.object()))));
    let q = queue.clone();
    leases.on_change(move |c| {
        let l = c.object();
        if meta::namespace(l) == LEASE_NAMESPACE {
            q.add(ObjectKey::new("", meta::name(l)));
        }
    });
    ctx.informers.wait_synced().await;
    let probes: Arc<Mutex<BTreeMap<String, Probe>>> = Arc::default();
    let (node_cache, lease_cache, pod_cache) = (nodes.cache(), leases.cache(), pods_inf.cache());
    run_workers(queue, 1, "node-lifecycle", |key: ObjectKey| {
        let (ctx, node_cache, lease_cache, pod_cache, probes) = (
            ctx.clone(),
            node_cache.clone(),
            lease_cache.clone(),
            pod_cache.clone(),
            probes.clone(),
        );
        async move {
            let Some(node) = node_cache.get("", &key.name) else {
                probes.lock().remove(&key.name);
                return Ok(None);
            };
            let lease = lease_cache.get(LEASE_NAMESPACE, &key.name);
            let silent_for = observe(&probes, &ctx, &node, lease.as_deref());
            reconcile(&ctx, &node, silent_for, &pod_cache).await
        }
    })
    .await;
}

fn str_at<'a>(v: Option<&'a Value>, path: &str) -> &'a str {
    v.and_then(|v| v.pointer(path))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Records a heartbeat if the lease or the Ready condition changed, and
/// returns how long the node has been silent.
fn observe(
    probes: &Mutex<BTreeMap<String, Probe>>,
    ctx: &Context,
    node: &Value,
    lease: Option<&Value>,
) -> Duration {
    let now = ctx.clock.instant();
    let lease_renew = str_at(lease, "/spec/renewTime").to_string();
    let ready_heartbeat = pods::condition(node, "Ready")
        .and_then(|c| c.get("lastHeartbeatTime"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut probes = probes.lock();
    let p = probes.entry(meta::name(node).to_string()).or_insert(Probe {
        lease_renew: lease_renew.clone(),
        ready_heartbeat: ready_heartbeat.clone(),
        at: now,
    });
    if p.lease_renew != lease_renew || p.ready_heartbeat != ready_heartbeat {
        *p = Probe {
            lease_renew,
            ready_heartbeat,
            at: now,
        };
    }
    now.saturating_duration_since(p.at)
}

async fn reconcile(
    ctx: &Context,
    node: &Value,
    silent_for: Duration,
    pod_cache: &kubesim_runtime::Cache,
) -> Result<Requeue, ApiError> {
    let name = meta::name(node);
    let nodes = ResourceRef::core("nodes");
    let w = WriteOptions::default();
    let mut node = node.clone();
    let requeue = if silent_for >= GRACE {
        if mark_unknown(&mut node, &meta::format_time(ctx.clock.now())) {
            tracing::info!(node = name, "node stopped posting status");
            node = ctx.api.update(&nodes, "", node, Some("status"), &w).await?;
            ctx.recorder.record(
                &node,
                kubesim_runtime::EventType::Normal,
                "NodeNotReady",
                format!("Node {name} status is now: NodeNotReady"),
            );
            mark_pods_not_ready(ctx, name, pod_cache).await?;
        }
        None
    } else {
        // Look again when the grace period would run out.
        Some(GRACE - silent_for)
    };
    let ready = pods::condition(&node, "Ready")
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let want = match ready {
        "False" => Some(NOT_READY),
        "Unknown" => Some(UNREACHABLE),
        _ => None,
    };
    if set_taints(&mut node, want, &meta::format_time(ctx.clock.now())) {
        ctx.api.update(&nodes, "", node, None, &w).await?;
    }
    Ok(requeue)
}

/// Sets the kubelet's conditions to Unknown; false when they already are.
pub fn mark_unknown(node: &mut Value, now: &str) -> bool {
    let conds = node
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut);
    let mut changed = false;
    match conds {
        Some(conds) => {
            for kind in KUBELET_CONDITIONS {
                match conds.iter_mut().find(|c| c["type"] == kind) {
                    Some(c) if c["status"] == "Unknown" => {}
                    Some(c) => {
                        c["status"] = json!("Unknown");
                        c["reason"] = json!("NodeStatusUnknown");
                        c["message"] = json!("Kubelet stopped posting node status.");
                        c["lastTransitionTime"] = json!(now);
                        changed = true;
                    }
                    None => {
                        conds.push(never_updated(kind, now));
                        changed = true;
                    }
                }
            }
        }
        None => {
            let list: Vec<Value> = KUBELET_CONDITIONS
                .iter()
                .map(|k| never_updated(k, now))
                .collect();
            if !node.get("status").is_some_and(Value::is_object) {
                node["status"] = json!({});
            }
            node["status"]["conditions"] = Value::Array(list);
            changed = true;
        }
    }
    changed
}

fn never_updated(kind: &str, now: &str) -> Value {
    json!({"type": kind, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
        "message": "Kubelet never posted node status.",
        "lastHeartbeatTime": now, "lastTransitionTime": now})
}

/// Makes the node's lifecycle taints `want` (NoSchedule + NoExecute), or
/// none; other taints are kept. False when nothing changed.
pub fn set_taints(node: &mut Value, want: Option<&str>, now: &str) -> bool {
    let mut taints: Vec<Value> = node
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let before = taints.clone();
    taints.retain(|t| {
        let key = t.get("key").and_then(Value::as_str).unwrap_or("");
        !((key == UNREACHABLE || key == NOT_READY) && Some(key) != want)
    });
    if let Some(key) = want {
        for effect in ["NoSchedule", "NoExecute"] {
            if !taints
                .iter()
                .any(|t| t["key"] == key && t["effect"] == effect)
            {
                let mut t = json!({"key": key, "effect": effect});
                if effect == "NoExecute" {
                    t["timeAdded"] = json!(now);
                }
                taints.push(t);
            }
        }
    }
    if taints == before {
        return false;
    }
    if !node.get("spec").is_some_and(Value::is_object) {
        node["spec"] = json!({});
    }
    if taints.is_empty() {
        if let Some(spec) = node["spec"].as_object_mut() {
            spec.remove("taints");
        }
    } else {
        node["spec"]["taints"] = Value::Array(taints);
    }
    true
}

/// Sets Ready=False on the pods of a node that went silent, as their
/// readiness can no longer be known.
async fn mark_pods_not_ready(
    ctx: &Context,
    node: &str,
    pod_cache: &kubesim_runtime::Cache,
) -> Result<(), ApiError> {
    let now = meta::format_time(ctx.clock.now());
    for pod in pod_cache.on_node(node) {
        if !pods::is_ready(&pod) {
            continue;
        }
        let ns = meta::namespace(&pod).to_string();
        let mut p = (*pod).clone();
        if let Some(conds) = p
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
        {
            for c in conds
                .iter_mut()
                .filter(|c| c["type"] == "Ready" || c["type"] == "ContainersReady")
            {
                c["status"] = json!("False");
                c["lastTransitionTime"] = json!(now);
            }
        }
        match ctx
            .api
            .update(
                &ResourceRef::core("pods"),
                &ns,
                p,
                Some("status"),
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
