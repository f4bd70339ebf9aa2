//! End-to-end: `kubesim simulate --serve`, with this test as the outside
//! scheduler (kube-rs: it watches pods and binds them through
//! `pods/binding`), and runs that nobody schedules, which must still end.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Config, ResourceExt};
use serde_json::{json, Value};

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// A guard against a hung run, not a measure of anything: runs here take
/// seconds.
const HANG: Duration = Duration::from_secs(300);

/// Batsim's test_delays: ten 1-cpu jobs of 10 s, one every 3 s.
const DELAYS: &str = "workloads/batsim/test_delays.json";

/// Wall time the test's scheduler gets to react. Generous, for loaded
/// machines: it is spent in full only where the test leaves a pod unbound
/// on purpose, since time moves on as soon as no pod waits.
const QUIET: &str = "2s";

fn testdata(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

fn out_dir(name: &str) -> Scratch {
    Scratch::created(&format!("serve-{name}"))
}

/// A running `kubesim simulate --serve`, its stdout read line by line.
struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    stdout: Vec<String>,
    /// Taken by whichever `finish` ends the run, for the caller to read.
    out: Option<Scratch>,
}

impl Served {
    /// Starts the simulation of `workload` (under `testdata/`)
    /// on any free port.
    fn start(name: &str, workload: &str, args: &[&str]) -> Served {
        let out = out_dir(name);
        let wl = testdata(workload);
        let log = std::fs::File::create(out.join("kubesim.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_kubesim"))
            .args([
                "simulate",
                "--serve",
                "--listen",
                "127.0.0.1:0",
                "--workload",
            ])
            .arg(&wl)
            .args(args)
            .arg("--out")
            .arg(&out)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Served {
            child,
            lines,
            stdout: Vec::new(),
            out: Some(out),
        }
    }

    fn out(&self) -> &Path {
        self.out
            .as_ref()
            .expect("the run's directory, until it finishes")
    }

    fn log(&self) -> String {
        log_in(self.out())
    }

    /// The kubeconfig of the `export KUBECONFIG=...` line, printed once the
    /// nodes are Ready.
    fn kubeconfig(&mut self) -> PathBuf {
        loop {
            match self.lines.recv_timeout(HANG) {
                Ok(line) => {
                    self.stdout.push(line.clone());
                    if let Some(p) = line.strip_prefix("export KUBECONFIG=") {
                        return PathBuf::from(p);
                    }
                }
                Err(e) => panic!("no kubeconfig line ({e}):\n{}", self.log()),
            }
        }
    }

    /// Waits for the run to end with the outcome `success` says; everything
    /// it printed, and its directory.
    fn end(&mut self, success: bool) -> (String, Scratch) {
        let deadline = Instant::now() + HANG;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the simulation hung:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(
            status.success(),
            success,
            "kubesim's outcome:\n{}",
            self.log()
        );
        self.stdout.extend(self.lines.iter());
        (self.stdout.join("\n"), self.out.take().unwrap())
    }

    /// Waits for the run to end; everything it printed.
    fn finish(mut self) -> (String, Scratch) {
        self.end(true)
    }

    /// Like [`Served::finish`] for a run that must fail (one that started
    /// no job): its stdout, its stderr and its directory.
    fn finish_failing(mut self) -> (String, String, Scratch) {
        let (printed, out) = self.end(false);
        (printed, log_in(&out), out)
    }
}

/// What a run with its directory at `out` logged.
fn log_in(out: &Path) -> String {
    std::fs::read_to_string(out.join("kubesim.log")).unwrap_or_default()
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

async fn client(kubeconfig: &Path) -> Client {
    let kc = Kubeconfig::read_from(kubeconfig).expect("read kubeconfig");
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config from kubeconfig");
    Client::try_from(config).expect("client")
}

/// Millicores of a cpu quantity ("2", "500m").
fn millis(q: &str) -> u64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap(),
        None => (q.parse::<f64>().unwrap() * 1000.0) as u64,
    }
}

fn pod_cpu(p: &Pod) -> u64 {
    p.spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"))
        .map(|q| millis(&q.0))
        .sum()
}

fn job_id(p: &Pod) -> String {
    p.annotations()
        .get("kubesim.io/job-id")
        .cloned()
        .unwrap_or_default()
}

