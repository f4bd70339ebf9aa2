//! APIAvailability: from `start` to `gather`, a GET of `/readyz` every
//! `pollFrequency`; the share that succeed is the availability, checked
//! against `threshold` (percent), and the longest run of failures times
//! the frequency is the longest unavailable period. `pause` and `unpause`
//! stop and resume the probing (around an intended API server restart).
//!
//! Upstream can also probe each control-plane host's address over SSH;
//! kubesim has no such hosts, so `hostMetrics` stays empty.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kubesim_gocompat::duration::format_std;
use parking_lot::Mutex;
use serde_json::json;

use crate::params::{self, Params};
use crate::report::Summary;

use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "APIAvailability";

#[derive(Debug, Default, Clone, Copy)]
struct Metrics {
    successes: u64,
    failures: u64,
    consecutive_failures: u64,
    max_consecutive_failures: u64,
}

impl Metrics {
    fn update(&mut self, available: bool) {
        if available {
            self.successes += 1;
            self.consecutive_failures = 0;
        } else {
            self.failures += 1;
            self.consecutive_failures += 1;
            self.max_consecutive_failures =
                self.max_consecutive_failures.max(self.consecutive_failures);
        }
    }

    /// 100 with no probes, as upstream.
    fn percentage(&self) -> f64 {
        let all = self.successes + self.failures;
        if all == 0 {
            100.0
        } else {
            self.successes as f64 / all as f64 * 100.0
        }
    }
}

struct Running {
    metrics: Arc<Mutex<Metrics>>,
    paused: Arc<AtomicBool>,
    frequency: Duration,
    threshold: f64,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Default)]
pub struct ApiAvailability {
    running: Option<Running>,
}

#[async_trait::async_trait]
impl Measurement for ApiAvailability {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => self.start(ctx, p).map(|()| Vec::new()),
            "pause" | "unpause" => {
                let pause = params::required_string(p, "action")? == "pause";
                match &self.running {
                    Some(r) => r.paused.store(pause, Ordering::Release),
                    None => tracing::info!("{METHOD}: measurement is not running"),
                }
                Ok(Vec::new())
            }
            "gather" => self.gather(ctx),
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}

impl ApiAvailability {
    fn start(&mut self, ctx: &Ctx, p: &Params) -> Result<(), MeasurementError> {
        if self.running.is_some() {
            return Ok(());
        }
        let frequency = params::duration(p, "pollFrequency")?.ok_or_else(|| {
            MeasurementError::failed(format!("{METHOD}: parameter \"pollFrequency\" is required"))
        })?;
        if frequency.is_zero() {
            return Err(MeasurementError::failed(format!(
                "{METHOD}: pollFrequency must be > 0"
            )));
        }
        let threshold = params::float_or(p, "threshold", 0.0)?;
        let metrics = Arc::new(Mutex::new(Metrics::default()));
        let paused = Arc::new(AtomicBool::new(false));
        let (m, pz, cluster, clock) = (
            metrics.clone(),
            paused.clone(),
            ctx.cluster.clone(),
            ctx.clock.clone(),
        );
        let task = tokio::spawn(async move {
            loop {
                clock.sleep(frequency).await;
                if pz.load(Ordering::Acquire) {
                    continue;
                }
                let ok = cluster.get_text("/readyz").await.is_ok();
                if !ok {
                    tracing::warn!("{METHOD}: cluster not available (GET /readyz failed)");
                }
                m.lock().update(ok);
            }
        });
        self.running = Some(Running {
            metrics,
            paused,
            frequency,
            threshold,
            task,
        });
        Ok(())
    }

    fn gather(&mut self, ctx: &Ctx) -> Result<Vec<Summary>, MeasurementError> {
        // Upstream gathers nothing when it was not started.
        let Some(run) = self.running.take() else {
            return Ok(Vec::new());
        };
        let m = *run.metrics.lock();
        let longest = run.frequency * u32::try_from(m.max_consecutive_failures).unwrap_or(u32::MAX);
        let pct = m.percentage();
        let summary = Summary::json(
            METHOD,
            ctx.clock.now(),
            &json!({
                "clusterMetrics": {
                    "availabilityPercentage": pct,
                    "longestUnavailablePeriod": format_std(longest),
                },
                "hostMetrics": null,
            }),
        );
        if pct < run.threshold {
            return Err(MeasurementError::violation(
                format!(
                    "API availability: SLO not fulfilled (expected >= {:.2}, got: {pct:.2})",
                    run.threshold
                ),
                vec![summary],
            ));
        }
        Ok(vec![summary])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn availability_and_longest_outage() {
        let mut m = Metrics::default();
        assert_eq!(m.percentage(), 100.0);
        for ok in [true, false, false, true, false, true, true, true] {
            m.update(ok);
        }
        assert_eq!(m.percentage(), 62.5);
        assert_eq!(m.max_consecutive_failures, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn unreachable_readyz_breaks_the_threshold() {
        // The test cluster serves no /readyz: every probe fails.
        let (ctx, _api) = crate::measurement::test_support::ctx().await;
        let mut a = ApiAvailability::default();
        let start = json!({"action": "start", "pollFrequency": "5s", "threshold": 99.5});
        a.execute(&ctx, "A", start.as_object().unwrap())
            .await
            .unwrap();
        ctx.clock.sleep(Duration::from_secs(16)).await;
        let gather = json!({"action": "gather"});
        let e = a
            .execute(&ctx, "A", gather.as_object().unwrap())
            .await
            .unwrap_err();
        assert_eq!(e.kind, crate::measurement::ErrorKind::Violation);
        let v: serde_json::Value = serde_json::from_str(&e.summaries[0].content).unwrap();
        assert_eq!(v["clusterMetrics"]["availabilityPercentage"], 0.0);
        assert_eq!(v["clusterMetrics"]["longestUnavailablePeriod"], "15s");
        assert!(
            e.message.contains("expected >= 99.50, got: 0.00"),
            "{}",
            e.message
        );
    }
}
