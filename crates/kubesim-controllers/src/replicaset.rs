//! The ReplicaSet controller: keeps `spec.replicas` active pods matching
//! the selector, creating them from the template (named by the server from
//! `<rs>-`) or deleting the cheapest surplus, and reports counts in status.

use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Api, Change, DeleteOptions, EventType, Informer, ObjectKey, Requeue, ResourceRef,
    WorkQueue, WriteOptions,
};
use serde_json::{json, Value};

use crate::expectations::Expectations;
use crate::ownership::{claim, controller_key, matching_owners, selector_of};
use crate::pods;
use crate::Context;

/// Most pods created or deleted in one pass, as upstream's burst replicas.
const BURST: usize = 500;
/// Workers reconciling ReplicaSets concurrently (never the same one twice).
const WORKERS: usize = 4;

pub fn replicasets() -> ResourceRef {
    ResourceRef::new("apps", "v1", "replicasets")
}

pub fn pods_ref() -> ResourceRef {
    ResourceRef::core("pods")
}

pub struct ReplicaSetController {
    ctx: Arc<Context>,
    sets: Arc<Informer>,
    pods: Arc<Informer>,
    queue: Arc<WorkQueue<ObjectKey>>,
    exp: Arc<Expectations>,
}

impl ReplicaSetController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Arc::new(ReplicaSetController {
            sets: ctx.informers.get(&replicasets()),
            pods: ctx.informers.get(&pods_ref()),
            queue: WorkQueue::new(ctx.clock.clone()),
            exp: Arc::new(Expectations::new(ctx.clock.clone())),
            ctx,
        })
    }

    pub async fn run(self: Arc<Self>) {
        let q = self.queue.clone();
        self.sets
            .on_change(move |c| q.add(ObjectKey::of(c.object())));
        let (q, exp, sets) = (self.queue.clone(), self.exp.clone(), self.sets.cache());
        self.pods.on_change(move |c| {
            on_pod_change(c, "ReplicaSet", &sets, &q, &exp, "/spec/selector");
        });
        self.sets.wait_synced().await;
        self.pods.wait_synced().await;
        let me = self.clone();
        run_workers(self.queue.clone(), WORKERS, "replicaset", move |k| {
            let me = me.clone();
            async move { me.sync(k).await }
        })
        .await;
    }

    async fn sync(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(rs) = self.sets.cache().get(&key.namespace, &key.name) else {
            self.exp.forget(&key);
            return Ok(None);
        };
        let Some(selector) = selector_of(&rs) else {
            return Ok(None);
        };
        let trusted = self.exp.satisfied(&key);
        let active: Vec<Arc<Value>> = self
            .pods
            .cache()
            .list_namespace(&key.namespace)
            .into_iter()
            .filter(|p| pods::is_active(p))
            .collect();
        let owned = claim(&*self.ctx.api, &pods_ref(), &rs, &selector, active, &|_| {
            true
        })
        .await?;
        let mut failure = None;
        if trusted && !meta::is_deleting(&rs) {
            if let Err(e) = self.manage(&key, &rs, &owned).await {
                failure = Some(e);
            }
        }
        let now = self.ctx.clock.now();
        let min_ready = rs
            .pointer("/spec/minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let status = replica_status(&rs, &owned, min_ready, now, failure.as_ref(), &self.ctx);
        update_status(&*self.ctx.api, &replicasets(), &rs, status).await?;
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(owned
            .iter()
            .filter_map(|p| pods::until_available(p, min_ready, now))
            .min()
            .map(|d| d + Duration::from_millis(1)))
    }

    /// Creates or deletes pods to reach `spec.replicas`.
    async fn manage(
        &self,
        key: &ObjectKey,
        rs: &Value,
        owned: &[Arc<Value>],
    ) -> Result<(), ApiError> {
        let want = rs
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(0) as usize;
        let have = owned.len();
        if have < want {
            let n = (want - have).min(BURST);
            let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
            let generate = format!("{}-", meta::name(rs));
            let pod = pods::from_template(&template, rs, &generate, None);
            self.exp.expect_creations(key, n);
            let created = create_in_batches(&*self.ctx.api, &key.namespace, &pod, n, || {
                self.exp.creation_observed(key)
            })
            .await;
            if let Err(e) = created {
                self.ctx.recorder.record(
                    rs,
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating: {}", e.message),
                );
                return Err(e);
            }
            self.ctx.recorder.record(
                rs,
                EventType::Normal,
                "SuccessfulCreate",
                format!("Created {n} pod(s)"),
            );
        } else if have > want {
            let mut ranked: Vec<&Arc<Value>> = owned.iter().collect();
            ranked.sort_by(|a, b| pods::deletion_order(a, b));
            let victims: Vec<&Arc<Value>> =
                ranked.into_iter().take((have - want).min(BURST)).collect();
            self.exp
                .expect_deletions(key, victims.iter().map(|p| meta::name(p).to_string()));
            let results = futures::future::join_all(victims.iter().map(|p| async {
                let r = delete_pod(&*self.ctx.api, p).await;
                if r.is_err() {
                    self.exp.deletion_observed(key, meta::name(p));
                }
                r
            }))
            .await;
            let mut first_err = None;
            for (p, r) in victims.iter().zip(results) {
                match r {
                    Ok(()) => self.ctx.recorder.record(
                        rs,
                        EventType::Normal,
                        "SuccessfulDelete",
                        format!("Deleted pod: {}", meta::name(p)),
                    ),
                    Err(e) => first_err = first_err.or(Some(e)),
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// What every pod-owning controller's pod handler does: tell the owner's
/// expectations what was observed and queue the owner (or, for orphans,
/// every owner that might adopt them).
pub(crate) fn on_pod_change(
    c: &Change,
    kind: &str,
    owners: &kubesim_runtime::Cache,
    queue: &Arc<WorkQueue<ObjectKey>>,
    exp: &Expectations,
    selector_path: &str,
) {
    match c {
        Change::Added(p) => match controller_key(p, kind, owners) {
            Some(k) => {
                if meta::is_deleting(p) {
                    exp.deletion_observed(&k, meta::name(p));
                } else {
                    exp.creation_observed(&k);
                }
                queue.add(k);
            }
            None if pods::controller_uid(p).is_none() && !meta::is_deleting(p) => {
                for k in matching_owners(p, owners, selector_path) {
                    queue.add(k);
                }
            }
            None => {}
        },
        Change::Modified { old, new } => {
            let before = controller_key(old, kind, owners);
            let after = controller_key(new, kind, owners);
            if let Some(k) = &after {
                if meta::is_deleting(new) && !meta::is_deleting(old) {
                    exp.deletion_observed(k, meta::name(new));
                }
            }
            if before != after {
                if let Some(k) = before {
                    queue.add(k);
                }
            }
            match after {
                Some(k) => queue.add(k),
                None if pods::controller_uid(new).is_none() => {
                    for k in matching_owners(new, owners, selector_path) {
                        queue.add(k);
                    }
                }
                None => {}
            }
        }
        Change::Deleted(p) => {
            if let Some(k) = controller_key(p, kind, owners) {
                exp.deletion_observed(&k, meta::name(p));
                queue.add(k);
            }
        }
    }
}

/// Creates `n` copies of `pod` in batches of 1, 2, 4, ... so that a
/// failing create (quota, a terminating namespace) fails once rather than
/// `n` times. `skipped` is called once for every pod not created.
pub(crate) async fn create_in_batches(
    api: &dyn Api,
    ns: &str,
    pod: &Value,
    n: usize,
    skipped: impl Fn(),
) -> Result<(), ApiError> {
    let mut done = 0;
    let mut batch = 1;
    while done < n {
        let size = batch.min(n - done);
        let (r, opts) = (pods_ref(), WriteOptions::default());
        let results =
            futures::future::join_all((0..size).map(|_| api.create(&r, ns, pod.clone(), &opts)))
                .await;
        done += size;
        let mut err = None;
        for r in results {
            if let Err(e) = r {
                skipped();
                err = err.or(Some(e));
            }
        }
        if let Some(e) = err {
            for _ in done..n {
                skipped();
            }
            return Err(e);
        }
        batch *= 2;
    }
    Ok(())
}

/// Deletes the pod with this uid (not a namesake); gone already is fine.
pub(crate) async fn delete_pod(api: &dyn Api, pod: &Value) -> Result<(), ApiError> {
    let opts = DeleteOptions {
        precondition_uid: Some(meta::uid(pod).to_string()),
        ..Default::default()
    };
    match api
        .delete(&pods_ref(), meta::namespace(pod), meta::name(pod), &opts)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

fn replica_status(
    rs: &Value,
    owned: &[Arc<Value>],
    min_ready: i64,
    now: jiff::Timestamp,
    failure: Option<&ApiError>,
    ctx: &Context,
) -> Value {
    let template_labels = rs
        .pointer("/spec/template/metadata/labels")
        .map(|_| meta::labels(rs.pointer("/spec/template").unwrap_or(&Value::Null)))
        .unwrap_or_default();
    let fully = owned
        .iter()
        .filter(|p| {
            let l = meta::labels(p);
            template_labels.iter().all(|(k, v)| l.get(k) == Some(v))
        })
        .count();
    let ready = owned.iter().filter(|p| pods::is_ready(p)).count();
    let available = owned
        .iter()
        .filter(|p| pods::is_available(p, min_ready, now))
        .count();
    let mut status = json!({
        "replicas": owned.len(),
        "fullyLabeledReplicas": fully,
        "readyReplicas": ready,
        "availableReplicas": available,
        "observedGeneration": rs.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0),
    });
    let mut conditions: Vec<Value> = rs
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("ReplicaFailure"));
    if let Some(e) = failure {
        let previous = pods::condition(rs, "ReplicaFailure");
        let since = previous
            .and_then(|c| c.get("lastTransitionTime"))
            .cloned()
            .unwrap_or_else(|| json!(meta::format_time(ctx.clock.now())));
        conditions.push(json!({"type": "ReplicaFailure", "status": "True",
            "reason": "FailedCreate", "message": e.message, "lastTransitionTime": since}));
    }
    if !conditions.is_empty() {
        status["conditions"] = json!(conditions);
    }
    status
}

/// Writes `status` unless the object already has it. The status in the
/// cache is compared field by field, so a pass that changes nothing writes
/// nothing. A conflict is retried by the work queue.
pub(crate) async fn update_status(
    api: &dyn Api,
    r: &ResourceRef,
    obj: &Value,
    status: Value,
) -> Result<Option<Value>, ApiError> {
    if obj.get("status") == Some(&status) {
        return Ok(None);
    }
    let mut o = obj.clone();
    o["status"] = status;
    match api
        .update(
            r,
            meta::namespace(obj),
            o,
            Some("status"),
            &WriteOptions::default(),
        )
        .await
    {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}
