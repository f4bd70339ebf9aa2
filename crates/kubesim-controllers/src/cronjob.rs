//! The CronJob controller: creates a Job for each scheduled time, honours
//! the concurrency policy and starting deadline, and trims finished Jobs
//! to the history limits.
//!
//! Time is read only from the clock: after each pass the CronJob is queued
//! again for exactly its next scheduled time, so in simulated time Jobs
//! appear at the exact minute.

use std::sync::Arc;
use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::Timestamp;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Change, DeleteOptions, EventType, ObjectKey, Requeue, ResourceRef, WorkQueue,
    WriteOptions,
};
use serde_json::{json, Map, Value};

use crate::job::jobs_ref;
use kubesim_gocompat::cron;

use crate::{conditions, pods, Context};

pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

pub fn cronjobs_ref() -> ResourceRef {
    ResourceRef::new("batch", "v1", "cronjobs")
}

/// The name of the CronJob controlling `obj`, if one does.
fn owning_cronjob(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("kind").and_then(Value::as_str) == Some("CronJob")
        })?
        .get("name")?
        .as_str()
}

/// "Complete" or "Failed" once a Job has finished.
fn finished(job: &Value) -> Option<&'static str> {
    let status = job.get("status")?;
    ["Complete", "Failed"]
        .into_iter()
        .find(|k| conditions::is_true(status, k))
}

/// RFC 3339 in the schedule's zone, `Z` for UTC as Go prints it.
fn format_in_zone(t: Timestamp, tz: &TimeZone) -> String {
    let z = t.to_zoned(tz.clone());
    if z.offset().seconds() == 0 {
        meta::format_time(t)
    } else {
        z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

fn job_reference(job: &Value) -> Value {
    json!({
        "kind": "Job",
        "namespace": meta::namespace(job),
        "name": meta::name(job),
        "uid": meta::uid(job),
        "apiVersion": "batch/v1",
        "resourceVersion": meta::resource_version(job),
    })
}

/// The Job a CronJob creates for `scheduled`.
pub fn job_for(cj: &Value, scheduled: Timestamp, tz: &TimeZone) -> Value {
    let name = format!("{}-{}", meta::name(cj), scheduled.as_second() / 60);
    let tmeta = cj
        .pointer("/spec/jobTemplate/metadata")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut m = Map::new();
    m.insert("name".into(), json!(name));
    m.insert("namespace".into(), json!(meta::namespace(cj)));
    if let Some(l) = tmeta.get("labels") {
        m.insert("labels".into(), l.clone());
    }
    let mut annotations = tmeta
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP.into(),
        json!(format_in_zone(scheduled, tz)),
    );
    m.insert("annotations".into(), Value::Object(annotations));
    m.insert("ownerReferences".into(), json!([pods::controller_ref(cj)]));
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": Value::Object(m),
        "spec": cj.pointer("/spec/jobTemplate/spec").cloned().unwrap_or_else(|| json!({})),
    })
}

pub struct CronJobController {
    ctx: Arc<Context>,
    queue: Arc<WorkQueue<ObjectKey>>,
}

