//! Follows the job pods: when each was submitted, started (bound and
//! running) and finished, on which node, and the queue and cpu in use
//! after every change.

use std::collections::HashMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{Change, Clock, KeyRef, KeyedMap};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::pods::JOB_INDEX;
use super::SimJob;

/// Batsim's final states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalState {
    CompletedSuccessfully,
    CompletedFailed,
    CompletedWalltimeReached,
    Rejected,
    /// Submitted but not finished when the run stopped.
    NotFinished,
    /// A manifest of a kind that runs no pods of its own (a Deployment, a
    /// Service): created at its time, not followed.
    NotFollowed,
}

impl FinalState {
    pub fn as_str(self) -> &'static str {
        match self {
            FinalState::CompletedSuccessfully => "COMPLETED_SUCCESSFULLY",
            FinalState::CompletedFailed => "COMPLETED_FAILED",
            FinalState::CompletedWalltimeReached => "COMPLETED_WALLTIME_REACHED",
            FinalState::Rejected => "REJECTED",
            FinalState::NotFinished => "NOT_FINISHED",
            FinalState::NotFollowed => "NOT_FOLLOWED",
        }
    }
}

/// What happened to one job; times in seconds from the start.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Shared with the run; a job timed at placement gets its own copy
    /// when its run time is set.
    pub job: Arc<SimJob>,
    pub submitted: Option<f64>,
    pub start: Option<f64>,
    pub finish: Option<f64>,
    pub state: FinalState,
    /// Index of the node it ran on, in the order the nodes were given
    /// (the first, for a job on several hosts).
    pub node: Option<usize>,
    /// Indexes of every node its pods ran on, for a job on several hosts
    /// (Batsim's `allocated_resources`); empty otherwise.
    pub hosts: Vec<usize>,
}

/// The cluster after a change.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub time: f64,
    /// Jobs submitted and not started.
    pub queued: usize,
    pub running: usize,
    pub cpu_millis_used: u64,
}

/// Counts for deciding when the run is over.
#[derive(Debug, Clone, Copy)]
pub struct Active {
    pub pending: usize,
    pub running: usize,
    pub all_submitted: bool,
}

/// One followed pod.
struct PodTrack {
    cpu: u64,
    running: bool,
    done: bool,
}

struct State {
    start: Option<Instant>,
    outcomes: Vec<Outcome>,
    /// Pods that must succeed for each job to be complete.
    expected: Vec<u32>,
    succeeded: Vec<u32>,
    pods: KeyedMap<PodTrack>,
    samples: Vec<Sample>,
    done: usize,
    queued: usize,
    running: usize,
    cpu: u64,
    resolved: usize,
    /// Jobs timed at placement that have started and wait to be timed.
    placed: Vec<usize>,
}

#[derive(Clone)]
pub struct Recorder {
    state: Arc<Mutex<State>>,
    /// Each node's index in the order the nodes were given.
    nodes: Arc<HashMap<String, usize>>,
    clock: Clock,
    changed: Arc<Notify>,
    /// Wakes the task that times jobs at placement.
    placed: Arc<Notify>,
}

impl Recorder {
    pub fn new(jobs: &[Arc<SimJob>], nodes: &[String], clock: Clock) -> Self {
        Recorder {
            state: Arc::new(Mutex::new(State {
                start: None,
                outcomes: jobs
                    .iter()
                    .map(|j| Outcome {
                        job: j.clone(),
                        submitted: None,
                        start: None,
                        finish: None,
                        state: FinalState::NotFinished,
                        node: None,
                        hosts: Vec::new(),
                    })
                    .collect(),
                expected: jobs.iter().map(|j| expected_pods(j)).collect(),
                succeeded: vec![0; jobs.len()],
                pods: KeyedMap::default(),
                samples: Vec::new(),
                done: 0,
                queued: 0,
                running: 0,
                cpu: 0,
                resolved: 0,
                placed: Vec::new(),
            })),
            nodes: Arc::new(node_indexes(nodes)),
            clock,
            changed: Arc::new(Notify::new()),
            placed: Arc::new(Notify::new()),
        }
    }

