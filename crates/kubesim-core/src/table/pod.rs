//! Pods: the computed Status cell is the heart of `kubectl get pods`, so this
//! follows upstream `printPod` branch for branch.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::{age, between, parse_ts};
use super::columns::{self, string, Column};
use super::fields::{arr, boolean, condition_true, int, opt_s, s};
use super::Row;

pub(super) fn columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Ready",
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        string("Status", "The aggregate status of the containers in this pod."),
        string(
            "Restarts",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        columns::age(),
        string(
            "IP",
            "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        )
        .wide(),
        string(
            "Node",
            "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling.",
        )
        .wide(),
        string(
            "Nominated Node",
            "nominatedNodeName is set only when this pod preempts other pods on the node; the pod is not guaranteed to be scheduled there.",
        )
        .wide(),
        string(
            "Readiness Gates",
            "If specified, all readiness gates will be evaluated for pod readiness.",
        )
        .wide(),
    ]
}

/// A container state (`waiting`, `running`, `terminated`) when present; an
/// empty object counts as present, as a non-nil pointer does upstream.
fn state<'a>(status: &'a Value, which: &str) -> Option<&'a Value> {
    status
        .get("state")
        .and_then(|st| st.get(which))
        .filter(|v| v.is_object())
}

/// Upstream prefers the reason, then the signal, then the exit code.
fn terminated_reason(t: &Value) -> String {
    match opt_s(t, "/reason").filter(|r| !r.is_empty()) {
        Some(r) => r.to_string(),
        None if int(t, "/signal") != 0 => format!("Signal:{}", int(t, "/signal")),
        None => format!("ExitCode:{}", int(t, "/exitCode")),
    }
}

fn last_finished(status: &Value) -> Option<Timestamp> {
    parse_ts(status.pointer("/lastState/terminated/finishedAt"))
}

fn later(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

pub(super) fn row(pod: &Value, now: Timestamp) -> Row {
    let init_specs = arr(pod, "/spec/initContainers");
    // Sidecars (init containers that keep running) count as pod containers.
    let is_sidecar = |name: &str| {
        init_specs
            .iter()
            .any(|c| s(c, "/name") == name && s(c, "/restartPolicy") == "Always")
    };
    let total = arr(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| s(c, "/restartPolicy") == "Always")
            .count();
    let mut ready = 0usize;
    let mut restarts: i64 = 0;
    let mut sidecar_restarts: i64 = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_sidecar_restart: Option<Timestamp> = None;

    let phase = s(pod, "/status/phase");
    let mut reason = match opt_s(pod, "/status/reason").filter(|r| !r.is_empty()) {
        Some(r) => r.to_string(),
        None => phase.to_string(),
    };
    let conditions = arr(pod, "/status/conditions");
    if conditions
        .iter()
        .any(|c| s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }

    let mut initializing = false;
    for (i, c) in arr(pod, "/status/initContainerStatuses").iter().enumerate() {
        let count = int(c, "/restartCount");
        restarts += count;
        last_restart = later(last_restart, last_finished(c));
        let sidecar = is_sidecar(s(c, "/name"));
        if sidecar {
            sidecar_restarts += count;
            last_sidecar_restart = later(last_sidecar_restart, last_finished(c));
        }
        let terminated = state(c, "terminated");
        let waiting = state(c, "waiting");
        if terminated.is_some_and(|t| int(t, "/exitCode") == 0) {
            continue;
        }
        if sidecar && boolean(c, "/started") {
            if boolean(c, "/ready") {
                ready += 1;
            }
            continue;
        }
        if let Some(t) = terminated {
            reason = format!("Init:{}", terminated_reason(t));
        } else if let Some(w) = waiting
            .and_then(|w| opt_s(w, "/reason"))
            .filter(|r| !r.is_empty() && *r != "PodInitializing")
        {
            reason = format!("Init:{w}");
        } else {
            reason = format!("Init:{}/{}", i, init_specs.len());
        }
        initializing = true;
        break;
    }

    if !initializing || condition_true(conditions, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        let mut error_reason = String::new();
        // Reverse order, so that the first container's state wins.
        for c in arr(pod, "/status/containerStatuses").iter().rev() {
            restarts += int(c, "/restartCount");
            last_restart = later(last_restart, last_finished(c));
            let waiting_reason = state(c, "waiting")
                .and_then(|w| opt_s(w, "/reason"))
                .filter(|r| !r.is_empty());
            if let Some(w) = waiting_reason {
                reason = w.to_string();
            } else if let Some(t) = state(c, "terminated") {
                reason = terminated_reason(t);
                if int(t, "/exitCode") != 0 {
                    error_reason = reason.clone();
                }
            } else if boolean(c, "/ready") && state(c, "running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        // A "Completed" container next to running ones is a partly finished
        // pod, not a finished one.
        if reason == "Completed" {
            if has_running && condition_true(conditions, "Ready") {
                reason = "Running".into();
            } else if !error_reason.is_empty() {
                reason = error_reason;
            } else if has_running {
                reason = "NotReady".into();
            }
        }
    }

    let deleting = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    if deleting && s(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", between(t, now)),
        _ => restarts.to_string(),
    };

    let or_none = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    // The v1 podIP field is authoritative over podIPs for older clients.
    let ip = opt_s(pod, "/status/podIP")
        .filter(|ip| !ip.is_empty())
        .unwrap_or_else(|| s(pod, "/status/podIPs/0/ip"));
    let gates = arr(pod, "/spec/readinessGates");
    let gates_cell = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let passed = gates
            .iter()
            .filter(|g| condition_true(conditions, s(g, "/conditionType")))
            .count();
        format!("{passed}/{}", gates.len())
    };

    let row_conditions = match phase {
        "Succeeded" => vec![
            json!({"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}),
        ],
        "Failed" => vec![
            json!({"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}),
        ],
        _ => vec![],
    };

    Row {
        cells: vec![
            json!(crate::meta::name(pod)),
            json!(format!("{ready}/{total}")),
            json!(reason),
            json!(restarts_cell),
            json!(age(now, pod)),
            json!(or_none(ip)),
            json!(or_none(s(pod, "/spec/nodeName"))),
            json!(or_none(s(pod, "/status/nominatedNodeName"))),
            json!(gates_cell),
        ],
        conditions: row_conditions,
    }
}
