//! A work queue of keys, with the guarantees control loops rely on: a key
//! is queued at most once however often it is added, a key being worked on
//! is never handed to a second worker (an add meanwhile re-queues it when the
//! first finishes), and failed keys come back after an exponential backoff.
//! Delays run on the [`Clock`], so they jump in simulated time.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use kubesim_core::ApiError;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::Clock;

/// Backoff after the first failure of a key; doubled per further failure.
pub const BASE_DELAY: Duration = Duration::from_millis(5);
/// Backoff cap, as upstream's default controller rate limiter.
pub const MAX_DELAY: Duration = Duration::from_secs(1000);

struct State<K> {
    queue: VecDeque<K>,
    /// Keys waiting in `queue`, or re-added while processing, each with
    /// when it was added: its wait to be handed out counts from that add,
    /// even while an earlier pass holds it.
    dirty: BTreeMap<K, tokio::time::Instant>,
    /// Keys handed out and not yet done, each with when its pass started
    /// while that pass has not been counted in the work duration (a key
    /// held back for a cooldown after its pass is no longer work).
    processing: BTreeMap<K, Option<tokio::time::Instant>>,
    failures: BTreeMap<K, u32>,
    shut_down: bool,
}

pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    clock: Clock,
    base_delay: Duration,
    max_delay: Duration,
    stats: crate::workqueue_metrics::QueueStats,
}

impl<K: Ord + Clone + Send + Sync + 'static> WorkQueue<K> {
    pub fn new(clock: Clock) -> Arc<Self> {
        Self::with_backoff(clock, BASE_DELAY, MAX_DELAY)
    }

    pub fn with_backoff(clock: Clock, base_delay: Duration, max_delay: Duration) -> Arc<Self> {
        Arc::new(WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: BTreeMap::new(),
                processing: BTreeMap::new(),
                failures: BTreeMap::new(),
                shut_down: false,
            }),
            notify: Notify::new(),
            clock,
            base_delay,
            max_delay,
            stats: Default::default(),
        })
    }

    pub fn add(&self, key: K) {
        let mut s = self.state.lock();
        if s.shut_down || s.dirty.contains_key(&key) {
            return;
        }
        s.dirty.insert(key.clone(), self.clock.instant());
        self.stats.added();
        if s.processing.contains_key(&key) {
            return;
        }
        s.queue.push_back(key);
        drop(s);
        self.notify.notify_one();
    }

    /// Adds `key` once `delay` has passed on the clock.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        if delay.is_zero() {
            return self.add(key);
        }
        let q = self.clone();
        tokio::spawn(async move {
            q.clock.sleep(delay).await;
            q.add(key);
        });
    }

    /// Adds `key` after its backoff, which doubles with each failure until
    /// [`forget`](Self::forget) is called.
    pub fn add_rate_limited(self: &Arc<Self>, key: K) {
        self.stats.retried();
        let delay = {
            let mut s = self.state.lock();
            let n = s.failures.entry(key.clone()).or_insert(0);
            let d = self
                .base_delay
                .saturating_mul(1u32 << (*n).min(30))
                .min(self.max_delay);
            *n += 1;
            d
        };
        self.add_after(key, delay);
    }

    /// Clears the failure count of `key`.
    pub fn forget(&self, key: &K) {
        self.state.lock().failures.remove(key);
    }

    pub fn failures(&self, key: &K) -> u32 {
        self.state.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// The next key to work on; None once shut down. Call [`done`](Self::done)
    /// with it afterwards.
    pub async fn next(&self) -> Option<K> {
        loop {
            let notified = self.notify.notified();
            {
                let mut s = self.state.lock();
                if let Some(k) = s.queue.pop_front() {
                    let now = self.clock.instant();
                    if let Some(added) = s.dirty.remove(&k) {
                        self.stats.waited(now - added);
                    }
                    s.processing.insert(k.clone(), Some(now));
                    let more = !s.queue.is_empty();
                    drop(s);
                    if more {
                        // Pass the wake-up on: one notify may stand for
                        // several adds.
                        self.notify.notify_one();
                    }
                    return Some(k);
                }
                if s.shut_down {
                    return None;
                }
            }
            notified.await;
        }
    }

    /// A pass over `key` ended: how long it took since it was handed out,
    /// counted in the work duration, and no longer unfinished work even
    /// while the key waits for `done`.
    fn worked(&self, key: &K) -> Duration {
        let now = self.clock.instant();
        let started = self
            .state
            .lock()
            .processing
            .get_mut(key)
            .and_then(Option::take);
        let took = started.map_or(Duration::ZERO, |s| now - s);
        self.stats.worked(took);
        took
    }

    pub fn done(&self, key: &K) {
        let mut s = self.state.lock();
        s.processing.remove(key);
        if s.dirty.contains_key(key) && !s.shut_down {
            s.queue.push_back(key.clone());
            drop(s);
            self.notify.notify_one();
        }
    }

    /// [`done`](Self::done), but a key added again while it was being
    /// worked on is handed out only after `cooldown`; adds meanwhile are
    /// folded into that one pass.
    pub fn done_after(self: &Arc<Self>, key: &K, cooldown: Duration) {
        if cooldown.is_zero() || !self.state.lock().dirty.contains_key(key) {
            return self.done(key);
        }
        let (q, key) = (self.clone(), key.clone());
        tokio::spawn(async move {
            q.clock.sleep(cooldown).await;
            q.done(&key);
        });
    }

    /// Keys waiting (not those being worked on).
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes every `next` return None once the queue is drained of work in
    /// hand; later adds are ignored.
    pub fn shut_down(&self) {
        let mut s = self.state.lock();
        s.shut_down = true;
        s.queue.clear();
        s.dirty.clear();
        drop(s);
        self.notify.notify_waiters();
    }
}

