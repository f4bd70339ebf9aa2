//! The one shape of ClusterLoader2's Prometheus-based methods: find the
//! run's Prometheus (or skip), note the time at `start`, and at `gather`
//! run the method's queries over the window since then.
//!
//! A method states only what is its own, as a [`Gatherer`]: what it reads
//! at `start` (if anything), and how it queries and judges at `gather`.
//! [`PrometheusMethod`] wraps it into a [`Measurement`].

use std::sync::Arc;

use jiff::Timestamp;

use crate::params::{self, Params};
use crate::prom::{PromSample, Querier};
use crate::report::Summary;

use super::{Ctx, Measurement, MeasurementError, NEEDS_PROMETHEUS};

/// What one Prometheus-based method does of its own.
#[async_trait::async_trait]
pub trait Gatherer: Send + Sync {
    /// The method's name, as configs call it and messages start.
    const NAME: &'static str;

    /// Takes the parameters of `start`; most methods need none.
    fn start(&mut self, _p: &Params) -> Result<(), MeasurementError> {
        Ok(())
    }

    /// Runs the method's queries over `window` and judges the answers.
    async fn gather(
        &mut self,
        window: &Window<'_>,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError>;
}

/// A Prometheus-based method: `G`'s queries over the measured window.
#[derive(Default)]
pub struct PrometheusMethod<G> {
    gatherer: G,
    started: Option<Timestamp>,
}

/// The measured window at `gather`: from `start` (None when `start` was
/// never called) to now, on the run's Prometheus.
pub struct Window<'a> {
    method: &'static str,
    prom: &'a dyn Querier,
    start: Option<Timestamp>,
    /// The gather's time, at which every query of the call is run.
    pub end: Timestamp,
}

impl Window<'_> {
    /// Runs `promql`, each `%v` replaced by the window, at [`Self::end`].
    /// `what` names the query in a failure's message.
    pub async fn query(
        &self,
        what: &str,
        promql: &str,
    ) -> Result<Vec<PromSample>, MeasurementError> {
        let start = self
            .start
            .ok_or_else(|| self.failed("gather without a start"))?;
        self.prom
            .query(&promql.replace("%v", &window(start, self.end)), self.end)
            .await
            .map_err(|e| self.failed(format!("{what}: {e}")))
    }

    fn failed(&self, message: impl std::fmt::Display) -> MeasurementError {
        MeasurementError::failed(format!("{}: {message}", self.method))
    }
}

/// ClusterLoader2's rendering of the window: whole seconds.
fn window(start: Timestamp, end: Timestamp) -> String {
    let ms = end.as_millisecond() - start.as_millisecond();
    format!("{}s", ms.max(0) / 1000)
}

/// The Prometheus a Prometheus-based method queries: ClusterLoader2's
/// `prometheusClient` is the run's own server (`inCluster`, the default;
/// a cloud provider's, `managed`, is refused by name), and without one
/// the call is skipped saying how to get one.
fn prometheus_of(
    ctx: &Ctx,
    p: &Params,
    method: &str,
) -> Result<Arc<dyn Querier>, MeasurementError> {
    match params::string_or(p, "prometheusClient", "inCluster")?.as_str() {
        "inCluster" => {}
        "managed" => {
            return Err(MeasurementError::failed(format!(
                "{method}: prometheusClient \"managed\" (a cloud provider's Prometheus) is not supported"
            )))
        }
        other => {
            return Err(MeasurementError::failed(format!(
                "{method}: unknown prometheusClient {other:?}"
            )))
        }
    }
    ctx.prometheus
        .clone()
        .ok_or_else(|| MeasurementError::skipped(NEEDS_PROMETHEUS))
}

#[async_trait::async_trait]
impl<G: Gatherer> Measurement for PrometheusMethod<G> {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let prom = prometheus_of(ctx, p, G::NAME)?;
        match params::required_string(p, "action")?.as_str() {
            "start" => {
                self.gatherer.start(p)?;
                self.started = Some(ctx.clock.now());
                Ok(Vec::new())
            }
            "gather" => {
                let window = Window {
                    method: G::NAME,
                    prom: &*prom,
                    start: self.started,
                    end: ctx.clock.now(),
                };
                self.gatherer.gather(&window, p).await
            }
            other => Err(MeasurementError::unknown_action(G::NAME, other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_whole_seconds() {
        let t = |ms: i64| Timestamp::from_millisecond(ms).unwrap();
        assert_eq!(window(t(1_000), t(91_700)), "90s");
        assert_eq!(window(t(5_000), t(4_000)), "0s");
    }
}
