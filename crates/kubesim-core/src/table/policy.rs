//! Horizontal pod autoscalers and pod disruption budgets.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::age;
use super::columns::{self, integer, string, Column};
use super::fields::{arr, int, int_or_string, opt_int, s};
use super::Row;

pub(super) fn hpa_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Reference",
            "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
        ),
        string(
            "Targets",
            "metrics contains the specifications for which to use to calculate the desired replica count.",
        ),
        string(
            "MinPods",
            "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
        ),
        string(
            "MaxPods",
            "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
        ),
        string(
            "Replicas",
            "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
        ),
        columns::age(),
    ]
}

/// A quantity as text. A nil quantity prints "<nil>" upstream (it calls
/// String on a nil pointer), so the same is kept here.
fn qty(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "<nil>".into(),
    }
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// Targets as "current/target" per metric, at most two then "+ N more...".
fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let mut list: Vec<String> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        // The status of the same metric, if reported.
        let status = |field: &str| present(statuses.get(i).and_then(|st| st.get(field)));
        let text = match s(spec, "/type") {
            t @ ("External" | "Object") => {
                let field = if t == "External" {
                    "external"
                } else {
                    "object"
                };
                let target = spec.get(field).and_then(|x| x.get("target"));
                let st = status(field);
                match present(target.and_then(|t| t.get("averageValue"))) {
                    Some(avg) => {
                        let current = st
                            .and_then(|x| present(x.pointer("/current/averageValue")))
                            .map_or_else(|| "<unknown>".into(), |v| qty(Some(v)));
                        format!("{current}/{} (avg)", qty(Some(avg)))
                    }
                    None => {
                        let current = st.map_or_else(
                            || "<unknown>".into(),
                            |x| qty(present(x.pointer("/current/value"))),
                        );
                        format!(
                            "{current}/{}",
                            qty(present(target.and_then(|t| t.get("value"))))
                        )
                    }
                }
            }
            "Pods" => {
                let current = status("pods").map_or_else(
                    || "<unknown>".into(),
                    |x| qty(present(x.pointer("/current/averageValue"))),
                );
                format!(
                    "{current}/{}",
                    qty(present(spec.pointer("/pods/target/averageValue")))
                )
            }
            t @ ("Resource" | "ContainerResource") => {
                let field = if t == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let res = spec.get(field);
                let rname = res.map_or("", |r| s(r, "/name"));
                let target = res.and_then(|r| r.get("target"));
                let st = status(field);
                match present(target.and_then(|t| t.get("averageValue"))) {
                    Some(avg) => {
                        let current = st.map_or_else(
                            || "<unknown>".into(),
                            |x| qty(present(x.pointer("/current/averageValue"))),
                        );
                        format!("{rname}: {current}/{}", qty(Some(avg)))
                    }
                    None => {
                        let current = st
                            .and_then(|x| opt_int(x, "/current/averageUtilization"))
                            .map_or_else(|| "<unknown>".into(), |u| format!("{u}%"));
                        let target = target
                            .and_then(|t| opt_int(t, "/averageUtilization"))
                            .map_or_else(|| "<auto>".into(), |u| format!("{u}%"));
                        format!("{rname}: {current}/{target}")
                    }
                }
            }
            _ => "<unknown type>".into(),
        };
        list.push(text);
    }
    const MAX: usize = 2;
    let count = list.len();
    if count > MAX {
        list.truncate(MAX);
        format!("{} + {} more...", list.join(", "), count - MAX)
    } else {
        list.join(", ")
    }
}

/// autoscaling/v1 objects carry one CPU target; express it as the v2 metric
/// it converts to.
fn v1_cpu_metric(hpa: &Value) -> Option<(Vec<Value>, Vec<Value>)> {
    let target = opt_int(hpa, "/spec/targetCPUUtilizationPercentage")?;
    let spec = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}});
    let status = match opt_int(hpa, "/status/currentCPUUtilizationPercentage") {
        Some(c) => vec![
            json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": c}}}),
        ],
        None => vec![],
    };
    Some((vec![spec], status))
}

pub(super) fn hpa_row(hpa: &Value, now: Timestamp) -> Row {
    let specs = arr(hpa, "/spec/metrics");
    let targets = match (specs.is_empty(), v1_cpu_metric(hpa)) {
        (true, Some((sp, st))) => format_metrics(&sp, &st),
        _ => format_metrics(specs, arr(hpa, "/status/currentMetrics")),
    };
    let min = opt_int(hpa, "/spec/minReplicas").map_or_else(|| "<unset>".into(), |m| m.to_string());
    Row::from(vec![
        json!(crate::meta::name(hpa)),
        json!(format!(
            "{}/{}",
            s(hpa, "/spec/scaleTargetRef/kind"),
            s(hpa, "/spec/scaleTargetRef/name")
        )),
        json!(targets),
        json!(min),
        json!(int(hpa, "/spec/maxReplicas")),
        json!(int(hpa, "/status/currentReplicas")),
        json!(age(now, hpa)),
    ])
}

pub(super) fn pdb_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Min Available",
            "The minimum number of pods that must be available.",
        ),
        string(
            "Max Unavailable",
            "The maximum number of pods that may be unavailable.",
        ),
        integer(
            "Allowed Disruptions",
            "Calculated number of pods that may be disrupted at this time.",
        ),
        columns::age(),
    ]
}

pub(super) fn pdb_row(pdb: &Value, now: Timestamp) -> Row {
    let na = |v: Option<String>| v.unwrap_or_else(|| "N/A".into());
    Row::from(vec![
        json!(crate::meta::name(pdb)),
        json!(na(int_or_string(pdb.pointer("/spec/minAvailable")))),
        json!(na(int_or_string(pdb.pointer("/spec/maxUnavailable")))),
        json!(int(pdb, "/status/disruptionsAllowed")),
        json!(age(now, pdb)),
    ])
}
