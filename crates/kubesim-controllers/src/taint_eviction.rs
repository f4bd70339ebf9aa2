//! Taint-based eviction: pods on a node with `NoExecute` taints they do not
//! tolerate are deleted at once; pods tolerating them for
//! `tolerationSeconds` are deleted that long after the taint was added.
//! With the node lifecycle controller's `unreachable`/`not-ready` taints
//! and the default 300 s tolerations every pod gets, this is what empties a
//! dead node five minutes after it went silent.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, DeleteOptions, EventType, ObjectKey, Requeue, ResourceRef, WorkQueue,
};
use parking_lot::RwLock;
use serde_json::Value;

use crate::Context;

pub async fn run(ctx: Arc<Context>) {
    let nodes = ctx.informers.get(&ResourceRef::core("nodes"));
    let pods = ctx.informers.get(&ResourceRef::core("pods"));
    let queue = WorkQueue::new(ctx.clock.clone());
    // Names of the nodes with NoExecute taints: nearly always none, and
    // knowing that spares parsing a pod and its node on every pod change.
    let tainted: Arc<RwLock<BTreeSet<String>>> = Arc::default();
    let q = queue.clone();
    let pod_cache = pods.cache();
    let t = tainted.clone();
    // A node's NoExecute taints changing concerns every pod on it.
    nodes.on_change(move |c| {
        let taints = |n: &Value| no_execute(n);
        let name = meta::name(c.object());
        let now = match c {
            kubesim_runtime::Change::Deleted(_) => Vec::new(),
            _ => taints(c.object()),
        };
        if now.is_empty() {
            t.write().remove(name);
        } else {
            t.write().insert(name.to_string());
        }
        let changed = match c {
            kubesim_runtime::Change::Modified { old, .. } => taints(old) != now,
            kubesim_runtime::Change::Added(_) => !now.is_empty(),
            kubesim_runtime::Change::Deleted(_) => false,
        };
        if changed {
            for p in pod_cache.on_node(name) {
                q.add(ObjectKey::of(&p));
            }
        }
    });
    let q = queue.clone();
    pods.on_change(move |c| {
        if let kubesim_runtime::Change::Deleted(_) = c {
            return;
        }
        if node_of(c.object()).is_some_and(|n| tainted.read().contains(n)) {
            q.add(ObjectKey::of(c.object()));
        }
    });
    ctx.informers.wait_synced().await;
    let (node_cache, pod_cache) = (nodes.cache(), pods.cache());
    run_workers(queue, 2, "taint-eviction", |key: ObjectKey| {
        let (ctx, node_cache, pod_cache) = (ctx.clone(), node_cache.clone(), pod_cache.clone());
        async move {
            let Some(pod) = pod_cache.get(&key.namespace, &key.name) else {
                return Ok(None);
            };
            if meta::is_deleting(&pod) {
                return Ok(None);
            }
            let Some(node) = node_of(&pod).and_then(|n| node_cache.get("", n)) else {
                return Ok(None);
            };
            let now = ctx.clock.now();
            match eviction_time(&pod, &node) {
                None => Ok(None),
                Some(at) if at > now => {
                    let wait = now.duration_until(at).unsigned_abs();
                    Ok(Some(Duration::from_nanos(
                        wait.as_nanos().min(u64::MAX as u128) as u64,
                    )))
                }
                Some(_) => evict(&ctx, &pod).await,
            }
        }
    })
    .await;
}

fn node_of(pod: &Value) -> Option<&str> {
    meta::pointer(pod, "/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
}

fn no_execute(node: &Value) -> Vec<Value> {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| t.get("effect").and_then(Value::as_str) == Some("NoExecute"))
        .cloned()
        .collect()
}

/// Whether `toleration` tolerates `taint` (key, operator Exists/Equal,
/// value, effect; an empty key with Exists tolerates everything).
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let s = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
    let effect = s(toleration, "effect");
    if !effect.is_empty() && effect != s(taint, "effect") {
        return false;
    }
    let key = s(toleration, "key");
    if !key.is_empty() && key != s(taint, "key") {
        return false;
    }
    match s(toleration, "operator").as_str() {
        "Exists" => true,
        "" | "Equal" => !key.is_empty() && s(toleration, "value") == s(taint, "value"),
        _ => false,
    }
}

