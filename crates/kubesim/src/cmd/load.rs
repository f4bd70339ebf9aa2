//! `kubesim load`: ClusterLoader2 test configs against an in-process
//! kubesim cluster or any cluster a kubeconfig names.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use kubesim_load::cluster::Remote;
use kubesim_load::config::Validation;
use kubesim_load::runner::{self, RunOptions};
use kubesim_runtime::remote::RemoteApi;
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef};
use serde_json::Value;

#[path = "load_find_max.rs"]
mod find_max;
#[path = "load_prometheus.rs"]
mod prometheus;

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// The test config (a ClusterLoader2 config.yaml, unmodified).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Override files: flat YAML maps of template parameters, later files
    /// winning; `CL2_*` environment variables are parameters too.
    #[arg(long = "testoverrides", value_name = "FILE")]
    pub overrides: Vec<PathBuf>,
    /// Drive the cluster this kubeconfig names instead of starting one.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// `{{.Nodes}}`; for the in-process cluster also the number of
    /// emulated nodes. Default: 100 in process, else the cluster's
    /// schedulable untainted nodes.
    #[arg(long)]
    pub nodes: Option<u64>,
    /// Where the report files go.
    #[arg(long, value_name = "DIR")]
    pub report_dir: PathBuf,
    /// Unknown keys in the config: Strict (refuse), Warn or Ignore (what
    /// ClusterLoader2 itself does).
    #[arg(long, default_value = "Strict")]
    pub validation: Validation,
    /// Seed of the random choices (namespace prefix, randomized loads,
    /// RandData).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Check and render the config, print it and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Run the test again with growing values of one parameter (such as
    /// `CL2_LOAD_TEST_THROUGHPUT=10..50`) and report the highest at which
    /// every SLO holds, each run's report in `<report-dir>/<NAME>=<value>`
    /// and the SLO margins against the parameter in
    /// `<report-dir>/summary.html`. STEP defaults to a quarter of the range.
    #[arg(
        long,
        value_name = "NAME=START..END[:STEP]",
        conflicts_with = "dry_run"
    )]
    pub find_max: Option<String>,
    /// Run a Prometheus server (the `prometheus` executable on PATH) that
    /// scrapes the in-process cluster's `/metrics` and its emulated
    /// kubelets, for the measurements that are PromQL queries; its
    /// configuration, log and TSDB are kept in the report directory.
    #[arg(long, conflicts_with = "dry_run")]
    pub prometheus: bool,
}

const DEFAULT_IN_PROCESS_NODES: u64 = 100;

pub fn run(args: LoadArgs) -> anyhow::Result<()> {
    if let Some(spec) = &args.find_max {
        return find_max::run(&args, spec);
    }
    let rt = runtime(args.kubeconfig.is_some())?;
    rt.block_on(load(args))
}

