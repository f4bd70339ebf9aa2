//! The Endpoints controller: one `Endpoints` object per selecting Service,
//! named like it, whose subsets group pods by the ports they serve.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Api, DeleteOptions, ObjectKey, Requeue, ResourceRef, WorkQueue, WriteOptions,
};
use serde_json::{json, Map, Value};

use super::{backends, selector, target_ref, watch_services};
use crate::Context;

pub async fn run(ctx: Arc<Context>) {
    let services = ctx.informers.get(&ResourceRef::core("services"));
    let pods = ctx.informers.get(&ResourceRef::core("pods"));
    let endpoints = ctx.informers.get(&ResourceRef::core("endpoints"));
    let queue = WorkQueue::new(ctx.clock.clone());
    watch_services(&services, &pods, &queue);
    // An Endpoints edited or deleted by someone else is put right again.
    let q = queue.clone();
    endpoints.on_change(move |c| q.add(ObjectKey::of(c.object())));
    ctx.informers.wait_synced().await;
    let (svc_cache, pod_cache, ep_cache) = (services.cache(), pods.cache(), endpoints.cache());
    run_workers(queue, 2, "endpoints", |key: ObjectKey| {
        let (ctx, svc_cache, pod_cache, ep_cache) = (
            ctx.clone(),
            svc_cache.clone(),
            pod_cache.clone(),
            ep_cache.clone(),
        );
        async move {
            let current = ep_cache.get(&key.namespace, &key.name);
            let svc = svc_cache.get(&key.namespace, &key.name);
            let desired = match &svc {
                Some(svc) if selector(svc).is_some() && !meta::is_deleting(svc) => {
                    Some(desired(svc, &backends(svc, &pod_cache)))
                }
                // A service without a selector: its endpoints are the user's.
                Some(_) => return Ok(None),
                None => None,
            };
            sync(ctx.api.as_ref(), &key, current.as_deref(), desired).await
        }
    })
    .await;
}

/// The Endpoints a service should have.
pub fn desired(svc: &Value, backends: &[super::Backend]) -> Value {
    // Group pods by the exact list of ports they serve, as upstream does;
    // a pod serving none of the service's ports is left out.
    // Keyed by the ports' JSON: (ports, ready addresses, not-ready ones).
    type Subset = (Vec<Value>, Vec<Value>, Vec<Value>);
    let mut groups: BTreeMap<String, Subset> = BTreeMap::new();
    for b in backends
        .iter()
        .filter(|b| !b.ports.is_empty() && !b.terminating)
    {
        let entry = groups
            .entry(Value::Array(b.ports.clone()).to_string())
            .or_insert_with(|| (b.ports.clone(), Vec::new(), Vec::new()));
        let mut addr = json!({"ip": b.ip, "targetRef": target_ref(&b.pod)});
        if let Some(n) = &b.node {
            addr["nodeName"] = json!(n);
        }
        if b.ready {
            entry.1.push(addr);
        } else {
            entry.2.push(addr);
        }
    }
    let subsets: Vec<Value> = groups
        .into_values()
        .map(|(ports, mut ready, mut not_ready)| {
            let by_ip = |a: &Value, b: &Value| a["ip"].as_str().cmp(&b["ip"].as_str());
            ready.sort_by(by_ip);
            not_ready.sort_by(by_ip);
            let mut s = Map::new();
            if !ready.is_empty() {
                s.insert("addresses".into(), Value::Array(ready));
            }
            if !not_ready.is_empty() {
                s.insert("notReadyAddresses".into(), Value::Array(not_ready));
            }
            s.insert("ports".into(), Value::Array(ports));
            Value::Object(s)
        })
        .collect();
    let mut labels = meta::labels(svc);
    if svc.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None") {
        labels.insert("service.kubernetes.io/headless".into(), String::new());
    }
    let mut ep = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": meta::name(svc), "namespace": meta::namespace(svc), "labels": labels},
    });
    if !subsets.is_empty() {
        ep["subsets"] = Value::Array(subsets);
    }
    ep
}

/// Makes the stored Endpoints match `desired` (None: should not exist).
async fn sync(
    api: &dyn Api,
    key: &ObjectKey,
    current: Option<&Value>,
    desired: Option<Value>,
) -> Result<Requeue, ApiError> {
    let r = ResourceRef::core("endpoints");
    let w = WriteOptions::default();
    match (current, desired) {
        (None, None) => {}
        (Some(_), None) => {
            match api
                .delete(&r, &key.namespace, &key.name, &DeleteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        // A 409 means the informer is behind; the retry sees the object.
        (None, Some(d)) => {
            api.create(&r, &key.namespace, d, &w).await?;
        }
        (Some(cur), Some(mut d)) => {
            let same = cur.get("subsets") == d.get("subsets")
                && cur.pointer("/metadata/labels") == d.pointer("/metadata/labels");
            if !same {
                d["metadata"]["resourceVersion"] = json!(meta::resource_version(cur));
                api.update(&r, &key.namespace, d, None, &w).await?;
            }
        }
    }
    Ok(None)
}