/// How many times as long as its last pass a busy key waits before the next.
const COOLDOWN: u32 = 3;
/// The longest such wait, so that status stays fresh.
const MAX_COOLDOWN: Duration = Duration::from_secs(1);

impl<K: Ord + Clone + Send + Sync + 'static> crate::workqueue_metrics::Observed for WorkQueue<K> {
    fn depth(&self) -> usize {
        self.len()
    }

    fn stats(&self) -> &crate::workqueue_metrics::QueueStats {
        &self.stats
    }

    fn running(&self) -> Vec<Duration> {
        let now = self.clock.instant();
        let s = self.state.lock();
        s.processing
            .values()
            .flatten()
            .map(|started| now - *started)
            .collect()
    }
}

/// What a reconcile asks of the queue besides forgetting its failures.
pub type Requeue = Option<Duration>;

/// Runs `workers` concurrent loops taking keys from `queue` and passing them
/// to `reconcile`, until the queue shuts down or the future is dropped. `Ok`
/// forgets the key's failures (and re-adds it after the given delay, if
/// any); `Err` logs and retries it with backoff, except for errors that
/// retrying cannot fix (4xx other than conflicts and throttling).
pub async fn run_workers<K, F, Fut>(
    queue: Arc<WorkQueue<K>>,
    workers: usize,
    name: &str,
    reconcile: F,
) where
    K: Ord + Clone + Send + Sync + std::fmt::Debug + 'static,
    F: Fn(K) -> Fut,
    Fut: Future<Output = Result<Requeue, ApiError>>,
{
    {
        let observed: Arc<dyn crate::workqueue_metrics::Observed> = queue.clone();
        crate::workqueue_metrics::register(name, Arc::downgrade(&observed));
    }
    let worker = |_| async {
        while let Some(key) = queue.next().await {
            // A pass that panics (an object of a shape no writer through
            // the API can store, read from an older store) skips its key
            // until the object changes, and the loop goes on.
            let pass = AssertUnwindSafe(reconcile(key.clone())).catch_unwind();
            let outcome = match pass.await {
                Ok(outcome) => outcome,
                Err(panic) => {
                    tracing::error!(controller = name, key = ?key, panic = %crate::panic_message(&*panic),
                        "reconcile panicked; the object is skipped until it changes");
                    queue.forget(&key);
                    queue.done_after(&key, Duration::ZERO);
                    continue;
                }
            };
            match outcome {
                Ok(requeue) => {
                    queue.forget(&key);
                    if let Some(d) = requeue {
                        queue.add_after(key.clone(), d);
                    }
                }
                Err(e) if retryable(&e) => {
                    tracing::debug!(controller = name, key = ?key, error = %e.message, "reconcile failed; retrying");
                    queue.add_rate_limited(key.clone());
                }
                Err(e) => {
                    tracing::warn!(controller = name, key = ?key, error = %e.message, "reconcile failed");
                    queue.forget(&key);
                }
            }
            // A key whose pass is slow (a ReplicaSet of thousands of pods)
            // and which changes all the time would otherwise be reconciled
            // back to back, taking a whole core: waiting COOLDOWN times as
            // long as the pass took before the next bounds it to a fraction
            // of one. In simulated time passes take no time, so nothing
            // waits.
            let took = queue.worked(&key);
            queue.done_after(&key, took.saturating_mul(COOLDOWN).min(MAX_COOLDOWN));
        }
    };
    futures::future::join_all((0..workers.max(1)).map(worker)).await;
}

