//! Retroactive default StorageClass assignment, as upstream's volume
//! controller does it: a claim created while no class was marked default
//! names none; once one is, every such claim not yet bound to a volume
//! gets it. kwok's volume Stages wait for claims to name their class.

use std::sync::Arc;

use kubesim_core::defaults::storage;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{run_workers, Change, ObjectKey, Requeue, ResourceRef, WorkQueue};
use serde_json::{json, Value};

use crate::{edit, Context};

fn claims_ref() -> ResourceRef {
    ResourceRef::core("persistentvolumeclaims")
}

fn classes_ref() -> ResourceRef {
    ResourceRef::new("storage.k8s.io", "v1", "storageclasses")
}

/// Whether `claim` is one the assignment is for.
fn waits(claim: &Value) -> bool {
    storage::claim_wants_default_class(claim)
        && meta::pointer(claim, "/spec/volumeName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        && !meta::is_deleting(claim)
}

pub async fn run(ctx: Arc<Context>) {
    let claims = ctx.informers.get(&claims_ref());
    let classes = ctx.informers.get(&classes_ref());
    let queue: Arc<WorkQueue<ObjectKey>> = WorkQueue::new(ctx.clock.clone());
    let q = queue.clone();
    claims.on_change(move |c| {
        if !matches!(c, Change::Deleted(_)) && waits(c.object()) {
            q.add(ObjectKey::of(c.object()));
        }
    });
    // A class becoming the default reaches every claim still waiting.
    let (q, claim_cache) = (queue.clone(), claims.cache());
    classes.on_change(move |c| {
        if matches!(c, Change::Deleted(_)) || !storage::is_default_class(c.object()) {
            return;
        }
        for claim in claim_cache.list() {
            if waits(&claim) {
                q.add(ObjectKey::of(&claim));
            }
        }
    });
    ctx.informers.wait_synced().await;
    let (claim_cache, class_cache) = (claims.cache(), classes.cache());
    run_workers(queue, 1, "default-storage-class", move |key: ObjectKey| {
        let (ctx, claims, classes) = (ctx.clone(), claim_cache.clone(), class_cache.clone());
        async move {
            let Some(claim) = claims.get(&key.namespace, &key.name) else {
                return Ok(None);
            };
            let all = classes.list();
            let Some(class) = storage::default_class_name(all.iter().map(|c| &**c)) else {
                return Ok(None);
            };
            if !waits(&claim) {
                return Ok(None);
            }
            assign(&ctx, &claim, &class).await
        }
    })
    .await;
}

async fn assign(ctx: &Context, claim: &Value, class: &str) -> Result<Requeue, ApiError> {
    edit(
        ctx.api.as_ref(),
        &claims_ref(),
        meta::namespace(claim),
        meta::name(claim),
        meta::uid(claim),
        &|o| {
            if !waits(o) {
                return false;
            }
            match o.get_mut("spec").and_then(Value::as_object_mut) {
                Some(spec) => {
                    spec.insert("storageClassName".into(), json!(class));
                    true
                }
                None => false,
            }
        },
    )
    .await?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::waits;
    use serde_json::json;

    #[test]
    fn only_unbound_claims_without_a_class_wait() {
        assert!(waits(&json!({"metadata": {"name": "c"}, "spec": {}})));
        assert!(!waits(
            &json!({"metadata": {"name": "c"}, "spec": {"volumeName": "pv"}})
        ));
        assert!(!waits(
            &json!({"metadata": {"name": "c"}, "spec": {"storageClassName": ""}})
        ));
    }
}
