//! `kubesim bench simulate`: `--jobs` jobs (a synthetic trace, or copies
//! of a real one) through the whole control plane in virtual time, timed
//! on the wall clock.

use kubesim_runtime::{Clock, Rng};
use kubesim_sim::engine::{simulate, Setup, SimJob};
use kubesim_sim::workload::synth::{self, Arrival, Dist, Rate};
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
                hosts: 1,
                cpu_millis: 1000 * (1 + rng.below(4)),
                memory_bytes: 0,
                scheduler: None,
                manifest: None,
                work: None,
            }
        })
        .collect()
}

/// The cpus of every benchmark node; SWF jobs are capped at it.
const NODE_CPUS: u32 = 16;

/// How traces are read: SWF processors capped at a node's cpus.
fn trace_options() -> ReadOptions {
    ReadOptions {
        swf: SwfOptions {
            max_procs: Some(NODE_CPUS),
            normalise_to: None,
        },
        ..ReadOptions::default()
    }
}

/// `n` jobs from copies of the workload `file` (any format `simulate`
/// reads).
fn repeated(file: &std::path::Path, n: usize) -> anyhow::Result<Vec<SimJob>> {
    let (one, _) =
        workload::read_file(file, "w0", &trace_options()).map_err(|e| anyhow::anyhow!(e))?;
    copies(one, &file.display().to_string(), n)
}

