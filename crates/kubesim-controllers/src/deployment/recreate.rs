//! The Recreate strategy: every old pod is gone before the new
//! ReplicaSet gets any.

use kubesim_core::{meta, ApiError};
use kubesim_runtime::Requeue;
use serde_json::Value;

use super::{int, spec_replicas, DeploymentController, Rollout};

pub async fn rollout(c: &DeploymentController, r: &mut Rollout) -> Result<Requeue, ApiError> {
    c.sync_revision(r, false).await?;
    let mut scaled = false;
    for i in 0..r.old.len() {
        if spec_replicas(&r.old[i]) > 0 {
            let mut rs = r.old[i].clone();
            scaled |= c.scale_rs(r, &mut rs, 0).await?;
            r.old[i] = rs;
        }
    }
    if scaled || old_pods_running(c, r) {
        return c.sync_rollout_status(r).await;
    }
    if r.new_rs.is_none() {
        c.sync_revision(r, true).await?;
    }
    if let Some(mut rs) = r.new_rs.clone() {
        c.scale_rs(r, &mut rs, r.replicas()).await?;
        r.new_rs = Some(rs);
    }
    if super::status::complete(&r.d, r.d.get("status").unwrap_or(&Value::Null)) {
        super::cleanup::old_replica_sets(c, r).await?;
    }
    c.sync_rollout_status(r).await
}

/// Whether any pod of an old ReplicaSet still exists and has not finished.
fn old_pods_running(c: &DeploymentController, r: &Rollout) -> bool {
    if r.old.iter().any(|rs| int(rs, "/status/replicas") > 0) {
        return true;
    }
    let uids: Vec<&str> = r.old.iter().map(meta::uid).collect();
    c.pods
        .cache()
        .list_namespace(meta::namespace(&r.d))
        .iter()
        .any(|p| {
            crate::pods::controller_uid(p).is_some_and(|u| uids.contains(&u))
                && !crate::pods::is_finished(p)
        })
}
