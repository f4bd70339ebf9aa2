//! Old ReplicaSets beyond `spec.revisionHistoryLimit` are deleted, oldest
//! revision first, once they are scaled to zero and have no pods left.

use kubesim_core::{meta, ApiError};
use kubesim_runtime::DeleteOptions;
use serde_json::Value;

use super::revision::revision_of;
use super::{int, spec_replicas, DeploymentController, Rollout};
use crate::replicaset::replicasets;

pub async fn old_replica_sets(c: &DeploymentController, r: &Rollout) -> Result<(), ApiError> {
    let Some(limit) =
        r.d.pointer("/spec/revisionHistoryLimit")
            .and_then(Value::as_i64)
    else {
        return Ok(());
    };
    let mut cleanable: Vec<&Value> = r.old.iter().filter(|rs| !meta::is_deleting(rs)).collect();
    let excess = cleanable.len() as i64 - limit.max(0);
    if excess <= 0 {
        return Ok(());
    }
    cleanable.sort_by(|a, b| {
        revision_of(a).cmp(&revision_of(b)).then(
            meta::str_field(a, "creationTimestamp").cmp(&meta::str_field(b, "creationTimestamp")),
        )
    });
    for rs in cleanable.into_iter().take(excess as usize) {
        let settled = int(rs, "/status/observedGeneration") >= int(rs, "/metadata/generation");
        if spec_replicas(rs) != 0 || int(rs, "/status/replicas") != 0 || !settled {
            continue;
        }
        let opts = DeleteOptions {
            precondition_uid: Some(meta::uid(rs).to_string()),
            ..Default::default()
        };
        match c
            .ctx
            .api
            .delete(&replicasets(), meta::namespace(rs), meta::name(rs), &opts)
            .await
        {
            Ok(_) => c.forget_written(rs),
            Err(e) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