impl CronJobController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Arc::new(CronJobController {
            queue: WorkQueue::new(ctx.clock.clone()),
            ctx,
        })
    }

    pub async fn run(self: Arc<Self>) {
        let cjs = self.ctx.informers.get(&cronjobs_ref());
        let jobs = self.ctx.informers.get(&jobs_ref());
        let q = self.queue.clone();
        cjs.on_change(move |c| {
            if !matches!(c, Change::Deleted(_)) {
                q.add(ObjectKey::of(c.object()))
            }
        });
        let q = self.queue.clone();
        jobs.on_change(move |c| {
            let o = c.object();
            if let Some(cj) = owning_cronjob(o) {
                q.add(ObjectKey::new(meta::namespace(o), cj));
            }
        });
        cjs.wait_synced().await;
        jobs.wait_synced().await;
        let me = self.clone();
        run_workers(self.queue.clone(), 2, "cronjob", move |key| {
            let me = me.clone();
            async move { me.reconcile(key).await }
        })
        .await;
    }

    async fn reconcile(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(cj) = self
            .ctx
            .informers
            .get(&cronjobs_ref())
            .cache()
            .get(&key.namespace, &key.name)
        else {
            return Ok(None);
        };
        let cj = (*cj).clone();
        let uid = meta::uid(&cj).to_string();
        let now = self.ctx.clock.now();
        let job_cache = self.ctx.informers.get(&jobs_ref()).cache();
        let mut jobs: Vec<Arc<Value>> = job_cache
            .list_namespace(&key.namespace)
            .into_iter()
            .filter(|j| pods::is_controlled_by(j, &uid))
            .collect();
        let old_status = cj.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut status = old_status.clone();
        let was_active: Vec<String> = status
            .get("active")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.get("uid").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        // A Job this controller just created may not be cached yet: keep
        // it if the server still has it.
        for r in old_status
            .get("active")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let (Some(name), Some(juid)) = (
                r.get("name").and_then(Value::as_str),
                r.get("uid").and_then(Value::as_str),
            ) else {
                continue;
            };
            if jobs.iter().any(|j| meta::uid(j) == juid) {
                continue;
            }
            match self.ctx.api.get(&jobs_ref(), &key.namespace, name).await {
                Ok(j) if meta::uid(&j) == juid => jobs.push(Arc::new(j)),
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }

        let mut active = Vec::new();
        let mut last_success = status
            .get("lastSuccessfulTime")
            .and_then(Value::as_str)
            .and_then(meta::parse_time);
        for j in &jobs {
            match finished(j) {
                None => {
                    if !meta::is_deleting(j) {
                        active.push(j.clone());
                    }
                }
                Some(how) => {
                    if was_active.iter().any(|u| u == meta::uid(j)) {
                        self.ctx.recorder.record(
                            &cj,
                            EventType::Normal,
                            "SawCompletedJob",
                            format!("Saw completed job: {}, condition: {how}", meta::name(j)),
                        );
                    }
                    if how == "Complete" {
                        let t = j
                            .pointer("/status/completionTime")
                            .and_then(Value::as_str)
                            .and_then(meta::parse_time);
                        if t > last_success {
                            last_success = t;
                        }
                    }
                }
            }
        }
        if let Some(t) = last_success {
            status["lastSuccessfulTime"] = json!(meta::format_time(t));
        }
        self.trim_history(&cj, &jobs).await?;

        let mut requeue = None;
        let suspended = cj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        if !suspended && !meta::is_deleting(&cj) {
            requeue = self.schedule(&cj, &mut status, &mut active, now).await?;
        }
        let refs: Vec<Value> = active.iter().map(|j| job_reference(j)).collect();
        if refs.is_empty() {
            if let Some(m) = status.as_object_mut() {
                m.remove("active");
            }
        } else {
            status["active"] = json!(refs);
        }
        if status != old_status {
            let mut cj = cj;
            cj["status"] = status;
            self.ctx
                .api
                .update(
                    &cronjobs_ref(),
                    &key.namespace,
                    cj,
                    Some("status"),
                    &WriteOptions::default(),
                )
                .await?;
        }
        Ok(requeue)
    }

    /// Starts the Job for the latest due time, if any; returns the delay
    /// until the next scheduled time.
    async fn schedule(
        &self,
        cj: &Value,
        status: &mut Value,
        active: &mut Vec<Arc<Value>>,
        now: Timestamp,
    ) -> Result<Requeue, ApiError> {
        let spec = cj
            .pointer("/spec/schedule")
            .and_then(Value::as_str)
            .unwrap_or("");
        let sched = match cron::parse(spec) {
            Ok(s) => s,
            Err(e) => {
                self.ctx.recorder.record(
                    cj,
                    EventType::Warning,
                    "UnparseableSchedule",
                    format!("unparseable schedule: {spec:?} : {e}"),
                );
                return Ok(None);
            }
        };
        let tz = match cj.pointer("/spec/timeZone").and_then(Value::as_str) {
            None => TimeZone::UTC,
            Some(name) => match TimeZone::get(name) {
                Ok(tz) => tz,
                Err(_) => {
                    self.ctx.recorder.record(
                        cj,
                        EventType::Warning,
                        "UnknownTimeZone",
                        format!("invalid timeZone: {name:?}"),
                    );
                    return Ok(None);
                }
            },
        };
        let until_next = |now: Timestamp| {
            sched
                .next(now, &tz)
                .and_then(|n| Duration::try_from(n.duration_since(now)).ok())
        };
        let created = cj
            .pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .and_then(meta::parse_time)
            .unwrap_or(now);
        let mut earliest = status
            .get("lastScheduleTime")
            .and_then(Value::as_str)
            .and_then(meta::parse_time)
            .unwrap_or(created);
        let deadline = cj
            .pointer("/spec/startingDeadlineSeconds")
            .and_then(Value::as_i64);
        if let Some(d) = deadline {
            let limit = now - jiff::SignedDuration::from_secs(d.max(0));
            if limit > earliest {
                earliest = limit;
            }
        }
        let (due, missed) = sched.most_recent(earliest, now, &tz);
        let Some(due) = due else {
            return Ok(until_next(now));
        };
        if missed > 100 {
            self.ctx.recorder.record(
                cj,
                EventType::Warning,
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
            );
        }
        if let Some(d) = deadline {
            if due + jiff::SignedDuration::from_secs(d.max(0)) < now {
                self.ctx.recorder.record(
                    cj,
                    EventType::Warning,
                    "MissSchedule",
                    format!(
                        "Missed scheduled time to start a job: {}",
                        meta::format_time(due)
                    ),
                );
                return Ok(until_next(now));
            }
        }
        let job = job_for(cj, due, &tz);
        let job_name = meta::name(&job).to_string();
        if active.iter().any(|j| meta::name(j) == job_name) {
            status["lastScheduleTime"] = json!(meta::format_time(due));
            return Ok(until_next(now));
        }
        let ns = meta::namespace(cj).to_string();
        match cj
            .pointer("/spec/concurrencyPolicy")
            .and_then(Value::as_str)
        {
            Some("Forbid") if !active.is_empty() => {
                self.ctx.recorder.record(
                    cj,
                    EventType::Normal,
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid",
                );
                return Ok(until_next(now));
            }
            Some("Replace") => {
                for j in active.drain(..) {
                    let opts = DeleteOptions {
                        propagation_policy: Some("Background".into()),
                        precondition_uid: Some(meta::uid(&j).to_string()),
                        ..Default::default()
                    };
                    match self
                        .ctx
                        .api
                        .delete(&jobs_ref(), &ns, meta::name(&j), &opts)
                        .await
                    {
                        Ok(_)
                        | Err(ApiError {
                            code: 404 | 409, ..
                        }) => {}
                        Err(e) => return Err(e),
                    }
                    self.ctx.recorder.record(
                        cj,
                        EventType::Normal,
                        "SuccessfulDelete",
                        format!("Deleted job {}", meta::name(&j)),
                    );
                }
            }
            _ => {}
        }
        let created = match self
            .ctx
            .api
            .create(&jobs_ref(), &ns, job, &WriteOptions::default())
            .await
        {
            Ok(j) => {
                self.ctx.recorder.record(
                    cj,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created job {job_name}"),
                );
                j
            }
            // Made by an earlier pass whose status write was lost.
            Err(e) if e.code == 409 => {
                let j = self.ctx.api.get(&jobs_ref(), &ns, &job_name).await?;
                if !pods::is_controlled_by(&j, meta::uid(cj)) {
                    return Err(e);
                }
                j
            }
            Err(e) => {
                self.ctx.recorder.record(
                    cj,
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating job: {}", e.message),
                );
                return Err(e);
            }
        };
        if finished(&created).is_none() {
            active.push(Arc::new(created));
        }
        status["lastScheduleTime"] = json!(meta::format_time(due));
        Ok(until_next(now))
    }

    /// Deletes the oldest finished Jobs beyond the history limits.
    async fn trim_history(&self, cj: &Value, jobs: &[Arc<Value>]) -> Result<(), ApiError> {
        for (how, field, default) in [
            ("Complete", "successfulJobsHistoryLimit", 3),
            ("Failed", "failedJobsHistoryLimit", 1),
        ] {
            let limit = cj
                .pointer(&format!("/spec/{field}"))
                .and_then(Value::as_i64)
                .unwrap_or(default)
                .max(0) as usize;
            let mut done: Vec<&Arc<Value>> = jobs
                .iter()
                .filter(|j| finished(j) == Some(how) && !meta::is_deleting(j))
                .collect();
            if done.len() <= limit {
                continue;
            }
            // Oldest first, by start time then name.
            done.sort_by_key(|j| {
                (
                    j.pointer("/status/startTime")
                        .and_then(Value::as_str)
                        .and_then(meta::parse_time),
                    meta::name(j).to_string(),
                )
            });
            let excess = done.len() - limit;
            for j in done.into_iter().take(excess) {
                let opts = DeleteOptions {
                    propagation_policy: Some("Background".into()),
                    precondition_uid: Some(meta::uid(j).to_string()),
                    ..Default::default()
                };
                match self
                    .ctx
                    .api
                    .delete(&jobs_ref(), meta::namespace(j), meta::name(j), &opts)
                    .await
                {
                    Ok(_) => self.ctx.recorder.record(
                        cj,
                        EventType::Normal,
                        "SuccessfulDelete",
                        format!("Deleted job {}", meta::name(j)),
                    ),
                    Err(e) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_named_by_minute_and_stamped() {
        let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "ns", "uid": "u1"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"template": {"spec": {"containers": []}}}}}});
        let t: Timestamp = "2026-01-01T00:01:00Z".parse().unwrap();
        let j = job_for(&cj, t, &TimeZone::UTC);
        // 2026-01-01T00:01:00Z is 1767225660 s = 29453761 minutes.
        assert_eq!(j["metadata"]["name"], "hello-29453761");
        assert_eq!(
            j["metadata"]["annotations"][SCHEDULED_TIMESTAMP],
            "2026-01-01T00:01:00Z"
        );
        assert_eq!(j["metadata"]["labels"]["app"], "x");
        assert!(pods::is_controlled_by(&j, "u1"));
        let ny = TimeZone::get("America/New_York").unwrap();
        let j = job_for(&cj, t, &ny);
        assert_eq!(
            j["metadata"]["annotations"][SCHEDULED_TIMESTAMP],
            "2025-12-31T19:01:00-05:00"
        );
    }
}
