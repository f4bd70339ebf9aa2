//! The one place that reads time.
//!
//! Components ask a [`Clock`] for `now()` and sleep through it. The clock
//! counts from an epoch with tokio's monotonic instant, so the same code runs
//! in real time (epoch = the wall clock at start) and in simulated time (a
//! paused tokio runtime, which jumps to the next timer when all tasks idle).
//! [`Lockstep`] holds simulated time still in wall time, for processes
//! outside the runtime.

mod idle;
mod lockstep;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

pub use idle::{Idle, NextIdle};
pub use lockstep::{Busy, Lockstep};

#[derive(Clone, Debug)]
pub struct Clock {
    epoch: Timestamp,
    start: tokio::time::Instant,
    simulated: bool,
    /// Sleeps that ran to their end and timeouts that ran out, over every
    /// clone of this clock: how often timers woke a component.
    fired: Arc<AtomicU64>,
    /// The runtime's idle moments, when it reports them.
    idle: Option<Idle>,
}

impl Clock {
    /// Real time: `now()` follows the system clock.
    pub fn wall() -> Self {
        Clock {
            epoch: Timestamp::now(),
            start: tokio::time::Instant::now(),
            simulated: false,
            fired: Arc::default(),
            idle: None,
        }
    }

    /// Simulated time starting at `epoch`; must run on a tokio runtime with
    /// time paused, so that sleeping advances time instead of waiting.
    pub fn simulated(epoch: Timestamp) -> Self {
        Clock {
            epoch,
            start: tokio::time::Instant::now(),
            simulated: true,
            fired: Arc::default(),
            idle: None,
        }
    }

    /// This clock, knowing when its runtime runs out of work at an instant
    /// (the runtime calls [`Idle::about_to_park`] when it parks).
    pub fn with_idle(mut self, idle: Idle) -> Self {
        self.idle = Some(idle);
        self
    }

    /// Resolves once everything else due at the current instant has run:
    /// at the runtime's next idle moment, when the clock knows it;
    /// at once otherwise (real time has no instants to finish).
    pub async fn settled(&self) {
        if let Some(idle) = &self.idle {
            idle.next().await;
        }
    }

    pub fn is_simulated(&self) -> bool {
        self.simulated
    }

    /// The current time, for timestamps written into objects.
    pub fn now(&self) -> Timestamp {
        self.at(tokio::time::Instant::now())
    }

    /// The time at `instant` (a simulation's component saying when it
    /// will act).
    pub fn at(&self, instant: tokio::time::Instant) -> Timestamp {
        let elapsed = instant.saturating_duration_since(self.start);
        self.epoch
            .checked_add(
                jiff::SignedDuration::try_from(elapsed).unwrap_or(jiff::SignedDuration::MAX),
            )
            .unwrap_or(Timestamp::MAX)
    }

    /// A monotonic instant, for measuring latencies.
    pub fn instant(&self) -> tokio::time::Instant {
        tokio::time::Instant::now()
    }

    pub async fn sleep(&self, d: Duration) {
        tokio::time::sleep(d).await;
        self.fired.fetch_add(1, Ordering::Relaxed);
    }

    pub async fn sleep_until(&self, at: tokio::time::Instant) {
        tokio::time::sleep_until(at).await;
        self.fired.fetch_add(1, Ordering::Relaxed);
    }

    /// How many sleeps through this clock (or a clone) have ended and how
    /// many timeouts have run out: in a simulation, the wake-ups that
    /// timers, not events, caused.
    pub fn timers_fired(&self) -> u64 {
        self.fired.load(Ordering::Relaxed)
    }

    /// Runs `fut` for at most `d`; None when the time ran out.
    pub async fn timeout<F: std::future::Future>(&self, d: Duration, fut: F) -> Option<F::Output> {
        let out = tokio::time::timeout(d, fut).await.ok();
        if out.is_none() {
            self.fired.fetch_add(1, Ordering::Relaxed);
        }
        out
    }

    pub fn interval(&self, period: Duration) -> tokio::time::Interval {
        let mut i = tokio::time::interval(period);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn simulated_time_jumps() {
        let epoch: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let c = Clock::simulated(epoch);
        c.sleep(Duration::from_secs(3600)).await;
        assert_eq!(c.now().to_string(), "2026-01-01T01:00:00Z");
    }
}