/// The runtime a load test runs on. The runner alone (against a cluster
/// named by `--kubeconfig`) runs on one thread: its actions are small and
/// mostly wait, and on a multi-threaded runtime most of its CPU went to
/// threads waking each other. `kubesim bench load` at 5,000 pods and 500
/// actions/s: 21.7 % of the test's CPU with worker threads, 17.3 % on
/// one (medians of three alternating runs, docs/performance.md). An in-process cluster
/// needs the worker threads for itself.
pub(crate) fn runtime(runner_alone: bool) -> std::io::Result<tokio::runtime::Runtime> {
    let mut b = if runner_alone {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    b.enable_all().build()
}

fn options(args: &LoadArgs, nodes: i64, server_pid: Option<u32>) -> RunOptions {
    let tty = std::io::stderr().is_terminal();
    RunOptions {
        config: args.config.clone(),
        overrides: args.overrides.clone(),
        env: std::env::vars().collect(),
        nodes,
        validation: args.validation,
        seed: args.seed,
        server_pid,
        prometheus: None,
        progress: Arc::new(move |line: &str| {
            if tty {
                eprint!("\r\x1b[2K{line}");
            } else {
                tracing::info!("{line}");
            }
        }),
    }
}

async fn load(args: LoadArgs) -> anyhow::Result<()> {
    if args.dry_run {
        let opts = options(
            &args,
            args.nodes.unwrap_or(DEFAULT_IN_PROCESS_NODES) as i64,
            None,
        );
        print!("{}", runner::prepare(&opts)?.compiled.rendered);
        return Ok(());
    }
    if args.prometheus && args.kubeconfig.is_some() {
        anyhow::bail!(
            "--prometheus runs only with the in-process cluster: scraping the control plane \
             of a cluster named by --kubeconfig is not supported"
        );
    }
    let clock = Clock::wall();
    // The config is compiled (and a bad one refused) before any object is
    // created: for an in-process cluster before it is even started.
    let (remote, mut opts, prepared, server) = match &args.kubeconfig {
        Some(kc) => {
            let remote = RemoteApi::from_kubeconfig(Some(kc))
                .await
                .map_err(|e| anyhow!("{e}"))?;
            let nodes = match args.nodes {
                Some(n) => n as i64,
                None => schedulable_nodes(&remote).await?,
            };
            let opts = options(&args, nodes, None);
            let prepared = runner::prepare(&opts)?;
            (remote, opts, prepared, None)
        }
        None => {
            let n = args.nodes.unwrap_or(DEFAULT_IN_PROCESS_NODES);
            let opts = options(&args, n as i64, Some(std::process::id()));
            let prepared = runner::prepare(&opts)?;
            let (remote, server) = in_process(n, args.seed, &clock).await?;
            (remote, opts, prepared, Some(server))
        }
    };
    let prom = match (&server, args.prometheus) {
        (Some(s), true) => {
            let p = prometheus::start(&remote, &s.address, &args.report_dir, &clock).await?;
            opts.prometheus = Some(Arc::new(p.client.clone()));
            Some(p)
        }
        _ => None,
    };
    let cluster = Arc::new(Remote(Arc::new(remote)));
    let outcome = runner::execute(cluster, clock, &opts, prepared).await;
    if std::io::stderr().is_terminal() {
        eprintln!();
    }
    // A server that does not stop cleanly costs at most its last
    // samples: the report is written either way, and the test's verdict
    // does not change.
    if let Some(p) = prom {
        let tsdb = p.tsdb.clone();
        match p.stop().await {
            Ok(()) => eprintln!(
                "kubesim: Prometheus stopped; its data is in {}",
                tsdb.display()
            ),
            Err(e) => eprintln!("kubesim: warning: {e}; its data is in {}", tsdb.display()),
        }
    }
    kubesim_load::report::write::write_all(
        &args.report_dir,
        &outcome.report,
        &outcome.compiled.rendered,
    )
    .with_context(|| format!("cannot write the report to {}", args.report_dir.display()))?;
    let r = &outcome.report;
    let failures = r.failures();
    println!(
        "{}: {} steps in {:.1}s, {} failure(s), {} measurement call(s) skipped; report in {}",
        r.config_name,
        r.steps.len(),
        r.duration.as_secs_f64(),
        failures,
        r.skipped(),
        args.report_dir.display()
    );
    for s in &r.steps {
        for e in &s.errors {
            println!("  {}: {e}", s.name);
        }
        for m in &s.measurements {
            if let Some(why) = &m.skipped {
                println!("  {} {}: skipped: {why}", s.name, m.identifier);
            }
        }
        for m in s.measurements.iter().filter(|m| m.error.is_some()) {
            println!(
                "  {} {}: {}",
                s.name,
                m.identifier,
                m.error.as_deref().unwrap_or_default()
            );
        }
    }
    for e in &r.errors {
        println!("  {e}");
    }
    if failures > 0 {
        anyhow::bail!("the test failed ({failures} failure(s))");
    }
    Ok(())
}

/// A kubesim cluster in this process with `nodes` emulated nodes, served
/// on a loopback port and reached over HTTP like any other cluster, so
/// its `/metrics` see every request the test makes.
async fn in_process(
    nodes: u64,
    seed: u64,
    clock: &Clock,
) -> anyhow::Result<(RemoteApi, InProcess)> {
    let dir = std::env::temp_dir().join(format!("kubesim-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let up = super::up::UpArgs {
        listen: "127.0.0.1:0".parse()?,
        data_dir: dir.clone(),
        ephemeral: true,
        seed,
        tls: false,
        scheduler_config: None,
        pool: super::emulation::NodePoolArgs {
            nodes,
            node_template: None,
            stages: Vec::new(),
        },
        terminated_pod_gc_threshold: kubesim_controllers::podgc::DEFAULT_THRESHOLD,
        emulator: super::up::EmulatorChoice::Builtin,
        scheduler: super::simulate_serve::SchedulerChoice::Builtin,
        controllers: "*".into(),
        authorization_mode: super::up::AuthorizationMode::Rbac,
        anonymous_auth: true,
        protection: Default::default(),
    };
    let started = super::up::start(&up).await?;
    std::fs::create_dir_all(&dir)?;
    let kc = dir.join("kubeconfig");
    std::fs::write(&kc, &started.kubeconfig)
        .with_context(|| format!("cannot write {}", kc.display()))?;
    let address = started.listener.local_addr()?.to_string();
    let router = kubesim_apiserver::http::router(started.app);
    let listener = started.listener;
    let components = started.components;
    let server = tokio::spawn(async move {
        // The components run as long as the server does.
        let _components = components;
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "the in-process API server stopped");
        }
    });
    let remote = RemoteApi::from_kubeconfig(Some(&kc))
        .await
        .map_err(|e| anyhow!("{e}"))?;
    std::fs::remove_dir_all(&dir).ok();
    eprintln!(
        "kubesim: started an in-process cluster at {}; waiting for {nodes} nodes",
        started.url
    );
    wait_nodes_ready(&remote, nodes, clock).await?;
    Ok((
        remote,
        InProcess {
            _task: server,
            address,
        },
    ))
}

