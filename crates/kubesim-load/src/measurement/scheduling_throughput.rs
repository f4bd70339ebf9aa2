//! SchedulingThroughput: every `measurmentInterval` (sic, upstream's key)
//! the number of selected pods bound to a node is sampled, and the
//! increase since the last sample divided by the interval is one
//! throughput sample in pods/s; `gather` reports their percentiles and
//! maximum.
//!
//! The count is kept by an informer handler as pods change, so a sample
//! costs nothing however many pods there are.
//!
//! One departure from upstream: `gather` closes the interval it ends in.
//! Pods bound since the last sample were bound within one interval, so
//! their number over the whole interval is a lower bound of the rate and
//! becomes one more sample. Upstream drops them, so a step that ends
//! before the first tick reports a throughput of 0 however fast the
//! scheduler was; on emulated nodes a thousand pods can be running
//! within that first second.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{Change, Clock};
use parking_lot::{Mutex, MutexGuard};
use serde::Serialize;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::params::{self, Params};
use crate::report::Summary;

use super::informer_pool::Subscription;
use super::latency::percentile;
use super::wait_pods::{node, PodSelector};
use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "SchedulingThroughput";
const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// The scheduled count and the samples taken of it, shared by the
/// informer handler, the sampler and `gather`.
struct Samples {
    /// Kept by the informer handler as pods change.
    scheduled: AtomicI64,
    /// What a sample's pods are divided by, in seconds.
    secs: f64,
    /// The count at the last sample, and the samples so far.
    taken: Mutex<(i64, Vec<f64>)>,
}

impl Samples {
    /// Ends the current interval: the pods bound in it, per second,
    /// become a sample; an interval that bound none is dropped unless
    /// `keep_empty`. Returns the samples still locked, for a caller that
    /// takes them before another interval can close.
    fn close(&self, keep_empty: bool) -> MutexGuard<'_, (i64, Vec<f64>)> {
        let now = self.scheduled.load(Ordering::Relaxed);
        let mut taken = self.taken.lock();
        let delta = now - taken.0;
        taken.0 = now;
        if keep_empty || delta > 0 {
            taken.1.push(delta as f64 / self.secs);
        }
        taken
    }
}

struct Running {
    samples: Arc<Samples>,
    /// The handler on the test's shared informer.
    _subscription: Subscription,
    /// The sampler; dropping the set stops it.
    _tasks: JoinSet<()>,
}

#[derive(Default)]
pub struct SchedulingThroughput {
    running: Option<Running>,
}

/// The summary, in upstream's field names.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize)]
pub struct Throughput {
    pub perc50: f64,
    pub perc90: f64,
    pub perc99: f64,
    pub max: f64,
}

impl Throughput {
    pub fn of(mut samples: Vec<f64>) -> Self {
        samples.sort_by(f64::total_cmp);
        let at = |p| percentile(&samples, p).unwrap_or_default();
        Throughput {
            perc50: at(50),
            perc90: at(90),
            perc99: at(99),
            max: samples.last().copied().unwrap_or_default(),
        }
    }
}

#[async_trait::async_trait]
impl Measurement for SchedulingThroughput {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::string_or(p, "action", "")?.as_str() {
            "start" => self.start(ctx, p).await.map(|()| Vec::new()),
            "gather" => self.gather(ctx, p),
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}

impl SchedulingThroughput {
    async fn start(&mut self, ctx: &Ctx, p: &Params) -> Result<(), MeasurementError> {
        if self.running.is_some() {
            // Upstream keeps the samples of the running measurement.
            return Ok(());
        }
        let selector = PodSelector::parse(p)?;
        let interval = params::duration_or(p, "measurmentInterval", DEFAULT_INTERVAL)?;
        if interval.is_zero() {
            return Err(MeasurementError::failed(format!(
                "{METHOD}: measurmentInterval must be positive"
            )));
        }
        let samples = Arc::new(Samples {
            scheduled: AtomicI64::new(0),
            secs: interval_secs(interval),
            taken: Mutex::default(),
        });
        let s = samples.clone();
        let subscription =
            super::subscribe_synced(ctx, METHOD, "pods", &selector.informer(ctx), move |c| {
                s.scheduled.fetch_add(scheduled_delta(c), Ordering::Relaxed);
            })
            .await?;
        let mut tasks = JoinSet::new();
        tasks.spawn(sample(ctx.clock.clone(), interval, samples.clone()));
        self.running = Some(Running {
            samples,
            _subscription: subscription,
            _tasks: tasks,
        });
        Ok(())
    }

