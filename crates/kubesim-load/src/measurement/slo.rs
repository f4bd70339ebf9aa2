//! SLOMeasurement: ClusterLoader2 runs DnsLookupLatency and
//! SchedulingThroughputPrometheus under one name, each with its own
//! `overrides`. On emulated nodes the first has nothing to measure, and
//! the second is a PromQL query kubesim does not run yet; both are
//! skipped, so the call is.

use crate::params::Params;
use crate::report::Summary;

use super::{Ctx, Measurement, MeasurementError, NEEDS_PROMETHEUS, NOT_APPLICABLE};

pub struct SloMeasurement;

#[async_trait::async_trait]
impl Measurement for SloMeasurement {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        // A malformed `overrides` is still an error, as upstream.
        if let Some(o) = p.get("overrides") {
            if !o.is_object() {
                return Err(MeasurementError::failed(
                    "SLOMeasurement: parameter \"overrides\" must be a map",
                ));
            }
        }
        let prometheus = if ctx.prometheus.is_some() {
            super::skipped::NOT_ON_PROMETHEUS_YET
        } else {
            NEEDS_PROMETHEUS
        };
        Err(MeasurementError::skipped(format!(
            "DnsLookupLatency: {NOT_APPLICABLE}; SchedulingThroughputPrometheus: {prometheus}"
        )))
    }
}
