//! Follows the job pods: when each was submitted, started (bound and
//! running) and finished, on which node, and the queue and cpu in use
//! after every change.

use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{Change, Clock};
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
}

impl FinalState {
    pub fn as_str(self) -> &'static str {
        match self {
            FinalState::CompletedSuccessfully => "COMPLETED_SUCCESSFULLY",
            FinalState::CompletedFailed => "COMPLETED_FAILED",
            FinalState::CompletedWalltimeReached => "COMPLETED_WALLTIME_REACHED",
            FinalState::Rejected => "REJECTED",
            FinalState::NotFinished => "NOT_FINISHED",
        }
    }
}

/// What happened to one job; times in seconds from the start.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub job: SimJob,
    pub submitted: Option<f64>,
    pub start: Option<f64>,
    pub finish: Option<f64>,
    pub state: FinalState,
    /// Index of the node it ran on, in the order the nodes were given.
    pub node: Option<usize>,
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

struct State {
    start: Option<Instant>,
    outcomes: Vec<Outcome>,
    samples: Vec<Sample>,
    done: usize,
    queued: usize,
    running: usize,
    cpu: u64,
    resolved: usize,
}

#[derive(Clone)]
pub struct Recorder {
    state: Arc<Mutex<State>>,
    nodes: Arc<Vec<String>>,
    clock: Clock,
    changed: Arc<Notify>,
}

impl Recorder {
    pub fn new(jobs: &[SimJob], nodes: &[String], clock: Clock) -> Self {
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
                    })
                    .collect(),
                samples: Vec::new(),
                done: 0,
                queued: 0,
                running: 0,
                cpu: 0,
                resolved: 0,
            })),
            nodes: Arc::new(nodes.to_vec()),
            clock,
            changed: Arc::new(Notify::new()),
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

    pub fn on_pod(&self, change: &Change) {
        let pod = change.object();
        let Some(i) = meta::labels(pod)
            .get(JOB_INDEX)
            .and_then(|v| v.parse::<usize>().ok())
        else {
            return;
        };
        let phase = meta::path(pod, "status.phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut s = self.state.lock();
        if i >= s.outcomes.len() {
            return;
        }
        let t = self.now(&s);
        let started = s.outcomes[i].start.is_some();
        let finished = s.outcomes[i].finish.is_some();
        let cpu = s.outcomes[i].job.cpu_millis;
        let mut changed = false;
        if !started && matches!(phase, "Running" | "Succeeded" | "Failed") {
            let node = meta::path(pod, "spec.nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            let o = &mut s.outcomes[i];
            o.start = Some(t);
            o.node = self.nodes.iter().position(|n| n == node);
            s.queued = s.queued.saturating_sub(1);
            s.running += 1;
            s.cpu += cpu;
            changed = true;
        }
        if !finished && matches!(phase, "Succeeded" | "Failed") {
            let o = &mut s.outcomes[i];
            o.finish = Some(t);
            let killed = o.job.walltime.is_some_and(|w| w < o.job.run_time);
            o.state = match (phase, killed) {
                ("Failed", _) => FinalState::CompletedFailed,
                (_, true) => FinalState::CompletedWalltimeReached,
                _ => FinalState::CompletedSuccessfully,
            };
            s.running = s.running.saturating_sub(1);
            s.cpu = s.cpu.saturating_sub(cpu);
            s.done += 1;
            changed = true;
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
