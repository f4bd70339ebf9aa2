//! The ReplicaSet controller: keeps `spec.replicas` active pods matching
//! the selector, creating them from the template (named by the server from
//! `<rs>-`) or deleting the cheapest surplus, and reports counts in status.
//! The same loop keeps ReplicationControllers ([`ReplicaKind`]).

use std::sync::Arc;
use std::time::Duration;

use kubesim_core::selector::LabelSelector;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Api, Change, DeleteOptions, EventType, Informer, Lazy, ObjectKey, Requeue,
    ResourceRef, WorkQueue, WriteOptions,
};
use serde_json::{json, Value};

use crate::expectations::Expectations;
use crate::ownership::{
    claim, controller_key, matching_owners, matching_owners_in, release, selector_in,
};
use crate::pod_facts::{FactsMemo, PodFacts};
use crate::pods;
use crate::replica_kind::{ReplicaKind, REPLICA_SET};
use crate::Context;

/// Most pods created or deleted in one pass, as upstream's burst replicas.
const BURST: usize = 500;
/// Workers reconciling objects of one kind concurrently (never the same one twice).
const WORKERS: usize = 4;

pub fn replicasets() -> ResourceRef {
    REPLICA_SET.resource()
}

pub fn pods_ref() -> ResourceRef {
    ResourceRef::core("pods")
}

/// A pod a replica controller owns: as cached, and what it reads of it.
struct Owned {
    pod: Lazy,
    facts: Arc<PodFacts>,
}

pub struct ReplicaController {
    kind: &'static ReplicaKind,
    ctx: Arc<Context>,
    owners: Arc<Informer>,
    pods: Arc<Informer>,
    queue: Arc<WorkQueue<ObjectKey>>,
    exp: Arc<Expectations>,
    facts: Arc<FactsMemo>,
}

impl ReplicaController {
    pub fn new(ctx: Arc<Context>, kind: &'static ReplicaKind) -> Arc<Self> {
        Arc::new(ReplicaController {
            kind,
            owners: ctx.informers.get(&kind.resource()),
            pods: ctx.informers.get(&pods_ref()),
            queue: WorkQueue::new(ctx.clock.clone()),
            exp: Arc::new(Expectations::new(ctx.clock.clone())),
            facts: Arc::default(),
            ctx,
        })
    }

    pub async fn run(self: Arc<Self>) {
        let q = self.queue.clone();
        self.owners
            .on_change(move |c| q.add(ObjectKey::of(c.object())));
        let (q, exp, owners) = (self.queue.clone(), self.exp.clone(), self.owners.cache());
        let (kind, facts) = (self.kind, self.facts.clone());
        self.pods.on_change(move |c| {
            if let Change::Deleted(p) = c {
                facts.forget(p);
            }
            on_pod_change_with(c, kind.kind, &owners, &q, &exp, &|p| {
                matching_owners_in(p, &owners, kind.selector)
            });
        });
        self.owners.wait_synced().await;
        self.pods.wait_synced().await;
        let me = self.clone();
        run_workers(
            self.queue.clone(),
            WORKERS,
            self.kind.controller,
            move |k| {
                let me = me.clone();
                async move { me.sync(k).await }
            },
        )
        .await;
    }

