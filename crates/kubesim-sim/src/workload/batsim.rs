//! Batsim JSON workloads: v4 profiles (`delay`, with Batkube's `cpu`,
//! `memory` and `scheduler` extensions) and v5 (`DelayProfile`).
//!
//! A job runs as a pod for its profile's run time:
//! - a delay runs for its delay;
//! - a sequence (`composed`, `SequentialCompositionProfile`) runs its
//!   profiles one after the other, `repeat` times;
//! - a parallel task (`parallel`, `parallel_homogeneous`,
//!   `parallel_homogeneous_total` and Batsim 5's `ParallelTask*Profile`)
//!   runs for the longer of its computation and its transfers, plus one
//!   route's latency (even when computation is the longer, as in
//!   SimGrid). On hosts that share one speed and all belong to one
//!   SimGrid `<cluster>` (`ReadOptions::host_speed`, `::network`) every
//!   placement takes the same time, fixed here: each host's private link
//!   carries, each way apart, what the host sends to the others and what
//!   it receives from them; the backbone, if any, carries every transfer
//!   between two hosts; a resource's time is its bytes over its
//!   bandwidth; the latency is a route's: the sender's link, the
//!   backbone, the receiver's link. What a host sends itself costs
//!   nothing. On any other platform (`ReadOptions::platform`) the time is
//!   decided at placement ([`super::work`], [`crate::routes`]).
//!
//! Anything else (a parallel task without a platform, or MPI traces)
//! is counted by type and skipped, never run with a guess.
//!
//! A job's pod requests its profile's `cpu` and `memory` when the profile
//! is a delay carrying them (Batkube's extension); otherwise `res` times
//! the cpu per resource, and the memory per job. A job of the latter kind
//! whose `res` needs more cpu than one host has, on a platform whose
//! compute hosts share one size (`ReadOptions::host_cpu_millis`), runs as
//! Batsim runs it: on `res` hosts, one pod per host asking for the whole
//! host, the pods scheduled all together (a PodGroup of `res`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::work::{Phase, Work};
use super::{cpu_millis, memory_bytes, ReadOptions, Skipped};
use crate::engine::SimJob;

