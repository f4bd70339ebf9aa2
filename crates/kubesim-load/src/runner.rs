//! Running a test: compile the config, create the automanaged namespaces,
//! run the steps in order (a step's phases, or its measurements, in
//! parallel), then clean up and assemble the report.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use kubesim_runtime::{Clock, DeleteOptions, ResourceRef, Rng, WriteOptions};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use crate::config::{
    self, CompileOptions, Compiled, ConfigError, MeasurementSpec, Step, Validation,
};
use crate::measurement::{Ctx, ErrorKind, Manager};
use crate::phase::PhaseCtx;
use crate::report::{MeasurementOutcome, StepReport, TestReport};
use crate::template::{build_mapping, Renderer};
use crate::tuning::TuningSet;
use crate::Cluster;

pub struct RunOptions {
    pub config: PathBuf,
    pub overrides: Vec<PathBuf>,
    /// The environment (only `CL2_*` variables are used).
    pub env: Vec<(String, String)>,
    /// `{{.Nodes}}`.
    pub nodes: i64,
    pub validation: Validation,
    pub seed: u64,
    /// The kubesim server's process, when it is this one.
    pub server_pid: Option<u32>,
    /// The run's Prometheus server, when one was started.
    pub prometheus: Option<Arc<dyn crate::prom::Querier>>,
    /// Told what the test is doing, for a progress line.
    pub progress: Arc<dyn Fn(&str) + Send + Sync>,
}

/// A config that did not compile: nothing was created.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Mapping(#[from] crate::template::MappingError),
}

pub struct Outcome {
    pub report: TestReport,
    pub compiled: Compiled,
}

fn namespaces() -> ResourceRef {
    ResourceRef::core("namespaces")
}

/// A compiled test, ready to run: nothing has touched a cluster yet.
pub struct Prepared {
    pub compiled: Compiled,
    /// The automanaged namespaces' prefix.
    pub prefix: String,
    mapping: Map<String, Value>,
    /// The run's one random source, already used for the prefix.
    rng: Rng,
}

/// Compiles the config (what `--dry-run` shows and what is refused before
/// any cluster is touched).
pub fn prepare(opts: &RunOptions) -> Result<Prepared, RunError> {
    let rng = Rng::seeded(opts.seed);
    let overrides: Vec<&std::path::Path> = opts.overrides.iter().map(|p| p.as_path()).collect();
    let mapping = build_mapping(&overrides, opts.env.clone(), opts.nodes)?;
    let dir = opts
        .config
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_else(|| PathBuf::from("."));
    let renderer = Renderer::new(rng.clone(), &dir);
    let drawn = format!("test-{}", rng.suffix(6));
    let compiled = config::compile(
        &opts.config,
        &renderer,
        &CompileOptions {
            validation: opts.validation,
            mapping: &mapping,
            namespace_prefix: &drawn,
        },
    )?;
    let prefix = compiled.config.namespace.prefix.clone().unwrap_or(drawn);
    Ok(Prepared {
        compiled,
        prefix,
        mapping,
        rng,
    })
}

/// Compiles and runs the test.
pub async fn run(
    cluster: Arc<dyn Cluster>,
    clock: Clock,
    opts: RunOptions,
) -> Result<Outcome, RunError> {
    let prepared = prepare(&opts)?;
    Ok(execute(cluster, clock, &opts, prepared).await)
}

