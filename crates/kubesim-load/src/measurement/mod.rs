//! Measurements: stateful objects keyed by (Method, Identifier) that a
//! test drives with `action: start` … `action: gather` (or a single call,
//! for barriers like WaitForRunningPods), returning report summaries.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_runtime::{Clock, Rng};

use crate::params::{ParamError, Params};
use crate::report::Summary;
use crate::Cluster;

/// What every measurement may use.
#[derive(Clone)]
pub struct Ctx {
    pub cluster: Arc<dyn Cluster>,
    pub clock: Clock,
    pub rng: Rng,
    /// The test's `name`, part of report file names.
    pub config_name: String,
    /// `{{.Nodes}}` of the test.
    pub nodes: i64,
    /// Prefix of the automanaged namespaces (`<prefix>-1` …).
    pub namespace_prefix: String,
    /// The process whose CPU and memory ResourceUsageSummary samples: the
    /// kubesim server when it runs in this process, else none.
    pub server_pid: Option<u32>,
}

/// How a measurement call failed; a critical failure stops the test, a
/// violation is an SLO missed (the measurement itself worked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    Failed,
    Violation,
    Critical,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct MeasurementError {
    pub kind: ErrorKind,
    pub message: String,
    /// Summaries worth writing even though the call failed (e.g. the
    /// failed pods of a barrier, or the latencies that broke an SLO).
    pub summaries: Vec<Summary>,
}

impl MeasurementError {
    pub fn failed(message: impl Into<String>) -> Self {
        MeasurementError {
            kind: ErrorKind::Failed,
            message: message.into(),
            summaries: Vec::new(),
        }
    }
    pub fn violation(message: impl Into<String>, summaries: Vec<Summary>) -> Self {
        MeasurementError {
            kind: ErrorKind::Violation,
            message: message.into(),
            summaries,
        }
    }
    /// An `action` the method does not know.
    pub fn unknown_action(method: &str, action: &str) -> Self {
        MeasurementError::failed(format!("{method}: unknown action {action:?}"))
    }
    pub fn critical(message: impl Into<String>) -> Self {
        MeasurementError {
            kind: ErrorKind::Critical,
            message: message.into(),
            summaries: Vec::new(),
        }
    }
}

impl From<ParamError> for MeasurementError {
    fn from(e: ParamError) -> Self {
        MeasurementError::failed(e.to_string())
    }
}

impl From<kubesim_core::ApiError> for MeasurementError {
    fn from(e: kubesim_core::ApiError) -> Self {
        MeasurementError::failed(format!("API error {}: {}", e.code, e.message))
    }
}

#[async_trait::async_trait]
pub trait Measurement: Send {
    /// Runs one call with its parameters (`action` among them). Work that
    /// outlives the call (informers, samplers) runs in spawned tasks that
    /// the measurement owns and stops on `gather` or when dropped.
    async fn execute(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        params: &Params,
    ) -> Result<Vec<Summary>, MeasurementError>;
}

type Factory = fn() -> Box<dyn Measurement>;

/// The methods kubesim implements, by ClusterLoader2 name.
fn registry() -> BTreeMap<&'static str, Factory> {
    let mut m: BTreeMap<&'static str, Factory> = BTreeMap::new();
    m.insert("Sleep", || Box::new(sleep::Sleep));
    m.insert("PodStartupLatency", || {
        Box::<pod_startup::PodStartupLatency>::default()
    });
    m.insert("WaitForRunningPods", || {
        Box::new(wait_pods::WaitForRunningPods)
    });
    m.insert("WaitForControlledPodsRunning", || {
        Box::<wait_controlled::WaitForControlledPodsRunning>::default()
    });
    m.insert("WaitForGenericK8sObjects", || {
        Box::new(wait_generic::WaitForGenericK8sObjects)
    });
    m.insert("SchedulingThroughput", || {
        Box::<scheduling_throughput::SchedulingThroughput>::default()
    });
    m.insert("APIResponsivenessPrometheus", || {
        Box::<api_responsiveness::ApiResponsiveness>::default()
    });
    m.insert("ResourceUsageSummary", || {
        Box::<resource_usage::ResourceUsage>::default()
    });
    m.insert("Timer", || Box::<timer::Timer>::default());
    m
}

/// Whether `method` is implemented; a config naming another is refused
/// before anything runs.
pub fn is_implemented(method: &str) -> bool {
    registry().contains_key(method)
}

pub fn implemented() -> Vec<&'static str> {
    registry().into_keys().collect()
}

/// The measurement instances of one test run: the same (Method,
/// Identifier) is the same object in every step.
#[derive(Default)]
pub struct Manager {
    instances: parking_lot::Mutex<BTreeMap<(String, String), Instance>>,
}

type Instance = Arc<tokio::sync::Mutex<Box<dyn Measurement>>>;

impl Manager {
    pub fn new() -> Self {
        Self::default()
    }

    fn instance(&self, method: &str, identifier: &str) -> Result<Instance, MeasurementError> {
        let mut all = self.instances.lock();
        let key = (method.to_string(), identifier.to_string());
        if let Some(i) = all.get(&key) {
            return Ok(i.clone());
        }
        let make = registry().get(method).copied().ok_or_else(|| {
            MeasurementError::failed(format!(
                "measurement method {method:?} is not implemented by kubesim"
            ))
        })?;
        let i = Arc::new(tokio::sync::Mutex::new(make()));
        all.insert(key, i.clone());
        Ok(i)
    }

    pub async fn execute(
        &self,
        ctx: &Ctx,
        method: &str,
        identifier: &str,
        params: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let instance = self.instance(method, identifier)?;
        let mut m = instance.lock().await;
        m.execute(ctx, identifier, params).await
    }

    /// Drops every instance, stopping their background tasks.
    pub fn dispose(&self) {
        self.instances.lock().clear();
    }
}

pub mod api_responsiveness;
pub mod latency;
pub mod pod_startup;
pub mod prometheus;
pub mod resource_usage;
pub mod scheduling_throughput;
pub mod sleep;
#[cfg(test)]
mod test_support;
pub mod timer;
pub mod wait_controlled;
pub mod wait_generic;
pub mod wait_pods;