    async fn sync(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(owner) = self.owners.cache().get(&key.namespace, &key.name) else {
            self.exp.forget(&key);
            return Ok(None);
        };
        let Some(selector) = selector_in(&owner, self.kind.selector) else {
            return Ok(None);
        };
        let trusted = self.exp.satisfied(&key);
        let owned = self.owned_pods(&key, &owner, &selector).await?;
        let mut failure = None;
        if trusted && !meta::is_deleting(&owner) {
            if let Err(e) = self.manage(&key, &owner, &owned).await {
                failure = Some(e);
            }
        }
        let now = self.ctx.clock.now();
        let min_ready = owner
            .pointer("/spec/minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let status = replica_status(&owner, &owned, min_ready, now, failure.as_ref(), &self.ctx);
        update_status(&*self.ctx.api, &self.kind.resource(), &owner, status).await?;
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(owned
            .iter()
            .filter_map(|p| p.facts.until_available(min_ready, now))
            .min()
            .map(|d| d + Duration::from_millis(1)))
    }

    /// The active pods `owner` controls, as [`claim`] decides: its own pods
    /// that still match, after releasing those that do not, plus the
    /// matching orphans it adopts. Its own pods are read from the cache
    /// unparsed and their facts kept by resourceVersion, so a sync parses
    /// only what changed since the last one.
    async fn owned_pods(
        &self,
        key: &ObjectKey,
        owner: &Value,
        selector: &LabelSelector,
    ) -> Result<Vec<Owned>, ApiError> {
        let cache = self.pods.cache();
        let uid = meta::uid(owner);
        let mut owned = Vec::new();
        for (pod_key, pod) in cache.controlled_by_lazy(uid) {
            let facts = self.facts.get(&pod_key, &pod);
            if !facts.active {
                continue;
            }
            if selector.is_empty() || !pod.labels_match(selector) {
                release(&*self.ctx.api, &pods_ref(), &pod, uid).await?;
                continue;
            }
            owned.push(Owned { pod, facts });
        }
        let orphans: Vec<Arc<Value>> = cache
            .orphans(&key.namespace, selector)
            .into_iter()
            .filter(|p| pods::is_active(p))
            .collect();
        if !orphans.is_empty() {
            let adopted = claim(
                &*self.ctx.api,
                &pods_ref(),
                owner,
                selector,
                orphans,
                &|_| true,
            )
            .await?;
            owned.extend(adopted.into_iter().map(|p| Owned {
                facts: Arc::new(PodFacts::of(&p)),
                pod: Lazy::parsed(p),
            }));
        }
        Ok(owned)
    }

    /// Creates or deletes pods to reach `spec.replicas`.
    async fn manage(
        &self,
        key: &ObjectKey,
        owner: &Value,
        owned: &[Owned],
    ) -> Result<(), ApiError> {
        let want = owner
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(0) as usize;
        let have = owned.len();
        if have < want {
            let n = (want - have).min(BURST);
            let template = owner
                .pointer("/spec/template")
                .cloned()
                .unwrap_or(json!({}));
            let generate = format!("{}-", meta::name(owner));
            let pod = pods::from_template(&template, owner, &generate, None);
            self.exp.expect_creations(key, n);
            let created = create_in_batches(&*self.ctx.api, &key.namespace, &pod, n, || {
                self.exp.creation_observed(key)
            })
            .await;
            if let Err(e) = created {
                self.ctx.recorder.record(
                    owner,
                    EventType::Warning,
                    "FailedCreate",
                    format!("Error creating: {}", e.message),
                );
                return Err(e);
            }
            self.ctx.recorder.record(
                owner,
                EventType::Normal,
                "SuccessfulCreate",
                format!("Created {n} pod(s)"),
            );
        } else if have > want {
            // Only a scale-down reads whole pods.
            let mut ranked: Vec<&Arc<Value>> = owned.iter().map(|p| p.pod.object()).collect();
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
                        owner,
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
/// every owner whose `metav1.LabelSelector` at `selector_path` might adopt
/// them).
pub(crate) fn on_pod_change(
    c: &Change,
    kind: &str,
    owners: &kubesim_runtime::Cache,
    queue: &Arc<WorkQueue<ObjectKey>>,
    exp: &Expectations,
    selector_path: &str,
) {
    on_pod_change_with(c, kind, owners, queue, exp, &|p| {
        matching_owners(p, owners, selector_path)
    });
}

/// [`on_pod_change`] with `adopters` telling who might adopt an orphan.
pub(crate) fn on_pod_change_with(
    c: &Change,
    kind: &str,
    owners: &kubesim_runtime::Cache,
    queue: &Arc<WorkQueue<ObjectKey>>,
    exp: &Expectations,
    adopters: &dyn Fn(&Value) -> Vec<ObjectKey>,
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
                for k in adopters(p) {
                    queue.add(k);
                }
            }
            None => {}
        },
        Change::Modified { old, new } => {
            let after = controller_key(new, kind, owners);
            // Owner references are told apart by uid: an unchanged one
            // resolves as the new object's does, with no parse of the old.
            let before = if old.controller() == pods::controller_uid(new) {
                after.clone()
            } else {
                controller_key(old, kind, owners)
            };
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
                    for k in adopters(new) {
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
        status_only: true,
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
    owner: &Value,
    owned: &[Owned],
    min_ready: i64,
    now: jiff::Timestamp,
    failure: Option<&ApiError>,
    ctx: &Context,
) -> Value {
    let template_labels = owner
        .pointer("/spec/template/metadata/labels")
        .map(|_| meta::labels(owner.pointer("/spec/template").unwrap_or(&Value::Null)))
        .unwrap_or_default();
    let fully = owned
        .iter()
        .filter(|p| {
            template_labels
                .iter()
                .all(|(k, v)| p.pod.label(k) == Some(v.as_str()))
        })
        .count();
    let ready = owned.iter().filter(|p| p.facts.ready).count();
    let available = owned
        .iter()
        .filter(|p| p.facts.available(min_ready, now))
        .count();
    let mut status = json!({
        "replicas": owned.len(),
        "fullyLabeledReplicas": fully,
        "readyReplicas": ready,
        "availableReplicas": available,
        "observedGeneration": owner.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0),
    });
    let mut conditions: Vec<Value> = owner
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("ReplicaFailure"));
    if let Some(e) = failure {
        let previous = pods::condition(owner, "ReplicaFailure");
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
    // Fields this controller does not compute (terminatingReplicas) stay.
    crate::status_write::overlay(owner.get("status"), status, &["conditions"])
}

/// Writes `status` unless the object already has it. The status in the
/// cache is compared field by field (a zero count equal to an absent one,
/// as upstream's controllers omit them), so a pass that changes nothing
/// writes nothing. A conflict is retried by the work queue.
pub(crate) async fn update_status(
    api: &dyn Api,
    r: &ResourceRef,
    obj: &Value,
    status: Value,
) -> Result<Option<Value>, ApiError> {
    if crate::status_write::same(obj.get("status"), &status) {
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
