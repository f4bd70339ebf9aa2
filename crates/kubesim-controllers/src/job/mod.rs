//! The Job controller: runs pods until enough succeed (or too many fail, or
//! the deadline passes), counting each finished pod exactly once.
//!
//! Counting follows upstream's tracking with finalizers: every pod carries
//! the `batch.kubernetes.io/job-tracking` finalizer; a finished pod's uid is
//! first written to `status.uncountedTerminatedPods`, then its finalizer is
//! removed, then the uid moves into the `succeeded`/`failed` counters. A
//! crash between any two steps repeats at most the step that did not
//! finish, and nothing is counted twice or lost.

mod expectations;
mod failure_policy;
pub mod template;
mod ttl;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::selector::{LabelOp, LabelRequirement, LabelSelector};
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Change, DeleteOptions, EventType, ObjectKey, Requeue, ResourceRef, WorkQueue,
    WriteOptions,
};
use serde_json::{json, Value};

use crate::{conditions, pods, Context};
use expectations::Expectations;
use failure_policy::Verdict;
use template::{format_indexes, job_pod, parse_indexes, pod_index, JOB_NAME_LABEL};

pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

pub fn jobs_ref() -> ResourceRef {
    ResourceRef::new("batch", "v1", "jobs")
}

fn pods_ref() -> ResourceRef {
    ResourceRef::core("pods")
}

/// The name of the Job controlling `obj`, if a Job does.
pub fn owning_job(obj: &Value) -> Option<&str> {
    meta::pointer(obj, "/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| {
            r.get("controller").and_then(Value::as_bool) == Some(true)
                && r.get("kind").and_then(Value::as_str) == Some("Job")
                && r.get("apiVersion").and_then(Value::as_str) == Some("batch/v1")
        })?
        .get("name")?
        .as_str()
}

fn has_tracking(pod: &Value) -> bool {
    meta::finalizers(pod)
        .iter()
        .any(|f| f == TRACKING_FINALIZER)
}

/// How a pod ended, for counting: Some(true) succeeded, Some(false) failed
/// (a pod deleted before it succeeded counts as failed, as upstream's
/// default replacement policy has it), None still running.
fn outcome(pod: &Value) -> Option<bool> {
    match pods::phase(pod) {
        "Succeeded" => Some(true),
        "Failed" => Some(false),
        _ if meta::is_deleting(pod) => Some(false),
        _ => None,
    }
}

fn int(v: &Value, ptr: &str) -> Option<i64> {
    v.pointer(ptr).and_then(Value::as_i64)
}

