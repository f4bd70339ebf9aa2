//! PodConfiguration: pods labelled `apate: <name>` take that
//! configuration's state (direct, then due tasks); `pod_status` is written
//! into the pod's status, the response flags gate the kubelet's actions.

use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, patch::PatchType, ApiError};
use kubesim_runtime::{
    Api, Cache, Clock, EventRecorder, EventType, ObjectKey, Requeue, ResourceRef, WriteOptions,
};
use serde_json::{json, Value};

use super::faults::Faults;
use super::schedule::due;
use super::types::{parse_spec, PodConfigurationSpec, PodState, PodStatus};

/// The label a pod opts in with, naming a PodConfiguration in its namespace.
pub const APATE_LABEL: &str = "apate";

pub struct PodConfigurations {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    pub faults: Arc<Faults>,
    pub recorder: EventRecorder,
    pub configs: Arc<Cache>,
    pub pods: Arc<Cache>,
}

impl PodConfigurations {
    pub async fn reconcile(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let pod = self.pods.get(&key.namespace, &key.name);
        let config = pod
            .as_ref()
            .and_then(|p| meta::labels(p).get(APATE_LABEL).cloned())
            .and_then(|c| self.configs.get(&key.namespace, &c));
        let (Some(pod), Some(config)) = (pod, config) else {
            self.faults.set_pod(&key.namespace, &key.name, None);
            return Ok(None);
        };
        let spec: PodConfigurationSpec = match parse_spec(&config) {
            Ok(s) => s,
            Err(e) => {
                self.recorder
                    .record(&config, EventType::Warning, "InvalidSpec", e);
                return Ok(None);
            }
        };
        let now = self.clock.now();
        let started = meta::path(&pod, "status.startTime")
            .and_then(Value::as_str)
            .and_then(meta::parse_time);
        let (fired, next) = due(&spec.tasks, self.faults.scenario_start(), started, now);
        let mut state = PodState::default();
        spec.direct.apply(&mut state);
        for t in &fired {
            t.state.apply(&mut state);
        }
        self.faults
            .set_pod(&key.namespace, &key.name, Some(state.clone()));
        if let Some(status) = state.pod_status {
            self.write_status(&pod, status, meta::name(&config)).await?;
        }
        Ok(next.map(|at| Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO)))
    }

    /// Puts the pod in the phase the configuration asks for, once it runs
    /// on a node (UNSET leaves it to the normal lifecycle).
    async fn write_status(
        &self,
        pod: &Value,
        status: PodStatus,
        config: &str,
    ) -> Result<(), ApiError> {
        let bound = meta::path(pod, "spec.nodeName")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        if !bound || meta::is_deleting(pod) {
            return Ok(());
        }
        let now = meta::format_time(self.clock.now());
        let (phase, ready, message) = match status {
            PodStatus::Unset => return Ok(()),
            PodStatus::Pending => (
                "Pending",
                false,
                "Pod is awaiting further emulation instructions",
            ),
            PodStatus::Running => ("Running", true, ""),
            PodStatus::Succeeded => ("Succeeded", false, ""),
            PodStatus::Failed => ("Failed", false, "Emulated pod has failed"),
            PodStatus::Unknown => ("Unknown", false, ""),
        };
        if meta::path(pod, "status.phase").and_then(Value::as_str) == Some(phase) {
            return Ok(());
        }
        let containers = container_statuses(pod, status, &now);
        let ready_s = if ready { "True" } else { "False" };
        let mut body = json!({"status": {
            "phase": phase,
            "conditions": [
                {"type": "Ready", "status": ready_s, "lastTransitionTime": now},
                {"type": "ContainersReady", "status": ready_s, "lastTransitionTime": now},
            ],
            "containerStatuses": containers,
        }});
        if !message.is_empty() {
            body["status"]["message"] = json!(message);
        }
        if meta::path(pod, "status.startTime").is_none() && status != PodStatus::Pending {
            body["status"]["startTime"] = json!(now);
        }
        patch_pod_status(&self.api, pod, body).await?;
        self.recorder.record(
            pod,
            EventType::Normal,
            "EmulatedStatus",
            format!("PodConfiguration {config} set the pod {phase}"),
        );
        Ok(())
    }
}

fn container_statuses(pod: &Value, status: PodStatus, now: &str) -> Value {
    let containers = meta::path(pod, "spec.containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Value::Array(
        containers
            .iter()
            .map(|c| {
                let state = match status {
                    PodStatus::Running => json!({"running": {"startedAt": now}}),
                    PodStatus::Succeeded => json!({"terminated": {"exitCode": 0,
                        "reason": "Completed", "startedAt": now, "finishedAt": now}}),
                    PodStatus::Failed => json!({"terminated": {"exitCode": 1,
                        "reason": "Error", "startedAt": now, "finishedAt": now}}),
                    _ => json!({"waiting": {"reason": "ContainerCreating"}}),
                };
                json!({"name": c.get("name").cloned().unwrap_or(Value::Null),
                    "image": c.get("image").cloned().unwrap_or(Value::Null),
                    "ready": status == PodStatus::Running, "restartCount": 0,
                    "started": status == PodStatus::Running, "state": state})
            })
            .collect(),
    )
}

/// What a kubelet that errors on creating the pod leaves: every container
/// failed to start, the pod Failed.
pub async fn fail_creation(api: &Arc<dyn Api>, clock: &Clock, pod: &Value) -> Result<(), ApiError> {
    let now = meta::format_time(clock.now());
    let containers: Vec<Value> = meta::path(pod, "spec.containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            json!({"name": c.get("name").cloned().unwrap_or(Value::Null),
                "image": c.get("image").cloned().unwrap_or(Value::Null),
                "ready": false, "restartCount": 0, "started": false,
                "state": {"terminated": {"exitCode": 128, "reason": "StartError",
                    "message": "emulated kubelet: container creation failed",
                    "startedAt": now, "finishedAt": now}}})
        })
        .collect();
    let body = json!({"status": {"phase": "Failed", "reason": "StartError",
        "message": "The emulated kubelet failed to create the pod",
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now}],
        "containerStatuses": containers}});
    patch_pod_status(api, pod, body).await
}

/// Merges `body` into the pod's status; a pod already gone is fine.
async fn patch_pod_status(api: &Arc<dyn Api>, pod: &Value, body: Value) -> Result<(), ApiError> {
    match api
        .patch(
            &ResourceRef::core("pods"),
            meta::namespace(pod),
            meta::name(pod),
            PatchType::Strategic,
            body.to_string().into_bytes(),
            Some("status"),
            &WriteOptions::default(),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
