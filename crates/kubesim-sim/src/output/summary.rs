//! The figures of a schedule: makespan, waiting, turnaround and slowdown,
//! utilisation, job counts.

use crate::engine::{FinalState, Outcome, Run};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub nb_jobs: usize,
    pub nb_finished: usize,
    pub nb_success: usize,
    pub nb_killed: usize,
    pub nb_rejected: usize,
    pub nb_unfinished: usize,
    /// The last finish time (Batsim 4: from time 0).
    pub makespan: f64,
    pub mean_waiting: f64,
    pub max_waiting: f64,
    pub mean_turnaround: f64,
    pub max_turnaround: f64,
    pub mean_slowdown: f64,
    pub max_slowdown: f64,
    /// Cpu-seconds used over cpu-seconds offered until the makespan.
    pub utilisation: f64,
    /// Seconds the jobs ran, summed.
    pub time_computing: f64,
}

/// The jobs the schedule is about: those that ran or were rejected (not
/// the manifests that are only created).
pub fn counted(run: &Run) -> impl Iterator<Item = &Outcome> {
    run.outcomes
        .iter()
        .filter(|o| o.state != FinalState::NotFollowed)
}

/// Waiting, turnaround and slowdown of a finished job.
pub fn times(o: &Outcome) -> Option<(f64, f64, f64, f64)> {
    let (sub, start, fin) = (o.submitted?, o.start?, o.finish?);
    let exec = fin - start;
    let wait = start - sub;
    let turn = fin - sub;
    let slow = if exec > 0.0 { turn / exec } else { 1.0 };
    Some((exec, wait, turn, slow))
}

impl Summary {
    pub fn of(run: &Run) -> Summary {
        let mut s = Summary::default();
        let mut cpu_seconds = 0.0;
        let mut n = 0usize;
        for o in counted(run) {
            s.nb_jobs += 1;
            match o.state {
                FinalState::Rejected => s.nb_rejected += 1,
                FinalState::NotFinished => s.nb_unfinished += 1,
                FinalState::CompletedSuccessfully => s.nb_success += 1,
                FinalState::CompletedWalltimeReached => s.nb_killed += 1,
                FinalState::CompletedFailed | FinalState::NotFollowed => {}
            }
            let Some((exec, wait, turn, slow)) = times(o) else {
                continue;
            };
            n += 1;
            s.makespan = s.makespan.max(o.finish.unwrap_or(0.0));
            s.mean_waiting += wait;
            s.mean_turnaround += turn;
            s.mean_slowdown += slow;
            s.max_waiting = s.max_waiting.max(wait);
            s.max_turnaround = s.max_turnaround.max(turn);
            s.max_slowdown = s.max_slowdown.max(slow);
            s.time_computing += exec;
            cpu_seconds += exec * o.job.cpu_millis as f64 / 1000.0;
        }
        s.nb_finished = n;
        if n > 0 {
            s.mean_waiting /= n as f64;
            s.mean_turnaround /= n as f64;
            s.mean_slowdown /= n as f64;
        }
        let offered = run.total_cpu_millis as f64 / 1000.0 * s.makespan;
        if offered > 0.0 {
            s.utilisation = cpu_seconds / offered;
        }
        s
    }
}
