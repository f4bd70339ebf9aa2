//! Apate's configuration kinds (`apate.opendc.org/v1`), with their
//! snake_case fields exactly as Apate's CRDs define them.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use kubesim_gocompat::duration;

/// How the emulated kubelet answers one kind of request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Response {
    /// Not set here: a lower layer (or normal behaviour) decides.
    #[default]
    Unset,
    Normal,
    /// Never answers: the action hangs, as a stuck kubelet.
    Timeout,
    /// Answers with an error.
    Error,
}

impl Response {
    /// Apate's "worst case wins" between node and pod flags: an error
    /// beats a hang, a hang beats normal behaviour.
    pub fn worst(self, other: Response) -> Response {
        fn rank(r: Response) -> u8 {
            match r {
                Response::Unset => 0,
                Response::Normal => 1,
                Response::Timeout => 2,
                Response::Error => 3,
            }
        }
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }

    fn or(self, earlier: Response) -> Response {
        if self == Response::Unset {
            earlier
        } else {
            self
        }
    }
}

/// The responses a node's kubelet gives, per request kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct CustomState {
    pub create_pod_response: Response,
    pub update_pod_response: Response,
    pub delete_pod_response: Response,
    pub get_pod_response: Response,
    pub get_pods_response: Response,
    pub get_pod_status_response: Response,
    pub node_ping_response: Response,
}

impl CustomState {
    fn overlay(&mut self, later: &CustomState) {
        self.create_pod_response = later.create_pod_response.or(self.create_pod_response);
        self.update_pod_response = later.update_pod_response.or(self.update_pod_response);
        self.delete_pod_response = later.delete_pod_response.or(self.delete_pod_response);
        self.get_pod_response = later.get_pod_response.or(self.get_pod_response);
        self.get_pods_response = later.get_pods_response.or(self.get_pods_response);
        self.get_pod_status_response = later
            .get_pod_status_response
            .or(self.get_pod_status_response);
        self.node_ping_response = later.node_ping_response.or(self.node_ping_response);
    }
}

/// A node's emulated state: direct (inline in the spec) or from a task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct NodeState {
    pub node_failed: Option<bool>,
    pub heartbeat_failed: Option<bool>,
    pub network_latency: Option<String>,
    pub custom_state: Option<CustomState>,
}

/// The state in force: every flag resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeEffect {
    pub responses: CustomState,
    pub latency: Duration,
}

