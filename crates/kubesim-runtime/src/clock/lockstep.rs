//! Holding simulated time still in wall time, so a process outside the
//! runtime (a real scheduler talking HTTP to `kubesim simulate --serve`)
//! can keep up with the virtual clock.
//!
//! A paused tokio runtime jumps to its next timer as soon as no task is
//! ready. That is right when every actor lives in the runtime, and wrong
//! when one of them is another process: between its requests the runtime
//! looks idle, and months could pass before its next request arrives.
//!
//! Tokio does not auto-advance while a `spawn_blocking` task runs (this is
//! documented on `tokio::time::pause`), and the task counts from the moment
//! it is spawned, not from when a thread picks it up. So a hold is a
//! blocking task: spawning it from the runtime's thread stops the clock
//! with no window in which time can jump, and the task's thread waits on a
//! condition variable in wall time, so holding costs no CPU (no task that
//! keeps waking itself). When the thread returns, tokio wakes the runtime,
//! which advances to the next timer if nothing else is ready.
//!
//! Wall time is read only here, as everywhere in kubesim: this is part of
//! the clock module.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant as WallInstant};

use parking_lot::{Condvar, Mutex};
use tokio::time::Instant;

/// When virtual time may move, as Batkube's broker decided between its
/// time steps, but from what the API server sees rather than from a
/// patched scheduler.
///
/// Time stands still while a request is in flight ([`Lockstep::enter`]) and,
/// while the outside party has work ([`Lockstep::set_waiting`]), until it
/// has been quiet for `quiet` of wall time since the last change it could
/// react to ([`Lockstep::touch`]). A hold that lasts `limit` at one virtual
/// instant is given up, and no new hold starts at that instant, so a client
/// that never falls silent cannot stop the simulation.
#[derive(Clone)]
pub struct Lockstep {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    quiet: Duration,
    limit: Duration,
}

struct State {
    /// Requests in flight.
    busy: usize,
    /// Wall time of the last change the outside party may react to.
    touched: WallInstant,
    /// The outside party has work (pods it has not bound).
    waiting: bool,
    /// The virtual instant and the wall time the current hold began at;
    /// None when no hold thread runs.
    hold: Option<(Instant, WallInstant)>,
    /// The virtual instant at which a hold last ran out of time.
    gave_up: Option<Instant>,
    /// Holds given up for lasting `limit`.
    timeouts: u64,
    closed: bool,
}

/// A request in flight: time stands still until it is dropped.
pub struct Busy {
    gate: Lockstep,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut s = self.gate.shared.state.lock();
        s.busy = s.busy.saturating_sub(1);
        // The answer is a change the client reacts to: it gets a quiet
        // period from now, not from when it asked.
        s.touched = WallInstant::now();
        self.gate.shared.wake.notify_all();
    }
}

impl State {
    fn held(&self, quiet: Duration, now: WallInstant) -> bool {
        self.busy > 0 || (self.waiting && now.duration_since(self.touched) < quiet)
    }
}

impl Lockstep {
    /// A gate that lets time move once the outside party has been quiet
    /// for `quiet` (wall time), and holds one virtual instant for at most
    /// `limit` (wall time).
    pub fn new(quiet: Duration, limit: Duration) -> Self {
        Lockstep {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    busy: 0,
                    touched: WallInstant::now(),
                    waiting: false,
                    hold: None,
                    gave_up: None,
                    timeouts: 0,
                    closed: false,
                }),
                wake: Condvar::new(),
                quiet,
                limit,
            }),
        }
    }

    /// A request started; time stands still until the guard is dropped.
    /// Call on the runtime whose clock is to be held.
    pub fn enter(&self) -> Busy {
        self.shared.state.lock().busy += 1;
        self.ensure_hold();
        Busy { gate: self.clone() }
    }

    /// Something the outside party may react to changed: while it has
    /// work, it gets `quiet` from now before time moves.
    pub fn touch(&self) {
        self.shared.state.lock().touched = WallInstant::now();
        self.ensure_hold();
    }

    /// Whether the outside party has work; without work, only requests in
    /// flight hold time.
    pub fn set_waiting(&self, waiting: bool) {
        let mut s = self.shared.state.lock();
        if s.waiting == waiting {
            return;
        }
        s.waiting = waiting;
        drop(s);
        self.shared.wake.notify_all();
        if waiting {
            self.ensure_hold();
        }
    }

    /// How many holds were given up for lasting `limit`.
    pub fn timeouts(&self) -> u64 {
        self.shared.state.lock().timeouts
    }

    /// Ends holding for good (the run is over): the hold thread returns, so
    /// the runtime can shut down without waiting for it.
    pub fn close(&self) {
        self.shared.state.lock().closed = true;
        self.shared.wake.notify_all();
    }

    /// Awaits `fut` with time standing still, for at most `limit` of wall
    /// time; None when the time ran out (time then moves again).
    pub async fn hold_while<F: Future>(&self, fut: F) -> Option<F::Output> {
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let limit = self.shared.limit;
        // Dropping `done` (fut finished, or this future was dropped) ends
        // the wait at once.
        let timer = tokio::task::spawn_blocking(move || {
            let _ = wait.recv_timeout(limit);
        });
        tokio::select! {
            biased;
            out = fut => {
                drop(done);
                Some(out)
            }
            _ = timer => None,
        }
    }

    /// Starts the hold thread if time should stand still and none runs.
    fn ensure_hold(&self) {
        let now = WallInstant::now();
        let virtual_now = Instant::now();
        {
            let mut s = self.shared.state.lock();
            if s.closed
                || s.hold.is_some()
                || s.gave_up == Some(virtual_now)
                || !s.held(self.shared.quiet, now)
            {
                return;
            }
            s.hold = Some((virtual_now, now));
        }
        // Outside a runtime there is no clock to hold.
        if tokio::runtime::Handle::try_current().is_err() {
            self.shared.state.lock().hold = None;
            return;
        }
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || shared.hold());
    }
}

