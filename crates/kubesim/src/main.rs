//! The kubesim command line: `up`, `emulate`, `simulate`, `load`,
//! `scenario` and `bench`, wiring the library crates together.
//!
//! The binary owns argument parsing, the wiring of components, the
//! allocator and the one-line error at exit. It must never hold behaviour
//! a library should own: what a mode does lives in the crates it calls,
//! so that tests and other front ends reach the same code. Flags are
//! added, never renamed.

mod client;
mod cmd;

use clap::{Parser, Subcommand};

// Nearly all of kubesim's work is building and dropping small JSON trees
// (every object is parsed, patched and serialized on each write). jemalloc
// makes that markedly cheaper than the system allocator while keeping the
// stored bytes as compact (docs/decisions/jemalloc.md has the measurements).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// jemalloc's options, read once at its start (the `_RJEM_MALLOC_CONF`
// environment variable still overrides them). Each thread keeps up to 1,024
// freed objects of a small size for its next allocations instead of about
// 200: a write frees a whole tree of small maps and strings and the next
// one builds another, and with the smaller cache, refilling it from the
// arena and flushing it back took about 4 % of a simulation's time
// (docs/decisions/jemalloc.md).
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &[u8; 52] = b"lg_tcache_nslots_mul:3,tcache_nslots_small_max:1024\0";

/// A Kubernetes cluster emulator and simulator.
#[derive(Parser)]
#[command(name = "kubesim", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a cluster: serve the Kubernetes API on an embedded store.
    ///
    /// Example: kubesim up --listen 127.0.0.1:6443 --data-dir ./.kubesim
    ///
    /// Beside a real kube-scheduler and kube-controller-manager:
    /// kubesim up --nodes 100 --scheduler none --controllers none
    Up(cmd::up::UpArgs),
    /// Act as the kubelets of emulated nodes in any cluster a kubeconfig
    /// names, alone or as one shard of several.
    ///
    /// Example: kubesim emulate --kubeconfig ~/.kube/config --nodes 1000 --shard 0/2
    Emulate(cmd::emulate::EmulateArgs),
    /// Measure kubesim (the figures in docs/performance.md).
    ///
    /// Example: kubesim bench api --pods 20000 --clients 64
    Bench(cmd::bench::BenchArgs),
    /// Start Apate's planned emulation (tasks fire at their timestamps from
    /// the start) or show when it started.
    ///
    /// Example: kubesim scenario start --kubeconfig ./.kubesim/kubeconfig
    Scenario(cmd::scenario::ScenarioArgs),
    /// Replay workloads (Batsim JSON, SWF, manifests) through the control
    /// plane in simulated time; write Batsim-compatible results.
    ///
    /// Example: kubesim simulate --workload jobs.json --nodes 16 --out ./sim
    Simulate(cmd::simulate::SimulateArgs),
    /// Run a ClusterLoader2 test config (unmodified) against an in-process
    /// cluster or the one a kubeconfig names; write ClusterLoader2's report
    /// files and a summary.html.
    ///
    /// Example: kubesim load --config testing/load/config.yaml --nodes 100 --report-dir ./report
    Load(cmd::load::LoadArgs),
    /// Make workloads: synthetic Batsim JSON for what-if studies and
    /// benchmarks.
    ///
    /// Example: kubesim workload synth --jobs 10000 --load 0.8 --seed 1 --out w.json
    Workload(cmd::workload::WorkloadArgs),
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Up(a) => cmd::up::run(a),
        Command::Emulate(a) => cmd::emulate::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::Scenario(a) => cmd::scenario::run(a),
        Command::Simulate(a) => cmd::simulate::run(a),
        Command::Load(a) => cmd::load::run(a),
        Command::Workload(a) => cmd::workload::run(a),
    };
    if let Err(e) = result {
        eprintln!("kubesim: {e:#}");
        std::process::exit(1);
    }
}