/// The HTTP server of the in-process cluster, serving while kept.
struct InProcess {
    _task: tokio::task::JoinHandle<()>,
    /// `127.0.0.1:<port>`.
    address: String,
}

fn ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

async fn wait_nodes_ready(api: &RemoteApi, want: u64, clock: &Clock) -> anyhow::Result<()> {
    let deadline = clock.instant() + Duration::from_secs(300);
    loop {
        let list = api
            .list(&ResourceRef::core("nodes"), "", &ListOptions::default())
            .await
            .map_err(|e| anyhow!("cannot list nodes: {}", e.message))?;
        let n = items(&list).filter(|n| ready(n)).count() as u64;
        if n >= want {
            return Ok(());
        }
        if clock.instant() >= deadline {
            anyhow::bail!("only {n} of {want} emulated nodes became Ready");
        }
        clock.sleep(Duration::from_millis(200)).await;
    }
}

fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.get("items")
        .and_then(Value::as_array)
        .map(|a| a.iter())
        .into_iter()
        .flatten()
}

/// ClusterLoader2's default `.Nodes`: schedulable nodes without taints.
async fn schedulable_nodes(api: &RemoteApi) -> anyhow::Result<i64> {
    let list = api
        .list(&ResourceRef::core("nodes"), "", &ListOptions::default())
        .await
        .map_err(|e| anyhow!("cannot list nodes: {}", e.message))?;
    Ok(items(&list)
        .filter(|n| {
            n.pointer("/spec/unschedulable").and_then(Value::as_bool) != Some(true)
                && n.pointer("/spec/taints")
                    .and_then(Value::as_array)
                    .is_none_or(|t| t.is_empty())
        })
        .count() as i64)
}