    fn gather(&mut self, ctx: &Ctx, p: &Params) -> Result<Vec<Summary>, MeasurementError> {
        let threshold = params::float_or(p, "threshold", 0.0)?;
        let violations = params::bool_or(p, "enableViolations", true)?;
        let run = self.running.take().ok_or_else(|| {
            MeasurementError::failed(format!("{METHOD}: measurement is not running"))
        })?;
        // The interval gather ends in counts if it bound pods, and the
        // samples are taken under the same lock: a tick of the sampler
        // before it is stopped adds nothing read here.
        let t = Throughput::of(std::mem::take(&mut run.samples.close(false).1));
        let summary = Summary::json(METHOD, ctx.clock.now(), &t);
        if violations && threshold > 0.0 && t.max < threshold {
            return Err(MeasurementError::violation(
                format!(
                    "measurement violated scheduler throughput slo: actual throughput {:.6} \
                     lower than threshold {:.6}",
                    t.max, threshold
                ),
                vec![summary],
            ));
        }
        Ok(vec![summary])
    }
}

/// A pod counts as scheduled while it is bound and not being deleted,
/// as upstream counts `Scheduled`.
fn is_scheduled(pod: &Value) -> bool {
    !node(pod).is_empty() && !meta::is_deleting(pod)
}

fn scheduled_delta(c: &Change) -> i64 {
    let n = |p: &Value| i64::from(is_scheduled(p));
    match c {
        Change::Added(p) => n(p),
        Change::Modified { old, new } => n(new) - n(old),
        Change::Deleted(p) => -n(p),
    }
}

/// The length samples are divided by. Upstream divides by whole
/// seconds; a sub-second interval would divide by zero there, so it uses
/// its exact length.
fn interval_secs(interval: Duration) -> f64 {
    match interval.as_secs() {
        0 => interval.as_secs_f64(),
        s => s as f64,
    }
}

/// Samples the scheduled count every `interval` until aborted.
async fn sample(clock: Clock, interval: Duration, samples: Arc<Samples>) {
    loop {
        clock.sleep(interval).await;
        drop(samples.close(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::*;
    use crate::measurement::ErrorKind;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    /// Gathers with `p`, which must pass, and returns the one summary.
    async fn gathered(m: &mut SchedulingThroughput, ctx: &Ctx, p: Value) -> Value {
        let out = m.execute(ctx, "", &params(p)).await.expect("gather");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "SchedulingThroughput");
        serde_json::from_str(&out[0].content).expect("json")
    }

    /// Starts the measurement, then binds 10 pods at 7 s and 5 more at
    /// 12 s; returns at 21 s. Samples: 0, 2, 1, 0 pods/s.
    async fn scenario(m: &mut SchedulingThroughput) -> Ctx {
        let (ctx, api) = ctx().await;
        for i in 0..16 {
            create_pod(&api, "default", &format!("p{i}"), json!({})).await;
        }
        let start = params(json!({"action": "start", "namespace": "default"}));
        m.execute(&ctx, "", &start).await.expect("start");
        ctx.clock.sleep(Duration::from_secs(7)).await;
        for i in 0..10 {
            bind(&api, "default", &format!("p{i}"), "n1").await;
        }
        ctx.clock.sleep(Duration::from_secs(5)).await;
        for i in 10..15 {
            bind(&api, "default", &format!("p{i}"), "n1").await;
        }
        ctx.clock.sleep(Duration::from_secs(9)).await;
        ctx
    }

    #[tokio::test(start_paused = true)]
    async fn percentiles_of_the_samples() {
        let mut m = SchedulingThroughput::default();
        let ctx = scenario(&mut m).await;
        let v = gathered(&mut m, &ctx, json!({"action": "gather"})).await;
        // Sorted samples 0, 0, 1, 2; the 1 s since the last sample
        // bound nothing, so gather adds none.
        assert_eq!(
            v,
            json!({"perc50": 0.0, "perc90": 2.0, "perc99": 2.0, "max": 2.0})
        );
        let again = m
            .execute(&ctx, "", &params(json!({"action": "gather"})))
            .await
            .unwrap_err();
        assert_eq!(again.kind, ErrorKind::Failed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_maximum_below_the_threshold_violates() {
        let mut m = SchedulingThroughput::default();
        let ctx = scenario(&mut m).await;
        let err = m
            .execute(
                &ctx,
                "",
                &params(json!({"action": "gather", "threshold": 2.5})),
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Violation);
        assert!(
            err.message
                .contains("actual throughput 2.000000 lower than threshold 2.500000"),
            "{}",
            err.message
        );
        assert_eq!(err.summaries.len(), 1);

        let mut m = SchedulingThroughput::default();
        let ctx = scenario(&mut m).await;
        let p = params(json!({"action": "gather", "threshold": "2.5", "enableViolations": false}));
        assert_eq!(
            m.execute(&ctx, "", &p).await.expect("no violation").len(),
            1
        );
    }

    #[tokio::test(start_paused = true)]
    async fn deleted_and_unselected_pods() {
        let (ctx, api) = ctx().await;
        for name in ["a", "b"] {
            create_labeled_pod(&api, "default", name, json!({"s": "y"})).await;
        }
        create_labeled_pod(&api, "default", "c", json!({"s": "n"})).await;
        let start = params(json!({"action": "start", "labelSelector": "s=y",
            "measurmentInterval": "2s"}));
        let mut m = SchedulingThroughput::default();
        m.execute(&ctx, "", &start).await.expect("start");
        ctx.clock.sleep(Duration::from_secs(1)).await;
        for name in ["a", "b", "c"] {
            bind(&api, "default", name, "n1").await;
        }
        ctx.clock.sleep(Duration::from_secs(2)).await;
        delete_now(&api, &pods(), "default", "a").await;
        ctx.clock.sleep(Duration::from_secs(2)).await;
        let v = gathered(&mut m, &ctx, json!({"action": "gather"})).await;
        // Samples at 2 s: +2 pods → 1/s; at 4 s: −1 pod → −0.5/s.
        assert_eq!(
            v,
            json!({"perc50": -0.5, "perc90": 1.0, "perc99": 1.0, "max": 1.0})
        );
    }

    /// Pods bound after the last tick count at gather, over a whole
    /// interval: a step shorter than the interval still has its rate.
    #[tokio::test(start_paused = true)]
    async fn gather_closes_the_interval_it_ends_in() {
        let (ctx, api) = ctx().await;
        for i in 0..12 {
            create_pod(&api, "default", &format!("p{i}"), json!({})).await;
        }
        // A one-second measurement that binds `bound` after `before` ms
        // and gathers with `g` `after` ms later.
        let run = |bound: std::ops::Range<usize>, before: u64, after: u64, g: Value| {
            let (ctx, api) = (&ctx, api.clone());
            async move {
                let start = params(json!({"action": "start", "namespace": "default",
                    "measurmentInterval": "1s"}));
                let mut m = SchedulingThroughput::default();
                m.execute(ctx, "", &start).await.expect("start");
                ctx.clock.sleep(Duration::from_millis(before)).await;
                for i in bound {
                    bind(&api, "default", &format!("p{i}"), "n1").await;
                }
                ctx.clock.sleep(Duration::from_millis(after)).await;
                gathered(&mut m, ctx, g).await
            }
        };
        // 8 pods within one second meet a threshold of 8.
        let v = run(0..8, 300, 400, json!({"action": "gather", "threshold": 8})).await;
        assert_eq!(
            v,
            json!({"perc50": 8.0, "perc90": 8.0, "perc99": 8.0, "max": 8.0})
        );
        // After a tick, only the pods bound since it count: the tick at
        // 1 s saw the 8 pods bound before start, 8/s; then 4.
        let v = run(8..12, 1500, 200, json!({"action": "gather"})).await;
        assert_eq!(
            v,
            json!({"perc50": 4.0, "perc90": 8.0, "perc99": 8.0, "max": 8.0})
        );
    }

    #[test]
    fn empty_samples_are_zero() {
        assert_eq!(Throughput::of(Vec::new()), Throughput::default());
    }
}
