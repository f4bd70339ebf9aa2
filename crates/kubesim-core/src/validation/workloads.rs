//! Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and CronJobs.

use serde_json::Value;

use super::fields::{self, arr, child, has, s};
use super::names;
use super::pod::validate_pod_template;
use super::selector;
use crate::error::Cause;
use kubesim_gocompat::cron;

/// Which controller owns the spec; the rules differ in small ways.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctl {
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
}

impl Ctl {
    /// The word upstream uses in "empty selector is invalid for ...".
    fn selector_word(self) -> &'static str {
        match self {
            // ReplicaSet validation reuses the Deployment message upstream.
            Ctl::Deployment | Ctl::ReplicaSet => "deployment",
            Ctl::StatefulSet => "statefulset",
            Ctl::DaemonSet => "daemonset",
        }
    }
    fn kind(self) -> &'static str {
        match self {
            Ctl::Deployment => "Deployment",
            Ctl::ReplicaSet => "ReplicaSet",
            Ctl::StatefulSet => "StatefulSet",
            Ctl::DaemonSet => "DaemonSet",
        }
    }
}

pub fn validate_deployment(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let mut out = replicated(spec, Ctl::Deployment);
    validate_deployment_strategy(spec, &mut out);
    fields::nonnegative(
        &mut out,
        "spec.minReadySeconds",
        spec.get("minReadySeconds"),
    );
    fields::nonnegative(
        &mut out,
        "spec.revisionHistoryLimit",
        spec.get("revisionHistoryLimit"),
    );
    if let Some(p) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) {
        if p < 0 {
            out.push(fields::invalid_int(
                "spec.progressDeadlineSeconds",
                p,
                "must be greater than or equal to 0",
            ));
        } else if p
            <= spec
                .get("minReadySeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        {
            out.push(fields::invalid_int(
                "spec.progressDeadlineSeconds",
                p,
                "must be greater than minReadySeconds",
            ));
        }
    }
    out.extend(selector_immutable(obj, old));
    out
}

pub fn validate_replica_set(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let mut out = replicated(spec, Ctl::ReplicaSet);
    fields::nonnegative(
        &mut out,
        "spec.minReadySeconds",
        spec.get("minReadySeconds"),
    );
    out.extend(selector_immutable(obj, old));
    out
}

