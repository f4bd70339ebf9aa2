//! The part of the persistent volume controller that kubesim has: a
//! `Bound` volume whose claim is gone (deleted, or replaced by a namesake
//! with another uid) becomes `Released`. What happens to it then is its
//! reclaim policy's business (kwok's `pv-delete` Stage deletes
//! `Delete` volumes); provisioning and binding are left to Stages or to
//! whoever creates the objects.

use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{run_workers, Change, ObjectKey, WorkQueue};
use serde_json::{json, Value};

use crate::storage_protection::{claims_ref, volumes_ref};
use crate::Context;

/// The namespace, name and uid of the claim a bound volume names.
fn bound_claim(volume: &Value) -> Option<(&str, &str, &str)> {
    if volume.pointer("/status/phase").and_then(Value::as_str) != Some("Bound") {
        return None;
    }
    let r = volume.pointer("/spec/claimRef")?;
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    Some((s("namespace"), s("name"), s("uid")))
}

pub async fn run(ctx: Arc<Context>) {
    let claims = ctx.informers.get(&claims_ref());
    let volumes = ctx.informers.get(&volumes_ref());
    let queue: Arc<WorkQueue<ObjectKey>> = WorkQueue::new(ctx.clock.clone());
    let q = queue.clone();
    volumes.on_change(move |c| {
        if !matches!(c, Change::Deleted(_)) && bound_claim(c.object()).is_some() {
            q.add(ObjectKey::of(c.object()));
        }
    });
    // A claim going away releases the volume bound to it.
    let q = queue.clone();
    claims.on_change(move |c| {
        if let Change::Deleted(claim) = c {
            if let Some(v) = claim.pointer("/spec/volumeName").and_then(Value::as_str) {
                q.add(ObjectKey::new("", v));
            }
        }
    });
    ctx.informers.wait_synced().await;
    let (claim_cache, volume_cache) = (claims.cache(), volumes.cache());
    run_workers(
        queue,
        1,
        "persistentvolume-release",
        move |key: ObjectKey| {
            let (ctx, claims, volumes) = (ctx.clone(), claim_cache.clone(), volume_cache.clone());
            async move {
                let Some(volume) = volumes.get("", &key.name) else {
                    return Ok(None);
                };
                let Some((ns, name, uid)) = bound_claim(&volume) else {
                    return Ok(None);
                };
                let present = claims
                    .get(ns, name)
                    .is_some_and(|c| uid.is_empty() || meta::uid(&c) == uid);
                if present {
                    return Ok(None);
                }
                let mut released = (*volume).clone();
                released["status"]["phase"] = json!("Released");
                crate::status_write::write_unless_gone(&*ctx.api, &volumes_ref(), "", released)
                    .await
                    .map(|()| None)
            }
        },
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bound_volumes_name_their_claim() {
        let pv = |phase: &str| {
            json!({"spec": {"claimRef": {"namespace": "d", "name": "c", "uid": "u"}},
                "status": {"phase": phase}})
        };
        assert_eq!(bound_claim(&pv("Bound")), Some(("d", "c", "u")));
        assert_eq!(bound_claim(&pv("Released")), None);
        assert_eq!(bound_claim(&pv("Available")), None);
    }
}