#[derive(Deserialize)]
struct File {
    jobs: Vec<RawJob>,
    #[serde(default)]
    profiles: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct RawJob {
    id: Value,
    subtime: f64,
    #[serde(default)]
    walltime: Option<f64>,
    #[serde(default = "one")]
    res: u32,
    profile: String,
}

fn one() -> u32 {
    1
}

/// Reads a Batsim workload; `workload` names it in the outputs (`w0`).
/// Jobs whose profile cannot run as a pod are counted in `Skipped` by
/// profile type, not dropped silently.
pub fn read(
    text: &str,
    workload: &str,
    opts: &ReadOptions,
) -> Result<(Vec<SimJob>, Skipped), String> {
    let f: File = serde_json::from_str(text).map_err(|e| format!("not a Batsim workload: {e}"))?;
    let mut jobs = Vec::with_capacity(f.jobs.len());
    let mut skipped = Skipped::default();
    for j in f.jobs {
        let id = match &j.id {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => return Err(format!("job id {other} is neither a string nor a number")),
        };
        let p = f
            .profiles
            .get(&j.profile)
            .ok_or_else(|| format!("job {id}: no profile {:?}", j.profile))?;
        let alike = UniformHosts {
            speed: opts.host_speed,
            network: opts.network,
        };
        // Batkube's `cpu` and `memory` size the pod of a delay profile; in
        // the other types `cpu` is work in flops, not a request.
        let batkube_sized = matches!(
            p.get("type").and_then(Value::as_str),
            Some("delay" | "DelayProfile")
        );
        let sized = |key: &str| p.get(key).filter(|_| batkube_sized);
        let (cpu, hosts) = match sized("cpu") {
            Some(v) => (cpu_millis(v).map_err(|e| format!("job {id}: cpu: {e}"))?, 1),
            None => {
                // Batsim's resources are hosts: a job too large for one
                // runs on `res` of them.
                let all = opts.cpu_per_resource_millis.saturating_mul(j.res as u64);
                super::spread(all, opts.host_cpu_millis, |_| j.res)
            }
        };
        let timed = steps(&f.profiles, &j.profile, j.res, 0).and_then(|steps| {
            match uniform_time(&steps, &alike) {
                Ok(t) => Ok((t, None)),
                // On hosts that are not alike, the time is the placement's.
                Err(Timing::Unsupported(why)) => match &opts.platform {
                    Some(hosts_of) => {
                        let work = Work { steps };
                        match work.untimeable(hosts, hosts_of) {
                            None => Ok((0.0, Some(std::sync::Arc::new(work)))),
                            Some(reason) => Err(Timing::Unsupported(format!(
                                "{} ({reason})",
                                p.get("type").and_then(Value::as_str).unwrap_or("")
                            ))),
                        }
                    }
                    None => Err(Timing::Unsupported(why)),
                },
                Err(e) => Err(e),
            }
        });
        let (delay, work) = match timed {
            Ok(t) => t,
            Err(Timing::Unsupported(kind)) => {
                *skipped.unsupported.entry(kind).or_default() += 1;
                continue;
            }
            Err(Timing::Broken(why)) => return Err(format!("job {id}: {why}")),
        };
        if !(j.subtime.is_finite() && j.subtime >= 0.0 && delay.is_finite() && delay >= 0.0) {
            return Err(format!("job {id}: times must be finite and not negative"));
        }
        if j.walltime.is_some_and(|w| !w.is_finite() || w < 0.0) {
            return Err(format!("job {id}: bad walltime"));
        }
        let memory = match sized("memory") {
            Some(v) => memory_bytes(v).map_err(|e| format!("job {id}: memory: {e}"))?,
            None => opts.memory_per_job_bytes,
        };
        jobs.push(SimJob {
            id,
            workload: workload.to_string(),
            profile: j.profile.clone(),
            submit: j.subtime,
            res: j.res,
            walltime: j.walltime.filter(|w| *w > 0.0),
            run_time: delay,
            hosts,
            cpu_millis: cpu,
            memory_bytes: memory,
            scheduler: p.get("scheduler").and_then(Value::as_str).map(String::from),
            manifest: None,
            work,
        });
    }
    Ok((jobs, skipped))
}

/// Why a profile has no run time here.
enum Timing {
    /// Its type (and what makes it unsupported) cannot be run as a pod.
    Unsupported(String),
    /// It is not a valid profile.
    Broken(String),
}

/// Nested sequences deeper than this are refused (a loop of names).
const MAX_NESTING: usize = 16;

/// What parallel tasks run on: the hosts' common speed (flops per second)
/// and links.
struct UniformHosts {
    speed: Option<f64>,
    network: Option<crate::cluster::Network>,
}

/// Seconds of transfer for `com`, an n-by-n matrix of bytes (row: sender),
/// on `net`, and the latency to add; zeros when nothing crosses a link.
fn transfer_time(net: &crate::cluster::Network, com: &[f64], n: usize) -> (f64, f64) {
    let mut up = vec![0.0; n];
    let mut down = vec![0.0; n];
    let mut total = 0.0;
    for i in 0..n {
        for j in 0..n {
            let b = com[i * n + j];
            if i != j && b > 0.0 {
                up[i] += b;
                down[j] += b;
                total += b;
            }
        }
    }
    if total == 0.0 {
        return (0.0, 0.0);
    }
    let link = up.iter().chain(down.iter()).fold(0.0f64, |m, b| m.max(*b)) / net.link_bandwidth;
    let (backbone, bb_latency) = match net.backbone {
        Some((bw, lat)) => (total / bw, lat),
        None => (0.0, 0.0),
    };
    (link.max(backbone), 2.0 * net.link_latency + bb_latency)
}

/// The steps of profile `name` for a job on `res` hosts.
fn steps(
    profiles: &BTreeMap<String, Value>,
    name: &str,
    res: u32,
    depth: usize,
) -> Result<Vec<Phase>, Timing> {
    if depth > MAX_NESTING {
        return Err(Timing::Broken(format!(
            "profile {name:?} nests sequences deeper than {MAX_NESTING}"
        )));
    }
    let p = profiles
        .get(name)
        .ok_or_else(|| Timing::Broken(format!("no profile {name:?}")))?;
    let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
    let num = |key: &str| p.get(key).and_then(Value::as_f64);
    let nums = |key: &str| -> Option<Vec<f64>> {
        match p.get(key) {
            None => Some(Vec::new()),
            Some(Value::Array(a)) => a.iter().map(Value::as_f64).collect(),
            Some(v) => v.as_f64().map(|x| vec![x]),
        }
    };
    let scalar = |key: &str| -> Result<f64, Timing> {
        match p.get(key) {
            None => Ok(0.0),
            Some(v) => v
                .as_f64()
                .ok_or_else(|| Timing::Broken(format!("profile {name:?}: {key} is not a number"))),
        }
    };
    // A task, once its amounts are checked.
    let task = |cpu: Vec<f64>, com: Vec<f64>, n: usize| -> Result<Vec<Phase>, Timing> {
        if cpu.iter().chain(&com).any(|x| !x.is_finite() || *x < 0.0) {
            return Err(Timing::Broken(format!(
                "profile {name:?}: cpu and com must be finite and not negative"
            )));
        }
        let com = if com.iter().all(|x| *x == 0.0) {
            Vec::new()
        } else if com.len() != n * n {
            return Err(Timing::Broken(format!(
                "profile {name:?}: com has {} values for {n} hosts",
                com.len()
            )));
        } else {
            com
        };
        Ok(vec![Phase::Task {
            kind: kind.to_string(),
            cpu,
            com,
        }])
    };
    match kind {
        "delay" | "DelayProfile" => {
            let d = num("delay")
                .ok_or_else(|| Timing::Broken(format!("profile {name:?} has no delay")))?;
            Ok(vec![Phase::Delay(d)])
        }
        "composed" | "sequence" | "SequentialCompositionProfile" => {
            let repeat = p
                .get("repeat")
                .map_or(Some(1), Value::as_u64)
                .ok_or_else(|| {
                    Timing::Broken(format!("profile {name:?}: repeat is not a count"))
                })?;
            let seq = p
                .get("seq")
                .and_then(Value::as_array)
                .ok_or_else(|| Timing::Broken(format!("profile {name:?} has no seq")))?;
            let mut once = Vec::new();
            for sub in seq {
                let sub = sub.as_str().ok_or_else(|| {
                    Timing::Broken(format!("profile {name:?}: seq holds a non-name"))
                })?;
                once.extend(steps(profiles, sub, res, depth + 1)?);
            }
            Ok(vec![Phase::Repeat(repeat, once)])
        }
        "parallel_homogeneous"
        | "msg_par_hg"
        | "ParallelTaskHomogeneousProfile"
        | "parallel_homogeneous_total"
        | "msg_par_hg_tot"
        | "ParallelTaskHomogeneousTotalProfile" => {
            // Every host computes `cpu` and sends `com` to every other, or
            // (a total, or Batsim 5's DefinedAmountsSpreadUniformly) the
            // amounts are shared out evenly.
            let n = res.max(1) as usize;
            let spread = kind.contains("total")
                || kind.contains("Total")
                || p.get("generation_strategy").and_then(Value::as_str)
                    == Some("DefinedAmountsSpreadUniformly");
            let (cpu, com) = (scalar("cpu")?, scalar("com")?);
            let pairs = (n * (n - 1)) as f64;
            let (cpu, each) = if spread {
                (cpu / n as f64, if pairs > 0.0 { com / pairs } else { 0.0 })
            } else {
                (cpu, com)
            };
            let matrix: Vec<f64> = (0..n * n)
                .map(|k| if k / n == k % n { 0.0 } else { each })
                .collect();
            task(vec![cpu; n], matrix, n)
        }
        "parallel" | "msg_par" | "ParallelTaskProfile" => {
            let cpu = nums("cpu")
                .ok_or_else(|| Timing::Broken(format!("profile {name:?}: cpu is not numbers")))?;
            let com = nums("com")
                .ok_or_else(|| Timing::Broken(format!("profile {name:?}: com is not numbers")))?;
            // The hosts: one per cpu value, or, without cpu, the side of
            // the com matrix.
            let n = if cpu.is_empty() {
                ((com.len() as f64).sqrt().round() as usize).max(1)
            } else {
                cpu.len()
            };
            task(cpu, com, n)
        }
        other => Err(Timing::Unsupported(other.to_string())),
    }
}

/// The seconds `steps` take on hosts alike in speed and links, wherever
/// they are placed.
fn uniform_time(steps: &[Phase], hosts: &UniformHosts) -> Result<f64, Timing> {
    let mut t = 0.0;
    for s in steps {
        t += match s {
            Phase::Delay(d) => *d,
            Phase::Repeat(times, inner) => uniform_time(inner, hosts)? * *times as f64,
            Phase::Task { kind, cpu, com } => {
                let n = cpu.len().max((com.len() as f64).sqrt().round() as usize);
                let (network, latency) = if com.is_empty() {
                    (0.0, 0.0)
                } else {
                    match &hosts.network {
                        Some(net) => transfer_time(net, com, n),
                        None => return Err(Timing::Unsupported(format!(
                            "{kind} (with communication; needs a platform whose compute hosts form one <cluster> with links)"
                        ))),
                    }
                };
                let speed = hosts.speed.ok_or_else(|| {
                    Timing::Unsupported(format!(
                        "{kind} (needs a platform whose compute hosts share one speed)"
                    ))
                })?;
                (cpu.iter().copied().fold(0.0, f64::max) / speed).max(network) + latency
            }
        };
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_larger_than_a_host_run_on_several_hosts() {
        // (res, Batkube cpu in the profile, host cpu known) -> (hosts, cpu per pod)
        let table = [
            (4, None, Some(2000), (4, 2000)),
            (2, None, Some(2000), (1, 2000)),
            (1, None, Some(500), (1, 1000)),
            (4, Some("1"), Some(2000), (1, 1000)),
            (4, None, None, (1, 4000)),
        ];
        for (res, cpu, host, want) in table {
            let profile = match cpu {
                Some(c) => format!(r#"{{"type": "delay", "delay": 1, "cpu": "{c}"}}"#),
                None => r#"{"type": "delay", "delay": 1}"#.to_string(),
            };
            let text = format!(
                r#"{{"jobs": [{{"id": 1, "subtime": 0, "res": {res}, "profile": "p"}}], "profiles": {{"p": {profile}}}}}"#
            );
            let opts = ReadOptions {
                host_cpu_millis: host,
                ..Default::default()
            };
            let (jobs, _) = read(&text, "w0", &opts).unwrap();
            assert_eq!(
                (jobs[0].hosts, jobs[0].cpu_millis),
                want,
                "res {res} cpu {cpu:?} host {host:?}"
            );
            assert_eq!(jobs[0].res, res);
        }
    }

    #[test]
    fn v4_with_batkube_extensions_and_v5() {
        let v4 = r#"{"nb_res": 1, "jobs": [
            {"id": "1", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"},
            {"id": 2, "subtime": 3.5, "res": 2, "profile": "e"}],
          "profiles": {"d": {"type": "delay", "delay": 10, "cpu": "1500m", "memory": "1Gi", "scheduler": "default"},
                       "e": {"type": "delay", "delay": 20, "cpu": 3.516}}}"#;
        let (jobs, _) = read(v4, "w0", &ReadOptions::default()).unwrap();
        assert_eq!(jobs[0].cpu_millis, 1500);
        assert_eq!(jobs[0].memory_bytes, 1 << 30);
        assert_eq!(jobs[0].walltime, Some(100.0));
        assert_eq!(jobs[0].scheduler.as_deref(), Some("default"));
        assert_eq!(
            (jobs[1].id.as_str(), jobs[1].submit, jobs[1].res),
            ("2", 3.5, 2)
        );
        assert_eq!(jobs[1].cpu_millis, 3516);
        let v5 = r#"{"jobs": [{"id": 0, "subtime": 0, "res": 4, "profile": "p"}],
                    "profiles": {"p": {"type": "DelayProfile", "delay": 5}}}"#;
        let (jobs, _) = read(v5, "w1", &ReadOptions::default()).unwrap();
        // No cpu in the profile: one core per requested resource.
        assert_eq!(
            (
                jobs[0].cpu_millis,
                jobs[0].run_time,
                jobs[0].workload.as_str()
            ),
            (4000, 5.0, "w1")
        );
    }

    #[test]
    fn transfers_take_the_busiest_link_plus_a_routes_latency() {
        // 3 hosts of 1 Gf; links of 2 GB/s and 10 us, a backbone of
        // 4 GB/s and 2 us. Host 0 computes 1 s and sends 3 GB to each of
        // 1 and 2; 1 sends 1 GB to 2, and 5 GB to itself (free).
        // Host 0's link out carries 6 GB: 3 s; host 2's link in 4 GB: 2 s;
        // the backbone 7 GB: 1.75 s. 3 s, plus 10 + 2 + 10 us.
        let text = r#"{"jobs": [{"id": 0, "subtime": 0, "res": 3, "profile": "p"},
                               {"id": 1, "subtime": 0, "res": 3, "profile": "h"}],
            "profiles": {"p": {"type": "parallel", "cpu": [1e9, 0, 0],
                               "com": [0, 3e9, 3e9, 0, 5e9, 1e9, 0, 0, 0]},
                         "h": {"type": "parallel_homogeneous_total", "cpu": 0, "com": 12e9}}}"#;
        let opts = ReadOptions {
            host_speed: Some(1e9),
            network: Some(crate::cluster::Network {
                link_bandwidth: 2e9,
                link_latency: 10e-6,
                backbone: Some((4e9, 2e-6)),
            }),
            ..Default::default()
        };
        let (jobs, skipped) = read(text, "w0", &opts).unwrap();
        assert!(skipped.unsupported.is_empty(), "{skipped:?}");
        assert!(
            (jobs[0].run_time - 3.000022).abs() < 1e-12,
            "{}",
            jobs[0].run_time
        );
        // 12 GB shared by the 6 ordered pairs: 2 GB each; each link 4 GB
        // each way (2 s), the backbone 12 GB (3 s).
        assert!(
            (jobs[1].run_time - 3.000022).abs() < 1e-12,
            "{}",
            jobs[1].run_time
        );
    }

    #[test]
    fn unsupported_and_broken_inputs_say_why() {
        let par = r#"{"jobs": [{"id": 0, "subtime": 0, "res": 4, "profile": "p"},
                              {"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                     "profiles": {"p": {"type": "ParallelTaskProfile", "cpu": [1], "com": [1]},
                                  "d": {"type": "delay", "delay": 1}}}"#;
        let (jobs, skipped) = read(par, "w0", &ReadOptions::default()).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(
            skipped.unsupported.get(
                "ParallelTaskProfile (with communication; needs a platform whose compute hosts form one <cluster> with links)"
            ),
            Some(&1)
        );
        let msg = r#"{"jobs": [{"id": 0, "subtime": 0, "res": 1, "profile": "m"}],
                     "profiles": {"m": {"type": "smpi", "trace": "x"}}}"#;
        let (_, skipped) = read(msg, "w0", &ReadOptions::default()).unwrap();
        assert_eq!(skipped.unsupported.get("smpi"), Some(&1));
        let looped = r#"{"jobs": [{"id": 0, "subtime": 0, "res": 1, "profile": "a"}],
                     "profiles": {"a": {"type": "composed", "seq": ["a"]}}}"#;
        assert!(read(looped, "w0", &ReadOptions::default())
            .unwrap_err()
            .contains("nests sequences"));
        let missing =
            r#"{"jobs": [{"id": 0, "subtime": 0, "res": 1, "profile": "x"}], "profiles": {}}"#;
        assert!(read(missing, "w0", &ReadOptions::default())
            .unwrap_err()
            .contains("no profile"));
        assert!(read("[]", "w0", &ReadOptions::default()).is_err());
        let neg = r#"{"jobs": [{"id": 0, "subtime": -1, "res": 1, "profile": "p"}],
                     "profiles": {"p": {"type": "delay", "delay": 1}}}"#;
        assert!(read(neg, "w0", &ReadOptions::default()).is_err());
    }
}
