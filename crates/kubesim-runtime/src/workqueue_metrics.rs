//! The controllers' work queue metrics under client-go's names, by queue
//! name: `workqueue_adds_total`, `workqueue_depth`,
//! `workqueue_retries_total`, `workqueue_queue_duration_seconds`,
//! `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`
//! and `workqueue_longest_running_processor_seconds`, for the process's
//! `/metrics`.
//!
//! Queues register when their workers start ([`crate::run_workers`]) and
//! drop out when they are dropped; queues of the same name in one process
//! are summed, as one series each (the longest running pass is the longest
//! of any of them).
//!
//! The two unfinished-work gauges are client-go's: over the keys whose
//! pass has started and not yet been counted in the work duration, the sum
//! of how long each has run, and the longest. A worker stuck in a pass
//! shows as a value that keeps growing. client-go samples them every half
//! second; here they are computed when `/metrics` is read, on each
//! queue's own clock.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use crate::histogram::{exponential_buckets, Histogram};

/// client-go's buckets of both its queue and work durations: 10 ns,
/// times 10, ten of them.
static BUCKETS: LazyLock<Vec<f64>> = LazyLock::new(|| exponential_buckets(10e-9, 10.0, 10));

/// What one queue has counted.
#[derive(Default)]
pub struct QueueStats {
    adds: AtomicU64,
    retries: AtomicU64,
    queue: Mutex<Histogram>,
    work: Mutex<Histogram>,
}