fn finished(p: &Pod) -> bool {
    let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// The test's scheduling policy: first fit in job order, except that job
/// `held.0` is not bound before job `held.1` has been submitted.
#[derive(Clone, Copy)]
struct Policy {
    held: Option<(&'static str, &'static str)>,
}

/// Schedules the default namespace's pods until aborted.
async fn schedule(client: Client, policy: Policy) {
    let nodes: Vec<(String, u64)> = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .expect("list nodes")
        .items
        .iter()
        .map(|n| {
            let cpu = n.status.as_ref().unwrap().allocatable.as_ref().unwrap()["cpu"]
                .0
                .clone();
            (n.name_any(), millis(&cpu))
        })
        .collect();
    assert!(
        !nodes.is_empty(),
        "the nodes exist once the kubeconfig is printed"
    );
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let mut events = watcher::watcher(pods.clone(), watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut view: BTreeMap<String, Pod> = BTreeMap::new();
    // Bound by us, before the watch shows it.
    let mut placed: BTreeMap<String, String> = BTreeMap::new();
    while let Some(ev) = events.next().await {
        match ev {
            Ok(Event::Apply(p) | Event::InitApply(p)) => {
                view.insert(p.name_any(), p);
            }
            Ok(Event::Delete(p)) => {
                view.remove(&p.name_any());
            }
            Ok(Event::Init | Event::InitDone) | Err(_) => {}
        }
        let node_of = |p: &Pod| -> Option<String> {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .or_else(|| placed.get(&p.name_any()).cloned())
        };
        let mut used: BTreeMap<&str, u64> = BTreeMap::new();
        for p in view.values().filter(|p| !finished(p)) {
            if let Some(n) = node_of(p) {
                if let Some((name, _)) = nodes.iter().find(|(name, _)| *name == n) {
                    *used.entry(name.as_str()).or_default() += pod_cpu(p);
                }
            }
        }
        let mut pending: Vec<&Pod> = view
            .values()
            .filter(|p| !finished(p) && node_of(p).is_none())
            .collect();
        pending.sort_by_key(|p| job_id(p).parse::<u64>().unwrap_or(u64::MAX));
        let submitted: Vec<String> = view.values().map(job_id).collect();
        let mut binds = Vec::new();
        for p in pending {
            if let Some((job, until)) = policy.held {
                if job_id(p) == job && !submitted.iter().any(|j| j == until) {
                    continue;
                }
            }
            let cpu = pod_cpu(p);
            let fit = nodes
                .iter()
                .find(|(n, alloc)| used.get(n.as_str()).copied().unwrap_or(0) + cpu <= *alloc);
            if let Some((n, _)) = fit {
                *used.entry(n.as_str()).or_default() += cpu;
                binds.push((p.name_any(), n.clone()));
            }
        }
        for (pod, node) in binds {
            let binding = json!({
                "apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": pod},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node},
            });
            pods.create_subresource::<Value, Value>(
                "binding",
                &pod,
                &PostParams::default(),
                &binding,
            )
            .await
            .expect("bind");
            placed.insert(pod, node);
        }
    }
}

/// Runs the simulation with the test scheduling it; what it printed and
/// the jobs.csv rows by job id.
async fn run_scheduled(
    name: &str,
    workload: &str,
    args: &[&str],
    policy: Policy,
) -> (String, BTreeMap<String, BTreeMap<String, String>>) {
    let mut served = Served::start(name, workload, args);
    let kc = served.kubeconfig();
    let sched = tokio::spawn(schedule(client(&kc).await, policy));
    let (printed, out) = tokio::task::spawn_blocking(move || served.finish())
        .await
        .unwrap();
    assert!(
        !sched.is_finished(),
        "the scheduler stopped early: {:?}",
        sched.await
    );
    sched.abort();
    (printed, jobs_csv(&out))
}