/// When the pod must go: None to keep it, the taint time (or earlier) to
/// evict now, or the time its shortest toleration runs out.
pub fn eviction_time(pod: &Value, node: &Value) -> Option<jiff::Timestamp> {
    let taints = no_execute(node);
    if taints.is_empty() {
        return None;
    }
    let tolerations: Vec<&Value> = pod
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let mut due: Option<jiff::Timestamp> = None;
    for taint in &taints {
        let added = taint
            .get("timeAdded")
            .and_then(Value::as_str)
            .and_then(meta::parse_time)
            .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let matching: Vec<&&Value> = tolerations.iter().filter(|t| tolerates(t, taint)).collect();
        if matching.is_empty() {
            return Some(jiff::Timestamp::UNIX_EPOCH);
        }
        // Tolerated forever by any toleration without seconds; otherwise
        // by the shortest of them (upstream takes the minimum).
        if matching
            .iter()
            .any(|t| t.get("tolerationSeconds").and_then(Value::as_i64).is_none())
        {
            continue;
        }
        let secs = matching
            .iter()
            .filter_map(|t| t.get("tolerationSeconds").and_then(Value::as_i64))
            .min()
            .unwrap_or(0)
            .max(0);
        let at = added + jiff::SignedDuration::from_secs(secs);
        due = Some(due.map_or(at, |d| d.min(at)));
    }
    due
}

async fn evict(ctx: &Context, pod: &Value) -> Result<Requeue, ApiError> {
    ctx.recorder.record(
        pod,
        EventType::Normal,
        "TaintManagerEviction",
        format!(
            "Marking for deletion Pod {}/{}",
            meta::namespace(pod),
            meta::name(pod)
        ),
    );
    let opts = DeleteOptions {
        precondition_uid: Some(meta::uid(pod).to_string()),
        status_only: true,
        ..Default::default()
    };
    match ctx
        .api
        .delete(
            &ResourceRef::core("pods"),
            meta::namespace(pod),
            meta::name(pod),
            &opts,
        )
        .await
    {
        Ok(_) => Ok(None),
        Err(e) if e.code == 404 || e.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(taints: Value) -> Value {
        json!({"spec": {"taints": taints}})
    }

    #[test]
    fn untolerated_no_execute_taint_evicts_at_once() {
        let n = node(
            json!([{"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]),
        );
        let pod = json!({"spec": {}});
        assert_eq!(eviction_time(&pod, &n), Some(jiff::Timestamp::UNIX_EPOCH));
    }

    #[test]
    fn toleration_seconds_delay_eviction() {
        let n = node(
            json!([{"key": UNREACHABLE_KEY, "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]),
        );
        let pod = json!({"spec": {"tolerations": [
            {"key": UNREACHABLE_KEY, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}});
        assert_eq!(
            eviction_time(&pod, &n).unwrap().to_string(),
            "2026-01-01T00:05:00Z"
        );
        let forever = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        assert_eq!(eviction_time(&forever, &n), None);
        // NoSchedule taints never evict.
        let soft = node(json!([{"key": "k", "effect": "NoSchedule"}]));
        assert_eq!(eviction_time(&json!({"spec": {}}), &soft), None);
    }

    const UNREACHABLE_KEY: &str = "node.kubernetes.io/unreachable";

    #[test]
    fn toleration_matching() {
        let taint = json!({"key": "k", "value": "v", "effect": "NoExecute"});
        assert!(tolerates(&json!({"key": "k", "value": "v"}), &taint));
        assert!(tolerates(
            &json!({"key": "k", "operator": "Exists", "effect": "NoExecute"}),
            &taint
        ));
        assert!(!tolerates(&json!({"key": "k", "value": "w"}), &taint));
        assert!(!tolerates(
            &json!({"key": "k", "operator": "Exists", "effect": "NoSchedule"}),
            &taint
        ));
        assert!(
            !tolerates(&json!({"value": "v"}), &taint),
            "Equal needs a key"
        );
    }
}