pub fn validate_stateful_set(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let mut out = replicated(&with_claim_volumes(spec), Ctl::StatefulSet);
    let pmp = s(spec, "podManagementPolicy");
    if pmp.is_empty() {
        out.push(fields::required_msg("spec.podManagementPolicy", ""));
    } else if !["OrderedReady", "Parallel"].contains(&pmp) {
        out.push(fields::invalid_str(
            "spec.podManagementPolicy",
            pmp,
            "must be 'OrderedReady' or 'Parallel'",
        ));
    }
    let empty = Value::Null;
    let us = spec.get("updateStrategy").unwrap_or(&empty);
    match s(us, "type") {
        "" => out.push(fields::required("spec.updateStrategy")),
        "OnDelete" => {
            if has(us, "rollingUpdate") {
                out.push(fields::invalid(
                    "spec.updateStrategy.rollingUpdate",
                    us.get("rollingUpdate").unwrap_or(&empty),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = us.get("rollingUpdate") {
                fields::nonnegative(
                    &mut out,
                    "spec.updateStrategy.rollingUpdate.partition",
                    ru.get("partition"),
                );
            }
        }
        other => out.push(fields::invalid_str(
            "spec.updateStrategy",
            other,
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    fields::nonnegative(
        &mut out,
        "spec.minReadySeconds",
        spec.get("minReadySeconds"),
    );
    if let Some(old) = old {
        // Upstream freezes everything but these fields once created.
        let mut a = spec.clone();
        let mut b = spec_of(old).clone();
        for k in [
            "replicas",
            "ordinals",
            "template",
            "updateStrategy",
            "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds",
            "revisionHistoryLimit",
        ] {
            for x in [&mut a, &mut b] {
                if let Some(m) = x.as_object_mut() {
                    m.remove(k);
                }
            }
        }
        if a != b {
            out.push(fields::forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
    out
}

/// The StatefulSet spec as its pods will see it: every volume claim
/// template is also a volume of the pod template (the controller mounts
/// each pod's claim under the template's name), so containers may mount
/// it. Upstream leaves the pod template of a StatefulSet unchecked for
/// this very reason; kubesim checks it with the claims in place. The
/// claims' volumes go last, so paths into the written volumes stay true.
fn with_claim_volumes(spec: &Value) -> std::borrow::Cow<'_, Value> {
    let claims = arr(spec, "volumeClaimTemplates");
    let names: Vec<&str> = claims
        .iter()
        .filter_map(|c| c.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    let Some(pod) = spec.pointer("/template/spec").filter(|p| p.is_object()) else {
        return std::borrow::Cow::Borrowed(spec);
    };
    let declared: Vec<&str> = arr(pod, "volumes")
        .iter()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    let missing: Vec<&str> = names
        .into_iter()
        .filter(|n| !declared.contains(n))
        .collect();
    if missing.is_empty() {
        return std::borrow::Cow::Borrowed(spec);
    }
    let mut spec = spec.clone();
    let pod = &mut spec["template"]["spec"];
    let mut volumes = arr(pod, "volumes").to_vec();
    for n in missing {
        volumes.push(serde_json::json!({"name": n, "persistentVolumeClaim": {"claimName": n}}));
    }
    pod["volumes"] = Value::Array(volumes);
    std::borrow::Cow::Owned(spec)
}

pub fn validate_daemon_set(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let mut out = replicated(spec, Ctl::DaemonSet);
    let empty = Value::Null;
    let us = spec.get("updateStrategy").unwrap_or(&empty);
    match s(us, "type") {
        "" => out.push(fields::required("spec.updateStrategy.type")),
        "OnDelete" => {}
        "RollingUpdate" => {
            if let Some(ru) = us.get("rollingUpdate") {
                rolling_update_daemon_set(ru, "spec.updateStrategy.rollingUpdate", &mut out);
            }
        }
        other => out.push(fields::unsupported(
            "spec.updateStrategy.type",
            other,
            &["OnDelete", "RollingUpdate"],
        )),
    }
    fields::nonnegative(
        &mut out,
        "spec.minReadySeconds",
        spec.get("minReadySeconds"),
    );
    fields::nonnegative(
        &mut out,
        "spec.revisionHistoryLimit",
        spec.get("revisionHistoryLimit"),
    );
    out.extend(selector_immutable(obj, old));
    out
}

fn spec_of(obj: &Value) -> &Value {
    static EMPTY: Value = Value::Null;
    obj.get("spec").unwrap_or(&EMPTY)
}

/// Selector, replicas and template: what every replicated controller shares.
fn replicated(spec: &Value, ctl: Ctl) -> Vec<Cause> {
    let mut out = Vec::new();
    if ctl != Ctl::DaemonSet {
        fields::nonnegative(&mut out, "spec.replicas", spec.get("replicas"));
    }
    let sel = spec.get("selector").filter(|v| !v.is_null());
    match sel {
        None => out.push(fields::required("spec.selector")),
        Some(sel) => {
            out.extend(selector::validate_label_selector(sel, "spec.selector"));
            if selector::is_empty(sel) {
                out.push(fields::invalid(
                    "spec.selector",
                    sel,
                    &format!("empty selector is invalid for {}", ctl.selector_word()),
                ));
            }
        }
    }
    let template = spec.get("template");
    if let (Some(sel), Some(t)) = (sel, template) {
        let labels = t.get("metadata").and_then(|m| m.get("labels"));
        if !selector::is_empty(sel) && !selector::matches(sel, labels) {
            out.push(fields::invalid_raw(
                "spec.template.metadata.labels",
                &fields::go_string_map(labels),
                "`selector` does not match template `labels`",
            ));
        }
    }
    out.extend(validate_pod_template(template, "spec.template"));
    if let Some(tspec) = template.and_then(|t| t.get("spec")) {
        let rp = s(tspec, "restartPolicy");
        if !rp.is_empty() && rp != "Always" {
            out.push(fields::unsupported(
                "spec.template.spec.restartPolicy",
                rp,
                &["Always"],
            ));
        }
        if let Some(ads) = tspec.get("activeDeadlineSeconds").filter(|v| !v.is_null()) {
            let msg = format!("activeDeadlineSeconds in {} is not Supported", ctl.kind());
            if ctl == Ctl::StatefulSet || ctl == Ctl::DaemonSet {
                out.push(fields::forbidden(
                    "spec.template.spec.activeDeadlineSeconds",
                    &msg,
                ));
            } else {
                out.push(fields::invalid(
                    "spec.template.spec.activeDeadlineSeconds",
                    ads,
                    &msg,
                ));
            }
        }
    }
    out
}

fn validate_deployment_strategy(spec: &Value, out: &mut Vec<Cause>) {
    let empty = Value::Null;
    let st = spec.get("strategy").unwrap_or(&empty);
    match s(st, "type") {
        "Recreate" => {
            if has(st, "rollingUpdate") {
                out.push(fields::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = st.get("rollingUpdate") {
                rolling_update(ru, "spec.strategy.rollingUpdate", out);
            }
        }
        "" => out.push(fields::required("spec.strategy.type")),
        other => out.push(fields::unsupported(
            "spec.strategy.type",
            other,
            &["Recreate", "RollingUpdate"],
        )),
    }
}

/// maxUnavailable / maxSurge: non-negative ints or percents, not both zero.
fn rolling_update(ru: &Value, path: &str, out: &mut Vec<Cause>) {
    let mu = ru.get("maxUnavailable").filter(|v| !v.is_null());
    let ms = ru.get("maxSurge").filter(|v| !v.is_null());
    let mu_path = child(path, "maxUnavailable");
    let ms_path = child(path, "maxSurge");
    if let Some(v) = mu {
        int_or_percent(v, &mu_path, out);
        not_more_than_100_percent(v, &mu_path, out);
    }
    if let Some(v) = ms {
        int_or_percent(v, &ms_path, out);
    }
    if is_zero(mu) && is_zero(ms) {
        out.push(fields::invalid(
            mu_path,
            mu.unwrap_or(&Value::from(0)),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
}

/// A DaemonSet's maxUnavailable / maxSurge: non-negative ints or percents
/// up to 100%, and exactly one of them non-zero. Unlike a Deployment, a
/// DaemonSet cannot both surge and leave nodes without their daemon: its
/// controller rolls one way or the other.
fn rolling_update_daemon_set(ru: &Value, path: &str, out: &mut Vec<Cause>) {
    let mu = ru.get("maxUnavailable").filter(|v| !v.is_null());
    let ms = ru.get("maxSurge").filter(|v| !v.is_null());
    let mu_path = child(path, "maxUnavailable");
    let ms_path = child(path, "maxSurge");
    for (v, p) in [(mu, &mu_path), (ms, &ms_path)] {
        if let Some(v) = v {
            int_or_percent(v, p, out);
            not_more_than_100_percent(v, p, out);
        }
    }
    let unavailable = mu.is_some_and(|v| int_or_percent_value(v) != 0);
    let surge = ms.is_some_and(|v| int_or_percent_value(v) != 0);
    if unavailable && surge {
        out.push(fields::invalid(
            ms_path,
            ms.unwrap_or(&Value::Null),
            "may not be set when maxUnavailable is non-zero",
        ));
    } else if !unavailable && !surge {
        out.push(fields::required_msg(
            mu_path,
            "cannot be 0 when maxSurge is 0",
        ));
    }
}

/// Upstream's `getIntOrPercentValue`: the number of a percent, the value
/// of an int, and 0 for a string that is neither (reported elsewhere).
fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n.as_i64().unwrap_or(0),
        Value::String(s) => s.strip_suffix('%').unwrap_or(s).parse().unwrap_or(0),
        _ => 0,
    }
}

fn is_zero(v: Option<&Value>) -> bool {
    match v {
        None => true,
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        Some(Value::String(s)) => s.trim_end_matches('%').parse::<i64>() == Ok(0),
        _ => false,
    }
}

/// Upstream's `ValidatePositiveIntOrPercent`.
pub fn int_or_percent(v: &Value, path: &str, out: &mut Vec<Cause>) {
    match v {
        Value::String(s) => {
            for m in names::percent(s) {
                out.push(fields::invalid_str(path, s, &m));
            }
        }
        Value::Number(n) => match n.as_i64() {
            Some(i) if i >= 0 => {}
            Some(i) => out.push(fields::invalid_int(
                path,
                i,
                "must be greater than or equal to 0",
            )),
            None => out.push(fields::invalid(
                path,
                v,
                "must be an integer or percentage (e.g '5%')",
            )),
        },
        other => out.push(fields::invalid(
            path,
            other,
            "must be an integer or percentage (e.g '5%')",
        )),
    }
}

pub fn not_more_than_100_percent(v: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(p) = v
        .as_str()
        .and_then(|s| s.strip_suffix('%'))
        .and_then(|d| d.parse::<u64>().ok())
    {
        if p > 100 {
            out.push(fields::invalid(path, v, "must not be greater than 100%"));
        }
    }
}

/// apps/v1 selectors never change after creation.
fn selector_immutable(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(old) = old else { return Vec::new() };
    let new_sel = spec_of(obj).get("selector");
    let old_sel = spec_of(old).get("selector");
    if new_sel != old_sel {
        return vec![fields::immutable(
            "spec.selector",
            new_sel.unwrap_or(&Value::Null),
        )];
    }
    Vec::new()
}

pub fn validate_job(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = spec_of(obj);
    let mut out = job_spec(spec, "spec");
    match spec.get("selector").filter(|v| !v.is_null()) {
        None => out.push(fields::required("spec.selector")),
        Some(sel) => {
            out.extend(selector::validate_label_selector(sel, "spec.selector"));
            let labels = spec
                .get("template")
                .and_then(|t| t.get("metadata"))
                .and_then(|m| m.get("labels"));
            if !selector::matches(sel, labels) {
                out.push(fields::invalid_raw(
                    "spec.template.metadata.labels",
                    &fields::go_string_map(labels),
                    "`selector` does not match template `labels`",
                ));
            }
        }
    }
    out.extend(generated_selector(obj));
    if let Some(old) = old {
        let old_spec = spec_of(old);
        for k in ["selector", "template", "completionMode"] {
            if spec.get(k) != old_spec.get(k) {
                out.push(fields::immutable(
                    format!("spec.{k}"),
                    spec.get(k).unwrap_or(&Value::Null),
                ));
            }
        }
        if spec.get("completions") != old_spec.get("completions")
            && s(spec, "completionMode") != "Indexed"
        {
            out.push(fields::immutable(
                "spec.completions",
                spec.get("completions").unwrap_or(&Value::Null),
            ));
        }
    }
    out
}

/// Without `manualSelector`, the template must carry the labels the server
/// generated and the selector must select them.
fn generated_selector(obj: &Value) -> Vec<Cause> {
    let mut out = Vec::new();
    let spec = spec_of(obj);
    if fields::bool_of(spec, "manualSelector") {
        return out;
    }
    let meta = obj.get("metadata");
    let uid = meta.map_or("", |m| s(m, "uid"));
    let name = meta.map_or("", |m| s(m, "name"));
    let Some(sel) = spec.get("selector").filter(|v| !v.is_null()) else {
        return out;
    };
    if uid.is_empty() {
        out.push(fields::required("metadata.uid"));
        return out;
    }
    let labels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"));
    for (k, want) in [("controller-uid", uid), ("job-name", name)] {
        let p = format!("spec.template.metadata.labels[{k}]");
        match labels.and_then(|l| l.get(k)).and_then(Value::as_str) {
            None => out.push(fields::required_msg(p, &format!("must be '{want}'"))),
            Some(v) if v != want => {
                out.push(fields::invalid_str(p, v, &format!("must be '{want}'")))
            }
            Some(_) => {}
        }
    }
    let expected = serde_json::json!({
        "controller-uid": uid,
        "job-name": name,
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
    });
    if !selector::matches(sel, Some(&expected)) {
        out.push(fields::invalid(
            "spec.selector",
            sel,
            "`selector` not auto-generated",
        ));
    }
    out
}

/// The parts of a JobSpec shared by Jobs and CronJob job templates.
fn job_spec(spec: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    for k in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
    ] {
        fields::nonnegative(&mut out, &child(path, k), spec.get(k));
    }
    let mode = s(spec, "completionMode");
    match mode {
        "" | "NonIndexed" => {}
        "Indexed" => {
            if !has(spec, "completions") {
                out.push(fields::required_msg(
                    child(path, "completions"),
                    "when completion mode is Indexed",
                ));
            }
        }
        other => out.push(fields::unsupported(
            child(path, "completionMode"),
            other,
            &["NonIndexed", "Indexed"],
        )),
    }
    let tpath = child(path, "template");
    let template = spec.get("template");
    out.extend(validate_pod_template(template, &tpath));
    let rp = template
        .and_then(|t| t.get("spec"))
        .map_or("", |ts| s(ts, "restartPolicy"));
    if rp != "OnFailure" && rp != "Never" {
        out.push(fields::unsupported(
            child(&tpath, "spec.restartPolicy"),
            rp,
            &["OnFailure", "Never"],
        ));
    }
    if let Some(policy) = spec.get("podFailurePolicy").filter(|p| !p.is_null()) {
        if rp == "OnFailure" {
            out.push(fields::invalid_str(
                child(&tpath, "spec.restartPolicy"),
                rp,
                "only \"Never\" is supported when podFailurePolicy is specified",
            ));
        }
        out.extend(pod_failure_policy(policy, &child(path, "podFailurePolicy")));
    }
    out
}

/// The rules of a Job's `podFailurePolicy`: a known action, and exactly one
/// of `onExitCodes` (with a known operator and some values) and
/// `onPodConditions`.
fn pod_failure_policy(policy: &Value, path: &str) -> Vec<Cause> {
    let mut out = Vec::new();
    let rules_path = child(path, "rules");
    for (i, rule) in arr(policy, "rules").iter().enumerate() {
        let rp = fields::index(&rules_path, i);
        let action = s(rule, "action");
        let actions = ["Count", "FailIndex", "FailJob", "Ignore"];
        if action.is_empty() {
            out.push(fields::required(child(&rp, "action")));
        } else if !actions.contains(&action) {
            out.push(fields::unsupported(child(&rp, "action"), action, &actions));
        }
        let codes = rule.get("onExitCodes").filter(|v| !v.is_null());
        let conds = rule.get("onPodConditions").filter(|v| !v.is_null());
        match (codes, conds) {
            (Some(_), Some(_)) | (None, None) => out.push(fields::invalid_raw(
                rp.clone(),
                "",
                "specifying one of OnExitCodes and OnPodConditions is required",
            )),
            (Some(req), None) => {
                let cp = child(&rp, "onExitCodes");
                let op = s(req, "operator");
                if !["In", "NotIn"].contains(&op) {
                    out.push(fields::unsupported(
                        child(&cp, "operator"),
                        op,
                        &["In", "NotIn"],
                    ));
                }
                if arr(req, "values").is_empty() {
                    out.push(fields::invalid_raw(
                        child(&cp, "values"),
                        "[]",
                        "at least one value is required",
                    ));
                }
            }
            (None, Some(_)) => {}
        }
    }
    out
}

pub fn validate_cron_job(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let name = obj.get("metadata").map_or("", |m| s(m, "name"));
    // Job names get an 11-character time suffix and must stay DNS-1035 labels.
    if old.is_none() && name.len() > 52 {
        out.push(fields::invalid_str(
            "metadata.name",
            name,
            "must be no more than 52 characters",
        ));
    }
    let spec = spec_of(obj);
    let sched = s(spec, "schedule");
    if sched.is_empty() {
        out.push(fields::required("spec.schedule"));
    } else if sched.contains("TZ") {
        out.push(fields::invalid_str(
            "spec.schedule",
            sched,
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ));
    } else if let Err(e) = cron::parse(sched) {
        out.push(fields::invalid_str("spec.schedule", sched, &e));
    }
    let cp = s(spec, "concurrencyPolicy");
    if cp.is_empty() {
        out.push(fields::required("spec.concurrencyPolicy"));
    } else if !["Allow", "Forbid", "Replace"].contains(&cp) {
        out.push(fields::unsupported(
            "spec.concurrencyPolicy",
            cp,
            &["Allow", "Forbid", "Replace"],
        ));
    }
    for k in [
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    ] {
        fields::nonnegative(&mut out, &format!("spec.{k}"), spec.get(k));
    }
    let empty = Value::Null;
    let jt = spec.get("jobTemplate").unwrap_or(&empty);
    let jspec = jt.get("spec").unwrap_or(&empty);
    out.extend(job_spec(jspec, "spec.jobTemplate.spec"));
    if let Some(sel) = jspec.get("selector").filter(|v| !v.is_null()) {
        out.push(fields::invalid(
            "spec.jobTemplate.spec.selector",
            sel,
            "`selector` will be auto-generated",
        ));
    }
    if fields::bool_of(jspec, "manualSelector") {
        out.push(fields::unsupported(
            "spec.jobTemplate.spec.manualSelector",
            "true",
            &["nil", "false"],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_spec(restart: &str) -> Value {
        json!({"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
               "terminationMessagePolicy": "File"}],
               "restartPolicy": restart, "dnsPolicy": "ClusterFirst"})
    }

    fn deployment() -> Value {
        json!({"metadata": {"name": "web"}, "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec("Always")}}})
    }

    use crate::validation::field_reasons as f;

    #[test]
    fn valid_deployment() {
        assert_eq!(f(&validate_deployment(&deployment(), None)), vec![]);
    }

    #[test]
    fn selector_must_match_template() {
        let mut d = deployment();
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other", "b": "c"});
        let c = validate_deployment(&d, None);
        assert_eq!(
            f(&c),
            vec![("spec.template.metadata.labels", "FieldValueInvalid")]
        );
        assert_eq!(
            c[0].message,
            "Invalid value: map[string]string{\"app\":\"other\", \"b\":\"c\"}: `selector` does not match template `labels`"
        );
    }

    #[test]
    fn deployment_rules() {
        let mut d = deployment();
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["selector"] = json!(null);
        d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        d["spec"]["strategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": "0%"});
        let c = validate_deployment(&d, None);
        assert_eq!(
            f(&c),
            vec![
                ("spec.replicas", "FieldValueInvalid"),
                ("spec.selector", "FieldValueRequired"),
                ("spec.template.spec.restartPolicy", "FieldValueNotSupported"),
                (
                    "spec.strategy.rollingUpdate.maxUnavailable",
                    "FieldValueInvalid"
                ),
            ]
        );
    }

    #[test]
    fn selector_is_immutable() {
        let old = deployment();
        let mut d = deployment();
        d["spec"]["selector"] = json!({"matchLabels": {"app": "web", "x": "y"}});
        d["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
        let c = validate_deployment(&d, Some(&old));
        assert_eq!(f(&c), vec![("spec.selector", "FieldValueInvalid")]);
        assert!(c[0].message.ends_with("field is immutable"));
        let c = validate_replica_set(&d, Some(&old));
        assert_eq!(f(&c), vec![("spec.selector", "FieldValueInvalid")]);
    }

    #[test]
    fn empty_selector() {
        let mut d = deployment();
        d["spec"]["selector"] = json!({});
        let c = validate_stateful_set(&d, None);
        assert!(c.iter().any(|c| c
            .message
            .ends_with("empty selector is invalid for statefulset")));
    }

    #[test]
    fn stateful_set_updates_limited() {
        let mut s = deployment();
        s["spec"]["podManagementPolicy"] = json!("OrderedReady");
        s["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}});
        s["spec"]["serviceName"] = json!("a");
        assert_eq!(f(&validate_stateful_set(&s, None)), vec![]);
        let mut n = s.clone();
        n["spec"]["replicas"] = json!(5);
        assert_eq!(f(&validate_stateful_set(&n, Some(&s))), vec![]);
        n["spec"]["serviceName"] = json!("b");
        assert_eq!(
            f(&validate_stateful_set(&n, Some(&s))),
            vec![("spec", "FieldValueForbidden")]
        );
    }

    #[test]
    fn stateful_set_containers_may_mount_claim_templates() {
        let mut s = deployment();
        s["spec"]["podManagementPolicy"] = json!("OrderedReady");
        s["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        s["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
            json!([{"name": "data", "mountPath": "/data"}]);
        let c = validate_stateful_set(&s, None);
        assert_eq!(
            f(&c),
            vec![(
                "spec.template.spec.containers[0].volumeMounts[0].name",
                "FieldValueNotFound"
            )]
        );
        s["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"]}}]);
        assert_eq!(f(&validate_stateful_set(&s, None)), vec![]);
    }

    #[test]
    fn daemon_set_strategy() {
        let mut d = deployment();
        d["spec"]["updateStrategy"] = json!({"type": "Sometimes"});
        let c = validate_daemon_set(&d, None);
        assert_eq!(
            f(&c),
            vec![("spec.updateStrategy.type", "FieldValueNotSupported")]
        );
    }

    fn job() -> Value {
        json!({"metadata": {"name": "pi", "uid": "u1"}, "spec": {
            "parallelism": 1, "completions": 1, "backoffLimit": 6,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
            "template": {"metadata": {"labels": {
                "batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "pi",
                "controller-uid": "u1", "job-name": "pi"}},
                "spec": pod_spec("Never")}}})
    }

    #[test]
    fn job_rules() {
        assert_eq!(f(&validate_job(&job(), None)), vec![]);
        let mut j = job();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        j["spec"]["backoffLimit"] = json!(-1);
        let c = validate_job(&j, None);
        assert_eq!(
            f(&c),
            vec![
                ("spec.backoffLimit", "FieldValueInvalid"),
                ("spec.template.spec.restartPolicy", "FieldValueNotSupported"),
            ]
        );
        assert_eq!(
            c[1].message,
            "Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        );
    }

    #[test]
    fn pod_failure_policy_rules() {
        let mut j = job();
        j["spec"]["podFailurePolicy"] = json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]});
        assert_eq!(f(&validate_job(&j, None)), vec![]);
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        j["spec"]["podFailurePolicy"] = json!({"rules": [
            {"action": "Retry", "onExitCodes": {"operator": "Between", "values": []}},
            {"action": "Count"}]});
        assert_eq!(
            f(&validate_job(&j, None)),
            vec![
                ("spec.template.spec.restartPolicy", "FieldValueInvalid"),
                (
                    "spec.podFailurePolicy.rules[0].action",
                    "FieldValueNotSupported"
                ),
                (
                    "spec.podFailurePolicy.rules[0].onExitCodes.operator",
                    "FieldValueNotSupported"
                ),
                (
                    "spec.podFailurePolicy.rules[0].onExitCodes.values",
                    "FieldValueInvalid"
                ),
                ("spec.podFailurePolicy.rules[1]", "FieldValueInvalid"),
            ]
        );
    }

    #[test]
    fn job_template_immutable() {
        let old = job();
        let mut j = job();
        j["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl");
        let c = validate_job(&j, Some(&old));
        assert_eq!(f(&c), vec![("spec.template", "FieldValueInvalid")]);
    }

    #[test]
    fn job_generated_labels_checked() {
        let mut j = job();
        j["spec"]["template"]["metadata"]["labels"]["job-name"] = json!("other");
        let c = validate_job(&j, None);
        assert_eq!(
            f(&c),
            vec![(
                "spec.template.metadata.labels[job-name]",
                "FieldValueInvalid"
            )]
        );
    }

    #[test]
    fn cron_job_rules() {
        let cj = json!({"metadata": {"name": "c"}, "spec": {
            "schedule": "*/1 * * * *", "concurrencyPolicy": "Allow",
            "jobTemplate": {"spec": {"template": {"spec": pod_spec("OnFailure")}}}}});
        assert_eq!(f(&validate_cron_job(&cj, None)), vec![]);
        let mut bad = cj.clone();
        bad["metadata"]["name"] = json!("x".repeat(53));
        bad["spec"]["schedule"] = json!("* *");
        bad["spec"]["concurrencyPolicy"] = json!("Sometimes");
        bad["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        let c = validate_cron_job(&bad, None);
        assert_eq!(
            f(&c),
            vec![
                ("metadata.name", "FieldValueInvalid"),
                ("spec.schedule", "FieldValueInvalid"),
                ("spec.concurrencyPolicy", "FieldValueNotSupported"),
                (
                    "spec.jobTemplate.spec.template.spec.restartPolicy",
                    "FieldValueNotSupported"
                ),
            ]
        );
        assert_eq!(
            c[1].message,
            "Invalid value: \"* *\": expected exactly 5 fields, found 2: [* *]"
        );
        let mut missing = cj;
        missing["spec"]["schedule"] = json!(null);
        assert_eq!(
            f(&validate_cron_job(&missing, None)),
            vec![("spec.schedule", "FieldValueRequired")]
        );
    }
}
