//! WaitForFinishedJobs: `start` watches the selected Jobs; `gather` waits
//! until every Job that exists then has finished (condition Complete or
//! Failed), and fails naming the ones that did not within `timeout`.
//!
//! A Job seen finished stays finished even if it is deleted afterwards,
//! as upstream's informer keeps it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_gocompat::duration::format_std;
use kubesim_runtime::Change;
use parking_lot::Mutex;

use crate::params::{self, Params};
use crate::report::Summary;

use super::informer_pool::Subscription;
use super::jobs::{self, finished_condition, key, CHECK_INTERVAL, DEFAULT_TIMEOUT};
use super::wait_pods::PodSelector;
use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "WaitForFinishedJobs";

/// Job key → its terminal condition (`Complete` or `Failed`).
type Finished = Arc<Mutex<BTreeMap<String, String>>>;

struct Running {
    finished: Finished,
    /// Its handler on the shared informer; dropping it lets go.
    jobs: Subscription,
}

#[derive(Default)]
pub struct WaitForFinishedJobs {
    running: Option<Running>,
}

#[async_trait::async_trait]
impl Measurement for WaitForFinishedJobs {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => self.start(ctx, p).await.map(|()| Vec::new()),
            "gather" => {
                let timeout = params::duration_or(p, "timeout", DEFAULT_TIMEOUT)?;
                self.gather(ctx, timeout).await.map(|()| Vec::new())
            }
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}

impl WaitForFinishedJobs {
    async fn start(&mut self, ctx: &Ctx, p: &Params) -> Result<(), MeasurementError> {
        if self.running.is_some() {
            // A second start keeps the first watch, as upstream.
            return Ok(());
        }
        let sel = PodSelector::parse(p)?;
        let finished: Finished = Arc::default();
        let f = finished.clone();
        let jobs = jobs::start_informer(ctx, METHOD, &sel, move |c| {
            let job = match c {
                Change::Added(j) | Change::Modified { new: j, .. } | Change::Deleted(j) => j,
            };
            if let Some(cond) = finished_condition(job) {
                f.lock().insert(key(job), cond.to_string());
            }
        })
        .await?;
        self.running = Some(Running { finished, jobs });
        Ok(())
    }

    async fn gather(
        &mut self,
        ctx: &Ctx,
        timeout: std::time::Duration,
    ) -> Result<(), MeasurementError> {
        let run = self.running.as_ref().ok_or_else(|| {
            MeasurementError::failed(format!("{METHOD}: wait for finished jobs was not started"))
        })?;
        // The Jobs to wait for are those that exist when gather begins.
        let expected: BTreeSet<String> = run
            .jobs
            .informer()
            .cache()
            .list()
            .iter()
            .map(|j| key(j))
            .collect();
        let pending = |finished: &Finished| -> Vec<String> {
            let f = finished.lock();
            expected
                .iter()
                .filter(|k| !f.contains_key(*k))
                .cloned()
                .collect()
        };
        let deadline = ctx.clock.instant() + timeout;
        // Upstream polls first after one interval; an already finished set
        // is seen at once here, which changes no outcome.
        while !pending(&run.finished).is_empty() && ctx.clock.instant() < deadline {
            let next = (ctx.clock.instant() + CHECK_INTERVAL).min(deadline);
            ctx.clock.sleep_until(next).await;
        }
        let late = pending(&run.finished);
        if !late.is_empty() {
            return Err(MeasurementError::failed(format!(
                "{} Jobs timed out after {}: {}",
                late.len(),
                format_std(timeout),
                late.join(", ")
            )));
        }
        let f = run.finished.lock();
        let failed = expected
            .iter()
            .filter(|k| f.get(*k).map(String::as_str) == Some("Failed"))
            .count();
        tracing::info!(
            "{METHOD}: {}/{} Jobs finished, {} completed, {failed} failed",
            expected.len(),
            expected.len(),
            expected.len() - failed
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::*;
    use serde_json::{json, Value};
    use std::time::Duration;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    fn job(name: &str, group: &str) -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "labels": {"group": group}},
            "spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "i"}]}}}
        })
    }

    async fn finish(api: &Arc<dyn kubesim_runtime::Api>, name: &str, cond: &str) {
        patch_status_of(
            api,
            &jobs::jobs(),
            "default",
            name,
            json!({"conditions": [{"type": cond, "status": "True"}]}),
        )
        .await;
    }

    #[tokio::test(start_paused = true)]
    async fn waits_for_every_selected_job_and_names_the_late_ones() {
        let (ctx, api) = ctx().await;
        let mut m = WaitForFinishedJobs::default();
        let start = params(json!({"action": "start", "labelSelector": "group = test-job"}));
        m.execute(&ctx, "w", &start).await.unwrap();
        for n in ["a", "b"] {
            create(&api, &jobs::jobs(), "default", job(n, "test-job")).await;
        }
        // Not selected: never waited for.
        create(&api, &jobs::jobs(), "default", job("other", "x")).await;
        finish(&api, "a", "Complete").await;
        ctx.clock.sleep(Duration::from_secs(1)).await;
        let gather = params(json!({"action": "gather", "timeout": "5s"}));
        let err = m.execute(&ctx, "w", &gather).await.unwrap_err();
        assert_eq!(err.message, "1 Jobs timed out after 5s: default/b");
        finish(&api, "b", "Failed").await;
        ctx.clock.sleep(Duration::from_secs(1)).await;
        m.execute(&ctx, "w", &gather).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn gather_needs_start_and_actions_are_checked() {
        let (ctx, _api) = ctx().await;
        let mut m = WaitForFinishedJobs::default();
        let err = m
            .execute(&ctx, "w", &params(json!({"action": "gather"})))
            .await
            .unwrap_err();
        assert!(err.message.contains("was not started"), "{}", err.message);
        let err = m
            .execute(&ctx, "w", &params(json!({"action": "stop"})))
            .await
            .unwrap_err();
        assert!(err.message.contains("unknown action"), "{}", err.message);
        assert!(m.execute(&ctx, "w", &Params::new()).await.is_err());
    }
}