/// Runs a prepared test to the end (failures are in the report).
pub async fn execute(
    cluster: Arc<dyn Cluster>,
    clock: Clock,
    opts: &RunOptions,
    prepared: Prepared,
) -> Outcome {
    let Prepared {
        compiled,
        prefix,
        mapping,
        rng,
    } = prepared;
    for w in &compiled.warnings {
        tracing::warn!("{w}");
    }
    let c = &compiled.config;
    let started = clock.now();
    let t0 = clock.instant();
    let mut report = TestReport {
        config_name: c.name.clone(),
        config_path: opts.config.display().to_string(),
        started: Some(started),
        ..Default::default()
    };
    let ctx = Ctx {
        cluster: cluster.clone(),
        clock: clock.clone(),
        rng: rng.clone(),
        config_name: c.name.clone(),
        nodes: opts.nodes,
        namespace_prefix: prefix.clone(),
        server_pid: opts.server_pid,
        prometheus: opts.prometheus.clone(),
        informers: Default::default(),
    };
    let phases = Arc::new(PhaseCtx {
        cluster: cluster.clone(),
        clock: clock.clone(),
        rng: rng.clone(),
        renderer: Arc::new(Renderer::new(rng.clone(), &compiled.dir)),
        mapping,
        dir: compiled.dir.clone(),
        prefix: prefix.clone(),
        state: Mutex::new(Default::default()),
    });
    let in_flight = crate::tuning::in_flight_limit();
    let sets: BTreeMap<String, Arc<TuningSet>> = c
        .tuning_sets
        .iter()
        .map(|t| {
            let set = TuningSet::new(t.load.clone()).sharing(in_flight.clone());
            (t.name.clone(), Arc::new(set))
        })
        .collect();
    let manager = Manager::new();
    let ns_names: Vec<String> = (1..=c.namespace.number)
        .map(|i| format!("{prefix}-{i}"))
        .collect();
    (opts.progress)(&format!(
        "creating {} namespaces {prefix}-*",
        ns_names.len()
    ));
    match create_namespaces(&*cluster, &ns_names, c.namespace.enable_existing_namespaces).await {
        Ok(()) => {
            let total = c.steps.len();
            for (i, step) in c.steps.iter().enumerate() {
                let name = step_name(i, step);
                (opts.progress)(&format!("[{}/{total}] {}", i + 1, step_name_only(step)));
                let s0 = clock.instant();
                let (mut sr, critical) = if step.measurements.is_empty() {
                    (run_phases(&phases, step, &sets, opts).await, false)
                } else {
                    run_measurements(&ctx, &manager, step, &mut report).await
                };
                sr.name = name;
                sr.duration = clock.instant().duration_since(s0);
                for e in &sr.errors {
                    tracing::error!(step = %sr.name, "{e}");
                }
                for m in &sr.measurements {
                    if let Some(e) = &m.error {
                        tracing::error!(step = %sr.name, measurement = %m.identifier, "{e}");
                    }
                }
                report.steps.push(sr);
                if critical {
                    report
                        .errors
                        .push("a critical measurement failed: the test stopped".into());
                    break;
                }
            }
        }
        Err(e) => report.errors.push(e),
    }
    manager.dispose();
    if c.namespace.delete_automanaged_namespaces {
        (opts.progress)("deleting namespaces");
        if let Err(e) = delete_namespaces(
            &*cluster,
            &clock,
            &ns_names,
            c.namespace.delete_namespace_timeout,
        )
        .await
        {
            report.errors.push(e);
        }
    }
    report.duration = clock.instant().duration_since(t0);
    Outcome { report, compiled }
}

fn step_name_only(step: &Step) -> &str {
    if step.name.is_empty() {
        "[autogenerated, please name your step in the test config]"
    } else {
        &step.name
    }
}

/// `[step: NN] <name>`, as upstream names steps in reports.
fn step_name(i: usize, step: &Step) -> String {
    format!("[step: {:02}] {}", i + 1, step_name_only(step))
}