    /// The next jobs timed at placement to have started, in the order
    /// they started; waits until there is one.
    pub async fn placed(&self) -> Vec<usize> {
        loop {
            let ready = std::mem::take(&mut self.state.lock().placed);
            if !ready.is_empty() {
                return ready;
            }
            self.placed.notified().await;
        }
    }

    /// Job `i`'s run time, decided now that it is placed.
    pub fn set_run_time(&self, i: usize, seconds: f64) {
        if let Some(o) = self.state.lock().outcomes.get_mut(i) {
            Arc::make_mut(&mut o.job).run_time = seconds;
        }
    }

    pub fn start_at(&self, at: Instant) {
        self.state.lock().start = Some(at);
    }

    fn now(&self, s: &State) -> f64 {
        let start = s.start.unwrap_or_else(|| self.clock.instant());
        (self.clock.instant() - start).as_secs_f64()
    }

    fn sample(&self, s: &mut State) {
        let time = self.now(s);
        let sample = Sample {
            time,
            queued: s.queued,
            running: s.running,
            cpu_millis_used: s.cpu,
        };
        // Changes at the same instant collapse into the last one.
        match s.samples.last_mut() {
            Some(last) if last.time == time => *last = sample,
            _ => s.samples.push(sample),
        }
        self.changed.notify_one();
    }

    /// A future that completes at the next change.
    pub async fn changed(&self) {
        self.changed.notified().await
    }

    pub fn submitted(&self, i: usize) {
        let mut s = self.state.lock();
        let t = self.now(&s);
        s.outcomes[i].submitted = Some(t);
        s.queued += 1;
        s.resolved += 1;
        self.sample(&mut s);
    }

    pub fn reject(&self, i: usize) {
        let mut s = self.state.lock();
        let t = self.now(&s);
        let o = &mut s.outcomes[i];
        if o.submitted.is_some() {
            s.queued -= 1;
        } else {
            s.resolved += 1;
        }
        let o = &mut s.outcomes[i];
        o.submitted = Some(t);
        o.state = FinalState::Rejected;
        s.done += 1;
        self.sample(&mut s);
    }

    /// A manifest that is created and not followed.
    pub fn not_followed(&self, i: usize) {
        let mut s = self.state.lock();
        let t = self.now(&s);
        let o = &mut s.outcomes[i];
        o.submitted = Some(t);
        o.state = FinalState::NotFollowed;
        s.resolved += 1;
        s.done += 1;
        self.sample(&mut s);
    }

