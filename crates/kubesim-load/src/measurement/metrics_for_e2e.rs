//! MetricsForE2E, as TestMetrics runs it at gather: one scrape of the API
//! server's `/metrics`, written as `MetricsForE2E` with the samples of each
//! family under `ApiServerMetrics` (in the shape of Prometheus' model
//! samples: the labels with `__name__`, and `[seconds, "value"]`).
//!
//! ClusterLoader2 also scrapes the scheduler, controller-manager and
//! kubelets when it can reach them; kubesim serves those components'
//! metrics nowhere, so those sections are left out rather than filled.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::report::Summary;

use super::prometheus::{format_value, parse};
use super::{Ctx, MeasurementError};

pub const NAME: &str = "MetricsForE2E";

pub async fn gather(ctx: &Ctx) -> Result<Summary, MeasurementError> {
    let text =
        ctx.cluster.get_text("/metrics").await.map_err(|e| {
            MeasurementError::failed(format!("{NAME}: GET /metrics: {}", e.message))
        })?;
    let scrape =
        parse(&text).map_err(|e| MeasurementError::failed(format!("{NAME}: /metrics: {e}")))?;
    let now = ctx.clock.now();
    let seconds = now.as_millisecond() as f64 / 1000.0;
    let mut families: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for s in scrape.samples {
        let mut metric = serde_json::Map::new();
        metric.insert("__name__".into(), json!(s.name));
        for (k, v) in &s.labels {
            metric.insert(k.clone(), json!(v));
        }
        families
            .entry(s.name.clone())
            .or_default()
            .push(json!({"metric": metric, "value": [seconds, format_value(s.value)]}));
    }
    Ok(Summary::json(
        NAME,
        now,
        &json!({ "ApiServerMetrics": families }),
    ))
}
