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
    /// The Prometheus server of the run (`kubesim load --prometheus`),
    /// for the measurements that are PromQL queries.
    pub prometheus: Option<Arc<dyn crate::prom::Querier>>,
    /// Informers the test's measurements share.
    pub informers: Arc<informer_pool::InformerPool>,
}

/// How a measurement call failed; a critical failure stops the test, a
/// violation is an SLO missed (the measurement itself worked). `Skipped`
/// is no failure: the call measured nothing because its subject does not
/// exist here (a probe on an emulated node, a query without Prometheus),
/// and says so instead of inventing a number. `Partial` is no failure
/// either: a bundle measured some parts and names the parts it skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    Failed,
    Violation,
    Critical,
    Skipped,
    Partial,
}

/// The reason given for a measurement of something emulated nodes lack.
pub const NOT_APPLICABLE: &str = "not applicable to emulated nodes";
/// The reason given for a Prometheus query when no Prometheus was started.
pub const NEEDS_PROMETHEUS: &str =
    "needs Prometheus: run kubesim load with --prometheus to start one";

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
    /// Nothing measured, for `reason`; the call passes and is reported as
    /// skipped.
    pub fn skipped(reason: impl Into<String>) -> Self {
        MeasurementError {
            kind: ErrorKind::Skipped,
            message: reason.into(),
            summaries: Vec::new(),
        }
    }
    /// Some parts measured (their `summaries`), the others skipped as
    /// `note` says; the call passes.
    pub fn partial(note: impl Into<String>, summaries: Vec<Summary>) -> Self {
        MeasurementError {
            kind: ErrorKind::Partial,
            message: note.into(),
            summaries,
        }
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

type Factory = Box<dyn Fn() -> Box<dyn Measurement>>;

/// The methods kubesim implements, by ClusterLoader2 name.
fn registry() -> BTreeMap<&'static str, Factory> {
    let mut m: BTreeMap<&'static str, Factory> = BTreeMap::new();
    // Shorthand: methods are registered as plain constructors.
    fn f(make: impl Fn() -> Box<dyn Measurement> + 'static) -> Factory {
        Box::new(make)
    }
    m.insert("Sleep", f(|| Box::new(sleep::Sleep)));
    m.insert(
        "PodStartupLatency",
        f(|| Box::<pod_startup::PodStartupLatency>::default()),
    );
    m.insert(
        "WaitForRunningPods",
        f(|| Box::new(wait_pods::WaitForRunningPods)),
    );
    m.insert(
        "WaitForControlledPodsRunning",
        f(|| Box::<wait_controlled::WaitForControlledPodsRunning>::default()),
    );
    m.insert(
        "WaitForGenericK8sObjects",
        f(|| Box::new(wait_generic::WaitForGenericK8sObjects)),
    );
    m.insert(
        "SchedulingThroughput",
        f(|| Box::<scheduling_throughput::SchedulingThroughput>::default()),
    );
    m.insert(
        "APIResponsivenessPrometheus",
        f(|| Box::<api_responsiveness::ApiResponsiveness>::default()),
    );
    m.insert(
        "ResourceUsageSummary",
        f(|| Box::<resource_usage::ResourceUsage>::default()),
    );
    m.insert("Timer", f(|| Box::<timer::Timer>::default()));
    m.insert(
        "WaitForFinishedJobs",
        f(|| Box::<wait_jobs::WaitForFinishedJobs>::default()),
    );
    m.insert(
        "JobLifecycleLatency",
        f(|| Box::<job_lifecycle::JobLifecycleLatency>::default()),
    );
    m.insert(
        "WaitForBoundPVCs",
        f(|| Box::new(wait_pvcs::WaitForBoundPVCs)),
    );
    m.insert(
        "TestMetrics",
        f(|| Box::<test_metrics::TestMetrics>::default()),
    );
    m.insert(
        "NetworkProgrammingLatency",
        f(|| Box::<network_programming::NetworkProgrammingLatency>::default()),
    );
    m.insert("Exec", f(|| Box::new(exec::Exec)));
    m.insert(
        "APIAvailability",
        f(|| Box::<api_availability::ApiAvailability>::default()),
    );
    m.insert(
        "SLOMeasurement",
        f(|| Box::<slo::SloMeasurement>::default()),
    );
    m.insert(
        container_restarts::NAME,
        f(|| Box::<container_restarts::ContainerRestarts>::default()),
    );
    m.insert(
        scheduling_throughput_prometheus::NAME,
        f(|| Box::<scheduling_throughput_prometheus::SchedulingThroughputPrometheus>::default()),
    );
    m.insert(
        generic_query::NAME,
        f(|| Box::<generic_query::GenericPrometheusQuery>::default()),
    );
    for (method, _) in skipped::NOT_APPLICABLE_METHODS {
        m.insert(
            method,
            f(move || Box::new(skipped::Skip::not_applicable(method))),
        );
    }
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
        let registry = registry();
        let make = registry.get(method).ok_or_else(|| {
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

pub mod api_availability;
pub mod api_responsiveness;
pub mod container_restarts;
pub mod exec;
pub mod generic_query;
pub mod informer_pool;
pub mod job_lifecycle;
pub mod jobs;
pub mod latency;
#[cfg(test)]
mod malformed_stored;
pub mod metrics_for_e2e;
pub mod network_programming;
pub mod pod_startup;
pub mod prometheus;
mod prometheus_method;
pub mod resource_usage;
pub mod scheduling_throughput;
pub mod scheduling_throughput_prometheus;
pub mod skipped;
pub mod sleep;
pub mod slo;
pub mod test_metrics;
#[cfg(test)]
mod test_support;
pub mod timer;
pub mod wait_controlled;
pub mod wait_generic;
pub mod wait_jobs;
pub mod wait_pods;
pub mod wait_pvcs;

/// How long a measurement waits for its informer's first list, as
/// upstream's `informerSyncTimeout`.
const INFORMER_SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl Ctx {
    /// The test's shared informer on these objects, started if none runs.
    pub fn informer(
        &self,
        resource: kubesim_runtime::ResourceRef,
        namespace: &str,
        label_selector: Option<String>,
        field_selector: Option<String>,
    ) -> Arc<informer_pool::Pooled> {
        self.informers.get(
            self.cluster.api(),
            resource,
            namespace,
            label_selector,
            field_selector,
            self.clock.clone(),
        )
    }
}

/// Waits for the first list of each of `informers`; `method` and `what`
/// (e.g. "pods") name the refusal.
pub(crate) async fn wait_synced(
    ctx: &Ctx,
    method: &str,
    what: &str,
    informers: &[&informer_pool::Pooled],
) -> Result<(), MeasurementError> {
    let synced = futures::future::join_all(informers.iter().map(|p| p.informer().wait_synced()));
    match ctx.clock.timeout(INFORMER_SYNC_TIMEOUT, synced).await {
        Some(_) => Ok(()),
        None => Err(MeasurementError::failed(format!(
            "{method}: {what} were not listed within {}",
            kubesim_gocompat::duration::format_std(INFORMER_SYNC_TIMEOUT)
        ))),
    }
}

/// Registers `handler` on `informer` (for as long as the returned
/// subscription is kept) and waits for the informer's first list.
pub(crate) async fn subscribe_synced(
    ctx: &Ctx,
    method: &str,
    what: &str,
    informer: &Arc<informer_pool::Pooled>,
    handler: impl Fn(&kubesim_runtime::Change) + Send + Sync + 'static,
) -> Result<informer_pool::Subscription, MeasurementError> {
    let subscription = informer.subscribe(handler);
    wait_synced(ctx, method, what, &[informer]).await?;
    Ok(subscription)
}
