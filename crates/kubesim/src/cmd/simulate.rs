//! `kubesim simulate`: replay workloads through the control plane in
//! virtual time and write Batsim-compatible results and a report.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use kubesim_runtime::Clock;
use kubesim_sim::engine::{simulate, FinalState, Setup, SimJob};
use kubesim_sim::routes::Platform;
use kubesim_sim::workload::{self, ReadOptions, SwfOptions};
use kubesim_sim::{cluster, output};
use parking_lot::Mutex;

#[derive(clap::Args, Debug)]
pub struct SimulateArgs {
    /// A workload: Batsim JSON, an SWF trace (optionally gzipped) or
    /// Kubernetes manifests with `kubesim.io/arrival` annotations.
    /// Repeatable; the first is workload w0, the next w1, ...
    #[arg(long = "workload", value_name = "FILE", required = true)]
    pub workloads: Vec<PathBuf>,
    /// The cluster: a YAML file of node groups
    /// (`nodeGroups: [{name, count, cpu, memory, pods, labels, taints}]`)
    /// or a Batsim (SimGrid) platform XML.
    #[arg(long, value_name = "FILE", conflicts_with = "nodes")]
    pub cluster: Option<PathBuf>,
    /// N identical nodes instead of a cluster file.
    #[arg(long)]
    pub nodes: Option<u32>,
    /// Cpu of each of the `--nodes`.
    #[arg(long, default_value = "1")]
    pub node_cpu: String,
    /// Memory of each of the `--nodes`.
    #[arg(long, default_value = "4Gi")]
    pub node_memory: String,
    /// A KubeSchedulerConfiguration for the scheduler.
    #[arg(long, value_name = "FILE")]
    pub scheduler_config: Option<PathBuf>,
    /// Seeds every random choice; the same inputs and seed give the same
    /// outputs, byte for byte.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where the results go (jobs.csv, schedule.csv, gantt.svg, report.html).
    #[arg(long, default_value = "./simulation")]
    pub out: PathBuf,
    /// Stop at this simulated time (a duration such as 24h), even with jobs
    /// left.
    #[arg(long)]
    pub until: Option<String>,
    /// Cpu per requested resource (Batsim `res`, SWF processors) where the
    /// workload gives no cpu of its own.
    #[arg(long, default_value = "1")]
    pub cpu_per_resource: String,
    /// SWF: cap each job's processors at this many.
    #[arg(long)]
    pub swf_max_procs: Option<u32>,
    /// SWF: scale processors so the trace's MaxProcs becomes this many.
    #[arg(long)]
    pub swf_normalise: Option<u32>,
    /// kwok Stage files for the emulated kubelets instead of the built-in
    /// set (e.g. kwok's general pod stages, for realistic start-up
    /// delays); jobs still finish after their run time. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub stages: Vec<PathBuf>,
    /// Terminated pods kept before the pod garbage collector deletes the
    /// oldest, as kube-controller-manager's flag of the same name (0 keeps
    /// them all: faster, with memory growing with the jobs).
    #[arg(long, default_value_t = kubesim_controllers::podgc::DEFAULT_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,
    /// The controllers to run, with kube-controller-manager's names and
    /// syntax: `*` (those on by default), `name`, `-name`, or `none`; for
    /// example `*,-job-controller` to let a real controller manager run
    /// the Jobs.
    #[arg(long, value_name = "LIST", default_value = "*")]
    pub controllers: String,
    #[command(flatten)]
    pub serve: super::simulate_serve::ServeArgs,
}

/// The cluster's nodes, and the SimGrid platform they come from, if any.
type ReadCluster = (Vec<serde_json::Value>, Option<Arc<Platform>>);

fn read_cluster(args: &SimulateArgs) -> anyhow::Result<ReadCluster> {
    let (groups, xml) = match (&args.cluster, args.nodes) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let xml =
                path.extension().is_some_and(|e| e == "xml") || text.trim_start().starts_with('<');
            let r = if xml {
                cluster::from_platform_xml(&text)
            } else {
                cluster::from_yaml(&text)
            };
            let groups = r.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            (groups, xml.then_some((text, path)))
        }
        (None, Some(n)) => (
            cluster::uniform(n, &args.node_cpu, &args.node_memory)
                .map_err(|e| anyhow::anyhow!("{e}"))?,
            None,
        ),
        (None, None) => bail!("give the cluster: --cluster FILE or --nodes N"),
    };
    let nodes = cluster::nodes(&groups);
    let platform = match xml {
        Some((text, path)) => {
            let names: Vec<String> = nodes
                .iter()
                .map(|n| kubesim_core::meta::name(n).to_string())
                .collect();
            let p = Platform::from_xml(&text, &names)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            Some(Arc::new(p))
        }
        None => None,
    };
    Ok((nodes, platform))
}

