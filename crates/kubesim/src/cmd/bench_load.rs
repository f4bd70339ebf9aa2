//! `kubesim bench load`: how fast the load-test runner generates work.
//! A `kubesim up` child serves the API (so the two processes' CPU is
//! counted apart); this process runs a two-phase test (create `--pods`
//! pods at `--qps`, then delete them at the same rate), or the
//! ClusterLoader2 config given with `--config`, through the runner over
//! HTTP, and reports the rates reached, the runner's CPU cost per action
//! and its share of the test's CPU (runner and server).

use std::sync::Arc;

use anyhow::{anyhow, Context};
use kubesim_load::cluster::Remote;
use kubesim_load::runner::{self, RunOptions};
use kubesim_runtime::remote::RemoteApi;
use kubesim_runtime::Clock;

use super::bench::{cpu_seconds, start_server, BenchArgs};

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{.Name}}\n  labels:\n    group: bench\nspec:\n  containers:\n  - name: pause\n    image: {{.ImageRegistry}}/pause:3.9\n";

fn config(pods: usize, qps: f64) -> String {
    let phase = |replicas: usize| {
        format!(
            "  phases:\n  - namespaceRange:\n      min: 1\n      max: 1\n    replicasPerNamespace: {replicas}\n    tuningSet: Uniform\n    objectBundle:\n    - basename: pod\n      objectTemplatePath: pod.yaml\n"
        )
    };
    format!(
        "name: bench-load\nnamespace:\n  number: 1\ntuningSets:\n- name: Uniform\n  qpsLoad:\n    qps: {qps}\nsteps:\n- name: create\n{}- name: delete\n{}",
        phase(pods),
        phase(0)
    )
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    // The runner runs as `kubesim load --kubeconfig` runs it.
    let rt = super::load::runtime(true)?;
    rt.block_on(bench(args))
}

async fn bench(args: &BenchArgs) -> anyhow::Result<()> {
    let clock = Clock::wall();
    let nodes = args.nodes.to_string();
    let (child, port) = start_server(&clock, &["--nodes", &nodes]).await?;
    let dir = std::env::temp_dir().join(format!("kubesim-bench-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let (config_path, env) = match &args.config {
        Some(path) => (path.clone(), std::env::vars().collect()),
        None => {
            std::fs::write(dir.join("config.yaml"), config(args.pods, args.qps))?;
            std::fs::write(dir.join("pod.yaml"), POD)?;
            (dir.join("config.yaml"), Vec::new())
        }
    };
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        super::up::kubeconfig(&format!("http://127.0.0.1:{port}")),
    )?;
    let remote = RemoteApi::from_kubeconfig(Some(&kc))
        .await
        .map_err(|e| anyhow!("{e}"))?;
    let server_pid = child.child.id().to_string();
    let (runner0, server0) = (cpu_seconds("self"), cpu_seconds(&server_pid));
    let outcome = runner::run(
        Arc::new(Remote(Arc::new(remote))),
        clock,
        RunOptions {
            config: config_path,
            overrides: Vec::new(),
            env,
            nodes: args.nodes as i64,
            validation: Default::default(),
            seed: 0,
            server_pid: None,
            prometheus: None,
            progress: Arc::new(|_| {}),
        },
    )
    .await
    .context("the benchmark config did not compile")?;
    let (runner_cpu, server_cpu) = (
        cpu_seconds("self") - runner0,
        cpu_seconds(&server_pid) - server0,
    );
    std::fs::remove_dir_all(&dir).ok();
    let r = &outcome.report;
    if r.failures() > 0 {
        let errs: Vec<String> = r
            .steps
            .iter()
            .flat_map(|s| s.errors.clone())
            .chain(r.errors.clone())
            .collect();
        anyhow::bail!("the benchmark run failed: {}", errs.join("; "));
    }
    // Per-step rates only where every step is `--pods` actions.
    let actions = args.config.is_none().then_some(2 * args.pods);
    match &args.config {
        Some(path) => println!("runner: {}, {} nodes", path.display(), args.nodes),
        None => println!(
            "runner: {} pods created and deleted at a target of {} actions/s, {} nodes",
            args.pods, args.qps, args.nodes
        ),
    }
    for s in &r.steps {
        let secs = s.duration.as_secs_f64();
        match actions {
            Some(_) => println!(
                "  {:<22} {:>8.2} s  {:>8.0} actions/s",
                s.name,
                secs,
                args.pods as f64 / secs.max(1e-9)
            ),
            None => println!("  {:<40} {:>8.2} s", s.name, secs),
        }
    }
    match actions {
        Some(actions) => println!(
            "  runner CPU {:.2} s = {:.0} µs per action ({:.0} actions/s per core); server CPU {:.2} s",
            runner_cpu,
            runner_cpu * 1e6 / actions as f64,
            actions as f64 / runner_cpu.max(1e-9),
            server_cpu
        ),
        None => println!("  runner CPU {runner_cpu:.2} s; server CPU {server_cpu:.2} s"),
    }
    // The budget: the runner at most 10 % of the test's CPU, the rest
    // being the cluster's (here the server with its components).
    println!(
        "  runner share of the test's CPU: {:.1} %",
        100.0 * runner_cpu / (runner_cpu + server_cpu).max(1e-9)
    );
    drop(child);
    Ok(())
}
