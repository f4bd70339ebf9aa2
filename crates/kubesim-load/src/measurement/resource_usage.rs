//! ResourceUsageSummary for the kubesim process itself: where
//! ClusterLoader2 meters control-plane containers through the kubelet,
//! kubesim's control plane is one process, sampled from `/proc` every 10 s
//! (ClusterLoader2's period for masters). The summary keeps ClusterLoader2's
//! shape with the single container `kubesim/kubesim`.
//!
//! Against a remote cluster there is no process to meter, and the
//! measurement is skipped as ClusterLoader2 skips providers that cannot
//! meter.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::time::Instant;

use super::{Ctx, Measurement, MeasurementError};
use crate::params::{self, Params};
use crate::report::Summary;

const NAME: &str = "ResourceUsageSummary";
const CONTAINER: &str = "kubesim/kubesim";
const PERIOD: Duration = Duration::from_secs(10);
const PERCENTILES: [u32; 4] = [50, 90, 99, 100];
/// The unit of `/proc/<pid>/stat` CPU times: USER_HZ, which Linux fixes at
/// 100 on every architecture it reports to user space.
const TICKS_PER_SECOND: f64 = 100.0;

#[derive(Default)]
pub struct ResourceUsage {
    sampler: Option<Sampler>,
    constraints: BTreeMap<String, Constraint>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Constraint {
    /// Cores; 0 means none.
    #[serde(rename = "cpuConstraint", default)]
    pub cpu: f64,
    /// Bytes; 0 means none.
    #[serde(rename = "memoryConstraint", default)]
    pub memory: u64,
}

struct Sampler {
    pid: u32,
    state: Arc<Mutex<Samples>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the sampler has seen: CPU use over each interval, memory at each
/// reading, and the last reading to measure the next interval from.
#[derive(Debug, Default)]
struct Samples {
    cpu: Vec<f64>,
    mem: Vec<u64>,
    last: Option<(Instant, u64)>,
}

impl Samples {
    fn record(&mut self, at: Instant, r: Reading) {
        if let Some((then, ticks)) = self.last {
            let secs = at.saturating_duration_since(then).as_secs_f64();
            if secs > 0.0 {
                let used = r.cpu_ticks.saturating_sub(ticks) as f64 / TICKS_PER_SECOND;
                self.cpu.push(used / secs);
            }
        }
        self.mem.push(r.rss_bytes);
        self.last = Some((at, r.cpu_ticks));
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    cpu_ticks: u64,
    rss_bytes: u64,
}

fn read(pid: u32) -> Result<Reading, String> {
    let stat_path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&stat_path).map_err(|e| format!("{stat_path}: {e}"))?;
    let status_path = format!("/proc/{pid}/status");
    let status =
        std::fs::read_to_string(&status_path).map_err(|e| format!("{status_path}: {e}"))?;
    Ok(Reading {
        cpu_ticks: cpu_ticks(&stat).ok_or_else(|| format!("{stat_path}: unexpected format"))?,
        rss_bytes: rss_bytes(&status).ok_or_else(|| format!("{status_path}: no VmRSS"))?,
    })
}

/// utime + stime (fields 14 and 15) of `/proc/<pid>/stat`. The command
/// name (field 2) may hold spaces and parentheses, so fields are counted
/// from its closing parenthesis.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// `VmRSS:   1234 kB` of `/proc/<pid>/status`, in bytes.
fn rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line["VmRSS:".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// ClusterLoader2's nearest rank: element `ceil(n * p / 100) - 1` of the
/// sorted samples.
fn nearest_rank<T: Copy + Default>(sorted: &[T], p: u32) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = (sorted.len() * p as usize).div_ceil(100);
    sorted[rank.saturating_sub(1).min(sorted.len() - 1)]
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct ContainerUsage {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "CPU")]
    cpu: f64,
    #[serde(rename = "Mem")]
    mem: u64,
}

fn summarize(s: &Samples) -> BTreeMap<String, Vec<ContainerUsage>> {
    let mut cpu = s.cpu.clone();
    cpu.sort_by(f64::total_cmp);
    let mut mem = s.mem.clone();
    mem.sort_unstable();
    PERCENTILES
        .iter()
        .map(|&p| {
            let usage = ContainerUsage {
                name: CONTAINER.into(),
                cpu: nearest_rank(&cpu, p),
                mem: nearest_rank(&mem, p),
            };
            (p.to_string(), vec![usage])
        })
        .collect()
}

/// The constraints file, a Go template rendered with `{{.Nodes}}`.
fn load_constraints(path: &str, nodes: i64) -> Result<BTreeMap<String, Constraint>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let tpl =
        kubesim_gocompat::template::Template::parse(&text).map_err(|e| format!("{path}: {e}"))?;
    let rendered = tpl
        .render(
            &json!({ "Nodes": nodes }),
            &kubesim_gocompat::template::NoFuncs,
        )
        .map_err(|e| format!("{path}: {e}"))?;
    if rendered.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    serde_saphyr::from_str(&rendered).map_err(|e| format!("{path}: {e}"))
}

