//! Deployment status: replica counts summed over the ReplicaSets, the
//! Available condition (at least `replicas - maxUnavailable` available),
//! and the Progressing condition, which tracks whether the rollout moved
//! within `progressDeadlineSeconds`.

use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::Requeue;
use serde_json::{json, Value};

use super::{int, spec_replicas, Rollout};

/// Upstream's "no deadline" value for progressDeadlineSeconds.
const NO_DEADLINE: i64 = i32::MAX as i64;

pub fn has_deadline(d: &Value) -> bool {
    d.pointer("/spec/progressDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s != NO_DEADLINE)
}

fn cond<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn field<'a>(c: &'a Value, k: &str) -> &'a str {
    c.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Sets a condition. An unchanged status and reason leaves it alone unless
/// `touch` (then only lastUpdateTime and the message move); an unchanged
/// status keeps its lastTransitionTime.
pub fn set_condition(
    status: &mut Value,
    kind: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: &str,
    touch: bool,
) {
    let mut transition = now.to_string();
    if let Some(c) = cond(status, kind) {
        if field(c, "status") == value {
            if field(c, "reason") == reason && !touch {
                return;
            }
            transition = field(c, "lastTransitionTime").to_string();
        }
    }
    let new = json!({
        "type": kind,
        "status": value,
        "lastUpdateTime": now,
        "lastTransitionTime": transition,
        "reason": reason,
        "message": message,
    });
    if !status.is_object() {
        *status = json!({});
    }
    let conds = status
        .as_object_mut()
        .map(|m| m.entry("conditions").or_insert_with(|| json!([])));
    if let Some(Value::Array(list)) = conds {
        match list
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
        {
            Some(slot) => *slot = new,
            None => list.push(new),
        }
    }
}

fn remove_condition(status: &mut Value, kind: &str) {
    if let Some(Value::Array(list)) = status.get_mut("conditions") {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some(kind));
    }
}

/// Done: every replica updated and available, none of an old template
/// left, and the latest spec observed.
pub fn complete(d: &Value, status: &Value) -> bool {
    let n = spec_replicas(d);
    int(status, "/updatedReplicas") == n
        && int(status, "/replicas") == n
        && int(status, "/availableReplicas") == n
        && int(status, "/observedGeneration") >= int(d, "/metadata/generation")
}

/// Some progress since the last recorded status: more updated, ready or
/// available replicas, or fewer old ones.
fn progressing(d: &Value, new: &Value) -> bool {
    let old = d.get("status").cloned().unwrap_or(json!({}));
    let old_old = int(&old, "/replicas") - int(&old, "/updatedReplicas");
    let new_old = int(new, "/replicas") - int(new, "/updatedReplicas");
    int(new, "/updatedReplicas") > int(&old, "/updatedReplicas")
        || int(new, "/readyReplicas") > int(&old, "/readyReplicas")
        || int(new, "/availableReplicas") > int(&old, "/availableReplicas")
        || old_old > new_old
}

fn deadline_of(d: &Value, status: &Value) -> Option<jiff::Timestamp> {
    if !has_deadline(d) {
        return None;
    }
    let c = cond(status, "Progressing")?;
    if matches!(
        field(c, "reason"),
        "NewReplicaSetAvailable" | "ProgressDeadlineExceeded"
    ) {
        return None;
    }
    let from = meta::parse_time(field(c, "lastUpdateTime"))?;
    Some(from + jiff::SignedDuration::from_secs(int(d, "/spec/progressDeadlineSeconds")))
}

fn timed_out(d: &Value, status: &Value, now: &jiff::Timestamp) -> bool {
    if let Some(c) = cond(status, "Progressing") {
        if field(c, "reason") == "ProgressDeadlineExceeded" {
            return true;
        }
    }
    deadline_of(d, status).is_some_and(|at| at < *now)
}