/// Conflicts, throttling, timeouts and server errors are worth retrying;
/// other client errors would fail again the same way.
pub fn retryable(e: &ApiError) -> bool {
    matches!(e.code, 409 | 429 | 500..=599) || e.code < 400
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> Clock {
        Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_is_queued_once() {
        let q = WorkQueue::new(clock());
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.next().await, Some("a"));
        assert_eq!(q.next().await, Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_add_while_processing_requeues_after_done() {
        let q = WorkQueue::new(clock());
        q.add("a");
        let k = q.next().await.unwrap();
        q.add("a");
        // Not handed out again while the first worker holds it.
        assert!(q.is_empty());
        q.done(&k);
        assert_eq!(q.len(), 1);
        assert_eq!(q.next().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_busy_key_cools_down_before_its_next_pass() {
        let c = clock();
        let q = WorkQueue::new(c.clone());
        q.add("a");
        let k = q.next().await.unwrap();
        q.add("a");
        q.add("a");
        let t = c.instant();
        q.done_after(&k, Duration::from_millis(30));
        // Held back, and the two adds make one pass.
        assert!(q.is_empty());
        assert_eq!(q.next().await, Some("a"));
        assert_eq!(c.instant() - t, Duration::from_millis(30));
        assert!(q.is_empty());
        // A key not added meanwhile is simply done: the next add is served
        // at once.
        q.done_after(&"a", Duration::from_millis(30));
        q.add("a");
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_until_forgotten() {
        let c = clock();
        let q = WorkQueue::with_backoff(c.clone(), Duration::from_secs(1), Duration::from_secs(3));
        // 1 s, 2 s, then capped at 3 s; forgetting starts over at 1 s.
        for (expected, forget_first) in [(1, false), (2, false), (3, false), (3, false), (1, true)]
        {
            if forget_first {
                q.forget(&"k");
            }
            q.add_rate_limited("k");
            let t = c.instant();
            assert_eq!(q.next().await, Some("k"));
            assert_eq!(c.instant() - t, Duration::from_secs(expected));
            q.done(&"k");
        }
        assert_eq!(q.failures(&"k"), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn shut_down_ends_next() {
        let q: Arc<WorkQueue<u32>> = WorkQueue::new(clock());
        let q2 = q.clone();
        let waiter = tokio::spawn(async move { q2.next().await });
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(waiter.await.unwrap(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn workers_retry_conflicts_and_forget_on_success() {
        let q = WorkQueue::new(clock());
        let attempts = Arc::new(Mutex::new(Vec::new()));
        q.add(7u32);
        let a = attempts.clone();
        let q2 = q.clone();
        let run = run_workers(q.clone(), 2, "test", move |k| {
            let a = a.clone();
            let q2 = q2.clone();
            async move {
                let n = {
                    let mut v = a.lock();
                    v.push(k);
                    v.len()
                };
                if n < 3 {
                    Err(ApiError::conflict("pods", "", "x", "stale"))
                } else {
                    q2.shut_down();
                    Ok(None)
                }
            }
        });
        run.await;
        assert_eq!(*attempts.lock(), vec![7, 7, 7]);
        assert_eq!(q.failures(&7), 0);
    }
}