impl QueueStats {
    pub(crate) fn added(&self) {
        self.adds.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// A key was handed out `waited` after it was added.
    pub(crate) fn waited(&self, waited: Duration) {
        self.queue.lock().observe(&BUCKETS, waited.as_secs_f64());
    }

    pub(crate) fn worked(&self, took: Duration) {
        self.work.lock().observe(&BUCKETS, took.as_secs_f64());
    }
}

/// A queue as the registry sees it.
pub(crate) trait Observed: Send + Sync {
    fn depth(&self) -> usize;
    fn stats(&self) -> &QueueStats;
    /// How long each pass not yet counted in the work duration has run.
    fn running(&self) -> Vec<Duration>;
}

static QUEUES: Mutex<Vec<(String, Weak<dyn Observed>)>> = Mutex::new(Vec::new());

/// Registers a queue under `name` (and forgets the queues that are gone).
pub(crate) fn register(name: &str, queue: Weak<dyn Observed>) {
    let mut q = QUEUES.lock();
    q.retain(|(_, w)| w.strong_count() > 0);
    q.push((name.to_string(), queue));
}

#[derive(Default)]
struct Sums {
    adds: u64,
    retries: u64,
    depth: usize,
    queue: Histogram,
    work: Histogram,
    unfinished: Duration,
    longest: Duration,
}

/// Appends the series of every live queue in Prometheus' text format.
pub fn render(out: &mut String) {
    let mut by_name: BTreeMap<String, Sums> = BTreeMap::new();
    for (name, w) in QUEUES.lock().iter() {
        let Some(q) = w.upgrade() else { continue };
        let s = by_name.entry(name.clone()).or_default();
        let stats = q.stats();
        s.adds += stats.adds.load(Ordering::Relaxed);
        s.retries += stats.retries.load(Ordering::Relaxed);
        s.depth += q.depth();
        s.queue.merge(&stats.queue.lock());
        s.work.merge(&stats.work.lock());
        for ran in q.running() {
            s.unfinished += ran;
            s.longest = s.longest.max(ran);
        }
    }
    out.push_str("# HELP workqueue_adds_total Total number of adds handled by workqueue\n# TYPE workqueue_adds_total counter\n");
    for (name, s) in &by_name {
        let _ = writeln!(out, "workqueue_adds_total{{name=\"{name}\"}} {}", s.adds);
    }
    out.push_str(
        "# HELP workqueue_depth Current depth of workqueue\n# TYPE workqueue_depth gauge\n",
    );
    for (name, s) in &by_name {
        let _ = writeln!(out, "workqueue_depth{{name=\"{name}\"}} {}", s.depth);
    }
    out.push_str("# HELP workqueue_retries_total Total number of retries handled by workqueue\n# TYPE workqueue_retries_total counter\n");
    for (name, s) in &by_name {
        let _ = writeln!(
            out,
            "workqueue_retries_total{{name=\"{name}\"}} {}",
            s.retries
        );
    }
    out.push_str("# HELP workqueue_queue_duration_seconds How long in seconds a key waits in the queue, from its add to a worker taking it.\n# TYPE workqueue_queue_duration_seconds histogram\n");
    for (name, s) in &by_name {
        s.queue.render(
            out,
            "workqueue_queue_duration_seconds",
            &format!("name=\"{name}\""),
            &BUCKETS,
        );
    }
    out.push_str("# HELP workqueue_work_duration_seconds How long in seconds processing an item from workqueue takes.\n# TYPE workqueue_work_duration_seconds histogram\n");
    for (name, s) in &by_name {
        s.work.render(
            out,
            "workqueue_work_duration_seconds",
            &format!("name=\"{name}\""),
            &BUCKETS,
        );
    }
    out.push_str("# HELP workqueue_unfinished_work_seconds Seconds the passes in progress have run so far, summed; not yet in workqueue_work_duration_seconds. A value that keeps growing means a stuck worker.\n# TYPE workqueue_unfinished_work_seconds gauge\n");
    for (name, s) in &by_name {
        let _ = writeln!(
            out,
            "workqueue_unfinished_work_seconds{{name=\"{name}\"}} {}",
            s.unfinished.as_secs_f64()
        );
    }
    out.push_str("# HELP workqueue_longest_running_processor_seconds Seconds the longest pass in progress has run so far.\n# TYPE workqueue_longest_running_processor_seconds gauge\n");
    for (name, s) in &by_name {
        let _ = writeln!(
            out,
            "workqueue_longest_running_processor_seconds{{name=\"{name}\"}} {}",
            s.longest.as_secs_f64()
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{Clock, WorkQueue};

    /// The `(le, count)` pairs of the queue duration buckets of `name`.
    fn queue_buckets(out: &str, name: &str) -> Vec<(f64, u64)> {
        let prefix = format!("workqueue_queue_duration_seconds_bucket{{name=\"{name}\",le=\"");
        out.lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .map(|rest| {
                let (le, count) = rest.split_once("\"} ").unwrap();
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                (le, count.parse().unwrap())
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn queue_duration_runs_from_the_add_to_a_worker_taking_the_key() {
        let clock = Clock::simulated(Default::default());
        let q: Arc<WorkQueue<u32>> = WorkQueue::new(clock.clone());
        let observed: Arc<dyn Observed> = q.clone();
        register("waits-test", Arc::downgrade(&observed));
        q.add(1);
        clock.sleep(Duration::from_millis(30)).await;
        let k = q.next().await.unwrap();
        // Added again during its pass: it waits from this add, through the
        // rest of the pass, until it is handed out again.
        q.add(1);
        clock.sleep(Duration::from_secs(2)).await;
        q.done(&k);
        assert_eq!(q.next().await, Some(1));
        let mut out = String::new();
        render(&mut out);
        assert!(
            out.contains("# TYPE workqueue_queue_duration_seconds histogram\n"),
            "{out}"
        );
        let buckets = queue_buckets(&out, "waits-test");
        assert_eq!(buckets.len(), 11, "{out}");
        for (le, count) in buckets {
            let want = match le {
                le if le < 0.03 => 0,
                le if le < 2.0 => 1,
                _ => 2,
            };
            assert_eq!(count, want, "le={le}: {out}");
        }
        let sum: f64 = out
            .lines()
            .find_map(|l| {
                l.strip_prefix("workqueue_queue_duration_seconds_sum{name=\"waits-test\"} ")
            })
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - 2.03).abs() < 1e-9, "{out}");
        drop(observed);
    }

    /// The value of the series `metric{name="name"}`.
    fn gauge(out: &str, metric: &str, name: &str) -> f64 {
        let prefix = format!("{metric}{{name=\"{name}\"}} ");
        out.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix}in {out}"))
            .parse()
            .unwrap()
    }

    /// (unfinished work, longest running processor) of `name`, in seconds.
    fn unfinished(name: &str) -> (f64, f64) {
        let mut out = String::new();
        render(&mut out);
        (
            gauge(&out, "workqueue_unfinished_work_seconds", name),
            gauge(&out, "workqueue_longest_running_processor_seconds", name),
        )
    }

    fn near(got: (f64, f64), want: (f64, f64)) -> bool {
        (got.0 - want.0).abs() < 1e-9 && (got.1 - want.1).abs() < 1e-9
    }

    #[tokio::test(start_paused = true)]
    async fn unfinished_work_sums_the_passes_in_progress_and_longest_is_the_oldest() {
        let clock = Clock::simulated(Default::default());
        let q: Arc<WorkQueue<u32>> = WorkQueue::new(clock.clone());
        let observed: Arc<dyn Observed> = q.clone();
        register("unfinished-test", Arc::downgrade(&observed));
        let mut out = String::new();
        render(&mut out);
        assert!(
            out.contains("# TYPE workqueue_unfinished_work_seconds gauge\n")
                && out.contains("# TYPE workqueue_longest_running_processor_seconds gauge\n"),
            "{out}"
        );
        assert!(near(unfinished("unfinished-test"), (0.0, 0.0)));
        q.add(1);
        q.add(2);
        // Waiting in the queue is not work.
        clock.sleep(Duration::from_secs(5)).await;
        assert!(near(unfinished("unfinished-test"), (0.0, 0.0)));
        let one = q.next().await.unwrap();
        clock.sleep(Duration::from_secs(2)).await;
        let two = q.next().await.unwrap();
        clock.sleep(Duration::from_millis(1500)).await;
        // 3.5 s of the first pass and 1.5 s of the second.
        let got = unfinished("unfinished-test");
        assert!(near(got, (5.0, 3.5)), "{got:?}");
        q.done(&one);
        let got = unfinished("unfinished-test");
        assert!(near(got, (1.5, 1.5)), "{got:?}");
        q.done(&two);
        assert!(near(unfinished("unfinished-test"), (0.0, 0.0)));
        drop(observed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pass_counted_in_work_duration_is_no_longer_unfinished_during_its_cooldown() {
        let clock = Clock::simulated(Default::default());
        let q: Arc<WorkQueue<u32>> = WorkQueue::new(clock.clone());
        let c = clock.clone();
        // Each pass takes 100 ms on the clock.
        let workers = tokio::spawn(crate::run_workers(
            q.clone(),
            1,
            "cooldown-test",
            move |_k| {
                let c = c.clone();
                async move {
                    c.sleep(Duration::from_millis(100)).await;
                    Ok(None)
                }
            },
        ));
        tokio::task::yield_now().await;
        q.add(1);
        clock.sleep(Duration::from_millis(40)).await;
        let got = unfinished("cooldown-test");
        assert!(near(got, (0.04, 0.04)), "{got:?}");
        // Added during its pass: after the pass it waits three times the
        // pass's length before the next, still held by the worker.
        q.add(1);
        clock.sleep(Duration::from_millis(160)).await;
        let mut out = String::new();
        render(&mut out);
        assert_eq!(
            gauge(
                &out,
                "workqueue_work_duration_seconds_count",
                "cooldown-test"
            ),
            1.0,
            "{out}"
        );
        assert!(near(unfinished("cooldown-test"), (0.0, 0.0)), "{out}");
        // The next pass starts when the 300 ms cooldown ends, at 400 ms.
        clock.sleep(Duration::from_millis(250)).await;
        let got = unfinished("cooldown-test");
        assert!(near(got, (0.05, 0.05)), "{got:?}");
        workers.abort();
        let _ = workers.await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_queue_is_counted_by_name_until_dropped() {
        let clock = Clock::simulated(Default::default());
        let q: Arc<WorkQueue<u32>> = WorkQueue::new(clock.clone());
        q.add(1);
        q.add(1); // deduplicated: not an add
        q.add(2);
        let workers = tokio::spawn(crate::run_workers(
            q.clone(),
            1,
            "counted-test",
            |_k| async { Ok(None) },
        ));
        clock.sleep(Duration::from_millis(10)).await;
        let mut out = String::new();
        render(&mut out);
        assert!(
            out.contains("workqueue_adds_total{name=\"counted-test\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("workqueue_depth{name=\"counted-test\"} 0\n"),
            "{out}"
        );
        assert!(
            out.contains("workqueue_work_duration_seconds_count{name=\"counted-test\"} 2\n"),
            "{out}"
        );
        workers.abort();
        let _ = workers.await;
        drop(q);
        let mut out = String::new();
        render(&mut out);
        assert!(!out.contains("counted-test"), "{out}");
    }
}
