//! Status conditions as the batch, autoscaling and policy controllers
//! write them.

use serde_json::{json, Value};

/// The condition of `kind` in `status.conditions`, if any.
pub fn get<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

/// Whether condition `kind` is present with status "True".
pub fn is_true(status: &Value, kind: &str) -> bool {
    get(status, kind)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// Sets a condition in `status`; `lastTransitionTime` moves only when the
/// status changes, so rewriting the same condition is a no-op. With
/// `probe` the condition also carries `lastProbeTime` (Jobs do).
pub fn set(
    status: &mut Value,
    kind: &str,
    value: &str,
    reason: &str,
    message: &str,
    now: &str,
    probe: bool,
) {
    if !status.is_object() {
        *status = json!({});
    }
    if !status.get("conditions").is_some_and(Value::is_array) {
        status["conditions"] = json!([]);
    }
    let Some(list) = status["conditions"].as_array_mut() else {
        return;
    };
    let mut cond = json!({"type": kind, "status": value});
    if probe {
        cond["lastProbeTime"] = json!(now);
    }
    cond["lastTransitionTime"] = json!(now);
    cond["reason"] = json!(reason);
    cond["message"] = json!(message);
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
    {
        Some(old) => {
            if old.get("status").and_then(Value::as_str) == Some(value) {
                if old.get("reason") == cond.get("reason")
                    && old.get("message") == cond.get("message")
                {
                    return;
                }
                if let Some(t) = old.get("lastTransitionTime") {
                    cond["lastTransitionTime"] = t.clone();
                }
            }
            *old = cond;
        }
        None => list.push(cond),
    }
}
