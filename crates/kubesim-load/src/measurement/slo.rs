//! SLOMeasurement: ClusterLoader2 runs DnsLookupLatency and
//! SchedulingThroughputPrometheus under one name, each with the call's
//! parameters overridden by its entry in `overrides`. On emulated nodes
//! the first has nothing to measure and is skipped; the second runs on the
//! run's Prometheus. With no Prometheus both are skipped, so the call is.

use crate::params::Params;
use crate::report::Summary;

use super::scheduling_throughput_prometheus::{self as throughput, SchedulingThroughputPrometheus};
use super::{Ctx, ErrorKind, Measurement, MeasurementError, NEEDS_PROMETHEUS, NOT_APPLICABLE};

#[derive(Default)]
pub struct SloMeasurement {
    throughput: SchedulingThroughputPrometheus,
}

/// The call's parameters with `method`'s overrides laid over them.
fn overridden(p: &Params, method: &str) -> Result<Params, MeasurementError> {
    let mut out = p.clone();
    let Some(o) = p.get("overrides") else {
        return Ok(out);
    };
    // A malformed `overrides` is an error, as upstream.
    let Some(o) = o.as_object() else {
        return Err(MeasurementError::failed(
            "SLOMeasurement: parameter \"overrides\" must be a map",
        ));
    };
    match o.get(method) {
        None => {}
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                out.insert(k.clone(), v.clone());
            }
        }
        Some(_) => {
            return Err(MeasurementError::failed(format!(
                "SLOMeasurement: overrides of {method} must be a map"
            )))
        }
    }
    Ok(out)
}

#[async_trait::async_trait]
impl Measurement for SloMeasurement {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        overridden(p, "DnsLookupLatency")?;
        let dns = format!("DnsLookupLatency: {NOT_APPLICABLE}");
        if ctx.prometheus.is_none() {
            return Err(MeasurementError::skipped(format!(
                "{dns}; {}: {NEEDS_PROMETHEUS}",
                throughput::NAME
            )));
        }
        let params = overridden(p, throughput::NAME)?;
        match self.throughput.execute(ctx, identifier, &params).await {
            Ok(summaries) => Err(MeasurementError::partial(dns, summaries)),
            Err(e) if e.kind == ErrorKind::Skipped => Err(MeasurementError::skipped(format!(
                "{dns}; {}: {}",
                throughput::NAME,
                e.message
            ))),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::measurement::test_support::{ctx, sample, Canned};

    fn params(v: serde_json::Value) -> Params {
        v.as_object().unwrap().clone()
    }

    #[tokio::test(start_paused = true)]
    async fn without_prometheus_both_parts_are_skipped() {
        let (c, _api) = ctx().await;
        let mut m = SloMeasurement::default();
        let e = m
            .execute(&c, "slo", &params(json!({"action": "start"})))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Skipped);
        assert!(e.message.starts_with("DnsLookupLatency: "), "{}", e.message);
        assert!(e
            .message
            .contains("SchedulingThroughputPrometheus: needs Prometheus"));
    }

    #[tokio::test(start_paused = true)]
    async fn the_throughput_part_runs_with_its_overrides() {
        let (mut c, _api) = ctx().await;
        c.prometheus = Some(Canned::always(vec![sample(&[], 40.0)]));
        let mut m = SloMeasurement::default();
        let start = m
            .execute(&c, "slo", &params(json!({"action": "start"})))
            .await
            .unwrap_err();
        assert_eq!(start.kind, ErrorKind::Partial);
        assert!(start.summaries.is_empty());
        // The override's threshold applies to the throughput part only.
        let gather = json!({"action": "gather", "enableViolations": true,
            "overrides": {"SchedulingThroughputPrometheus": {"threshold": 50}}});
        let e = m.execute(&c, "slo", &params(gather)).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Violation);
        assert!(
            e.message.contains("lower than threshold 50.000000"),
            "{}",
            e.message
        );
        let ok = json!({"action": "gather",
            "overrides": {"SchedulingThroughputPrometheus": {"threshold": 30}}});
        let e = m.execute(&c, "slo", &params(ok)).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Partial);
        assert_eq!(e.summaries.len(), 1);
        assert!(e.message.starts_with("DnsLookupLatency: "), "{}", e.message);
    }

    #[tokio::test(start_paused = true)]
    async fn malformed_overrides_are_errors() {
        let (c, _api) = ctx().await;
        let mut m = SloMeasurement::default();
        let e = m
            .execute(
                &c,
                "slo",
                &params(json!({"action": "start", "overrides": 5})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
    }
}
