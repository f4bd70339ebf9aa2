//! SchedulingThroughputPrometheus: the highest rate of pod bindings over
//! the measured window, from the API server's request counter on the
//! run's Prometheus.
//!
//! As in ClusterLoader2: `start` notes the time; `gather` asks for the
//! highest one-minute rate of `POST pods/binding` answered 201, sampled
//! every 5 s over the window, and writes a summary `{"max": ...}`. A
//! `threshold` above that maximum is a violation when `enableViolations`
//! is set. kubesim counts its built-in scheduler's bindings as a real
//! scheduler's requests, so the query sees them.

use serde::Serialize;

use crate::params::{self, Params};
use crate::report::Summary;

use super::prometheus_method::{Gatherer, PrometheusMethod, Window};
use super::MeasurementError;

pub const NAME: &str = "SchedulingThroughputPrometheus";
const QUERY: &str = r#"max_over_time(sum(irate(apiserver_request_total{verb="POST", resource="pods", subresource="binding",code="201"}[1m]))[%v:5s])"#;

/// The binding rate query and its threshold.
#[derive(Default)]
pub struct ThroughputQuery;

pub type SchedulingThroughputPrometheus = PrometheusMethod<ThroughputQuery>;

#[derive(Debug, Serialize)]
struct Throughput {
    max: f64,
}

fn bad(message: impl std::fmt::Display) -> MeasurementError {
    MeasurementError::failed(format!("{NAME}: {message}"))
}

#[async_trait::async_trait]
impl Gatherer for ThroughputQuery {
    const NAME: &'static str = NAME;

    async fn gather(
        &mut self,
        window: &Window<'_>,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let enable_violations = params::bool_or(p, "enableViolations", false)?;
        let threshold = params::float_or(p, "threshold", 0.0)?;
        let samples = window.query("query", QUERY).await?;
        if samples.len() != 1 {
            return Err(bad(format!(
                "got unexpected number of samples: {}",
                samples.len()
            )));
        }
        let max = samples[0].value;
        let summary = Summary::json(NAME, window.end, &Throughput { max });
        if threshold > 0.0 && max < threshold && enable_violations {
            return Err(MeasurementError::violation(
                format!(
                    "scheduler throughput_prometheus: actual throughput {max:.6} lower than threshold {threshold:.6}"
                ),
                vec![summary],
            ));
        }
        Ok(vec![summary])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::measurement::test_support::{ctx, sample, Canned};
    use crate::measurement::{ErrorKind, Measurement};

    fn params(v: serde_json::Value) -> Params {
        v.as_object().unwrap().clone()
    }

    async fn gather(
        values: Vec<f64>,
        gather: serde_json::Value,
    ) -> (Result<Vec<Summary>, MeasurementError>, Vec<String>) {
        let answer = Canned::always(values.into_iter().map(|v| sample(&[], v)).collect());
        let (mut c, _api) = ctx().await;
        c.prometheus = Some(answer.clone());
        let mut m = SchedulingThroughputPrometheus::default();
        m.execute(&c, "t", &params(json!({"action": "start"})))
            .await
            .unwrap();
        c.clock.sleep(std::time::Duration::from_secs(90)).await;
        let out = m.execute(&c, "t", &params(gather)).await;
        let asked = answer.queries();
        (out, asked)
    }

    #[tokio::test(start_paused = true)]
    async fn the_window_is_the_measured_time_and_the_summary_its_maximum() {
        let (out, asked) = gather(vec![42.5], json!({"action": "gather"})).await;
        let summaries = out.unwrap();
        assert_eq!(summaries.len(), 1);
        assert_eq!(asked.len(), 1);
        assert!(asked[0].ends_with("[90s:5s])"), "{}", asked[0]);
        assert!(asked[0].contains(r#"subresource="binding""#));
    }

    #[tokio::test(start_paused = true)]
    async fn below_the_threshold_is_a_violation_only_when_enabled() {
        let g = json!({"action": "gather", "threshold": 50, "enableViolations": true});
        let e = gather(vec![42.5], g).await.0.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Violation);
        assert_eq!(
            e.message,
            "scheduler throughput_prometheus: actual throughput 42.500000 lower than threshold 50.000000"
        );
        let quiet = json!({"action": "gather", "threshold": 50});
        assert!(gather(vec![42.5], quiet).await.0.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn anything_but_one_sample_is_an_error() {
        let e = gather(vec![], json!({"action": "gather"}))
            .await
            .0
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
        assert_eq!(
            e.message,
            "SchedulingThroughputPrometheus: got unexpected number of samples: 0"
        );
    }
}
