//! The EndpointSlice controller: the same backends as Endpoints, published
//! as `discovery.k8s.io/v1` EndpointSlices of at most 100 endpoints each,
//! owned by their Service (so they go with it).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Api, DeleteOptions, ObjectKey, Requeue, ResourceRef, WorkQueue, WriteOptions,
};
use serde_json::{json, Value};

use super::{backends, selector, target_ref, watch_services, Backend};
use crate::{pods, Context};

/// Endpoints per slice (upstream's `--max-endpoints-per-slice` default).
pub const MAX_PER_SLICE: usize = 100;
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
const SERVICE_NAME: &str = "kubernetes.io/service-name";

fn resource() -> ResourceRef {
    ResourceRef::new("discovery.k8s.io", "v1", "endpointslices")
}

pub async fn run(ctx: Arc<Context>) {
    let services = ctx.informers.get(&ResourceRef::core("services"));
    let pods = ctx.informers.get(&ResourceRef::core("pods"));
    let slices = ctx.informers.get(&resource());
    let queue = WorkQueue::new(ctx.clock.clone());
    watch_services(&services, &pods, &queue);
    let q = queue.clone();
    slices.on_change(move |c| {
        let o = c.object();
        if let Some(svc) = managed_service(o) {
            q.add(ObjectKey::new(meta::namespace(o), svc));
        }
    });
    ctx.informers.wait_synced().await;
    let (svc_cache, pod_cache, slice_cache) = (services.cache(), pods.cache(), slices.cache());
    // Slices this controller created that its informer has not shown yet:
    // until it has, the service is left alone (the slice's arrival queues
    // it again), or a second pass would create duplicates.
    let expected: Arc<Mutex<BTreeMap<ObjectKey, Vec<String>>>> = Arc::default();
    run_workers(queue, 2, "endpointslice", |key: ObjectKey| {
        let (ctx, svc_cache, pod_cache, slice_cache, expected) = (
            ctx.clone(),
            svc_cache.clone(),
            pod_cache.clone(),
            slice_cache.clone(),
            expected.clone(),
        );
        async move {
            {
                let mut exp = expected.lock();
                if let Some(names) = exp.get_mut(&key) {
                    names.retain(|n| slice_cache.get(&key.namespace, n).is_none());
                    if !names.is_empty() {
                        return Ok(None);
                    }
                    exp.remove(&key);
                }
            }
            let mut existing: Vec<Arc<Value>> = slice_cache
                .list_namespace(&key.namespace)
                .into_iter()
                .filter(|s| managed_service(s) == Some(key.name.as_str()))
                .collect();
            existing.sort_by(|a, b| meta::name(a).cmp(meta::name(b)));
            let desired = match svc_cache.get(&key.namespace, &key.name) {
                Some(svc) if selector(&svc).is_some() && !meta::is_deleting(&svc) => {
                    desired(&svc, &backends(&svc, &pod_cache))
                }
                _ => Vec::new(),
            };
            let created = sync(ctx.api.as_ref(), &key.namespace, &existing, desired).await?;
            if !created.is_empty() {
                expected.lock().insert(key, created);
            }
            Ok::<Requeue, ApiError>(None)
        }
    })
    .await;
}

/// The service a slice was made for, if this controller manages it.
fn managed_service(slice: &Value) -> Option<&str> {
    let labels = slice.pointer("/metadata/labels")?;
    if labels
        .get("endpointslice.kubernetes.io/managed-by")?
        .as_str()?
        != MANAGED_BY
    {
        return None;
    }
    labels.get(SERVICE_NAME)?.as_str()
}

fn endpoint(b: &Backend) -> Value {
    let mut e = json!({
        "addresses": [b.ip],
        "conditions": {"ready": b.ready, "serving": pods::is_ready(&b.pod), "terminating": b.terminating},
        "targetRef": target_ref(&b.pod),
    });
    if let Some(n) = &b.node {
        e["nodeName"] = json!(n);
    }
    e
}

/// The slices a service should have, without names: one per group of
/// pods serving the same ports, split every MAX_PER_SLICE endpoints. A
/// service whose pods serve nothing still gets one empty slice, as upstream
/// keeps a placeholder.
pub fn desired(svc: &Value, backends: &[Backend]) -> Vec<Value> {
    let mut groups: std::collections::BTreeMap<String, (Vec<Value>, Vec<Value>)> =
        Default::default();
    for b in backends {
        groups
            .entry(Value::Array(b.ports.clone()).to_string())
            .or_insert_with(|| (b.ports.clone(), Vec::new()))
            .1
            .push(endpoint(b));
    }
    let mut labels = meta::labels(svc);
    labels.insert(SERVICE_NAME.into(), meta::name(svc).into());
    labels.insert(
        "endpointslice.kubernetes.io/managed-by".into(),
        MANAGED_BY.into(),
    );
    if svc.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None") {
        labels.insert("service.kubernetes.io/headless".into(), String::new());
    }
    let owner = json!([{
        "apiVersion": "v1", "kind": "Service", "name": meta::name(svc), "uid": meta::uid(svc),
        "controller": true, "blockOwnerDeletion": true,
    }]);
    let slice = |ports: &[Value], endpoints: &[Value]| {
        json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "generateName": format!("{}-", meta::name(svc)),
                "namespace": meta::namespace(svc),
                "labels": labels,
                "ownerReferences": owner,
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        })
    };
    let mut out = Vec::new();
    for (ports, endpoints) in groups.into_values() {
        for chunk in endpoints.chunks(MAX_PER_SLICE) {
            out.push(slice(&ports, chunk));
        }
    }
    if out.is_empty() {
        out.push(slice(&[], &[]));
    }
    out
}

/// Reuses existing slices in name order for the desired ones, creates the
/// rest and deletes the leftovers. Returns the names of created slices.
async fn sync(
    api: &dyn Api,
    ns: &str,
    existing: &[Arc<Value>],
    desired: Vec<Value>,
) -> Result<Vec<String>, ApiError> {
    let w = WriteOptions::default();
    let r = resource();
    let wanted = desired.len();
    let mut created = Vec::new();
    for (i, mut d) in desired.into_iter().enumerate() {
        match existing.get(i) {
            Some(cur) => {
                let same = ["endpoints", "ports", "addressType"].iter().all(|f| {
                    cur.get(*f) == d.get(*f) || (is_empty(cur.get(*f)) && is_empty(d.get(*f)))
                }) && cur.pointer("/metadata/labels") == d.pointer("/metadata/labels");
                if !same {
                    if let Some(m) = d.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("generateName");
                        m.insert("name".into(), json!(meta::name(cur)));
                        m.insert("resourceVersion".into(), json!(meta::resource_version(cur)));
                    }
                    api.update(&r, ns, d, None, &w).await?;
                }
            }
            None => {
                let made = api.create(&r, ns, d, &w).await?;
                created.push(meta::name(&made).to_string());
            }
        }
    }
    for s in existing.iter().skip(wanted) {
        match api
            .delete(&r, ns, meta::name(s), &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(created)
}

fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}
