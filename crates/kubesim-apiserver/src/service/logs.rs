//! `GET pods/<name>/log`. Emulated containers print nothing, so the log is
//! what the emulation says about them: the lines of the pod annotation
//! `kubesim.io/logs` (or `kubesim.io/logs.<container>` for one container)
//! when set, otherwise one line when the container started and one when it
//! ended. Checks and errors are the real server's: the container must be
//! named when there are several, and must have started.

use kubesim_core::ApiError;
use serde_json::Value;

use super::Server;

/// The log query parameters kubectl sends.
#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    pub container: Option<String>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
    pub timestamps: bool,
    pub previous: bool,
}

const LOGS: &str = "kubesim.io/logs";

impl Server {
    pub fn pod_log(&self, ns: &str, name: &str, opts: &LogOptions) -> Result<String, ApiError> {
        let pods = self.resource("", "v1", "pods")?;
        let pod = self.get(&pods, ns, name)?;
        let spec_names = |field: &str| -> Vec<String> {
            pod.pointer(&format!("/spec/{field}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
                .collect()
        };
        let containers = spec_names("containers");
        let all: Vec<String> = containers
            .iter()
            .cloned()
            .chain(spec_names("initContainers"))
            .collect();
        let container = match opts.container.as_deref() {
            Some(c) if !all.iter().any(|n| n == c) => {
                return Err(ApiError::bad_request(format!(
                    "container {c} is not valid for pod {name}"
                )))
            }
            Some(c) => c.to_string(),
            None if containers.len() == 1 => containers[0].clone(),
            None => {
                return Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    all.join(" ")
                )))
            }
        };
        let status = container_status(&pod, &container);
        let state = status.as_ref().and_then(|s| s.get("state"));
        let started = state.and_then(|s| {
            s.pointer("/running/startedAt")
                .or_else(|| s.pointer("/terminated/startedAt"))
                .and_then(Value::as_str)
        });
        let Some(started) = started else {
            let reason = state
                .and_then(|s| s.pointer("/waiting/reason"))
                .and_then(Value::as_str)
                .unwrap_or("ContainerCreating");
            return Err(ApiError::bad_request(format!(
                "container \"{container}\" in pod \"{name}\" is waiting to start: {reason}"
            )));
        };
        if opts.previous {
            return Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            )));
        }
        let annotations = pod.pointer("/metadata/annotations");
        let custom = annotations
            .and_then(|a| a.get(format!("{LOGS}.{container}")))
            .or_else(|| annotations.and_then(|a| a.get(LOGS)))
            .and_then(Value::as_str);
        let mut lines: Vec<(String, String)> = match custom {
            Some(text) => text
                .lines()
                .map(|l| (started.to_string(), l.to_string()))
                .collect(),
            None => {
                let image = container_image(&pod, &container);
                let node = pod
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                vec![(
                    started.to_string(),
                    format!(
                        "kubesim: container {container} (image {image}) started on node {node}"
                    ),
                )]
            }
        };
        if let Some(t) = state.and_then(|s| s.get("terminated")) {
            if custom.is_none() {
                let at = t
                    .get("finishedAt")
                    .and_then(Value::as_str)
                    .unwrap_or(started);
                let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                let reason = t.get("reason").and_then(Value::as_str).unwrap_or("");
                lines.push((
                    at.to_string(),
                    format!("kubesim: container {container} exited with code {code} ({reason})"),
                ));
            }
        }
        if let Some(n) = opts.tail_lines {
            let keep = usize::try_from(n.max(0)).unwrap_or(0);
            let skip = lines.len().saturating_sub(keep);
            lines.drain(..skip);
        }
        let mut out = String::new();
        for (at, line) in lines {
            if opts.timestamps {
                out.push_str(&at);
                out.push(' ');
            }
            out.push_str(&line);
            out.push('\n');
        }
        if let Some(limit) = opts.limit_bytes {
            let mut cut = usize::try_from(limit.max(0)).unwrap_or(0).min(out.len());
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
        }
        Ok(out)
    }
}

fn container_status(pod: &Value, name: &str) -> Option<Value> {
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .filter_map(|f| {
            pod.pointer(&format!("/status/{f}"))
                .and_then(Value::as_array)
        })
        .flatten()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
        .cloned()
}

fn container_image(pod: &Value, name: &str) -> String {
    ["containers", "initContainers"]
        .iter()
        .filter_map(|f| pod.pointer(&format!("/spec/{f}")).and_then(Value::as_array))
        .flatten()
        .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|c| c.get("image").and_then(Value::as_str))
        .unwrap_or("")
        .to_string()
}