/// Counts and the Available condition; other conditions carried over.
pub fn calculate(r: &Rollout, now: &jiff::Timestamp) -> Value {
    let all = r.all();
    let sum = |ptr: &str| all.iter().map(|rs| int(rs, ptr)).sum::<i64>();
    let available = sum("/status/availableReplicas");
    let desired_total: i64 = all.iter().map(|rs| spec_replicas(rs)).sum();
    let counts = json!({
        "observedGeneration": int(&r.d, "/metadata/generation"),
        "replicas": sum("/status/replicas"),
        "updatedReplicas": r.new_rs.as_ref().map(|rs| int(rs, "/status/replicas")).unwrap_or(0),
        "readyReplicas": sum("/status/readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": (desired_total - available).max(0),
    });
    // The counts over the stored status: collisionCount, the conditions
    // (updated below) and fields this controller does not compute
    // (terminatingReplicas) carry over.
    let mut status = crate::status_write::overlay(r.d.get("status"), counts, &[]);
    let stamp = meta::format_time(*now);
    if available >= r.replicas() - r.max_unavailable() {
        set_condition(
            &mut status,
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
            &stamp,
            false,
        );
    } else {
        set_condition(
            &mut status,
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
            &stamp,
            false,
        );
    }
    status
}

/// The status after a rollout pass, Progressing included.
pub fn rollout_status(r: &Rollout, now: &jiff::Timestamp) -> Value {
    let stamp = meta::format_time(*now);
    let mut status = calculate(r, now);
    if let Some((reason, msg)) = &r.progress_note {
        set_condition(
            &mut status,
            "Progressing",
            "True",
            reason,
            msg,
            &stamp,
            false,
        );
    }
    if !has_deadline(&r.d) {
        remove_condition(&mut status, "Progressing");
        return status;
    }
    let current = cond(&status, "Progressing").cloned();
    let already_complete = int(&status, "/replicas") == int(&status, "/updatedReplicas")
        && current
            .as_ref()
            .is_some_and(|c| field(c, "reason") == "NewReplicaSetAvailable");
    let name = r.new_rs.as_ref().map(meta::name).unwrap_or("").to_string();
    if !already_complete {
        if complete(&r.d, &status) {
            set_condition(
                &mut status,
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{name}\" has successfully progressed."),
                &stamp,
                false,
            );
        } else if progressing(&r.d, &status) {
            set_condition(
                &mut status,
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                &format!("ReplicaSet \"{name}\" is progressing."),
                &stamp,
                true,
            );
        } else if timed_out(&r.d, &status, now) {
            set_condition(
                &mut status,
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                &format!("ReplicaSet \"{name}\" has timed out progressing."),
                &stamp,
                false,
            );
        }
    }
    status
}

/// A pass at the progress deadline of a rollout still under way, so that
/// ProgressDeadlineExceeded is reported on time even if nothing else moves.
pub fn requeue_stuck(d: &Value, status: &Value, now: &jiff::Timestamp) -> Requeue {
    let at = deadline_of(d, status)?;
    let left = at.duration_since(*now);
    let left = Duration::try_from(left).unwrap_or(Duration::ZERO);
    // One second past the deadline, since it must be exceeded.
    Some(left + Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_transition_time_while_status_holds() {
        let mut st = json!({});
        set_condition(&mut st, "Progressing", "True", "A", "m", "t1", false);
        set_condition(&mut st, "Progressing", "True", "A", "m", "t2", false);
        assert_eq!(st["conditions"][0]["lastUpdateTime"], "t1");
        set_condition(&mut st, "Progressing", "True", "A", "m", "t3", true);
        assert_eq!(st["conditions"][0]["lastUpdateTime"], "t3");
        assert_eq!(st["conditions"][0]["lastTransitionTime"], "t1");
        set_condition(&mut st, "Progressing", "False", "B", "m", "t4", false);
        assert_eq!(st["conditions"][0]["lastTransitionTime"], "t4");
        assert_eq!(st["conditions"].as_array().unwrap().len(), 1);
    }
}
