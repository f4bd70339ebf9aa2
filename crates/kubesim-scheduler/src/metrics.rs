//! The scheduler's own metrics, under kube-scheduler's names and labels,
//! for the process's `/metrics` (so ClusterLoader2's PromQL finds them):
//! `scheduler_schedule_attempts_total`,
//! `scheduler_scheduling_attempt_duration_seconds` and
//! `scheduler_pod_scheduling_sli_duration_seconds`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::LazyLock;
use std::time::Duration;

use kubesim_runtime::histogram::{exponential_buckets, Histogram};
use parking_lot::Mutex;

/// kube-scheduler's attempt buckets: 1 ms doubling, 15 of them.
static ATTEMPT_BUCKETS: LazyLock<Vec<f64>> = LazyLock::new(|| exponential_buckets(0.001, 2.0, 15));
/// kube-scheduler's SLI buckets: 10 ms doubling, 20 of them.
static SLI_BUCKETS: LazyLock<Vec<f64>> = LazyLock::new(|| exponential_buckets(0.01, 2.0, 20));

/// An attempt's result, as kube-scheduler labels it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Scheduled,
    Unschedulable,
    Error,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Scheduled => "scheduled",
            Outcome::Unschedulable => "unschedulable",
            Outcome::Error => "error",
        }
    }
}

const OUTCOMES: [Outcome; 3] = [Outcome::Scheduled, Outcome::Unschedulable, Outcome::Error];

/// A profile's attempts and their durations, by [`Outcome`].
#[derive(Default)]
struct ByOutcome {
    attempts: [u64; 3],
    durations: [Histogram; 3],
}

#[derive(Default)]
struct Series {
    /// By profile name (looked up by `&str`: no allocation per attempt).
    profiles: BTreeMap<String, ByOutcome>,
    /// By the attempts the pod took, as upstream's `attempts` label.
    sli: BTreeMap<u32, Histogram>,
}

/// What the scheduler measured. Benchmarks also keep each scheduled
/// attempt's duration ([`Metrics::with_samples`]); a long-running
/// cluster keeps only the histograms.
#[derive(Default)]
pub struct Metrics {
    /// The duration of each scheduled attempt, from the pod leaving the
    /// queue to its binding being written (only with samples on).
    pub attempt_durations: Mutex<Vec<Duration>>,
    keep_samples: bool,
    series: Mutex<Series>,
}

impl Metrics {
    pub fn with_samples() -> Metrics {
        Metrics {
            keep_samples: true,
            ..Default::default()
        }
    }

    /// One attempt of `profile`; a scheduled one also gives the pod's
    /// time since it entered the queue and the attempts it took.
    pub fn attempt(
        &self,
        profile: &str,
        outcome: Outcome,
        attempt: Duration,
        since_queued: Option<(Duration, u32)>,
    ) {
        let mut s = self.series.lock();
        if !s.profiles.contains_key(profile) {
            s.profiles.insert(profile.to_string(), ByOutcome::default());
        }
        if let Some(p) = s.profiles.get_mut(profile) {
            let i = outcome as usize;
            p.attempts[i] += 1;
            p.durations[i].observe(&ATTEMPT_BUCKETS, attempt.as_secs_f64());
        }
        if let Some((sli, attempts)) = since_queued {
            s.sli
                .entry(attempts)
                .or_default()
                .observe(&SLI_BUCKETS, sli.as_secs_f64());
        }
        drop(s);
        if self.keep_samples && outcome == Outcome::Scheduled {
            self.attempt_durations.lock().push(attempt);
        }
    }

    /// Appends the series in Prometheus' text format.
    pub fn render(&self, out: &mut String) {
        let s = self.series.lock();
        out.push_str("# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.\n# TYPE scheduler_schedule_attempts_total counter\n");
        for (profile, p) in &s.profiles {
            for o in OUTCOMES {
                let n = p.attempts[o as usize];
                if n > 0 {
                    let _ = writeln!(
                        out,
                        "scheduler_schedule_attempts_total{{profile=\"{profile}\",result=\"{}\"}} {n}",
                        o.label()
                    );
                }
            }
        }
        out.push_str("# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency in seconds (scheduling algorithm + binding)\n# TYPE scheduler_scheduling_attempt_duration_seconds histogram\n");
        for (profile, p) in &s.profiles {
            for o in OUTCOMES {
                let h = &p.durations[o as usize];
                if h.count() > 0 {
                    let labels = format!("profile=\"{profile}\",result=\"{}\"", o.label());
                    h.render(
                        out,
                        "scheduler_scheduling_attempt_duration_seconds",
                        &labels,
                        &ATTEMPT_BUCKETS,
                    );
                }
            }
        }
        out.push_str("# HELP scheduler_pod_scheduling_sli_duration_seconds E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue and might involve multiple scheduling attempts.\n# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram\n");
        for (attempts, h) in &s.sli {
            h.render(
                out,
                "scheduler_pod_scheduling_sli_duration_seconds",
                &format!("attempts=\"{attempts}\""),
                &SLI_BUCKETS,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_are_counted_by_profile_and_result() {
        let m = Metrics::default();
        let ms = Duration::from_millis;
        m.attempt("default-scheduler", Outcome::Unschedulable, ms(3), None);
        m.attempt(
            "default-scheduler",
            Outcome::Scheduled,
            ms(2),
            Some((ms(1500), 2)),
        );
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains(
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 1\n"
        ));
        assert!(out.contains(
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"unschedulable\"} 1\n"
        ));
        assert!(out.contains(
            "scheduler_scheduling_attempt_duration_seconds_bucket{profile=\"default-scheduler\",result=\"scheduled\",le=\"0.002\"} 1\n"
        ));
        assert!(out.contains(
            "scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts=\"2\",le=\"1.28\"} 0\n"
        ));
        assert!(out.contains(
            "scheduler_pod_scheduling_sli_duration_seconds_bucket{attempts=\"2\",le=\"2.56\"} 1\n"
        ));
        // Without samples on, a long-running cluster keeps no list.
        assert!(m.attempt_durations.lock().is_empty());
        let b = Metrics::with_samples();
        b.attempt("p", Outcome::Scheduled, ms(2), Some((ms(2), 1)));
        assert_eq!(b.attempt_durations.lock().len(), 1);
    }
}
