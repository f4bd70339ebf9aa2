//! Timer: `start` and `stop` a timer named by `label`; `gather` reports
//! every stopped timer in seconds as PerfData (`unit: "s"`, labels
//! `{test: phases}`), under the summary name `Timer`.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::{Ctx, Measurement, MeasurementError};
use crate::params::{self, Params};
use crate::report::{DataItem, PerfData, Summary};

#[derive(Default)]
pub struct Timer {
    started: BTreeMap<String, Instant>,
    durations: BTreeMap<String, Duration>,
}

#[async_trait::async_trait]
impl Measurement for Timer {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => {
                let label = params::required_string(p, "label")?;
                self.started.insert(label, ctx.clock.instant());
                Ok(Vec::new())
            }
            "stop" => {
                let label = params::required_string(p, "label")?;
                let started = self.started.remove(&label).ok_or_else(|| {
                    MeasurementError::failed(format!("Timer: uninitialized timer {label}"))
                })?;
                let d = ctx.clock.instant().saturating_duration_since(started);
                tracing::info!("Timer: {label} - {d:?}");
                self.durations.insert(label, d);
                Ok(Vec::new())
            }
            "gather" => {
                let data = self
                    .durations
                    .iter()
                    .map(|(label, d)| (label.clone(), d.as_secs_f64()))
                    .collect();
                let perf = PerfData {
                    version: "v1".into(),
                    data_items: vec![DataItem {
                        data,
                        unit: "s".into(),
                        labels: BTreeMap::from([("test".to_string(), "phases".to_string())]),
                    }],
                };
                Ok(vec![Summary::json("Timer", ctx.clock.now(), &perf)])
            }
            other => Err(MeasurementError::unknown_action("Timer", other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn p(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test(start_paused = true)]
    async fn times_labels_on_the_clock() {
        let (ctx, _) = crate::measurement::test_support::ctx().await;
        let clock = ctx.clock.clone();
        let mut t = Timer::default();
        t.execute(&ctx, "t", &p(json!({"action": "start", "label": "create"})))
            .await
            .expect("start");
        clock.sleep(Duration::from_millis(2500)).await;
        t.execute(&ctx, "t", &p(json!({"action": "stop", "label": "create"})))
            .await
            .expect("stop");
        let err = t
            .execute(&ctx, "t", &p(json!({"action": "stop", "label": "delete"})))
            .await
            .expect_err("never started");
        assert!(err.message.contains("uninitialized timer delete"));
        assert!(t
            .execute(&ctx, "t", &p(json!({"action": "start"})))
            .await
            .is_err());

        let out = t
            .execute(&ctx, "t", &p(json!({"action": "gather"})))
            .await
            .expect("gather");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "Timer");
        let v: Value = serde_json::from_str(&out[0].content).expect("json");
        assert_eq!(
            v,
            json!({"version": "v1", "dataItems": [
                {"data": {"create": 2.5}, "unit": "s", "labels": {"test": "phases"}}
            ]})
        );
    }
}