/// The p99 figures over their constraints, as ClusterLoader2 words them.
fn violations(p99: &[ContainerUsage], constraints: &BTreeMap<String, Constraint>) -> Vec<String> {
    let mut out = Vec::new();
    for u in p99 {
        let container = u.name.split('/').nth(1).unwrap_or(&u.name);
        let Some(c) = constraints.get(container) else {
            continue;
        };
        if c.cpu > 0.0 && u.cpu > c.cpu {
            out.push(format!(
                "container {} is using {}/{} CPU",
                u.name, u.cpu, c.cpu
            ));
        }
        if c.memory > 0 && u.mem > c.memory {
            let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
            out.push(format!(
                "container {} is using {}/{} MB of memory",
                u.name,
                mib(u.mem),
                mib(c.memory)
            ));
        }
    }
    out
}

#[async_trait::async_trait]
impl Measurement for ResourceUsage {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => {
                if let Some(path) =
                    params::string(p, "resourceConstraints")?.filter(|s| !s.is_empty())
                {
                    self.constraints = load_constraints(&path, ctx.nodes).map_err(|e| {
                        MeasurementError::failed(format!(
                            "{NAME}: resource constraints reading error: {e}"
                        ))
                    })?;
                }
                self.start(ctx);
                Ok(Vec::new())
            }
            "gather" => self.gather(ctx),
            other => Err(MeasurementError::unknown_action(NAME, other)),
        }
    }
}

