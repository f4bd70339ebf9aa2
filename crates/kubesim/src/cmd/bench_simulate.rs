//! `kubesim bench simulate`: a synthetic trace of `--jobs` jobs through
//! the whole control plane in virtual time, timed on the wall clock.

use kubesim_runtime::{Clock, Rng};
use kubesim_sim::engine::{simulate, Setup, SimJob};
use kubesim_sim::{cluster, output::summary::Summary};

use super::bench::{cpu_seconds, status_kib, BenchArgs};

/// A trace with a steady load: arrivals every 1–20 s, runs of 1 minute to
/// 2 hours, 1–4 cpus each, all drawn from the seeded generator.
fn trace(n: usize, rng: &Rng) -> Vec<SimJob> {
    let mut t = 0.0;
    (0..n)
        .map(|i| {
            t += 1.0 + rng.below(20) as f64;
            SimJob {
                id: i.to_string(),
                workload: "w0".into(),
                profile: "delay".into(),
                submit: t,
                res: 1,
                walltime: None,
                run_time: 60.0 + rng.below(7140) as f64,
                cpu_millis: 1000 * (1 + rng.below(4)),
                memory_bytes: 0,
                scheduler: None,
                manifest: None,
            }
        })
        .collect()
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let jobs = trace(args.jobs, &Rng::seeded(7));
    let nodes = cluster::nodes(
        &cluster::uniform(args.nodes as u32, "16", "64Gi").map_err(|e| anyhow::anyhow!(e))?,
    );
    let setup = Setup::new(nodes);
    let wall = Clock::wall();
    let (t0, cpu0) = (wall.instant(), cpu_seconds("self"));
    let run = simulate(setup, jobs)?;
    let secs = (wall.instant() - t0).as_secs_f64();
    let cpu = cpu_seconds("self") - cpu0;
    let s = Summary::of(&run);
    println!(
        "simulate: {} jobs on {} nodes of 16 cpus: {:.0} s ({:.1} days) simulated in {secs:.2} s of wall time ({:.0}x real time, {:.0} jobs/s), CPU {cpu:.1} s",
        args.jobs,
        args.nodes,
        run.simulated,
        run.simulated / 86400.0,
        run.simulated / secs.max(1e-9),
        args.jobs as f64 / secs.max(1e-9)
    );
    println!(
        "  makespan {:.0} s, mean waiting {:.1} s, utilisation {:.1} %, {} finished, peak RSS {} MiB",
        s.makespan,
        s.mean_waiting,
        s.utilisation * 100.0,
        s.nb_finished,
        status_kib("self", "VmHWM:") / 1024
    );
    Ok(())
}
