//! The RollingUpdate strategy. With `n` desired replicas, the sum of all
//! ReplicaSets' desired sizes never exceeds `n + maxSurge`, and old pods are
//! only removed while at least `n - maxUnavailable` pods stay available.

use kubesim_core::ApiError;
use kubesim_runtime::Requeue;
use serde_json::Value;

use super::{available, spec_replicas, DeploymentController, Rollout};

/// The size the new ReplicaSet may grow to now, given that it has
/// `current` desired replicas: up to the surge limit over all ReplicaSets,
/// never beyond the Deployment's size.
pub fn new_rs_size(r: &Rollout, current: i64) -> i64 {
    let total: i64 = r.old.iter().map(spec_replicas).sum::<i64>() + current;
    let max_total = r.replicas() + r.max_surge();
    if total >= max_total {
        return current;
    }
    let room = (max_total - total).min(r.replicas() - current);
    current + room.max(0)
}

pub async fn rollout(c: &DeploymentController, r: &mut Rollout) -> Result<Requeue, ApiError> {
    c.sync_revision(r, true).await?;
    if scale_new(c, r).await? {
        return c.sync_rollout_status(r).await;
    }
    if scale_old(c, r).await? {
        return c.sync_rollout_status(r).await;
    }
    if super::status::complete(&r.d, r.d.get("status").unwrap_or(&Value::Null)) {
        super::cleanup::old_replica_sets(c, r).await?;
    }
    c.sync_rollout_status(r).await
}

async fn scale_new(c: &DeploymentController, r: &mut Rollout) -> Result<bool, ApiError> {
    let Some(mut rs) = r.new_rs.clone() else {
        return Ok(false);
    };
    let have = spec_replicas(&rs);
    let want = r.replicas();
    let to = if have >= want {
        want
    } else {
        new_rs_size(r, have)
    };
    // Also refreshes the size annotations when only they are stale.
    let scaled = c.scale_rs(r, &mut rs, to).await?;
    r.new_rs = Some(rs);
    Ok(scaled)
}

/// Scales old ReplicaSets down: first their unavailable pods (which count
/// against nothing), then available ones down to the availability floor.
async fn scale_old(c: &DeploymentController, r: &mut Rollout) -> Result<bool, ApiError> {
    let old_total: i64 = r.old.iter().map(spec_replicas).sum();
    if old_total == 0 {
        return Ok(false);
    }
    let all_total: i64 = r.all().into_iter().map(spec_replicas).sum();
    let min_available = r.replicas() - r.max_unavailable();
    let new_unavailable = r
        .new_rs
        .as_ref()
        .map(|rs| spec_replicas(rs) - available(rs))
        .unwrap_or(0);
    let max_scaled_down = all_total - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Ok(false);
    }
    let mut done = 0;
    // Unhealthy pods first, oldest ReplicaSet first.
    for i in 0..r.old.len() {
        if done >= max_scaled_down {
            break;
        }
        let rs = &r.old[i];
        let size = spec_replicas(rs);
        let unhealthy = size - available(rs);
        if size == 0 || unhealthy <= 0 {
            continue;
        }
        let n = unhealthy.min(max_scaled_down - done);
        let mut rs = rs.clone();
        c.scale_rs(r, &mut rs, size - n).await?;
        r.old[i] = rs;
        done += n;
    }
    // Then available pods, as long as enough stay available.
    let available_now: i64 = r.all().into_iter().map(available).sum();
    if available_now > min_available {
        let budget = available_now - min_available;
        let mut taken = 0;
        for i in 0..r.old.len() {
            if taken >= budget {
                break;
            }
            let size = spec_replicas(&r.old[i]);
            if size == 0 {
                continue;
            }
            let n = size.min(budget - taken);
            let mut rs = r.old[i].clone();
            c.scale_rs(r, &mut rs, size - n).await?;
            r.old[i] = rs;
            taken += n;
        }
        done += taken;
    }
    Ok(done > 0)
}