/// The jobs of every workload; `host_speed`, `host_cpu_millis` and
/// `network` are the speed, cpu and cluster links the platform's compute
/// hosts share, if any (parallel tasks run for work over the speed and
/// transfers over the links; jobs needing more than one host's cpu run on
/// several hosts).
fn read_jobs(
    args: &SimulateArgs,
    host_speed: Option<f64>,
    host_cpu_millis: Option<u64>,
    network: Option<cluster::Network>,
    platform: Option<Arc<Platform>>,
) -> anyhow::Result<Vec<SimJob>> {
    let cpu = workload::cpu_millis(&serde_json::Value::String(args.cpu_per_resource.clone()))
        .map_err(|e| anyhow::anyhow!("bad --cpu-per-resource: {e}"))?;
    let opts = ReadOptions {
        cpu_per_resource_millis: cpu,
        swf: SwfOptions {
            max_procs: args.swf_max_procs,
            normalise_to: args.swf_normalise,
        },
        host_speed,
        host_cpu_millis,
        network,
        platform,
        ..Default::default()
    };
    let mut jobs = Vec::new();
    for (i, path) in args.workloads.iter().enumerate() {
        let (mut js, skipped) = workload::read_file(path, &format!("w{i}"), &opts)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        if skipped.unknown > 0 {
            eprintln!(
                "{}: skipped {} jobs with an unknown run time or size",
                path.display(),
                skipped.unknown
            );
        }
        for (kind, n) in &skipped.unsupported {
            eprintln!(
                "{}: skipped {n} jobs of profile type {kind}: it cannot run as a pod",
                path.display()
            );
        }
        jobs.append(&mut js);
    }
    if jobs.is_empty() {
        bail!("the workloads hold no jobs");
    }
    Ok(jobs)
}

/// A progress bar on stderr, redrawn when the percentage changes.
fn progress_bar() -> Box<dyn Fn(usize, usize) + Send + Sync> {
    let last = Arc::new(Mutex::new(usize::MAX));
    Box::new(move |done, all| {
        let pct = done * 100 / all.max(1);
        let mut l = last.lock();
        if *l == pct {
            return;
        }
        *l = pct;
        let filled = pct / 4;
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r[{}{}] {pct:3}% {done}/{all} jobs",
            "#".repeat(filled),
            ".".repeat(25 - filled)
        );
        if done == all {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    })
}

pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let (nodes, platform) = read_cluster(&args)?;
    let jobs = read_jobs(
        &args,
        cluster::common_speed(&nodes),
        cluster::common_cpu_millis(&nodes),
        cluster::common_network(&nodes),
        platform.clone(),
    )?;
    let scheduler = match &args.scheduler_config {
        Some(p) => kubesim_scheduler::SchedulerConfig::from_file(p)
            .map_err(|e| anyhow::anyhow!("bad --scheduler-config: {e}"))?,
        None => Default::default(),
    };
    let until = match &args.until {
        Some(u) => Some(
            kubesim_gocompat::duration::parse_std(u)
                .map_err(|e| anyhow::anyhow!("bad --until: {e}"))?,
        ),
        None => None,
    };
    let controllers = kubesim_controllers::Controllers::parse(&args.controllers)
        .map_err(|e| anyhow::anyhow!("bad --controllers: {e}"))?;
    let builtin_scheduler = args.serve.builtin_scheduler();
    let stages = super::emulation::read_stages(&args.stages)?;
    let serve = args.serve.prepare(&args.out)?;
    let setup = Setup {
        nodes,
        scheduler,
        seed: args.seed,
        until,
        epoch: "2026-01-01T00:00:00Z"
            .parse()
            .expect("a valid constant time"),
        progress: std::io::stderr().is_terminal().then(progress_bar),
        stages,
        builtin_scheduler,
        serve,
        terminated_pod_gc_threshold: args.terminated_pod_gc_threshold,
        controllers,
        store: None,
        platform,
    };
    let n_jobs = jobs.len();
    let wall = Clock::wall();
    let t0 = wall.instant();
    let run = simulate(setup, jobs)?;
    let wall_seconds = (wall.instant() - t0).as_secs_f64();
    output::write_all(&args.out, &run)
        .with_context(|| format!("cannot write results to {}", args.out.display()))?;
    let s = output::summary::Summary::of(&run);
    let nothing_ran = run.nothing_ran(builtin_scheduler);
    if nothing_ran.is_some() {
        // No makespan or waiting time: the zeros of a run that started
        // nothing would read as a perfect schedule.
        println!(
            "{n_jobs} jobs on {} nodes: none started; simulated {:.0} s in {wall_seconds:.2} s of wall time",
            run.nodes.len(),
            run.simulated,
        );
    } else {
        println!(
            "{n_jobs} jobs on {} nodes: makespan {:.1} s, mean waiting {:.1} s, {} finished, {} rejected; \
             simulated {:.0} s in {wall_seconds:.2} s of wall time ({:.0}x)",
            run.nodes.len(),
            s.makespan,
            s.mean_waiting,
            s.nb_finished,
            s.nb_rejected,
            run.simulated,
            run.simulated / wall_seconds.max(1e-9)
        );
    }
    if s.nb_unfinished > 0 {
        let (mut waiting, mut running, mut later) = (0, 0, 0);
        for o in &run.outcomes {
            match (o.state, o.submitted, o.start) {
                (FinalState::NotFinished, None, _) => later += 1,
                (FinalState::NotFinished, Some(_), None) => waiting += 1,
                (FinalState::NotFinished, Some(_), Some(_)) => running += 1,
                _ => {}
            }
        }
        println!(
            "{} jobs did not finish: {waiting} waiting for a node, {running} running, \
             {later} not submitted yet",
            s.nb_unfinished
        );
    }
    if let Some(l) = run.lockstep {
        if !l.connected && !builtin_scheduler {
            println!("no client watched pods within --serve-timeout; the jobs started without one");
        }
        if l.timeouts > 0 {
            println!(
                "simulated time moved on {} times after --serve-timeout without the clients settling",
                l.timeouts
            );
        }
    }
    println!("results in {}", args.out.display());
    if let Some(why) = nothing_ran {
        bail!("{why}");
    }
    Ok(())
}
