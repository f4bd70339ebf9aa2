//! ClusterRole aggregation, as kube-controller-manager's controller of
//! that name does it: a ClusterRole with an `aggregationRule` holds the
//! rules of every ClusterRole its selectors pick. Any change to any
//! ClusterRole can change what an aggregated one should hold, so each
//! change requeues them all; chains (view into edit into admin) settle
//! as each write comes back as a change.

use std::sync::Arc;

use kubesim_core::rbac::aggregated_rules;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{run_workers, ObjectKey, Requeue, ResourceRef, WorkQueue};
use serde_json::{json, Value};

use crate::{edit, Context};

fn roles_ref() -> ResourceRef {
    ResourceRef::new("rbac.authorization.k8s.io", "v1", "clusterroles")
}

fn aggregated(role: &Value) -> bool {
    role.get("aggregationRule").is_some_and(|r| !r.is_null())
}

pub async fn run(ctx: Arc<Context>) {
    let roles = ctx.informers.get(&roles_ref());
    let queue: Arc<WorkQueue<ObjectKey>> = WorkQueue::new(ctx.clock.clone());
    let (q, cache) = (queue.clone(), roles.cache());
    roles.on_change(move |_| {
        for role in cache.list() {
            if aggregated(&role) {
                q.add(ObjectKey::of(&role));
            }
        }
    });
    ctx.informers.wait_synced().await;
    let cache = roles.cache();
    run_workers(
        queue,
        1,
        "clusterrole-aggregation",
        move |key: ObjectKey| {
            let (ctx, cache) = (ctx.clone(), cache.clone());
            async move {
                let Some(role) = cache.get("", &key.name) else {
                    return Ok(None);
                };
                let all: Vec<Value> = cache.list().iter().map(|r| (**r).clone()).collect();
                let Some(rules) = aggregated_rules(&role, &all) else {
                    return Ok(None);
                };
                if role.get("rules") == Some(&json!(rules)) {
                    return Ok(None);
                }
                update(&ctx, &role, rules).await
            }
        },
    )
    .await;
}

async fn update(ctx: &Context, role: &Value, rules: Vec<Value>) -> Result<Requeue, ApiError> {
    let rules = json!(rules);
    edit(
        ctx.api.as_ref(),
        &roles_ref(),
        "",
        meta::name(role),
        meta::uid(role),
        &|o| {
            if o.get("rules") == Some(&rules) {
                return false;
            }
            o["rules"] = rules.clone();
            true
        },
    )
    .await?;
    Ok(None)
}