fn jobs_csv(out: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(out.join("jobs.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let row: BTreeMap<String, String> = header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect();
            (row["job_id"].clone(), row)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outside_scheduler_binds_in_lockstep() {
    // At most four of the jobs overlap, on two 2-cpu nodes: bound as
    // they come, none waits. Were time to move while the test's scheduler
    // reacts, the jobs would start after their submission.
    let (printed, jobs) = run_scheduled(
        "lockstep",
        DELAYS,
        &["--nodes", "2", "--node-cpu", "2", "--quiet", QUIET],
        Policy { held: None },
    )
    .await;
    assert!(printed.contains("10 jobs on 2 nodes"), "{printed}");
    assert_eq!(jobs.len(), 10, "{jobs:?}");
    for (id, row) in &jobs {
        assert_eq!(row["final_state"], "COMPLETED_SUCCESSFULLY", "job {id}");
        assert_eq!(row["starting_time"], row["submission_time"], "job {id}");
        assert_eq!(row["waiting_time"], "0.000000", "job {id}");
        assert_eq!(row["execution_time"], "10.000000", "job {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outside_schedulers_choices_show_in_jobs_csv() {
    // Job 2 (submitted at 6 s) is held until job 3 arrives at 9 s, so it
    // waits 3 s; with 4-cpu nodes nothing else waits.
    let (_, jobs) = run_scheduled(
        "held",
        DELAYS,
        &["--nodes", "2", "--node-cpu", "4", "--quiet", QUIET],
        Policy {
            held: Some(("2", "3")),
        },
    )
    .await;
    assert_eq!(jobs.len(), 10, "{jobs:?}");
    let held = &jobs["2"];
    assert_eq!(held["submission_time"], "6.000000");
    assert_eq!(held["starting_time"], "9.000000");
    assert_eq!(held["waiting_time"], "3.000000");
    assert_eq!(held["final_state"], "COMPLETED_SUCCESSFULLY");
    for (id, row) in jobs.iter().filter(|(id, _)| *id != "2") {
        assert_eq!(row["waiting_time"], "0.000000", "job {id}");
    }
}

#[test]
fn a_run_nobody_schedules_still_ends() {
    // Nobody connects: the start waits --serve-timeout, the pods are never
    // bound, and the run stops once nothing can happen.
    let served = Served::start(
        "nobody",
        DELAYS,
        &["--nodes", "2", "--node-cpu", "2", "--serve-timeout", "1s"],
    );
    let (printed, log, out) = served.finish_failing();
    assert!(printed.contains("export KUBECONFIG="), "{printed}");
    assert!(printed.contains("none started"), "{printed}");
    assert!(!printed.contains("mean waiting"), "{printed}");
    assert!(
        printed.contains(
            "10 jobs did not finish: 10 waiting for a node, 0 running, 0 not submitted yet"
        ),
        "{printed}"
    );
    assert!(printed.contains("no client watched pods"), "{printed}");
    assert!(
        log.contains(
            "0 of 10 jobs ran: no scheduler bound a pod (no client watched pods within --serve-timeout)"
        ),
        "{log}"
    );
    assert!(jobs_csv(&out).is_empty(), "unfinished jobs have no row");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_never_binds_stops_at_until() {
    let mut served = Served::start(
        "until",
        DELAYS,
        &["--nodes", "2", "--node-cpu", "2", "--until", "20s"],
    );
    let kc = served.kubeconfig();
    let pods: Api<Pod> = Api::namespaced(client(&kc).await, "default");
    let watch = tokio::spawn(async move {
        let mut events = watcher::watcher(pods, watcher::Config::default())
            .default_backoff()
            .boxed();
        while events.next().await.is_some() {}
    });
    let (printed, log, _out) = tokio::task::spawn_blocking(move || served.finish_failing())
        .await
        .unwrap();
    watch.abort();
    // Jobs 0..6 were submitted by 20 s (one every 3 s); none started.
    assert!(printed.contains("simulated 20 s"), "{printed}");
    assert!(
        log.contains("0 of 10 jobs ran: no scheduler bound a pod"),
        "{log}"
    );
    assert!(
        printed.contains(
            "10 jobs did not finish: 7 waiting for a node, 0 running, 3 not submitted yet"
        ),
        "{printed}"
    );
    assert!(!printed.contains("no client watched pods"), "{printed}");
}

#[test]
fn a_run_without_a_scheduler_says_nothing_ran() {
    // `external` is the older spelling of `none`.
    for choice in ["none", "external"] {
        let out = out_dir(&format!("no-scheduler-{choice}"));
        let o = Command::new(env!("CARGO_BIN_EXE_kubesim"))
            .args(["simulate", "--nodes", "1", "--scheduler", choice])
            .arg("--workload")
            .arg(testdata(DELAYS))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(!o.status.success());
        // The run's own warning may precede it; the error is one line.
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.trim().lines().last(),
            Some("kubesim: 0 of 10 jobs ran: no scheduler bound a pod"),
            "{err}"
        );
        let printed = String::from_utf8_lossy(&o.stdout);
        assert!(!printed.contains("mean waiting"), "{printed}");
    }
}

#[test]
fn the_quiet_period_must_be_shorter_than_the_timeout() {
    let out = out_dir("quiet");
    let o = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args([
            "simulate",
            "--nodes",
            "1",
            "--serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--quiet", "2s", "--serve-timeout", "1s", "--workload"])
        .arg(testdata(DELAYS))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("--quiet"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outside_scheduler_reproduces_the_burst_schedule() {
    // Batkube's burst (200 jobs of 170 s at t=0) on its 16 one-cpu nodes,
    // placed first-fit by the test: the same 13 waves as kubesim's own
    // scheduler (simulate.rs), so the same makespan and mean wait. Each
    // wave leaves pods unbound, so each costs one quiet period.
    let platform = testdata("workloads/batkube/platform_graphene_16nodes.xml");
    let (printed, jobs) = run_scheduled(
        "burst",
        "workloads/batkube/200_delay170.json",
        &["--cluster", platform.to_str().unwrap(), "--quiet", "1s"],
        Policy { held: None },
    )
    .await;
    assert_eq!(jobs.len(), 200);
    assert!(
        printed.contains("makespan 2210.0 s, mean waiting 979.2 s, 200 finished"),
        "{printed}"
    );
}
