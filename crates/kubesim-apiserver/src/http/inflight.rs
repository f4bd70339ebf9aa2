//! Overload protection: `--max-requests-inflight` and
//! `--max-mutating-requests-inflight`.
//!
//! As upstream, read-only requests (get, list, watch) and mutating ones
//! have separate limits; long-running requests and health probes are not
//! counted; members of `system:masters` are never turned away; a request
//! over the limit is answered `429` with `Retry-After: 1`.
//!
//! Upstream's plain max-in-flight filter rejects at once and so lets one
//! flooding client take every slot. Here each limit is shared fairly: when
//! all slots are busy a request waits in its user's queue, and a freed slot
//! goes to the next user in round-robin order, one request per user per
//! turn (the idea of priority and fairness's fair queuing, with one queue
//! per user). A user's queue holds at most [`queue_length`] requests; past
//! that the request is rejected. A client that floods thus fills its own
//! queue and gets 429s, while another user's request waits behind at most
//! one request of each other waiting user.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

/// Upstream's defaults.
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: usize = 400;
pub const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: usize = 200;

/// Upstream's APF default queue length limit.
const MAX_QUEUE_LENGTH: usize = 50;

/// Requests one user may have waiting for a slot of a pool of `limit`.
pub fn queue_length(limit: usize) -> usize {
    limit.clamp(1, MAX_QUEUE_LENGTH)
}

/// Counters shown on `/metrics`, per request kind.
#[derive(Default)]
pub struct Counters {
    pub current: AtomicI64,
    pub rejected: AtomicU64,
}

/// The two limits of a server; `0` means unlimited.
/// Unlimited by default, for servers embedded in tests and simulations.
#[derive(Default)]
pub struct Limits {
    read_only: Option<Pool>,
    mutating: Option<Pool>,
}

impl Limits {
    /// Limits counted in `metrics`.
    pub fn new(
        max_requests_inflight: usize,
        max_mutating_requests_inflight: usize,
        metrics: &super::metrics::Metrics,
    ) -> Limits {
        Limits {
            read_only: (max_requests_inflight > 0)
                .then(|| Pool::new(max_requests_inflight, metrics.inflight_read_only.clone())),
            mutating: (max_mutating_requests_inflight > 0).then(|| {
                Pool::new(
                    max_mutating_requests_inflight,
                    metrics.inflight_mutating.clone(),
                )
            }),
        }
    }

    pub fn is_unlimited(&self) -> bool {
        self.read_only.is_none() && self.mutating.is_none()
    }

    /// The pool a request of this kind draws from, if limited.
    pub fn pool(&self, read_only: bool) -> Option<&Pool> {
        if read_only {
            self.read_only.as_ref()
        } else {
            self.mutating.as_ref()
        }
    }
}

/// One limit with its per-user queues.
pub struct Pool {
    inner: Arc<Shared>,
}

struct Shared {
    limit: usize,
    queue_length: usize,
    state: Mutex<State>,
    counters: Arc<Counters>,
}

#[derive(Default)]
struct State {
    /// Slots taken, at most `limit`.
    busy: usize,
    /// Waiting requests by user; a user is here only while it has some.
    queues: HashMap<String, VecDeque<oneshot::Sender<()>>>,
    /// Users with waiting requests, in the order they get the next slot.
    turns: VecDeque<String>,
}

/// A held slot; dropping it frees the slot for the next waiting request.
pub struct Slot {
    inner: Arc<Shared>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.inner.release();
    }
}

/// Why a request got no slot.
#[derive(Debug, PartialEq, Eq)]
pub struct Rejected;

impl Pool {
    pub fn new(limit: usize, counters: Arc<Counters>) -> Pool {
        Pool {
            inner: Arc::new(Shared {
                limit,
                queue_length: queue_length(limit),
                state: Mutex::new(State::default()),
                counters,
            }),
        }
    }

    /// Waits for a slot for `user`, or rejects at once when the user's
    /// queue is full.
    pub async fn acquire(&self, user: &str) -> Result<Slot, Rejected> {
        let rx = match self.try_acquire(user)? {
            Ok(slot) => return Ok(slot),
            Err(rx) => rx,
        };
        let mut waiting = Waiting {
            rx: Some(rx),
            inner: self.inner.clone(),
        };
        let rx = waiting.rx.as_mut().expect("set above");
        match rx.await {
            Ok(()) => {
                waiting.rx = None;
                Ok(Slot {
                    inner: self.inner.clone(),
                })
            }
            // The pool never drops a sender without sending, but if it
            // did the request would wait forever: answer it instead.
            Err(_) => {
                waiting.rx = None;
                Err(Rejected)
            }
        }
    }

