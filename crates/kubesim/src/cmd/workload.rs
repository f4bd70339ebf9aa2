//! `kubesim workload synth`: synthetic Batsim workloads.

use std::path::PathBuf;

use anyhow::Context;
use kubesim_sim::workload::synth::{self, Arrival, Dist, Rate};

#[derive(clap::Args, Debug)]
pub struct WorkloadArgs {
    #[command(subcommand)]
    pub command: WorkloadCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum WorkloadCommand {
    /// Write a synthetic Batsim workload (JSON, v4 delay profiles).
    ///
    /// Example: kubesim workload synth --jobs 10000 --load 0.8 --nodes 1000 --node-cpu 32
    /// --run-time lognormal:600,1.5 --size uniform:1,8 --seed 1 --out w.json
    Synth(SynthArgs),
}

#[derive(clap::Args, Debug)]
pub struct SynthArgs {
    /// How many jobs.
    #[arg(long)]
    pub jobs: usize,
    /// The arrival process: poisson, uniform (equal gaps) or burst (all at 0).
    #[arg(long, default_value = "poisson")]
    pub arrival: String,
    /// Offered load against the cluster (--nodes × --node-cpu): 1.0 asks
    /// for every core over the arrivals' span. Excludes --mean-gap.
    #[arg(long, conflicts_with = "mean_gap")]
    pub load: Option<f64>,
    /// Mean seconds between arrivals. Excludes --load.
    #[arg(long)]
    pub mean_gap: Option<f64>,
    /// Nodes of the cluster the load is offered to.
    #[arg(long, default_value_t = 1000)]
    pub nodes: u32,
    /// Cores per node of that cluster.
    #[arg(long, default_value_t = 32.0)]
    pub node_cpu: f64,
    /// Run time in seconds: fixed:X, uniform:A,B, lognormal:MEDIAN,SIGMA.
    #[arg(long, default_value = "lognormal:600,1.5")]
    pub run_time: String,
    /// Shortest run time kept, in seconds.
    #[arg(long, default_value_t = 10.0)]
    pub min_run_time: f64,
    /// Longest run time kept, in seconds.
    #[arg(long, default_value_t = 21600.0)]
    pub max_run_time: f64,
    /// Cores per job (Batsim res): fixed:X, uniform:A,B or pow2:A,B.
    #[arg(long, default_value = "uniform:1,8")]
    pub size: String,
    /// Seed of every draw.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write the workload.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: WorkloadArgs) -> anyhow::Result<()> {
    match args.command {
        WorkloadCommand::Synth(a) => synth_cmd(a),
    }
}

fn synth_cmd(a: SynthArgs) -> anyhow::Result<()> {
    let arrival = match a.arrival.as_str() {
        "poisson" => Arrival::Poisson,
        "uniform" => Arrival::Uniform,
        "burst" => Arrival::Burst,
        other => anyhow::bail!("--arrival {other:?}: want poisson, uniform or burst"),
    };
    let rate = match (a.load, a.mean_gap) {
        (Some(factor), None) => Rate::Load {
            factor,
            cluster_cores: f64::from(a.nodes) * a.node_cpu,
        },
        (None, Some(g)) => Rate::MeanGap(g),
        (None, None) => Rate::Load {
            factor: 0.8,
            cluster_cores: f64::from(a.nodes) * a.node_cpu,
        },
        (Some(_), Some(_)) => anyhow::bail!("give --load or --mean-gap, not both"),
    };
    let opts = synth::Options {
        jobs: a.jobs,
        arrival,
        rate,
        run_time: Dist::parse(&a.run_time).map_err(|e| anyhow::anyhow!("--run-time {e}"))?,
        run_time_bounds: (a.min_run_time, a.max_run_time),
        size: Dist::parse(&a.size).map_err(|e| anyhow::anyhow!("--size {e}"))?,
        seed: a.seed,
    };
    let w = synth::generate(&opts).map_err(|e| anyhow::anyhow!("{e}"))?;
    let text = serde_json::to_string(&w)?;
    std::fs::write(&a.out, text + "\n")
        .with_context(|| format!("cannot write {}", a.out.display()))?;
    let span = w["jobs"]
        .as_array()
        .and_then(|j| j.last())
        .and_then(|j| j["subtime"].as_f64())
        .unwrap_or(0.0);
    println!(
        "{} jobs over {span:.0} s of arrivals, {} run times; wrote {}",
        a.jobs,
        w["profiles"].as_object().map_or(0, |p| p.len()),
        a.out.display()
    );
    Ok(())
}
