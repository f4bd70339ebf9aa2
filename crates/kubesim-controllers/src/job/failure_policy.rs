//! A Job's `podFailurePolicy`: the first rule matching a failed pod decides
//! whether the failure fails the whole Job, is ignored (not counted towards
//! `backoffLimit`), or is counted as usual.
//!
//! A rule matches on container exit codes (`onExitCodes`: init containers
//! first, then containers; a container that exited 0 never matches, as
//! upstream has it) or on pod conditions (`onPodConditions`, e.g. the
//! `DisruptionTarget` an eviction sets). `FailIndex` needs per-index backoff
//! limits, which kubesim does not implement; such rules count the failure.

use serde_json::Value;

/// What a failed pod means for its Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Fail the Job, with upstream's message.
    FailJob(String),
    /// Do not count this failure.
    Ignore,
    /// Count it (the default when no rule matches).
    Count,
}

/// The verdict of `job`'s policy on the failed `pod`.
pub fn judge(job: &Value, pod: &Value) -> Verdict {
    let Some(rules) = job
        .pointer("/spec/podFailurePolicy/rules")
        .and_then(Value::as_array)
    else {
        return Verdict::Count;
    };
    let ns = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    for (i, rule) in rules.iter().enumerate() {
        let action = rule.get("action").and_then(Value::as_str).unwrap_or("");
        let matched = if let Some(req) = rule.get("onExitCodes").filter(|v| v.is_object()) {
            exit_code_match(pod, req).map(|(container, code)| {
                format!(
                    "Container {container} for pod {ns}/{name} failed with exit code {code} matching {action} rule at index {i}"
                )
            })
        } else if let Some(pats) = rule.get("onPodConditions").and_then(Value::as_array) {
            condition_match(pod, pats).map(|kind| {
                format!("Pod {ns}/{name} has condition {kind} matching {action} rule at index {i}")
            })
        } else {
            None
        };
        let Some(message) = matched else { continue };
        return match action {
            "FailJob" => Verdict::FailJob(message),
            "Ignore" => Verdict::Ignore,
            // Count, FailIndex, and actions this version does not know.
            _ => Verdict::Count,
        };
    }
    Verdict::Count
}

/// The first terminated container whose non-zero exit code satisfies `req`.
fn exit_code_match(pod: &Value, req: &Value) -> Option<(String, i64)> {
    let only = req.get("containerName").and_then(Value::as_str);
    let op_in = match req.get("operator").and_then(Value::as_str) {
        Some("In") => true,
        Some("NotIn") => false,
        _ => return None,
    };
    let values: Vec<i64> = req
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    ["initContainerStatuses", "containerStatuses"]
        .iter()
        .filter_map(|k| {
            pod.pointer(&format!("/status/{k}"))
                .and_then(Value::as_array)
        })
        .flatten()
        .filter_map(|cs| {
            let name = cs.get("name").and_then(Value::as_str)?;
            let code = cs
                .pointer("/state/terminated/exitCode")
                .and_then(Value::as_i64)?;
            Some((name, code))
        })
        .filter(|(name, code)| *code != 0 && only.is_none_or(|o| o == *name))
        .find(|(_, code)| values.contains(code) == op_in)
        .map(|(name, code)| (name.to_string(), code))
}

/// The type of the first pod condition some pattern names with its status
/// (`True` when the pattern gives none).
fn condition_match(pod: &Value, patterns: &[Value]) -> Option<String> {
    let conds = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)?;
    patterns.iter().find_map(|p| {
        let kind = p.get("type").and_then(Value::as_str)?;
        let want = p.get("status").and_then(Value::as_str).unwrap_or("True");
        conds
            .iter()
            .any(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str) == Some(want)
            })
            .then(|| kind.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(rules: Value) -> Value {
        json!({"spec": {"podFailurePolicy": {"rules": rules}}})
    }

    fn failed(exit: i64, conditions: Value) -> Value {
        json!({"metadata": {"namespace": "ns", "name": "p"},
            "status": {"phase": "Failed", "conditions": conditions,
                "containerStatuses": [
                    {"name": "ok", "state": {"terminated": {"exitCode": 0}}},
                    {"name": "main", "state": {"terminated": {"exitCode": exit}}}]}})
    }

    #[test]
    fn exit_codes_decide_in_rule_order() {
        let j = job(json!([
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 2]}},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2, 42]}},
        ]));
        assert_eq!(
            judge(&j, &failed(42, json!([]))),
            Verdict::FailJob(
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0"
                    .into()
            )
        );
        assert_eq!(judge(&j, &failed(2, json!([]))), Verdict::Ignore);
        assert_eq!(judge(&j, &failed(7, json!([]))), Verdict::Count);
        // A container that exited 0 matches no NotIn rule.
        let only_ok = job(
            json!([{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5]}}]),
        );
        let mut p = failed(5, json!([]));
        assert_eq!(judge(&only_ok, &p), Verdict::Count);
        p["status"]["containerStatuses"][1]["state"]["terminated"]["exitCode"] = json!(6);
        assert!(matches!(judge(&only_ok, &p), Verdict::FailJob(_)));
    }

    #[test]
    fn conditions_match_type_and_status() {
        let j =
            job(json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]));
        let evicted = failed(137, json!([{"type": "DisruptionTarget", "status": "True"}]));
        assert_eq!(judge(&j, &evicted), Verdict::Ignore);
        let not = failed(
            137,
            json!([{"type": "DisruptionTarget", "status": "False"}]),
        );
        assert_eq!(judge(&j, &not), Verdict::Count);
        let fail = job(
            json!([{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
        );
        assert_eq!(
            judge(&fail, &evicted),
            Verdict::FailJob(
                "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0".into()
            )
        );
    }

    #[test]
    fn no_policy_counts_and_bad_rules_are_skipped() {
        assert_eq!(judge(&json!({}), &failed(1, json!([]))), Verdict::Count);
        let j = job(
            json!([{"action": "FailJob"}, {"action": "FailJob", "onExitCodes": {"operator": "Between", "values": [1]}}]),
        );
        assert_eq!(judge(&j, &failed(1, json!([]))), Verdict::Count);
    }
}