impl ResourceUsage {
    fn start(&mut self, ctx: &Ctx) {
        let Some(pid) = ctx.server_pid else {
            tracing::warn!(
                "{NAME}: the cluster is not a kubesim process of this run; nothing to meter, no summary"
            );
            return;
        };
        let first = match read(pid) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("{NAME}: cannot meter process {pid} ({e}); no summary");
                return;
            }
        };
        let state = Arc::new(Mutex::new(Samples::default()));
        state.lock().record(ctx.clock.instant(), first);
        let clock = ctx.clock.clone();
        let shared = state.clone();
        let task = tokio::spawn(async move {
            let mut every = clock.interval(PERIOD);
            every.tick().await; // the first tick is immediate: the start reading
            loop {
                every.tick().await;
                match read(pid) {
                    Ok(r) => shared.lock().record(clock.instant(), r),
                    // The process may be gone (stopped between steps): keep what
                    // was read, gather reports it.
                    Err(e) => tracing::debug!("{NAME}: {e}"),
                }
            }
        });
        self.sampler = Some(Sampler { pid, state, task });
    }

    fn gather(&mut self, ctx: &Ctx) -> Result<Vec<Summary>, MeasurementError> {
        let Some(sampler) = self.sampler.take() else {
            tracing::warn!("{NAME}: not started or nothing to meter; no summary");
            return Ok(Vec::new());
        };
        sampler.task.abort();
        // A last reading, so a run shorter than one period still has a CPU figure.
        if let Ok(r) = read(sampler.pid) {
            sampler.state.lock().record(ctx.clock.instant(), r);
        }
        let summary = summarize(&sampler.state.lock());
        let file = Summary::json(NAME, ctx.clock.now(), &summary);
        let bad = violations(
            summary.get("99").map_or(&[], Vec::as_slice),
            &self.constraints,
        );
        if bad.is_empty() {
            return Ok(vec![file]);
        }
        for v in &bad {
            tracing::error!("{NAME}: violation: {v}");
        }
        Err(MeasurementError::violation(
            format!(
                "resource constraints: {} constraints violated: [{}]",
                bad.len(),
                bad.join(" ")
            ),
            vec![file],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::ErrorKind;
    use serde_json::Value;

    #[test]
    fn reads_proc_formats() {
        let stat = "4242 (kube sim) (x)) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 8 0 100 0 0";
        assert_eq!(cpu_ticks(stat), Some(300));
        assert_eq!(cpu_ticks("garbage"), None);
        assert_eq!(cpu_ticks("1 (x) S 1 2"), None);
        let status = "Name:\tkubesim\nVmPeak:\t  9000 kB\nVmRSS:\t   2048 kB\nThreads: 9\n";
        assert_eq!(rss_bytes(status), Some(2048 * 1024));
        assert_eq!(rss_bytes("Name: x\n"), None);
    }

    #[test]
    fn reads_this_process() {
        let r = read(std::process::id()).expect("own /proc entry");
        assert!(r.rss_bytes > 0);
    }

    #[test]
    fn nearest_rank_matches_clusterloader() {
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(nearest_rank(&v, 50), 5);
        assert_eq!(nearest_rank(&v, 90), 9);
        assert_eq!(nearest_rank(&v, 99), 10);
        assert_eq!(nearest_rank(&v, 100), 10);
        assert_eq!(nearest_rank::<u64>(&[], 50), 0);
        assert_eq!(nearest_rank(&[7u64], 50), 7);
    }

    #[tokio::test(start_paused = true)]
    async fn cpu_is_cores_over_each_interval() {
        let t0 = kubesim_runtime::Clock::simulated(jiff::Timestamp::UNIX_EPOCH).instant();
        let mut s = Samples::default();
        s.record(
            t0,
            Reading {
                cpu_ticks: 100,
                rss_bytes: 10,
            },
        );
        s.record(
            t0 + PERIOD,
            Reading {
                cpu_ticks: 600,
                rss_bytes: 30,
            },
        );
        s.record(
            t0 + 2 * PERIOD,
            Reading {
                cpu_ticks: 700,
                rss_bytes: 20,
            },
        );
        assert_eq!(s.cpu, vec![0.5, 0.1]);
        let sum = summarize(&s);
        assert_eq!(sum.keys().collect::<Vec<_>>(), ["100", "50", "90", "99"]);
        assert_eq!(
            sum["50"],
            vec![ContainerUsage {
                name: CONTAINER.into(),
                cpu: 0.1,
                mem: 20
            }]
        );
        assert_eq!(sum["99"][0].cpu, 0.5);
        assert_eq!(sum["99"][0].mem, 30);
        let limits = BTreeMap::from([(
            "kubesim".to_string(),
            Constraint {
                cpu: 0.25,
                memory: 16,
            },
        )]);
        let v = violations(&sum["99"], &limits);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].contains("is using 0.5/0.25 CPU"));
        let none = BTreeMap::from([("kubesim".to_string(), Constraint::default())]);
        assert!(violations(&sum["99"], &none).is_empty());
    }

    fn p(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    async fn ctx(pid: Option<u32>) -> Ctx {
        let (mut c, _) = crate::measurement::test_support::ctx().await;
        c.nodes = 3;
        c.server_pid = pid;
        c
    }

    #[tokio::test(start_paused = true)]
    async fn samples_this_process_and_checks_constraints() {
        let dir = std::env::temp_dir().join(format!("kubesim-load-ru-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("constraints.yaml");
        // One byte of memory per node: surely exceeded.
        std::fs::write(
            &path,
            "kubesim:\n  cpuConstraint: 1000\n  memoryConstraint: {{.Nodes}}\n",
        )
        .expect("write");
        let c = ctx(Some(std::process::id())).await;
        let mut m = ResourceUsage::default();
        let start = json!({"action": "start", "resourceConstraints": path.to_string_lossy()});
        m.execute(&c, "ru", &p(start)).await.expect("start");
        assert_eq!(
            m.constraints["kubesim"],
            Constraint {
                cpu: 1000.0,
                memory: 3
            }
        );
        c.clock.sleep(Duration::from_secs(35)).await;
        let err = m
            .execute(&c, "ru", &p(json!({"action": "gather"})))
            .await
            .expect_err("over 3 bytes");
        assert_eq!(err.kind, ErrorKind::Violation);
        assert!(
            err.message.contains("1 constraints violated"),
            "{}",
            err.message
        );
        assert!(err.message.contains("MB of memory"), "{}", err.message);
        let v: Value = serde_json::from_str(&err.summaries[0].content).expect("json");
        assert_eq!(v["99"][0]["Name"], CONTAINER);
        assert!(v["100"][0]["Mem"].as_u64().is_some_and(|m| m > 0));
        assert!(v["50"][0]["CPU"].as_f64().is_some());
        assert_eq!(err.summaries[0].name, NAME);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test(start_paused = true)]
    async fn remote_clusters_produce_nothing() {
        let c = ctx(None).await;
        let mut m = ResourceUsage::default();
        m.execute(&c, "ru", &p(json!({"action": "start"})))
            .await
            .expect("start");
        let out = m
            .execute(&c, "ru", &p(json!({"action": "gather"})))
            .await
            .expect("gather");
        assert!(out.is_empty());
        let err = m
            .execute(
                &c,
                "ru",
                &p(json!({"action": "start", "resourceConstraints": "/nonexistent/c.yaml"})),
            )
            .await
            .expect_err("missing file");
        assert!(err.message.contains("resource constraints reading error"));
    }
}