    pub fn on_pod(&self, change: &Change) {
        let pod = change.object();
        let Some(i) = meta::labels(pod)
            .get(JOB_INDEX)
            .and_then(|v| v.parse::<usize>().ok())
        else {
            return;
        };
        let gone = matches!(change, Change::Deleted(_));
        let phase = meta::path(pod, "status.phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut s = self.state.lock();
        if i >= s.outcomes.len() {
            return;
        }
        let t = self.now(&s);
        let key = KeyRef(meta::namespace(pod), meta::name(pod));
        // One lookup: the pod's track is read and updated in place.
        let track = s.pods.entry_ref(&key).or_insert_with(|| PodTrack {
            cpu: pod_cpu_millis(pod),
            running: false,
            done: false,
        });
        if track.done {
            // A pod's deletion is the last it is heard of: its track goes,
            // or a run would keep one for every pod it ever had.
            if gone {
                s.pods.remove(&key);
            }
            return;
        }
        let cpu = track.cpu;
        let starts = !track.running && matches!(phase, "Running" | "Succeeded" | "Failed");
        let ends = matches!(phase, "Succeeded" | "Failed") || gone;
        if starts && !gone {
            track.running = true;
        }
        let running = track.running;
        track.done = ends;
        let mut changed = false;
        if starts && !gone {
            s.running += 1;
            s.cpu += cpu;
            if s.outcomes[i].start.is_none() {
                let node = meta::path(pod, "spec.nodeName")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let node = self.nodes.get(node).copied();
                let hosts = s.outcomes[i].job.hosts;
                let o = &mut s.outcomes[i];
                if o.node.is_none() {
                    o.node = node;
                }
                // A job on several hosts starts when its last pod does.
                if hosts > 1 {
                    o.hosts.extend(node);
                }
                if hosts <= 1 || o.hosts.len() >= hosts as usize {
                    o.start = Some(t);
                    let timed_here = o.job.work.is_some();
                    s.queued = s.queued.saturating_sub(1);
                    if timed_here {
                        s.placed.push(i);
                        self.placed.notify_one();
                    }
                }
            }
            changed = true;
        }
        if ends {
            if running {
                s.running = s.running.saturating_sub(1);
                s.cpu = s.cpu.saturating_sub(cpu);
            }
            if phase == "Succeeded" {
                s.succeeded[i] += 1;
            }
            let finished = s.outcomes[i].finish.is_some();
            // A lone pod's failure, or any of a gang's, ends its job.
            let single = s.outcomes[i]
                .job
                .manifest
                .as_ref()
                .is_none_or(|m| m["kind"] == "Pod" && s.expected[i] == 1);
            let complete = s.succeeded[i] >= s.expected[i];
            if !finished && (complete || (single && phase == "Failed")) {
                let o = &mut s.outcomes[i];
                o.finish = Some(exact_end(o, phase, t));
                let killed = o.job.walltime.is_some_and(|w| w < o.job.run_time);
                o.state = match (phase, killed) {
                    ("Failed", _) => FinalState::CompletedFailed,
                    (_, true) => FinalState::CompletedWalltimeReached,
                    _ => FinalState::CompletedSuccessfully,
                };
                s.done += 1;
            }
            changed = true;
        }
        if gone {
            s.pods.remove(&key);
        }
        if changed {
            self.sample(&mut s);
        }
    }

    /// (jobs done, what is active).
    pub fn progress(&self) -> (usize, Active) {
        let s = self.state.lock();
        (
            s.done,
            Active {
                pending: s.queued,
                running: s.running,
                all_submitted: s.resolved == s.outcomes.len(),
            },
        )
    }

    pub fn outcomes(&self) -> Vec<Outcome> {
        self.state.lock().outcomes.clone()
    }

    pub fn samples(&self) -> Vec<Sample> {
        self.state.lock().samples.clone()
    }
}

/// When a job observed to end at `t` really ended. Simulated time moves
/// in whole milliseconds and a job's pods run to the first millisecond at
/// or after its end ([`super::pods::run_millis`]); a generated job that
/// succeeded (or reached its walltime) within that millisecond of its
/// planned end ended exactly then. Anything else (a failure, a delay from
/// other Stages, a manifest) ended when it was seen to.
fn exact_end(o: &Outcome, phase: &str, t: f64) -> f64 {
    let (Some(start), None, "Succeeded") = (o.start, &o.job.manifest, phase) else {
        return t;
    };
    let run = o.job.planned_run();
    let millis = super::pods::run_millis(run) as f64 / 1000.0;
    // A whole number of milliseconds is what the clock saw: adding it to
    // the start again would only add floating-point noise (15.299999...
    // for 15.3).
    if (millis - run).abs() < 1e-9 || (t - (start + millis)).abs() >= 1e-6 {
        return t;
    }
    start + run
}

/// Each node name's index in `nodes`; the first, should a name repeat.
fn node_indexes(nodes: &[String]) -> HashMap<String, usize> {
    let mut index = HashMap::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        index.entry(n.clone()).or_insert(i);
    }
    index
}

/// Pods that must succeed for a job to be complete: a Job's completions,
/// a job's hosts (one pod on each), one for anything else.
fn expected_pods(job: &SimJob) -> u32 {
    match &job.manifest {
        Some(m) if m["kind"] == "Job" => m
            .pointer("/spec/completions")
            .and_then(Value::as_u64)
            .map(|c| c.max(1) as u32)
            .unwrap_or(1),
        Some(_) => 1,
        None => job.hosts.max(1),
    }
}

/// The cpu a pod requests (its containers' requests summed), millicores.
fn pod_cpu_millis(pod: &Value) -> u64 {
    meta::path(pod, "spec.containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/resources/requests/cpu"))
        .filter_map(|q| crate::workload::cpu_millis(q).ok())
        .sum()
}