impl NodeState {
    /// Applies this state on top of `effect`, as Apate's translator does:
    /// `node_failed` makes every response hang, `heartbeat_failed` the
    /// ping; both override the custom responses. A latency Apate cannot
    /// parse (or a negative one) leaves it unset.
    pub fn apply(&self, effect: &mut NodeEffect) {
        if let Some(c) = &self.custom_state {
            effect.responses.overlay(c);
        }
        if let Some(l) = &self.network_latency {
            if let Ok(d) = duration::parse_std(l) {
                effect.latency = d;
            }
        }
        if self.heartbeat_failed == Some(true) {
            effect.responses.node_ping_response = Response::Timeout;
        }
        if self.node_failed == Some(true) {
            let r = &mut effect.responses;
            for f in [
                &mut r.create_pod_response,
                &mut r.update_pod_response,
                &mut r.delete_pod_response,
                &mut r.get_pod_response,
                &mut r.get_pods_response,
                &mut r.get_pod_status_response,
                &mut r.node_ping_response,
            ] {
                *f = Response::Timeout;
            }
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct NodeResources {
    pub memory: String,
    pub cpu: i64,
    pub storage: String,
    pub ephemeral_storage: String,
    pub max_pods: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Task<S> {
    pub timestamp: String,
    #[serde(default)]
    pub relative_to_pod: bool,
    pub state: S,
}

/// `NodeConfiguration.spec`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct NodeConfigurationSpec {
    pub replicas: i64,
    pub resources: NodeResources,
    #[serde(default)]
    pub tasks: Vec<Task<NodeState>>,
    #[serde(flatten)]
    pub direct: NodeState,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PodResources {
    pub memory: Option<String>,
    pub cpu: Option<u64>,
    pub storage: Option<String>,
    pub ephemeral_storage: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum PodStatus {
    Pending,
    Running,
    Succeeded,
    Failed,
    Unknown,
    Unset,
}

/// A pod's emulated state: direct or from a task.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct PodState {
    pub create_pod_response: Response,
    pub update_pod_response: Response,
    pub delete_pod_response: Response,
    pub get_pod_response: Response,
    pub get_pod_status_response: Response,
    pub pod_resources: Option<PodResources>,
    pub pod_status: Option<PodStatus>,
}

impl PodState {
    pub fn apply(&self, effect: &mut PodState) {
        effect.create_pod_response = self.create_pod_response.or(effect.create_pod_response);
        effect.update_pod_response = self.update_pod_response.or(effect.update_pod_response);
        effect.delete_pod_response = self.delete_pod_response.or(effect.delete_pod_response);
        effect.get_pod_response = self.get_pod_response.or(effect.get_pod_response);
        effect.get_pod_status_response = self
            .get_pod_status_response
            .or(effect.get_pod_status_response);
        if self.pod_resources.is_some() {
            effect.pod_resources = self.pod_resources.clone();
        }
        if self.pod_status.is_some() {
            effect.pod_status = self.pod_status;
        }
    }
}

/// `PodConfiguration.spec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PodConfigurationSpec {
    #[serde(default)]
    pub tasks: Vec<Task<PodState>>,
    #[serde(flatten)]
    pub direct: PodState,
}

/// Apate's byte sizes: `k`/`m`/`g`/`t`/`p` (any case, optional `b`/`ib`)
/// are binary multiples, so `5G` is 5 GiB. Returns a Kubernetes quantity.
pub fn bytes_quantity(s: &str) -> Result<String, String> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 5G, 512M)"))?;
    let unit = unit.trim();
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(unit);
    let shift = match unit {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        "p" => 50,
        _ => return Err(format!("{s:?} is not a size (e.g. 5G, 512M)")),
    };
    let bytes = n * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > i64::MAX as f64 {
        return Err(format!("{s:?} is out of range"));
    }
    Ok(format!("{}", bytes as i64))
}

pub fn parse_spec<T: serde::de::DeserializeOwned>(obj: &Value) -> Result<T, String> {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    serde_json::from_value(spec).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_failed_hangs_every_response() {
        let spec: NodeConfigurationSpec = serde_json::from_value(json!({
            "replicas": 1,
            "resources": {"memory": "5G", "cpu": 5, "storage": "5T", "ephemeral_storage": "120G", "max_pods": 150},
            "network_latency": "100ms",
            "custom_state": {"create_pod_response": "ERROR"},
            "tasks": [{"timestamp": "1s", "state": {"node_failed": true}}],
        }))
        .unwrap();
        let mut e = NodeEffect::default();
        spec.direct.apply(&mut e);
        assert_eq!(e.latency, Duration::from_millis(100));
        assert_eq!(e.responses.create_pod_response, Response::Error);
        assert_eq!(e.responses.node_ping_response, Response::Unset);
        spec.tasks[0].state.apply(&mut e);
        assert_eq!(e.responses.create_pod_response, Response::Timeout);
        assert_eq!(e.responses.node_ping_response, Response::Timeout);
    }

    #[test]
    fn worst_case_wins() {
        assert_eq!(Response::Normal.worst(Response::Error), Response::Error);
        assert_eq!(Response::Timeout.worst(Response::Unset), Response::Timeout);
        assert_eq!(Response::Error.worst(Response::Timeout), Response::Error);
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(bytes_quantity("5G").unwrap(), (5u64 << 30).to_string());
        assert_eq!(bytes_quantity("120G").unwrap(), (120u64 << 30).to_string());
        assert_eq!(bytes_quantity("512mb").unwrap(), (512u64 << 20).to_string());
        assert_eq!(bytes_quantity("0B").unwrap(), "0");
        assert!(bytes_quantity("5X").is_err());
        assert!(bytes_quantity("").is_err());
    }

    #[test]
    fn pod_configuration_direct_and_tasks() {
        let spec: PodConfigurationSpec = serde_json::from_value(json!({
            "pod_resources": {"memory": "1G"},
            "tasks": [
                {"timestamp": "1s", "state": {"pod_resources": {"cpu": 1, "memory": "5G"}}},
                {"timestamp": "5s", "relative_to_pod": true, "state": {"pod_status": "FAILED"}},
            ],
        }))
        .unwrap();
        let mut e = PodState::default();
        spec.direct.apply(&mut e);
        assert_eq!(
            e.pod_resources.as_ref().unwrap().memory.as_deref(),
            Some("1G")
        );
        for t in &spec.tasks {
            t.state.apply(&mut e);
        }
        assert_eq!(e.pod_resources.as_ref().unwrap().cpu, Some(1));
        assert_eq!(e.pod_status, Some(PodStatus::Failed));
        assert!(spec.tasks[1].relative_to_pod);
    }
}