fn uid_list(status: &Value, which: &str) -> BTreeSet<String> {
    status
        .pointer(&format!("/uncountedTerminatedPods/{which}"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub struct JobController {
    ctx: Arc<Context>,
    queue: Arc<WorkQueue<ObjectKey>>,
    expect: Expectations,
    /// Delete finished Jobs past `ttlSecondsAfterFinished` (upstream's
    /// ttl-after-finished-controller, done here on the same Jobs), through
    /// this context's Api.
    ttl_after_finished: Option<Arc<Context>>,
}

impl JobController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Self::new_with(ctx, true)
    }

    /// [`JobController::new`], deleting finished Jobs after their TTL only
    /// when `ttl_after_finished`.
    pub fn new_with(ctx: Arc<Context>, ttl_after_finished: bool) -> Arc<Self> {
        let ttl = ttl_after_finished.then(|| ctx.clone());
        Self::new_as(ctx, ttl)
    }

    /// [`JobController::new`], deleting finished Jobs after their TTL
    /// through `ttl_after_finished` when given (upstream's
    /// ttl-after-finished-controller acts with its own identity).
    pub fn new_as(ctx: Arc<Context>, ttl_after_finished: Option<Arc<Context>>) -> Arc<Self> {
        Arc::new(JobController {
            queue: WorkQueue::new(ctx.clock.clone()),
            ctx,
            expect: Expectations::default(),
            ttl_after_finished,
        })
    }

    pub async fn run(self: Arc<Self>) {
        let jobs = self.ctx.informers.get(&jobs_ref());
        let pods = self.ctx.informers.get(&pods_ref());
        let q = self.queue.clone();
        jobs.on_change(move |c| q.add(ObjectKey::of(c.object())));
        let q = self.queue.clone();
        pods.on_change(move |c| {
            let enqueue = |o: &Value| {
                if let Some(job) = owning_job(o) {
                    q.add(ObjectKey::new(meta::namespace(o), job));
                }
            };
            if let Change::Modified { old, .. } = c {
                // An unchanged controller is the one enqueued below.
                if old.controller() != crate::pods::controller_uid(c.object()) {
                    enqueue(old);
                }
            }
            enqueue(c.object());
        });
        jobs.wait_synced().await;
        pods.wait_synced().await;
        let me = self.clone();
        run_workers(self.queue.clone(), 2, "job", move |key| {
            let me = me.clone();
            async move { me.reconcile(key).await }
        })
        .await;
    }

    fn now(&self) -> String {
        meta::format_time(self.ctx.clock.now())
    }

    async fn reconcile(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let jobs = self.ctx.informers.get(&jobs_ref()).cache();
        let job = jobs.get(&key.namespace, &key.name);
        let all_pods = self.candidate_pods(&key, job.as_deref().map(meta::uid));
        let Some(job) = job else {
            self.expect.forget(&key);
            return self.release_orphans(&key, &all_pods, None).await;
        };
        let uid = meta::uid(&job).to_string();
        // Pods of an earlier Job of the same name still hold finalizers.
        self.release_orphans(&key, &all_pods, Some(&uid)).await?;
        let owned: Vec<Arc<Value>> = all_pods
            .iter()
            .filter(|p| pods::is_controlled_by(p, &uid))
            .cloned()
            .collect();
        let satisfied = self.expect.observe(&key, &all_pods);
        let mut job = (*job).clone();
        job = self.track(&key, job, &owned).await?;
        self.sync(&key, job, &owned, satisfied).await
    }

    /// Removes the tracking finalizer from pods whose Job (`key`, with a
    /// uid other than `current`) is gone: nothing will count them now.
    /// The pods that may concern the Job at `key` (whose uid is `uid`, if
    /// it exists): those it controls, and those labelled with its name,
    /// such as the pods of an earlier Job of that name that still hold the
    /// tracking finalizer. Only they are parsed, not the whole namespace:
    /// with many Jobs in one namespace that made every sync cost as much
    /// as all their pods.
    fn candidate_pods(&self, key: &ObjectKey, uid: Option<&str>) -> Vec<Arc<Value>> {
        let cache = self.ctx.informers.get(&pods_ref()).cache();
        let named = LabelRequirement::new(JOB_NAME_LABEL, LabelOp::Equals, vec![key.name.clone()])
            .map(|r| LabelSelector::from_requirements(vec![r]));
        let mut by_key: BTreeMap<ObjectKey, Arc<Value>> = match named {
            Ok(selector) => cache
                .select(Some(&key.namespace), &selector)
                .into_iter()
                .map(|p| (ObjectKey::of(&p), p))
                .collect(),
            Err(_) => BTreeMap::new(),
        };
        for (k, pod) in uid.map(|u| cache.controlled_by_lazy(u)).unwrap_or_default() {
            if k.namespace == key.namespace && !by_key.contains_key(&k) {
                by_key.insert(k, pod.object().clone());
            }
        }
        by_key.into_values().collect()
    }

    async fn release_orphans(
        &self,
        key: &ObjectKey,
        pods: &[Arc<Value>],
        current: Option<&str>,
    ) -> Result<Requeue, ApiError> {
        for p in pods {
            if owning_job(p) != Some(key.name.as_str()) || !has_tracking(p) {
                continue;
            }
            if current.is_some_and(|u| pods::is_controlled_by(p, u)) {
                continue;
            }
            self.remove_finalizer(p).await?;
        }
        Ok(None)
    }

    /// As upstream's controller does: a strategic merge patch naming the
    /// pod's uid, which its role allows (it may patch pods, not get them).
    async fn remove_finalizer(&self, pod: &Value) -> Result<(), ApiError> {
        let patch = json!({"metadata": {
            "$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER],
            "uid": meta::uid(pod),
        }});
        match self
            .ctx
            .api
            .patch(
                &pods_ref(),
                meta::namespace(pod),
                meta::name(pod),
                kubesim_core::patch::PatchType::Strategic,
                patch.to_string().into_bytes(),
                None,
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            // Gone, or another pod of that name.
            Err(e) if matches!(e.code, 404 | 409 | 422) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn write_status(&self, job: Value) -> Result<Value, ApiError> {
        let ns = meta::namespace(&job).to_string();
        self.ctx
            .api
            .update(
                &jobs_ref(),
                &ns,
                job,
                Some("status"),
                &WriteOptions::default(),
            )
            .await
    }

    /// The three counting steps; returns the Job as last written.
    async fn track(
        &self,
        key: &ObjectKey,
        mut job: Value,
        owned: &[Arc<Value>],
    ) -> Result<Value, ApiError> {
        let indexed =
            job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
        let completions = int(&job, "/spec/completions");
        let status = job.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut unc_s = uid_list(&status, "succeeded");
        let mut unc_f = uid_list(&status, "failed");
        let mut completed = parse_indexes(
            status
                .get("completedIndexes")
                .and_then(Value::as_str)
                .unwrap_or(""),
        );

        // 1. Record finished pods not yet recorded (failures as the Job's
        // podFailurePolicy judges them: ignored ones are only released).
        let mut recorded = false;
        let mut ignored = BTreeSet::new();
        let mut fail_job: Option<String> = None;
        for p in owned {
            let puid = meta::uid(p);
            if !has_tracking(p)
                || unc_s.contains(puid)
                || unc_f.contains(puid)
                || self.expect.is_finalizer_removed(key, puid)
            {
                continue;
            }
            match outcome(p) {
                Some(true) => {
                    unc_s.insert(puid.to_string());
                    if indexed {
                        if let Some(i) =
                            pod_index(p).filter(|i| completions.is_some_and(|c| i64::from(*i) < c))
                        {
                            completed.insert(i);
                        }
                    }
                }
                Some(false) => match failure_policy::judge(&job, p) {
                    Verdict::Ignore => {
                        ignored.insert(puid.to_string());
                        continue;
                    }
                    Verdict::FailJob(message) => {
                        fail_job.get_or_insert(message);
                        unc_f.insert(puid.to_string());
                    }
                    Verdict::Count => {
                        unc_f.insert(puid.to_string());
                    }
                },
                None => continue,
            }
            recorded = true;
        }
        if let Some(message) = fail_job {
            let status = job.get("status").cloned().unwrap_or_else(|| json!({}));
            if !conditions::is_true(&status, "FailureTarget")
                && !conditions::is_true(&status, "SuccessCriteriaMet")
            {
                let mut status = status;
                conditions::set(
                    &mut status,
                    "FailureTarget",
                    "True",
                    "PodFailurePolicy",
                    &message,
                    &self.now(),
                    true,
                );
                job["status"] = status;
                self.ctx
                    .recorder
                    .record(&job, EventType::Warning, "PodFailurePolicy", &message);
            }
        }
        if recorded {
            set_uncounted(&mut job, &unc_s, &unc_f);
            if indexed {
                job["status"]["completedIndexes"] = json!(format_indexes(&completed));
            }
            job = self.write_status(job).await?;
        }

        // 2. Release the recorded pods.
        let mut released = BTreeSet::new();
        for p in owned {
            let puid = meta::uid(p);
            if has_tracking(p)
                && (unc_s.contains(puid) || unc_f.contains(puid) || ignored.contains(puid))
            {
                self.expect.finalizer_removed(key, puid);
                self.remove_finalizer(p).await?;
                released.insert(puid.to_string());
            }
        }

        // 3. Count what no pod holds a finalizer for any more.
        let holding: BTreeSet<&str> = owned
            .iter()
            .filter(|p| has_tracking(p) && !released.contains(meta::uid(p)))
            .map(|p| meta::uid(p))
            .collect();
        let moved_s: Vec<String> = unc_s
            .iter()
            .filter(|u| !holding.contains(u.as_str()))
            .cloned()
            .collect();
        let moved_f: Vec<String> = unc_f
            .iter()
            .filter(|u| !holding.contains(u.as_str()))
            .cloned()
            .collect();
        if moved_s.is_empty() && moved_f.is_empty() {
            return Ok(job);
        }
        let succeeded = int(&job, "/status/succeeded").unwrap_or(0);
        let failed = int(&job, "/status/failed").unwrap_or(0);
        let succeeded = if indexed {
            completed.len() as i64
        } else {
            succeeded + moved_s.len() as i64
        };
        for u in &moved_s {
            unc_s.remove(u);
        }
        for u in &moved_f {
            unc_f.remove(u);
        }
        set_uncounted(&mut job, &unc_s, &unc_f);
        job["status"]["succeeded"] = json!(succeeded);
        job["status"]["failed"] = json!(failed + moved_f.len() as i64);
        self.write_status(job).await
    }

    async fn sync(
        &self,
        key: &ObjectKey,
        job: Value,
        owned: &[Arc<Value>],
        satisfied: bool,
    ) -> Result<Requeue, ApiError> {
        let now_ts = self.ctx.clock.now();
        let now = self.now();
        let old_status = job.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut status = old_status.clone();
        let indexed =
            job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
        let completions = int(&job, "/spec/completions");
        let parallelism = int(&job, "/spec/parallelism").unwrap_or(1).max(0);
        let backoff_limit = int(&job, "/spec/backoffLimit").unwrap_or(6);
        let suspend = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let active: Vec<&Arc<Value>> = owned.iter().filter(|p| pods::is_active(p)).collect();
        let terminating = owned
            .iter()
            .filter(|p| meta::is_deleting(p) && !pods::is_finished(p))
            .count();
        let pending_s = uid_list(&status, "succeeded").len() as i64;
        let pending_f = uid_list(&status, "failed").len() as i64;
        let succeeded = int(&status, "/succeeded").unwrap_or(0);
        let failed = int(&status, "/failed").unwrap_or(0);
        let completed = parse_indexes(
            status
                .get("completedIndexes")
                .and_then(Value::as_str)
                .unwrap_or(""),
        );
        let finished =
            conditions::is_true(&status, "Complete") || conditions::is_true(&status, "Failed");
        let mut requeue: Requeue = None;

        if finished {
            self.delete_pods(key, &job, &active, false).await?;
            let Some(ttl_ctx) = &self.ttl_after_finished else {
                return Ok(None);
            };
            return ttl::after_finished(ttl_ctx, &job, now_ts).await;
        }

        // Decide whether the Job has reached an end.
        let mut target = ["FailureTarget", "SuccessCriteriaMet"]
            .into_iter()
            .find(|k| conditions::is_true(&status, k));
        if target.is_none() && !suspend {
            let total_s = if indexed {
                completed.len() as i64
            } else {
                succeeded + pending_s
            };
            let total_f = failed + pending_f;
            let deadline = int(&job, "/spec/activeDeadlineSeconds");
            let started = status
                .get("startTime")
                .and_then(Value::as_str)
                .and_then(meta::parse_time);
            let over_deadline = match (deadline, started) {
                (Some(d), Some(s)) => {
                    let end = s + jiff::SignedDuration::from_secs(d);
                    if end <= now_ts {
                        true
                    } else {
                        requeue = Some(
                            Duration::try_from(end.duration_since(now_ts)).unwrap_or_default(),
                        );
                        false
                    }
                }
                _ => false,
            };
            let (reason, message, success) = if total_f > backoff_limit {
                (
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    false,
                )
            } else if over_deadline {
                (
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                    false,
                )
            } else if match completions {
                Some(c) => total_s >= c,
                None => total_s > 0 && active.is_empty(),
            } {
                (
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    true,
                )
            } else {
                ("", "", false)
            };
            if !reason.is_empty() {
                let kind = if success {
                    "SuccessCriteriaMet"
                } else {
                    "FailureTarget"
                };
                conditions::set(&mut status, kind, "True", reason, message, &now, true);
                if !success {
                    self.ctx
                        .recorder
                        .record(&job, EventType::Warning, reason, message);
                }
                target = Some(kind);
            }
        }

        match target {
            Some(kind) => {
                // Ending: stop what runs, then finish once every pod is gone
                // and counted.
                self.delete_pods(key, &job, &active, false).await?;
                let counted = uid_list(&status, "succeeded").is_empty()
                    && uid_list(&status, "failed").is_empty();
                if active.is_empty() && terminating == 0 && counted {
                    let (reason, message) = conditions::get(&status, kind)
                        .map(|c| {
                            (
                                c["reason"].as_str().unwrap_or("").to_string(),
                                c["message"].as_str().unwrap_or("").to_string(),
                            )
                        })
                        .unwrap_or_default();
                    if kind == "SuccessCriteriaMet" {
                        conditions::set(
                            &mut status,
                            "Complete",
                            "True",
                            &reason,
                            &message,
                            &now,
                            true,
                        );
                        status["completionTime"] = json!(now);
                        self.ctx.recorder.record(
                            &job,
                            EventType::Normal,
                            "Completed",
                            "Job completed",
                        );
                    } else {
                        conditions::set(
                            &mut status,
                            "Failed",
                            "True",
                            &reason,
                            &message,
                            &now,
                            true,
                        );
                    }
                }
            }
            None if suspend => {
                self.delete_pods(key, &job, &active, false).await?;
                if !conditions::is_true(&status, "Suspended") {
                    conditions::set(
                        &mut status,
                        "Suspended",
                        "True",
                        "JobSuspended",
                        "Job suspended",
                        &now,
                        true,
                    );
                    self.ctx
                        .recorder
                        .record(&job, EventType::Normal, "Suspended", "Job suspended");
                }
                if let Some(m) = status.as_object_mut() {
                    m.remove("startTime");
                }
            }
            None => {
                if conditions::is_true(&status, "Suspended") {
                    conditions::set(
                        &mut status,
                        "Suspended",
                        "False",
                        "JobResumed",
                        "Job resumed",
                        &now,
                        true,
                    );
                    self.ctx
                        .recorder
                        .record(&job, EventType::Normal, "Resumed", "Job resumed");
                }
                if status.get("startTime").is_none() {
                    status["startTime"] = json!(now);
                    if let Some(d) = int(&job, "/spec/activeDeadlineSeconds") {
                        requeue = Some(Duration::from_secs(d.max(0) as u64));
                    }
                }
                if satisfied {
                    if indexed {
                        self.manage_indexed(
                            key,
                            &job,
                            &active,
                            &completed,
                            completions.unwrap_or(0),
                            parallelism,
                        )
                        .await?;
                    } else {
                        let total_s = succeeded + pending_s;
                        let want = match completions {
                            Some(c) => parallelism.min((c - total_s).max(0)),
                            None if total_s > 0 => 0,
                            None => parallelism,
                        };
                        self.scale(key, &job, &active, want).await?;
                    }
                }
            }
        }

        let ready = active.iter().filter(|p| pods::is_ready(p)).count();
        status["active"] = json!(active.len());
        status["ready"] = json!(ready);
        status["terminating"] = json!(terminating);
        for k in ["succeeded", "failed"] {
            if status.get(k).is_none() {
                status[k] = json!(0);
            }
        }
        if status.get("uncountedTerminatedPods").is_none() {
            status["uncountedTerminatedPods"] = json!({});
        }
        // Zero counts equal absent ones: upstream's controller omits them.
        if !crate::status_write::same(Some(&old_status), &status) {
            let mut job = job;
            job["status"] = status;
            self.write_status(job).await?;
        }
        Ok(requeue)
    }

    /// Creates or deletes pods so that `want` are active.
    async fn scale(
        &self,
        key: &ObjectKey,
        job: &Value,
        active: &[&Arc<Value>],
        want: i64,
    ) -> Result<(), ApiError> {
        let have = active.len() as i64;
        if have < want {
            for _ in have..want {
                self.create_pod(key, job, None).await?;
            }
        } else if have > want {
            // Not-ready pods go first, then the newest.
            let mut victims: Vec<&Arc<Value>> = active.to_vec();
            victims.sort_by_key(|p| {
                (
                    pods::is_ready(p),
                    std::cmp::Reverse(
                        p.pointer("/metadata/creationTimestamp")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    ),
                )
            });
            victims.truncate((have - want) as usize);
            self.delete_pods(key, job, &victims, true).await?;
        }
        Ok(())
    }

    async fn manage_indexed(
        &self,
        key: &ObjectKey,
        job: &Value,
        active: &[&Arc<Value>],
        completed: &BTreeSet<u32>,
        completions: i64,
        parallelism: i64,
    ) -> Result<(), ApiError> {
        // One active pod per index; extra, invalid and already-completed
        // ones are removed.
        let mut by_index: BTreeMap<u32, &Arc<Value>> = BTreeMap::new();
        let mut extra = Vec::new();
        for p in active {
            match pod_index(p) {
                Some(i) if i64::from(i) < completions && !completed.contains(&i) => {
                    if by_index.insert(i, p).is_some() {
                        extra.push(*p);
                    }
                }
                _ => extra.push(*p),
            }
        }
        let keep = by_index.len() as i64;
        if keep > parallelism {
            extra.extend(
                by_index
                    .values()
                    .rev()
                    .take((keep - parallelism) as usize)
                    .copied(),
            );
        }
        self.delete_pods(key, job, &extra, true).await?;
        let room = (parallelism - keep).max(0) as usize;
        let pending: Vec<u32> = (0..completions.clamp(0, u32::MAX as i64) as u32)
            .filter(|i| !completed.contains(i) && !by_index.contains_key(i))
            .take(room)
            .collect();
        for i in pending {
            self.create_pod(key, job, Some(i)).await?;
        }
        Ok(())
    }

    async fn create_pod(
        &self,
        key: &ObjectKey,
        job: &Value,
        index: Option<u32>,
    ) -> Result<(), ApiError> {
        let pod = job_pod(job, index);
        match self
            .ctx
            .api
            .create(&pods_ref(), &key.namespace, pod, &WriteOptions::default())
            .await
        {
            Ok(created) => {
                let name = meta::name(&created).to_string();
                self.expect.created(key, &name);
                // The informer may already have delivered it.
                let cache = self.ctx.informers.get(&pods_ref()).cache();
                if cache.get(&key.namespace, &name).is_some() {
                    self.expect.create_failed(key, &name);
                }
                self.ctx.recorder.record(
                    job,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created pod: {name}"),
                );
                Ok(())
            }
            Err(e) => {
                self.ctx.recorder.record(
                    job,
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating: {}", e.message),
                );
                Err(e)
            }
        }
    }

    /// Deletes `victims`. With `untrack` (pods removed because the Job
    /// wants fewer, not because it ended), their tracking finalizer goes
    /// first, as upstream's `deleteJobPods` does: a pod removed by a
    /// parallelism decrease is not a failure and must not count towards
    /// `backoffLimit`.
    async fn delete_pods(
        &self,
        key: &ObjectKey,
        job: &Value,
        victims: &[&Arc<Value>],
        untrack: bool,
    ) -> Result<(), ApiError> {
        for p in victims {
            let name = meta::name(p);
            if untrack && has_tracking(p) {
                match self.remove_finalizer(p).await {
                    Ok(()) => {}
                    Err(e) if e.code == 404 || e.code == 409 => continue,
                    Err(e) => return Err(e),
                }
            }
            let opts = DeleteOptions {
                precondition_uid: Some(meta::uid(p).to_string()),
                status_only: true,
                ..Default::default()
            };
            match self
                .ctx
                .api
                .delete(&pods_ref(), &key.namespace, name, &opts)
                .await
            {
                Ok(_) => {
                    self.expect.deleted(key, name);
                    self.ctx.recorder.record(
                        job,
                        EventType::Normal,
                        "SuccessfulDelete",
                        format!("Deleted pod: {name}"),
                    );
                }
                Err(e) if e.code == 404 || e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn set_uncounted(job: &mut Value, s: &BTreeSet<String>, f: &BTreeSet<String>) {
    if !job.get("status").is_some_and(Value::is_object) {
        job["status"] = json!({});
    }
    let mut u = serde_json::Map::new();
    if !s.is_empty() {
        u.insert("succeeded".into(), json!(s));
    }
    if !f.is_empty() {
        u.insert("failed".into(), json!(f));
    }
    job["status"]["uncountedTerminatedPods"] = Value::Object(u);
}
