//! Storage object in-use protection. The API server gives every new
//! PersistentVolumeClaim the `kubernetes.io/pvc-protection` finalizer and
//! every PersistentVolume `kubernetes.io/pv-protection`; these loops lift
//! them once the object is being deleted and nothing uses it: a claim no
//! pod that is still running (or may run) names, a volume no longer
//! `Bound`. Until then a deleted claim lingers with its deletionTimestamp,
//! which is what kwok's volume Stages (and users' cleanup scripts) expect.

use std::sync::Arc;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{run_workers, Change, ObjectKey, Requeue, ResourceRef, WorkQueue};
use serde_json::Value;

use crate::{drop_finalizer, edit, pods, Context};

pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

pub fn claims_ref() -> ResourceRef {
    ResourceRef::core("persistentvolumeclaims")
}

pub fn volumes_ref() -> ResourceRef {
    ResourceRef::core("persistentvolumes")
}

fn holds(obj: &Value, finalizer: &str) -> bool {
    meta::is_deleting(obj) && meta::finalizers(obj).iter().any(|f| f == finalizer)
}

/// The claims a pod names in its volumes.
fn claim_names(pod: &Value) -> Vec<&str> {
    meta::pointer(pod, "/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.pointer("/persistentVolumeClaim/claimName"))
        .filter_map(Value::as_str)
        .collect()
}

/// Whether `pod` counts as using its claims: not finished (a pod that
/// ended no longer mounts anything).
fn uses_claims(pod: &Value) -> bool {
    !pods::is_finished(pod)
}

pub async fn run(ctx: Arc<Context>) {
    run_with(ctx, true, true).await
}

/// [`run`], lifting the claims' finalizer only when `claims_on` and the
/// volumes' only when `volumes_on` (two controllers upstream).
pub async fn run_with(ctx: Arc<Context>, claims_on: bool, volumes_on: bool) {
    run_as(ctx.clone(), ctx, claims_on, volumes_on).await
}

/// [`run_with`], the claims' finalizer lifted through `ctx` and the
/// volumes' through `volumes_ctx` (each upstream controller's identity).
pub async fn run_as(
    ctx: Arc<Context>,
    volumes_ctx: Arc<Context>,
    claims_on: bool,
    volumes_on: bool,
) {
    let claims = ctx.informers.get(&claims_ref());
    let volumes = ctx.informers.get(&volumes_ref());
    let pods_informer = ctx.informers.get(&ResourceRef::core("pods"));
    let claim_queue: Arc<WorkQueue<ObjectKey>> = WorkQueue::new(ctx.clock.clone());
    let volume_queue: Arc<WorkQueue<ObjectKey>> = WorkQueue::new(ctx.clock.clone());
    let q = claim_queue.clone();
    claims.on_change(move |c| {
        if claims_on && !matches!(c, Change::Deleted(_)) && holds(c.object(), PVC_PROTECTION) {
            q.add(ObjectKey::of(c.object()));
        }
    });
    let q = volume_queue.clone();
    volumes.on_change(move |c| {
        if volumes_on && !matches!(c, Change::Deleted(_)) && holds(c.object(), PV_PROTECTION) {
            q.add(ObjectKey::of(c.object()));
        }
    });
    // A pod going away or finishing may free the claims it named.
    let (q, claim_cache) = (claim_queue.clone(), claims.cache());
    pods_informer.on_change(move |c| {
        let pod = c.object();
        if !claims_on || (!matches!(c, Change::Deleted(_)) && uses_claims(pod)) {
            return;
        }
        for name in claim_names(pod) {
            if claim_cache.contains(meta::namespace(pod), name) {
                q.add(ObjectKey::new(meta::namespace(pod), name));
            }
        }
    });
    ctx.informers.wait_synced().await;
    let (claim_cache, volume_cache, pod_cache) =
        (claims.cache(), volumes.cache(), pods_informer.cache());
    let c2 = volumes_ctx;
    tokio::join!(
        run_workers(claim_queue, 1, "pvc-protection", move |key: ObjectKey| {
            let (ctx, claims, pods) = (ctx.clone(), claim_cache.clone(), pod_cache.clone());
            async move {
                let Some(claim) = claims.get(&key.namespace, &key.name) else {
                    return Ok(None);
                };
                if !holds(&claim, PVC_PROTECTION) {
                    return Ok(None);
                }
                let in_use = pods
                    .list_namespace(&key.namespace)
                    .iter()
                    .any(|p| uses_claims(p) && claim_names(p).contains(&key.name.as_str()));
                if in_use {
                    return Ok(None);
                }
                release(&ctx, &claims_ref(), &claim, PVC_PROTECTION).await
            }
        }),
        run_workers(volume_queue, 1, "pv-protection", move |key: ObjectKey| {
            let (ctx, volumes) = (c2.clone(), volume_cache.clone());
            async move {
                let Some(volume) = volumes.get("", &key.name) else {
                    return Ok(None);
                };
                let bound =
                    volume.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
                if !holds(&volume, PV_PROTECTION) || bound {
                    return Ok(None);
                }
                release(&ctx, &volumes_ref(), &volume, PV_PROTECTION).await
            }
        }),
    );
}

async fn release(
    ctx: &Context,
    r: &ResourceRef,
    obj: &Value,
    finalizer: &str,
) -> Result<Requeue, ApiError> {
    edit(
        ctx.api.as_ref(),
        r,
        meta::namespace(obj),
        meta::name(obj),
        meta::uid(obj),
        &|o| drop_finalizer(o, finalizer),
    )
    .await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_name_claims_until_they_finish() {
        let pod = |phase: &str| {
            json!({"spec": {"volumes": [
                {"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "b", "emptyDir": {}}]},
                "status": {"phase": phase}})
        };
        assert_eq!(claim_names(&pod("Running")), vec!["data"]);
        assert!(uses_claims(&pod("Pending")) && uses_claims(&pod("Running")));
        assert!(!uses_claims(&pod("Succeeded")) && !uses_claims(&pod("Failed")));
    }

    #[test]
    fn only_deleting_objects_with_the_finalizer_are_held() {
        let obj = |deleting: bool, fins: Value| {
            let mut md = json!({"name": "x", "finalizers": fins});
            if deleting {
                md["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            json!({"metadata": md})
        };
        assert!(holds(&obj(true, json!([PVC_PROTECTION])), PVC_PROTECTION));
        assert!(!holds(&obj(false, json!([PVC_PROTECTION])), PVC_PROTECTION));
        assert!(!holds(&obj(true, json!(["other"])), PVC_PROTECTION));
    }
}
