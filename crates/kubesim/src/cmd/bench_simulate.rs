//! `kubesim bench simulate`: `--jobs` jobs (a synthetic trace, or copies
//! of a real one) through the whole control plane in virtual time, timed
//! on the wall clock.

use kubesim_runtime::{Clock, Rng};
use kubesim_sim::engine::{simulate, Setup, SimJob};
use kubesim_sim::workload::{self, ReadOptions, SwfOptions};
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

/// The cpus of every benchmark node; SWF jobs are capped at it.
const NODE_CPUS: u32 = 16;

/// `n` jobs from copies of `file`, each copy arriving after the one before
/// it (shifted by the trace's span plus a second), ids made unique by the
/// copy's number.
fn repeated(file: &std::path::Path, n: usize) -> anyhow::Result<Vec<SimJob>> {
    let opts = ReadOptions {
        swf: SwfOptions {
            max_procs: Some(NODE_CPUS),
            normalise_to: None,
        },
        ..ReadOptions::default()
    };
    let (one, _) = workload::read_file(file, "w0", &opts).map_err(|e| anyhow::anyhow!(e))?;
    if one.is_empty() {
        anyhow::bail!("{} holds no job kubesim can run", file.display());
    }
    let span = one.iter().map(|j| j.submit).fold(0.0, f64::max) + 1.0;
    Ok((0..)
        .flat_map(|copy| {
            one.iter().map(move |j| SimJob {
                id: format!("{copy}-{}", j.id),
                submit: j.submit + span * copy as f64,
                ..j.clone()
            })
        })
        .take(n)
        .collect())
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let jobs = match &args.trace {
        Some(file) => repeated(file, args.jobs)?,
        None => trace(args.jobs, &Rng::seeded(7)),
    };
    let n = jobs.len();
    let nodes = cluster::nodes(
        &cluster::uniform(args.nodes as u32, &NODE_CPUS.to_string(), "64Gi")
            .map_err(|e| anyhow::anyhow!(e))?,
    );
    let mut setup = Setup::new(nodes);
    setup.terminated_pod_gc_threshold = args.terminated_pod_gc_threshold;
    let wall = Clock::wall();
    let (t0, cpu0) = (wall.instant(), cpu_seconds("self"));
    let run = simulate(setup, jobs)?;
    let secs = (wall.instant() - t0).as_secs_f64();
    let cpu = cpu_seconds("self") - cpu0;
    let s = Summary::of(&run);
    println!(
        "simulate: {n} jobs on {} nodes of {NODE_CPUS} cpus: {:.0} s ({:.1} days) simulated in {secs:.2} s of wall time ({:.0}x real time, {:.0} jobs/s), CPU {cpu:.1} s",
        args.nodes,
        run.simulated,
        run.simulated / 86400.0,
        run.simulated / secs.max(1e-9),
        n as f64 / secs.max(1e-9)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_of_a_trace_follow_one_another_with_their_own_ids() {
        let path = std::env::temp_dir().join(format!("bench-trace-{}.swf", std::process::id()));
        // Two jobs, at 0 s and 100 s; the second asks for more processors
        // than a node has.
        std::fs::write(
            &path,
            "; MaxProcs: 64\n\
             1 0 0 10 1 -1 -1 1 10 -1 1 1 1 1 1 1 -1 -1\n\
             2 100 0 20 64 -1 -1 64 20 -1 1 1 1 1 1 1 -1 -1\n",
        )
        .unwrap();
        let jobs = repeated(&path, 5).unwrap();
        std::fs::remove_file(&path).unwrap();
        let got: Vec<(String, f64, u64)> = jobs
            .iter()
            .map(|j| (j.id.clone(), j.submit, j.cpu_millis))
            .collect();
        assert_eq!(
            got,
            vec![
                ("0-1".into(), 0.0, 1000),
                ("0-2".into(), 100.0, 16_000),
                ("1-1".into(), 101.0, 1000),
                ("1-2".into(), 201.0, 16_000),
                ("2-1".into(), 202.0, 1000),
            ]
        );
    }
}
