//! Scaling a Deployment (its `spec.replicas` changed) without a template
//! change. With one active ReplicaSet it takes the whole size; in the middle
//! of a rollout the change is spread over the active ReplicaSets in
//! proportion to their sizes, so the rollout's progress is kept.

use kubesim_core::{meta, ApiError};
use serde_json::Value;

use super::{int, spec_replicas, DeploymentController, Rollout, DESIRED_REPLICAS, MAX_REPLICAS};

fn annotation(rs: &Value, key: &str) -> Option<i64> {
    meta::annotations(rs).get(key).and_then(|v| v.parse().ok())
}

/// Whether an active ReplicaSet was sized for a different Deployment size.
pub fn is_scaling_event(r: &Rollout) -> bool {
    r.all()
        .into_iter()
        .filter(|rs| spec_replicas(rs) > 0)
        .any(|rs| annotation(rs, DESIRED_REPLICAS).is_some_and(|d| d != r.replicas()))
}

pub async fn scale(c: &DeploymentController, r: &mut Rollout) -> Result<(), ApiError> {
    let active: Vec<usize> = (0..r.old.len())
        .filter(|&i| spec_replicas(&r.old[i]) > 0)
        .collect();
    let new_active = r.new_rs.as_ref().is_some_and(|rs| spec_replicas(rs) > 0);
    let n_active = active.len() + usize::from(new_active);
    // One active ReplicaSet (or none: then the newest) gets everything.
    if n_active <= 1 {
        if new_active || (n_active == 0 && r.new_rs.is_some()) {
            if let Some(mut rs) = r.new_rs.clone() {
                c.scale_rs(r, &mut rs, r.replicas()).await?;
                r.new_rs = Some(rs);
            }
        } else if let Some(i) = active
            .first()
            .copied()
            .or_else(|| r.old.len().checked_sub(1))
        {
            let mut rs = r.old[i].clone();
            c.scale_rs(r, &mut rs, r.replicas()).await?;
            r.old[i] = rs;
        }
        return Ok(());
    }
    // A saturated new ReplicaSet leaves nothing for the old ones.
    if let Some(new_rs) = &r.new_rs {
        if annotation(new_rs, DESIRED_REPLICAS) == Some(r.replicas())
            && spec_replicas(new_rs) == r.replicas()
            && int(new_rs, "/status/availableReplicas") == r.replicas()
        {
            for i in active {
                let mut rs = r.old[i].clone();
                c.scale_rs(r, &mut rs, 0).await?;
                r.old[i] = rs;
            }
            return Ok(());
        }
    }
    if !super::is_rolling(&r.d) {
        return Ok(());
    }
    // Proportional scaling over the active ReplicaSets. Each gets its share
    // of the change, rounded, in proportion to its size over the size the
    // ReplicaSets were last scaled for (the max-replicas annotation); what
    // rounding leaves over goes to the first in order (the largest when
    // growing, the smallest when shrinking).
    let mut sets: Vec<Value> = active.iter().map(|&i| r.old[i].clone()).collect();
    if new_active {
        if let Some(rs) = &r.new_rs {
            sets.push(rs.clone());
        }
    }
    let current: i64 = sets.iter().map(spec_replicas).sum();
    let allowed = if r.replicas() > 0 {
        r.replicas() + r.max_surge()
    } else {
        0
    };
    let to_add = allowed - current;
    let created = |rs: &Value| {
        meta::str_field(rs, "creationTimestamp")
            .unwrap_or("")
            .to_string()
    };
    if to_add > 0 {
        sets.sort_by(|a, b| {
            spec_replicas(b)
                .cmp(&spec_replicas(a))
                .then(created(b).cmp(&created(a)))
        });
    } else {
        sets.sort_by(|a, b| {
            spec_replicas(b)
                .cmp(&spec_replicas(a))
                .then(created(a).cmp(&created(b)))
        });
    }
    let target = r.replicas() + r.max_surge();
    let mut added = 0;
    let mut sizes: Vec<i64> = Vec::new();
    for rs in &sets {
        let size = spec_replicas(rs);
        let share = if to_add == 0 || to_add == added {
            0
        } else {
            let fraction = if r.replicas() == 0 {
                -size
            } else {
                let annotated = annotation(rs, MAX_REPLICAS)
                    .filter(|&m| m > 0)
                    .unwrap_or_else(|| int(&r.d, "/status/replicas").max(1));
                ((size * target) as f64 / annotated as f64).round() as i64 - size
            };
            let left = to_add - added;
            if to_add > 0 {
                fraction.min(left)
            } else {
                fraction.max(left)
            }
        };
        added += share;
        sizes.push(size + share);
    }
    if let Some(first) = sizes.first_mut() {
        *first = (*first + to_add - added).max(0);
    }
    for (mut rs, size) in sets.into_iter().zip(sizes) {
        c.scale_rs(r, &mut rs, size.max(0)).await?;
        let uid = meta::uid(&rs).to_string();
        if r.new_rs.as_ref().is_some_and(|n| meta::uid(n) == uid) {
            r.new_rs = Some(rs);
        } else if let Some(slot) = r.old.iter_mut().find(|o| meta::uid(o) == uid) {
            *slot = rs;
        }
    }
    Ok(())
}