impl Shared {
    /// The hold thread: returns when time may move.
    fn hold(&self) {
        let mut s = self.state.lock();
        loop {
            let now = WallInstant::now();
            let Some((at, since)) = s.hold else { return };
            if s.closed {
                break;
            }
            let left = self.limit.saturating_sub(now.duration_since(since));
            if left.is_zero() {
                s.gave_up = Some(at);
                s.timeouts += 1;
                tracing::warn!(
                    limit = ?self.limit,
                    in_flight = s.busy,
                    "the outside party did not settle in time; simulated time moves on"
                );
                break;
            }
            if !s.held(self.quiet, now) {
                break;
            }
            let wait = if s.busy > 0 {
                left
            } else {
                left.min(self.quiet.saturating_sub(now.duration_since(s.touched)))
            };
            self.wake.wait_for(&mut s, wait);
        }
        s.hold = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Clock;

    fn epoch() -> jiff::Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    /// Sends on the returned receiver from another thread, after a while
    /// of wall time: something outside the runtime acting late.
    fn later() -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let _ = tx.send(());
        });
        rx
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_flight_holds_time() {
        let clock = Clock::simulated(epoch());
        let gate = Lockstep::new(Duration::ZERO, Duration::from_secs(600));
        let t0 = clock.instant();
        let busy = gate.enter();
        // Without the hold the hour-long sleep would win at once.
        tokio::select! {
            biased;
            _ = later() => {}
            _ = clock.sleep(Duration::from_secs(3600)) => panic!("time moved"),
        }
        assert_eq!(clock.instant(), t0);
        drop(busy);
        clock.sleep(Duration::from_secs(3600)).await;
        assert_eq!(clock.instant() - t0, Duration::from_secs(3600));
        assert_eq!(gate.timeouts(), 0);
        gate.close();
    }

    #[tokio::test(start_paused = true)]
    async fn pending_work_holds_time_until_quiet_or_done() {
        let clock = Clock::simulated(epoch());
        // A quiet period no test run reaches: only the work being done
        // lets time move.
        let gate = Lockstep::new(Duration::from_secs(600), Duration::from_secs(600));
        let t0 = clock.instant();
        gate.set_waiting(true);
        gate.touch();
        tokio::select! {
            biased;
            _ = later() => {}
            _ = clock.sleep(Duration::from_secs(60)) => panic!("time moved"),
        }
        assert_eq!(clock.instant(), t0);
        gate.set_waiting(false);
        clock.sleep(Duration::from_secs(60)).await;
        assert_eq!(clock.instant() - t0, Duration::from_secs(60));
        // Without work, a change holds nothing.
        gate.touch();
        clock.sleep(Duration::from_secs(60)).await;
        gate.close();
    }

    #[tokio::test(start_paused = true)]
    async fn a_hold_that_lasts_too_long_is_given_up() {
        let clock = Clock::simulated(epoch());
        let gate = Lockstep::new(Duration::ZERO, Duration::from_millis(20));
        let t0 = clock.instant();
        let busy = gate.enter();
        clock.sleep(Duration::from_secs(3600)).await;
        assert_eq!(clock.instant() - t0, Duration::from_secs(3600));
        assert_eq!(gate.timeouts(), 1);
        drop(busy);
        gate.close();
    }

    #[tokio::test(start_paused = true)]
    async fn hold_while_awaits_in_wall_time() {
        let clock = Clock::simulated(epoch());
        let gate = Lockstep::new(Duration::ZERO, Duration::from_secs(600));
        let t0 = clock.instant();
        assert_eq!(
            gate.hold_while(later()).await.map(|r| r.is_ok()),
            Some(true)
        );
        assert_eq!(clock.instant(), t0);
        let short = Lockstep::new(Duration::ZERO, Duration::from_millis(20));
        assert!(short
            .hold_while(std::future::pending::<()>())
            .await
            .is_none());
    }
}
