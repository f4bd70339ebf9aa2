//! A stand-in kubelet for end-to-end tests of controllers and the
//! scheduler, until emulated nodes exist: it makes pods Running and Ready,
//! finishes pods that are meant to finish, completes graceful deletions,
//! and posts a Ready heartbeat for every node so the node lifecycle
//! controller keeps them. It polls, which is fine for a test helper.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{json, Value};

use super::http_request;

/// Pods with this annotation end Succeeded (or Failed when its value is
/// `fail`) once Running.
pub const FINISH: &str = "test.kubesim.io/finish";

/// Runs until dropped.
pub struct FakeKubelet {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeKubelet {
    /// Acts on every pod; with `bound_only`, only on pods with a nodeName
    /// (use that when a scheduler runs).
    pub fn start(port: u16, bound_only: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut round = 0u64;
            while !s.load(Ordering::Relaxed) {
                // Heartbeats every 5 s, well within the 40 s grace period.
                if round.is_multiple_of(50) {
                    let _ = heartbeat(port);
                }
                round += 1;
                let _ = pass(port, bound_only);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        FakeKubelet {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A pod IP derived from the pod's name, so pods differ.
pub fn pod_ip(name: &str) -> String {
    let h = name
        .bytes()
        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32));
    format!("10.244.{}.{}", (h >> 8) % 250, h % 250 + 2)
}

/// Posts Ready=True with a fresh heartbeat on every node.
fn heartbeat(port: u16) -> std::io::Result<()> {
    let (_, body) = http_request(port, "GET", "/api/v1/nodes", None)?;
    let list: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    for node in list["items"].as_array().into_iter().flatten() {
        let name = node["metadata"]["name"].as_str().unwrap_or("");
        let since = node["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready" && c["status"] == "True")
            .and_then(|c| c["lastTransitionTime"].as_str())
            .map(String::from)
            .unwrap_or_else(|| now.to_string());
        let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
            "reason": "KubeletReady", "message": "kubelet is posting ready status",
            "lastHeartbeatTime": now.to_string(), "lastTransitionTime": since}]}})
        .to_string();
        let _ = http_request(
            port,
            "PATCH",
            &format!("/api/v1/nodes/{name}/status"),
            Some(("application/strategic-merge-patch+json", patch.as_bytes())),
        );
    }
    Ok(())
}

fn pass(port: u16, bound_only: bool) -> std::io::Result<()> {
    let (_, body) = http_request(port, "GET", "/api/v1/pods", None)?;
    let list: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let now = "2026-01-01T00:00:00Z";
    for pod in list["items"].as_array().into_iter().flatten() {
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
        let name = pod["metadata"]["name"].as_str().unwrap_or("");
        let path = format!("/api/v1/namespaces/{ns}/pods/{name}");
        if pod["metadata"]["deletionTimestamp"].is_string() {
            let _ = http_request(
                port,
                "DELETE",
                &format!("{path}?gracePeriodSeconds=0"),
                None,
            );
            continue;
        }
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
        if bound_only && node.is_empty() {
            continue;
        }
        let phase = pod["status"]["phase"].as_str().unwrap_or("");
        let status = match phase {
            "" | "Pending" => {
                let containers: Vec<Value> = pod["spec"]["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| json!({"name": c["name"], "image": c["image"], "ready": true,
                        "restartCount": 0, "started": true, "state": {"running": {"startedAt": now}}}))
                    .collect();
                json!({"phase": "Running", "podIP": pod_ip(name), "startTime": now,
                    "containerStatuses": containers,
                    "conditions": [
                        {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                        {"type": "Ready", "status": "True", "lastTransitionTime": now},
                        {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now}]})
            }
            "Running" => match pod["metadata"]["annotations"][FINISH].as_str() {
                Some(how) => {
                    let phase = if how == "fail" { "Failed" } else { "Succeeded" };
                    json!({"phase": phase, "conditions": [
                        {"type": "Ready", "status": "False", "lastTransitionTime": now}]})
                }
                None => continue,
            },
            _ => continue,
        };
        let patch = json!({"status": status}).to_string();
        let _ = http_request(
            port,
            "PATCH",
            &format!("{path}/status"),
            Some(("application/merge-patch+json", patch.as_bytes())),
        );
    }
    Ok(())
}
