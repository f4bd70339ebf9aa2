//! JobLifecycleLatency: `start` watches the selected Jobs and notes, for
//! each, the times the Job itself records: `creationTimestamp`,
//! `status.startTime` and `status.completionTime`. `gather` waits (up to
//! `timeout`) until every Job seen has completed, then reports the
//! percentiles of create→start and start→complete as
//! `JobLifecycleLatency_<Identifier>` PerfData.
//!
//! The times are the Job controller's, with the API's one-second
//! precision, so they are the same whatever the watcher's delay.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kubesim_runtime::Change;
use parking_lot::Mutex;
use serde_json::Value;

use crate::params::{self, Params};
use crate::report::{PerfData, Summary};

use super::informer_pool::Subscription;
use super::jobs::{self, key, CHECK_INTERVAL, DEFAULT_TIMEOUT};
use super::latency::LatencyMetric;
use super::wait_pods::PodSelector;
use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "JobLifecycleLatency";

/// The first value seen of each of a Job's three times.
#[derive(Debug, Clone, Default)]
struct JobTimes {
    created: Option<Timestamp>,
    started: Option<Timestamp>,
    completed: Option<Timestamp>,
}

type Records = Arc<Mutex<BTreeMap<String, JobTimes>>>;

struct Running {
    records: Records,
    _subscription: Subscription,
}

#[derive(Default)]
pub struct JobLifecycleLatency {
    running: Option<Running>,
}

#[async_trait::async_trait]
impl Measurement for JobLifecycleLatency {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => self.start(ctx, p).await.map(|()| Vec::new()),
            "gather" => {
                let timeout = params::duration_or(p, "timeout", DEFAULT_TIMEOUT)?;
                self.gather(ctx, identifier, timeout).await
            }
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}

fn time_at(job: &Value, pointer: &str) -> Option<Timestamp> {
    job.pointer(pointer)?.as_str()?.parse().ok()
}

fn record(records: &Records, change: &Change) {
    let job = match change {
        Change::Added(j) | Change::Modified { new: j, .. } => j,
        // A deleted Job keeps what was seen of it.
        Change::Deleted(_) => return,
    };
    let mut all = records.lock();
    let t = all.entry(key(job)).or_default();
    t.created = t
        .created
        .or_else(|| time_at(job, "/metadata/creationTimestamp"));
    t.started = t.started.or_else(|| time_at(job, "/status/startTime"));
    t.completed = t
        .completed
        .or_else(|| time_at(job, "/status/completionTime"));
}

/// The latencies of one transition over the Jobs that made it; a later
/// time before an earlier one (clock skew between writers) counts as 0.
fn transition(
    records: &BTreeMap<String, JobTimes>,
    from: fn(&JobTimes) -> Option<Timestamp>,
    to: fn(&JobTimes) -> Option<Timestamp>,
) -> LatencyMetric {
    let samples = records
        .values()
        .filter_map(|t| Some((from(t)?, to(t)?)))
        .map(|(a, b)| Duration::try_from(b.duration_since(a)).unwrap_or_default())
        .collect();
    LatencyMetric::of(samples)
}

impl JobLifecycleLatency {
    async fn start(&mut self, ctx: &Ctx, p: &Params) -> Result<(), MeasurementError> {
        if self.running.is_some() {
            return Ok(());
        }
        let sel = PodSelector::parse(p)?;
        let records: Records = Arc::default();
        let r = records.clone();
        let subscription = jobs::start_informer(ctx, METHOD, &sel, move |c| record(&r, c)).await?;
        self.running = Some(Running {
            records,
            _subscription: subscription,
        });
        Ok(())
    }

    async fn gather(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        timeout: Duration,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let run = self.running.take().ok_or_else(|| {
            MeasurementError::failed(format!("metric {METHOD} has not been started"))
        })?;
        let all_completed = || {
            let r = run.records.lock();
            r.values().filter(|t| t.created.is_some()).count()
                == r.values().filter(|t| t.completed.is_some()).count()
        };
        let deadline = ctx.clock.instant() + timeout;
        // As upstream, a timeout is no error: the Jobs seen are reported.
        while !all_completed() && ctx.clock.instant() < deadline {
            let next = (ctx.clock.instant() + CHECK_INTERVAL).min(deadline);
            ctx.clock.sleep_until(next).await;
        }
        if !all_completed() {
            tracing::warn!("{METHOD}: not every Job completed within {timeout:?}");
        }
        let records = run.records.lock().clone();
        // Sorted by name, as the data items of a Go map are not ordered.
        let perf = PerfData {
            version: "1.0".into(),
            data_items: vec![
                transition(&records, |t| t.created, |t| t.started).to_data_item("create_to_start"),
                transition(&records, |t| t.started, |t| t.completed)
                    .to_data_item("start_to_complete"),
            ],
        };
        Ok(vec![Summary::json(
            format!("{METHOD}_{identifier}"),
            ctx.clock.now(),
            &perf,
        )])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    #[tokio::test(start_paused = true)]
    async fn reports_create_to_start_and_start_to_complete() {
        let (ctx, api) = ctx().await;
        let mut m = JobLifecycleLatency::default();
        let start = params(json!({"action": "start", "labelSelector": "group=test-job"}));
        m.execute(&ctx, "J", &start).await.unwrap();
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "labels": {"group": "test-job"}},
            "spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "i"}]}}}
        });
        let created = create(&api, &jobs::jobs(), "default", job).await;
        let c: Timestamp = created["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let at = |s: i64| kubesim_core::meta::format_time(c + jiff::SignedDuration::from_secs(s));
        patch_status_of(
            &api,
            &jobs::jobs(),
            "default",
            "j",
            json!({"startTime": at(2)}),
        )
        .await;
        patch_status_of(
            &api,
            &jobs::jobs(),
            "default",
            "j",
            json!({"completionTime": at(32), "conditions": [{"type": "Complete", "status": "True"}]}),
        )
        .await;
        ctx.clock.sleep(Duration::from_secs(1)).await;
        let gather = params(json!({"action": "gather", "timeout": "10s"}));
        let s = m.execute(&ctx, "J", &gather).await.unwrap();
        assert_eq!(s.len(), 1);
        assert!(s[0].name == "JobLifecycleLatency_J");
        let v: Value = serde_json::from_str(&s[0].content).unwrap();
        let items = v["dataItems"].as_array().unwrap();
        assert_eq!(items[0]["labels"]["Metric"], "create_to_start");
        assert_eq!(items[0]["data"]["Perc99"], 2000.0);
        assert_eq!(items[1]["labels"]["Metric"], "start_to_complete");
        assert_eq!(items[1]["data"]["Perc50"], 30000.0);
        // Gather stops the measurement.
        assert!(m.execute(&ctx, "J", &gather).await.is_err());
    }
}
