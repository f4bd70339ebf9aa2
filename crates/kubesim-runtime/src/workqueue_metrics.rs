//! The controllers' work queue metrics under client-go's names, by queue
//! name: `workqueue_adds_total`, `workqueue_depth`,
//! `workqueue_retries_total`, `workqueue_queue_duration_seconds` and
//! `workqueue_work_duration_seconds`, for the process's `/metrics`.
//!
//! Queues register when their workers start ([`crate::run_workers`]) and
//! drop out when they are dropped; queues of the same name in one process
//! are summed, as one series each.

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
