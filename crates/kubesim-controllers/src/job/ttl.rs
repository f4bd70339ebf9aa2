//! Deleting finished Jobs once `ttlSecondsAfterFinished` has passed (the
//! work of upstream's TTL-after-finished controller, which watches the same
//! Jobs).

use std::time::Duration;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{DeleteOptions, Requeue};
use serde_json::Value;

use super::jobs_ref;
use crate::{conditions, Context};

/// When the Job finished: the transition time of its final condition.
fn finished_at(job: &Value) -> Option<jiff::Timestamp> {
    let status = job.get("status")?;
    ["Complete", "Failed"]
        .into_iter()
        .filter(|k| conditions::is_true(status, k))
        .find_map(|k| {
            conditions::get(status, k)?
                .get("lastTransitionTime")?
                .as_str()
                .and_then(meta::parse_time)
        })
}

/// Deletes the finished `job` if its time is up; otherwise asks to be
/// called again when it will be.
pub async fn after_finished(
    ctx: &Context,
    job: &Value,
    now: jiff::Timestamp,
) -> Result<Requeue, ApiError> {
    let Some(ttl) = job
        .pointer("/spec/ttlSecondsAfterFinished")
        .and_then(Value::as_i64)
    else {
        return Ok(None);
    };
    if meta::is_deleting(job) {
        return Ok(None);
    }
    let Some(done) = finished_at(job) else {
        return Ok(None);
    };
    let expires = done + jiff::SignedDuration::from_secs(ttl.max(0));
    if expires > now {
        return Ok(Some(
            Duration::try_from(expires.duration_since(now)).unwrap_or_default(),
        ));
    }
    let opts = DeleteOptions {
        propagation_policy: Some("Background".into()),
        precondition_uid: Some(meta::uid(job).to_string()),
        ..Default::default()
    };
    match ctx
        .api
        .delete(&jobs_ref(), meta::namespace(job), meta::name(job), &opts)
        .await
    {
        Ok(_) => Ok(None),
        Err(e) if e.code == 404 || e.code == 409 => Ok(None),
        Err(e) => Err(e),
    }
}