    /// A slot now, a place in the user's queue, or a rejection.
    #[allow(clippy::type_complexity)]
    fn try_acquire(&self, user: &str) -> Result<Result<Slot, oneshot::Receiver<()>>, Rejected> {
        let s = &self.inner;
        let mut st = s.state.lock();
        if st.busy < s.limit && st.turns.is_empty() {
            st.busy += 1;
            s.counters.current.fetch_add(1, Ordering::Relaxed);
            return Ok(Ok(Slot { inner: s.clone() }));
        }
        let st = &mut *st;
        let queue = st.queues.entry(user.to_string()).or_default();
        // Requests whose clients went away take no place.
        queue.retain(|tx| !tx.is_closed());
        if queue.len() >= s.queue_length {
            if queue.is_empty() {
                st.queues.remove(user);
            }
            s.counters.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(Rejected);
        }
        let (tx, rx) = oneshot::channel();
        queue.push_back(tx);
        if !st.turns.iter().any(|u| u == user) {
            st.turns.push_back(user.to_string());
        }
        Ok(Err(rx))
    }

    #[cfg(test)]
    fn busy(&self) -> usize {
        self.inner.state.lock().busy
    }
}

impl Shared {
    /// Hands the freed slot to the next waiting request in round-robin
    /// order of users, or frees it.
    fn release(&self) {
        let mut st = self.state.lock();
        while let Some(user) = st.turns.pop_front() {
            let Some(queue) = st.queues.get_mut(&user) else {
                continue;
            };
            let next = queue.pop_front();
            if queue.is_empty() {
                st.queues.remove(&user);
            } else {
                st.turns.push_back(user);
            }
            if let Some(tx) = next {
                // The slot passes on still taken; a client that left
                // refuses it and the next one is asked.
                if tx.send(()).is_ok() {
                    return;
                }
            }
        }
        st.busy = st.busy.saturating_sub(1);
        self.counters.current.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A request in a queue. If its client goes away after a slot was handed to
/// it but before it took it, the slot is passed on here.
struct Waiting {
    rx: Option<oneshot::Receiver<()>>,
    inner: Arc<Shared>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut rx) = self.rx.take() {
            rx.close();
            if rx.try_recv().is_ok() {
                self.inner.release();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    fn pool(limit: usize) -> Pool {
        Pool::new(limit, Arc::new(Counters::default()))
    }

    #[tokio::test]
    async fn admits_up_to_the_limit_then_queues_then_rejects() {
        let p = pool(2);
        let a = p.acquire("flood").await.unwrap();
        let b = p.acquire("flood").await.unwrap();
        // Two may wait (queue length 2), the third is turned away.
        let w1 = p.acquire("flood");
        let w2 = p.acquire("flood");
        tokio::pin!(w1, w2);
        assert!((&mut w1).now_or_never().is_none());
        assert!((&mut w2).now_or_never().is_none());
        assert_eq!(p.acquire("flood").await.err(), Some(Rejected));
        assert_eq!(p.inner.counters.rejected.load(Ordering::Relaxed), 1);
        drop(a);
        let c = w1.await.unwrap();
        assert_eq!(p.busy(), 2);
        drop((b, c));
        let d = w2.await.unwrap();
        assert_eq!(p.busy(), 1);
        drop(d);
        assert_eq!(p.busy(), 0);
        assert_eq!(p.inner.counters.current.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn freed_slots_go_round_robin_over_users() {
        let p = pool(1);
        let held = p.acquire("flood").await.unwrap();
        let f1 = p.acquire("flood");
        let o1 = p.acquire("other");
        tokio::pin!(f1, o1);
        assert!((&mut f1).now_or_never().is_none());
        assert!((&mut o1).now_or_never().is_none());
        // The flooder's queue (length 1) is full, the other user's is not.
        assert_eq!(p.acquire("flood").await.err(), Some(Rejected));
        drop(held);
        // The flooder queued first, so it goes first, then the other user.
        let f = (&mut f1).now_or_never().expect("flood's turn").unwrap();
        assert!((&mut o1).now_or_never().is_none());
        // The flooder queues again but the other user is next.
        let f2 = p.acquire("flood");
        tokio::pin!(f2);
        assert!((&mut f2).now_or_never().is_none());
        drop(f);
        let o = (&mut o1).now_or_never().expect("other's turn").unwrap();
        assert!((&mut f2).now_or_never().is_none());
        drop(o);
        drop(f2.await.unwrap());
        assert_eq!(p.busy(), 0);
    }

    #[tokio::test]
    async fn a_request_that_gave_up_waiting_frees_its_place() {
        let p = pool(1);
        let held = p.acquire("a").await.unwrap();
        {
            let gone = p.acquire("a");
            tokio::pin!(gone);
            assert!((&mut gone).now_or_never().is_none());
        }
        // Its place is free again, and the slot is not handed to it.
        let next = p.acquire("a");
        tokio::pin!(next);
        assert!((&mut next).now_or_never().is_none());
        drop(held);
        drop(next.await.unwrap());
        assert_eq!(p.busy(), 0);
    }

    #[test]
    fn unlimited_when_zero() {
        let l = Limits::new(0, 3, &Default::default());
        assert!(l.pool(true).is_none());
        assert!(l.pool(false).is_some());
        assert_eq!(queue_length(1000), MAX_QUEUE_LENGTH);
    }
}