async fn run_phases(
    phases: &Arc<PhaseCtx>,
    step: &Step,
    sets: &BTreeMap<String, Arc<TuningSet>>,
    opts: &RunOptions,
) -> StepReport {
    let runs = step.phases.iter().map(|p| {
        let set = sets.get(&p.tuning_set).cloned();
        let progress = opts.progress.clone();
        let name = step_name_only(step).to_string();
        async move {
            let Some(set) = set else {
                return vec![format!("tuningset {:?} not found", p.tuning_set)];
            };
            let report = move |done: usize, total: usize| {
                // Every action on small phases, one in a hundred on big ones.
                if total < 100 || done.is_multiple_of((total / 100).max(1)) || done == total {
                    progress(&format!("{name}: {done}/{total} actions"));
                }
            };
            phases.run(p, &set, &report).await
        }
    });
    let errors = join_all(runs).await.into_iter().flatten().collect();
    StepReport {
        errors,
        ..Default::default()
    }
}

/// Runs a measurement step; true when a critical failure must stop the test.
async fn run_measurements(
    ctx: &Ctx,
    manager: &Manager,
    step: &Step,
    report: &mut TestReport,
) -> (StepReport, bool) {
    let calls: Vec<(&MeasurementSpec, String, Map<String, Value>)> = step
        .measurements
        .iter()
        .flat_map(|m| {
            if m.instances.is_empty() {
                vec![(m, m.identifier.clone(), m.params.clone())]
            } else {
                m.instances
                    .iter()
                    .map(|(id, p)| {
                        let mut params = m.params.clone();
                        params.extend(p.clone());
                        (m, id.clone(), params)
                    })
                    .collect()
            }
        })
        .collect();
    let results = join_all(
        calls
            .iter()
            .map(|(m, id, params)| manager.execute(ctx, &m.method, id, params)),
    )
    .await;
    let mut sr = StepReport::default();
    let mut critical = false;
    for ((m, id, params), res) in calls.iter().zip(results) {
        let action = params
            .get("action")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut out = MeasurementOutcome {
            method: m.method.clone(),
            identifier: id.clone(),
            action,
            ..Default::default()
        };
        match res {
            Ok(summaries) => report.summaries.extend(summaries),
            Err(e) if e.kind == ErrorKind::Skipped => {
                tracing::info!("{} {}: skipped: {}", m.method, id, e.message);
                out.skipped = Some(e.message.clone());
                report.summaries.extend(e.summaries);
            }
            Err(e) if e.kind == ErrorKind::Partial => {
                tracing::info!("{} {}: {}", m.method, id, e.message);
                out.note = Some(e.message.clone());
                report.summaries.extend(e.summaries);
            }
            Err(e) => {
                critical |= e.kind == ErrorKind::Critical;
                out.violation = e.kind == ErrorKind::Violation;
                out.error = Some(e.message.clone());
                report.summaries.extend(e.summaries);
            }
        }
        sr.measurements.push(out);
    }
    (sr, critical)
}

async fn create_namespaces(
    cluster: &dyn Cluster,
    names: &[String],
    enable_existing: bool,
) -> Result<(), String> {
    let api = cluster.api();
    for n in names {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
        match api.create(&namespaces(), "", ns, &WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.code == 409 && enable_existing => {}
            Err(e) if e.code == 409 => {
                return Err(format!(
                    "pre-existing automanaged namespace {n:?} found (set namespace.enableExistingNamespaces to use it)"
                ))
            }
            Err(e) => return Err(format!("cannot create namespace {n}: {}", e.message)),
        }
    }
    Ok(())
}

async fn delete_namespaces(
    cluster: &dyn Cluster,
    clock: &Clock,
    names: &[String],
    timeout: Duration,
) -> Result<(), String> {
    let api = cluster.api();
    for n in names {
        match api
            .delete(&namespaces(), "", n, &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(format!("cannot delete namespace {n}: {}", e.message)),
        }
    }
    let deadline = clock.instant() + timeout;
    for n in names {
        loop {
            match api.get(&namespaces(), "", n).await {
                Err(e) if e.code == 404 => break,
                _ if clock.instant() >= deadline => {
                    return Err(format!(
                        "namespace {n} was not deleted within {}s",
                        timeout.as_secs()
                    ))
                }
                _ => clock.sleep(Duration::from_millis(500)).await,
            }
        }
    }
    Ok(())
}
