//! The Endpoints and EndpointSlice controllers: both publish, for every
//! Service with a selector, the addresses and ports of the pods it selects.
//! They share how a service's backends are found and its ports resolved.

pub mod legacy;
pub mod slices;

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_core::selector::LabelSelector;
use kubesim_runtime::{Cache, Change, ObjectKey, WorkQueue};
use parking_lot::RwLock;
use serde_json::{json, Value};

use crate::pods;

/// One pod behind a service.
#[derive(Debug, Clone, PartialEq)]
pub struct Backend {
    pub pod: Arc<Value>,
    pub ip: String,
    pub node: Option<String>,
    pub ready: bool,
    pub terminating: bool,
    /// The service ports this pod serves: (name, port, protocol, appProtocol).
    pub ports: Vec<Value>,
}

/// The selector of a service, None for services without one (their
/// endpoints are managed by hand).
pub fn selector(svc: &Value) -> Option<LabelSelector> {
    let sel = svc.pointer("/spec/selector")?.as_object()?;
    if sel.is_empty() {
        return None;
    }
    let labels: BTreeMap<String, String> = sel
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    LabelSelector::from_map(&labels).ok()
}

/// Resolves a service port's targetPort on `pod`: a number, or the name of
/// a container port; None when the pod has no port of that name.
fn target_port(svc_port: &Value, pod: &Value) -> Option<i64> {
    let port = svc_port.get("port").and_then(Value::as_i64)?;
    match svc_port.get("targetPort") {
        None | Some(Value::Null) => Some(port),
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(s)) => match s.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                let protocol = svc_port
                    .get("protocol")
                    .and_then(Value::as_str)
                    .unwrap_or("TCP");
                pod.pointer("/spec/containers")?
                    .as_array()?
                    .iter()
                    .flat_map(|c| {
                        c.get("ports")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    })
                    .find(|p| {
                        p.get("name").and_then(Value::as_str) == Some(s)
                            && p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                                == protocol
                    })?
                    .get("containerPort")?
                    .as_i64()
            }
        },
        Some(_) => None,
    }
}

/// The pods a service routes to, in name order. Pods without an IP or
/// already finished are left out; not-ready ones are kept (marked), since
/// both Endpoints and EndpointSlices list them.
pub fn backends(svc: &Value, pods_cache: &Cache) -> Vec<Backend> {
    let Some(sel) = selector(svc) else {
        return Vec::new();
    };
    let publish_not_ready = svc
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let svc_ports: Vec<Value> = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for pod in pods_cache.select(Some(meta::namespace(svc)), &sel) {
        let ip = pod
            .pointer("/status/podIP")
            .and_then(Value::as_str)
            .unwrap_or("");
        if ip.is_empty() || pods::is_finished(&pod) {
            continue;
        }
        let ports = svc_ports
            .iter()
            .filter_map(|sp| {
                let mut p = json!({
                    "port": target_port(sp, &pod)?,
                    "protocol": sp.get("protocol").and_then(Value::as_str).unwrap_or("TCP"),
                });
                if let Some(name) = sp.get("name").and_then(Value::as_str) {
                    p["name"] = json!(name);
                }
                if let Some(ap) = sp.get("appProtocol") {
                    p["appProtocol"] = ap.clone();
                }
                Some(p)
            })
            .collect();
        let terminating = meta::is_deleting(&pod);
        out.push(Backend {
            ip: ip.to_string(),
            node: pod
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .map(String::from),
            ready: (pods::is_ready(&pod) || publish_not_ready) && !terminating,
            terminating,
            ports,
            pod,
        });
    }
    out
}

/// The reference from an address to its pod.
pub fn target_ref(pod: &Value) -> Value {
    json!({"kind": "Pod", "namespace": meta::namespace(pod), "name": meta::name(pod), "uid": meta::uid(pod)})
}

/// Wires the service and pod informers to `queue` (keyed by service): a
/// service change queues it; a pod change queues every service in its
/// namespace that selects it before or after.
pub fn watch_services(
    services: &kubesim_runtime::Informer,
    pods: &kubesim_runtime::Informer,
    queue: &Arc<WorkQueue<ObjectKey>>,
) {
    // The selectors of the services that have one, by namespace and name:
    // kept from service changes so that a pod change parses no service.
    let selectors: Arc<RwLock<BTreeMap<ObjectKey, LabelSelector>>> = Arc::default();
    let (q, sels) = (queue.clone(), selectors.clone());
    services.on_change(move |c| {
        let svc = c.object();
        let key = ObjectKey::of(svc);
        match selector(svc).filter(|_| !matches!(c, Change::Deleted(_))) {
            Some(sel) => sels.write().insert(key.clone(), sel),
            None => sels.write().remove(&key),
        };
        q.add(key);
    });
    let q = queue.clone();
    pods.on_change(move |c| {
        let (old, new) = match c {
            Change::Added(p) | Change::Deleted(p) => (None, p),
            Change::Modified { old, new } => (Some(old), new),
        };
        let ns = meta::namespace(new);
        let sels = selectors.read();
        let mut in_ns = sels
            .range(ObjectKey::new(ns, "")..)
            .take_while(|(k, _)| k.namespace == ns)
            .peekable();
        if in_ns.peek().is_none() {
            return;
        }
        let (labels, before) = (meta::labels(new), old.map(|o| o.labels()));
        for (key, sel) in in_ns {
            if sel.matches_map(&labels) || before.as_ref().is_some_and(|l| sel.matches_map(l)) {
                q.add(key.clone());
            }
        }
    });
}
