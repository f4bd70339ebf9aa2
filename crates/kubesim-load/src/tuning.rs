//! Tuning sets: how a phase's actions are paced. Every action is started
//! as its own task at the time the tuning set says, and the phase waits
//! for all of them, as upstream's implementations do. Time is the
//! `Clock`'s, so pacing is exact in simulated time.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kubesim_runtime::{Clock, Rng};
use parking_lot::Mutex;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::config::Load;

pub type Action = BoxFuture<'static, ()>;

/// A tuning set ready to run actions; `globalQPSLoad`'s limiter is shared
/// by every phase that names the set, so it lives here.
pub struct TuningSet {
    load: Load,
    limiter: Option<Arc<TokenBucket>>,
    /// Bounds the actions running at once (see [`MAX_IN_FLIGHT`]).
    in_flight: Arc<tokio::sync::Semaphore>,
}

/// The most actions of a test that run at once, by default. A pace the
/// cluster cannot follow would otherwise pile up requests without bound,
/// each holding a connection, until the process runs out of file
/// descriptors (watch-list's 500 pods/s on a small machine did). 200 is
/// kube-apiserver's default `--max-mutating-requests-inflight`: a real
/// server answers more with 429 and client-go retries, so waiting here
/// changes no outcome a real cluster would give.
pub const MAX_IN_FLIGHT: usize = 200;

/// One bound shared by every tuning set of a test.
pub fn in_flight_limit() -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT))
}

impl TuningSet {
    pub fn new(load: Load) -> Self {
        let limiter = match load {
            Load::GlobalQps { qps, burst } => Some(Arc::new(TokenBucket::new(qps, burst))),
            _ => None,
        };
        TuningSet {
            load,
            limiter,
            in_flight: in_flight_limit(),
        }
    }

    /// The same set, sharing `limit` with the test's other sets.
    pub fn sharing(mut self, limit: Arc<tokio::sync::Semaphore>) -> Self {
        self.in_flight = limit;
        self
    }

    /// Runs every action, paced, and waits for all of them to finish.
    /// `started` is told each time an action starts (for progress).
    pub async fn execute(
        &self,
        actions: Vec<Action>,
        clock: &Clock,
        rng: &Rng,
        started: &(dyn Fn() + Sync),
    ) {
        let n = actions.len();
        let mut tasks = JoinSet::new();
        let t0 = clock.instant();
        let spawn = |a: Action, tasks: &mut JoinSet<()>| {
            started();
            let limit = self.in_flight.clone();
            tasks.spawn(async move {
                // Closed never: a failure to acquire runs the action anyway.
                let _permit = limit.acquire_owned().await.ok();
                a.await
            });
        };
        match &self.load {
            Load::Qps { qps } => {
                // Start i is due at t0 + i/qps: sleeping until a due time
                // rather than for an interval keeps the rate from drifting.
                let gap = per(*qps);
                for (i, a) in actions.into_iter().enumerate() {
                    clock.sleep_until(t0 + gap.mul_f64(i as f64)).await;
                    spawn(a, &mut tasks);
                }
            }
            Load::Randomized { average_qps } => {
                let mut at = t0;
                for (i, a) in actions.into_iter().enumerate() {
                    if i > 0 {
                        at += per(*average_qps).mul_f64(2.0 * rng.unit());
                    }
                    clock.sleep_until(at).await;
                    spawn(a, &mut tasks);
                }
            }
            Load::Stepped {
                burst_size,
                step_delay,
            } => {
                let burst = (*burst_size).max(1) as usize;
                for (i, a) in actions.into_iter().enumerate() {
                    if i > 0 && i % burst == 0 {
                        clock.sleep(*step_delay).await;
                    }
                    spawn(a, &mut tasks);
                }
            }
            Load::TimeLimited { time_limit } => {
                let gap = time_limit.div_f64(n.max(1) as f64);
                for (i, a) in actions.into_iter().enumerate() {
                    clock.sleep_until(t0 + gap.mul_f64(i as f64)).await;
                    spawn(a, &mut tasks);
                }
            }
            Load::RandomizedTimeLimited { time_limit } => {
                let mut timed: Vec<(Duration, Action)> = actions
                    .into_iter()
                    .map(|a| (time_limit.mul_f64(rng.unit()), a))
                    .collect();
                timed.sort_by_key(|(d, _)| *d);
                for (d, a) in timed {
                    clock.sleep_until(t0 + d).await;
                    spawn(a, &mut tasks);
                }
            }
            Load::ParallelismLimited { parallelism_limit } => {
                let limit = (*parallelism_limit).max(1) as usize;
                for a in actions {
                    while tasks.len() >= limit {
                        let _ = tasks.join_next().await;
                    }
                    spawn(a, &mut tasks);
                }
            }
            Load::GlobalQps { .. } => {
                let limiter = self.limiter.clone().expect("globalQPSLoad has a limiter");
                for a in actions {
                    limiter.acquire(clock).await;
                    spawn(a, &mut tasks);
                }
            }
            Load::Poisson {
                expected_actions_per_second,
            } => {
                let mut at = t0;
                for (i, a) in actions.into_iter().enumerate() {
                    if i > 0 {
                        // Exponential gaps: -ln(U)/λ, with U in (0, 1].
                        let u = 1.0 - rng.unit();
                        at += Duration::from_secs_f64(-u.ln() / expected_actions_per_second);
                    }
                    clock.sleep_until(at).await;
                    spawn(a, &mut tasks);
                }
            }
        }
        while tasks.join_next().await.is_some() {}
    }
}

fn per(rate: f64) -> Duration {
    Duration::from_secs_f64(1.0 / rate.max(1e-9))
}

/// A token bucket (`rate.Limiter`): `burst` tokens, refilled at `qps`.
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<Option<(f64, Instant)>>,
}

impl TokenBucket {
    pub fn new(qps: f64, burst: i64) -> Self {
        TokenBucket {
            qps,
            burst: burst.max(1) as f64,
            state: Mutex::new(None),
        }
    }

    /// Takes a token, waiting until one is there. Each caller reserves its
    /// token at once (the count may go negative) and sleeps off the debt,
    /// so concurrent callers are served in order without spinning.
    pub async fn acquire(&self, clock: &Clock) {
        let wait = {
            let now = clock.instant();
            let mut st = self.state.lock();
            let (tokens, last) = st.unwrap_or((self.burst, now));
            let refilled =
                (tokens + now.duration_since(last).as_secs_f64() * self.qps).min(self.burst);
            let left = refilled - 1.0;
            *st = Some((left, now));
            if left >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-left / self.qps)
            }
        };
        if !wait.is_zero() {
            clock.sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests;