/// `n` jobs from copies of `one`, each copy arriving after the one before
/// it (shifted by its span plus a second), ids made unique by the copy's
/// number; errors name `what`.
fn copies(one: Vec<SimJob>, what: &str, n: usize) -> anyhow::Result<Vec<SimJob>> {
    if one.is_empty() {
        anyhow::bail!("{what} holds no job kubesim can run");
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

/// The real traces of the family, built into the binary so that the
/// family runs the same from any directory (testdata/SOURCE.md has their
/// origin).
const KTH: &[u8] = include_bytes!("../../../../testdata/workloads/swf/KTH-SP2-1996-2.1-cln.swf.gz");
const NASA: &[u8] =
    include_bytes!("../../../../testdata/workloads/swf/NASA-iPSC-1993-3.1-cln.swf.gz");

/// One member of the benchmark family: where its jobs come from and the
/// cluster they are offered to.
struct Member {
    name: &'static str,
    nodes: u32,
    node_cpu: u32,
    memory: &'static str,
    source: Source,
}

/// Where a member's jobs come from.
enum Source {
    /// A synthetic workload (its options hold the number of jobs).
    Synthetic(synth::Options),
    /// `jobs` jobs of copies of a gzipped SWF trace, as `--trace`.
    Trace { gz: &'static [u8], jobs: usize },
}

impl Source {
    /// The member's jobs; errors name `name`.
    fn jobs(&self, name: &str) -> anyhow::Result<Vec<SimJob>> {
        let err = |e: String| anyhow::anyhow!("{name}: {e}");
        match self {
            // The workload's JSON is dropped before the run: about 1 KiB
            // a job (20 MiB at 20,000 jobs under a heap profiler) that a
            // user's run, which reads a file, does not hold either.
            Source::Synthetic(opts) => {
                let w = synth::generate(opts).map_err(err)?;
                let (jobs, _) =
                    workload::batsim::read(&w.to_string(), "w0", &ReadOptions::default())
                        .map_err(err)?;
                Ok(jobs)
            }
            Source::Trace { gz, jobs } => {
                let text = workload::text_of(gz.to_vec(), name).map_err(err)?;
                let (one, _) = workload::swf::read(&text, "w0", &trace_options()).map_err(err)?;
                copies(one, name, *jobs)
            }
        }
    }
}

/// The family: each synthetic member changes one thing from the base
/// (Poisson arrivals at 80 % load, log-normal run times around 10 minutes,
/// 1–8 cores, 1,000 nodes of 32 cores); the two real traces run as
/// `--trace` runs them, on 1,000 nodes of 16 cores.
fn family(jobs: usize) -> Vec<Member> {
    let base = synth::Options {
        jobs,
        arrival: Arrival::Poisson,
        rate: Rate::Load {
            factor: 0.8,
            cluster_cores: 32_000.0,
        },
        run_time: Dist::LogNormal {
            median: 600.0,
            sigma: 1.5,
        },
        run_time_bounds: (10.0, 21_600.0),
        size: Dist::Uniform(1.0, 8.0),
        seed: 1,
    };
    let with = |name, f: &dyn Fn(&mut synth::Options)| {
        let mut opts = base.clone();
        f(&mut opts);
        Member {
            name,
            nodes: 1000,
            node_cpu: 32,
            memory: "256Gi",
            source: Source::Synthetic(opts),
        }
    };
    let trace = |name, gz| Member {
        name,
        nodes: 1000,
        node_cpu: NODE_CPUS,
        memory: "64Gi",
        source: Source::Trace { gz, jobs },
    };
    let mut big = with("10,000 nodes", &|o| {
        o.rate = Rate::Load {
            factor: 0.8,
            cluster_cores: 320_000.0,
        }
    });
    big.nodes = 10_000;
    vec![
        with("base", &|_| {}),
        with("light load (20 %)", &|o| {
            o.rate = Rate::Load {
                factor: 0.2,
                cluster_cores: 32_000.0,
            }
        }),
        with("saturated (150 %)", &|o| {
            o.rate = Rate::Load {
                factor: 1.5,
                cluster_cores: 32_000.0,
            }
        }),
        with("short jobs (10-60 s)", &|o| {
            o.run_time = Dist::Uniform(10.0, 60.0)
        }),
        with("long jobs (median 3 h)", &|o| {
            o.run_time = Dist::LogNormal {
                median: 10_800.0,
                sigma: 0.5,
            }
        }),
        with("narrow pods (1 core)", &|o| o.size = Dist::Fixed(1.0)),
        with("wide pods (16-32 cores)", &|o| {
            o.size = Dist::Pow2(16.0, 32.0)
        }),
        big,
        trace("KTH SP2 trace", KTH),
        trace("NASA iPSC trace", NASA),
    ]
}

/// Simulates `jobs` on `nodes` identical nodes; the run, and the wall and
/// CPU seconds it took.
fn timed(
    args: &BenchArgs,
    nodes: u32,
    cpu: u32,
    memory: &str,
    jobs: Vec<SimJob>,
) -> anyhow::Result<(kubesim_sim::engine::Run, f64, f64)> {
    let nodes = cluster::nodes(
        &cluster::uniform(nodes, &cpu.to_string(), memory).map_err(|e| anyhow::anyhow!(e))?,
    );
    let mut setup = Setup::new(nodes);
    setup.terminated_pod_gc_threshold = args.terminated_pod_gc_threshold;
    let wall = Clock::wall();
    let (t0, cpu0) = (wall.instant(), cpu_seconds("self"));
    let run = simulate(setup, jobs)?;
    let secs = (wall.instant() - t0).as_secs_f64();
    Ok((run, secs, cpu_seconds("self") - cpu0))
}

fn run_family(args: &BenchArgs) -> anyhow::Result<()> {
    if let Some(i) = args.member_index {
        let m = family(args.jobs)
            .into_iter()
            .nth(i)
            .ok_or_else(|| anyhow::anyhow!("no member {i} in the family"))?;
        return run_member(args, m);
    }
    let chosen: Vec<usize> = family(args.jobs)
        .iter()
        .enumerate()
        .filter(|(_, m)| args.member.as_deref().is_none_or(|t| m.name.contains(t)))
        .map(|(i, _)| i)
        .collect();
    // Each member in a process of its own: one run in the process of
    // another ran up to 1.8 times slower (the KTH member at 10,000 jobs,
    // 12.0-13.7 s after the others against 7.3 s alone), and its peak RSS
    // was the allocator's high-water mark from the members before, not its
    // own.
    if args.runs > 1 || args.against.is_some() {
        let row = |i: usize, exe: &std::path::Path| {
            let text = member_row(args, i, exe)?;
            text.lines()
                .find_map(super::bench_family_runs::Row::parse)
                .ok_or_else(|| anyhow::anyhow!("member {i} printed no row: {text}"))
        };
        return super::bench_family_runs::run(
            args.jobs,
            &chosen,
            args.runs,
            args.against.as_deref(),
            &row,
        );
    }
    println!("simulate --family: {} jobs per member", args.jobs);
    println!("{}", super::bench_family_runs::HEADER);
    let exe = std::env::current_exe()?;
    for i in chosen {
        print!("{}", member_row(args, i, &exe)?);
    }
    Ok(())
}

/// Member `i`'s row of the table, from a child process of `exe` (this
/// binary, or the one `--against` names) running it alone.
fn member_row(args: &BenchArgs, i: usize, exe: &std::path::Path) -> anyhow::Result<String> {
    let out = std::process::Command::new(exe)
        .args(["bench", "simulate", "--family", "--member-index"])
        .arg(i.to_string())
        .arg("--jobs")
        .arg(args.jobs.to_string())
        .arg("--terminated-pod-gc-threshold")
        .arg(args.terminated_pod_gc_threshold.to_string())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", exe.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        anyhow::bail!("member {i} of the family failed ({})", out.status);
    }
    // The child prints the machine first, then its row.
    Ok(text
        .lines()
        .filter(|l| l.starts_with("| "))
        .map(|l| format!("{l}\n"))
        .collect())
}

/// Runs one member in this process and prints its row.
fn run_member(args: &BenchArgs, m: Member) -> anyhow::Result<()> {
    let jobs = m.source.jobs(m.name)?;
    let (run, secs, cpu) = timed(args, m.nodes, m.node_cpu, m.memory, jobs)?;
    let s = Summary::of(&run);
    println!(
        "| {} | {} | {secs:.2} | {cpu:.1} | {:.0} | {:.1} | {:.1} % | {} |",
        m.name,
        m.nodes,
        secs * 1e6 / args.jobs.max(1) as f64,
        run.simulated / 86400.0,
        s.utilisation * 100.0,
        status_kib("self", "VmHWM:") / 1024
    );
    Ok(())
}

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    if args.family {
        return run_family(args);
    }
    let jobs = match &args.trace {
        Some(file) => repeated(file, args.jobs)?,
        None => trace(args.jobs, &Rng::seeded(7)),
    };
    let n = jobs.len();
    let (run, secs, cpu) = timed(args, args.nodes as u32, NODE_CPUS, "64Gi", jobs)?;
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
    fn the_family_runs_both_real_traces_past_their_length() {
        let fam = family(60_000);
        for name in ["KTH SP2 trace", "NASA iPSC trace"] {
            let m = fam.iter().find(|m| m.name == name).expect(name);
            let jobs = m.source.jobs(m.name).unwrap();
            assert_eq!(jobs.len(), 60_000, "{name}");
            let one = jobs.iter().take_while(|j| j.id.starts_with("0-")).count();
            assert!((10_000..30_000).contains(&one), "{name}: {one} jobs a copy");
            // The second copy starts after the first, its ids apart.
            assert!(jobs[one].id.starts_with("1-"), "{name}: {}", jobs[one].id);
            assert!(jobs[one].submit > jobs[one - 1].submit, "{name}");
            assert!(jobs.iter().all(|j| j.cpu_millis <= 1000 * NODE_CPUS as u64));
        }
    }

    #[test]
    fn a_batsim_workload_repeats_as_a_trace_does() {
        let path = std::env::temp_dir().join(format!("bench-trace-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"nb_res": 4, "jobs": [{"id": "a", "subtime": 5, "res": 1, "profile": "p"}],
                "profiles": {"p": {"type": "delay", "delay": 10}}}"#,
        )
        .unwrap();
        let jobs = repeated(&path, 3).unwrap();
        std::fs::remove_file(&path).unwrap();
        let got: Vec<(String, f64)> = jobs.iter().map(|j| (j.id.clone(), j.submit)).collect();
        assert_eq!(
            got,
            vec![
                ("0-a".into(), 5.0),
                ("1-a".into(), 11.0),
                ("2-a".into(), 17.0)
            ]
        );
    }

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
