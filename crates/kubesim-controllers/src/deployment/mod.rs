//! The Deployment controller: rolls a Deployment's pod template out through
//! ReplicaSets, one per template (named `<deployment>-<pod-template-hash>`),
//! with the RollingUpdate or Recreate strategy, records revisions, prunes
//! old ReplicaSets and reports progress in status conditions.
//!
//! Each pass works from the informer caches, overlaid with the
//! ReplicaSets this controller wrote itself and the cache has not shown
//! yet, so that two passes in quick succession never act on a scale the
//! first one already changed.

mod cleanup;
mod recreate;
mod revision;
mod rolling;
mod scaling;
mod status;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kubesim_core::patch::PatchType;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Change, EventType, Informer, ObjectKey, Requeue, ResourceRef, WorkQueue,
    WriteOptions,
};
use serde_json::{json, Value};

use crate::intstr;
use crate::ownership::{claim, controller_key, matching_owners, selector_of};
use crate::replicaset::replicasets;
use crate::Context;

pub const REVISION: &str = "deployment.kubernetes.io/revision";
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
pub const HASH_LABEL: &str = "pod-template-hash";

const WORKERS: usize = 4;

pub fn deployments() -> ResourceRef {
    ResourceRef::new("apps", "v1", "deployments")
}

pub struct DeploymentController {
    ctx: Arc<Context>,
    deployments: Arc<Informer>,
    sets: Arc<Informer>,
    pods: Arc<Informer>,
    queue: Arc<WorkQueue<ObjectKey>>,
    /// ReplicaSets as last written by this controller, until the cache
    /// catches up.
    written: Arc<Mutex<BTreeMap<ObjectKey, Arc<Value>>>>,
}

fn rv_of(o: &Value) -> u64 {
    meta::resource_version(o).parse().unwrap_or(0)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A number at `ptr`, 0 when absent.
pub(crate) fn int(o: &Value, ptr: &str) -> i64 {
    o.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

pub(crate) fn spec_replicas(o: &Value) -> i64 {
    o.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// The pass's view of one Deployment.
pub(crate) struct Rollout {
    pub d: Value,
    pub new_rs: Option<Value>,
    /// Every other ReplicaSet of the Deployment, oldest first.
    pub old: Vec<Value>,
    /// Set when this pass created or first found the new ReplicaSet.
    pub progress_note: Option<(&'static str, String)>,
}

impl Rollout {
    pub fn all(&self) -> Vec<&Value> {
        self.old.iter().chain(self.new_rs.iter()).collect()
    }
    pub fn replicas(&self) -> i64 {
        spec_replicas(&self.d)
    }
    /// maxSurge (rounded up) and maxUnavailable (rounded down) as counts;
    /// both zero would deadlock a rollout, so unavailable becomes 1 then.
    pub fn fenceposts(&self) -> (i64, i64) {
        if !is_rolling(&self.d) {
            return (0, 0);
        }
        let ru = self.d.pointer("/spec/strategy/rollingUpdate");
        let n = self.replicas();
        let surge = intstr::scaled(ru.and_then(|r| r.get("maxSurge")), n, true, 0).unwrap_or(0);
        let unavailable =
            intstr::scaled(ru.and_then(|r| r.get("maxUnavailable")), n, false, 0).unwrap_or(0);
        if surge == 0 && unavailable == 0 {
            (0, 1)
        } else {
            (surge.max(0), unavailable.max(0))
        }
    }
    pub fn max_surge(&self) -> i64 {
        self.fenceposts().0
    }
    /// maxUnavailable, never more than the desired replicas.
    pub fn max_unavailable(&self) -> i64 {
        self.fenceposts().1.min(self.replicas())
    }
}

pub(crate) fn is_rolling(d: &Value) -> bool {
    d.pointer("/spec/strategy/type").and_then(Value::as_str) != Some("Recreate")
}

/// Available replicas of a ReplicaSet as decisions use them: never more
/// than its desired count, so a scale-down the ReplicaSet has not reported
/// yet is not mistaken for spare capacity.
pub(crate) fn available(rs: &Value) -> i64 {
    int(rs, "/status/availableReplicas").min(spec_replicas(rs))
}

impl DeploymentController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Arc::new(DeploymentController {
            deployments: ctx.informers.get(&deployments()),
            sets: ctx.informers.get(&replicasets()),
            pods: ctx.informers.get(&crate::replicaset::pods_ref()),
            queue: WorkQueue::new(ctx.clock.clone()),
            written: Arc::default(),
            ctx,
        })
    }

    pub async fn run(self: Arc<Self>) {
        let q = self.queue.clone();
        self.deployments
            .on_change(move |c| q.add(ObjectKey::of(c.object())));
        let (q, ds, written) = (
            self.queue.clone(),
            self.deployments.cache(),
            self.written.clone(),
        );
        self.sets.on_change(move |c| {
            let o = c.object();
            {
                let key = ObjectKey::of(o);
                let mut w = lock(&written);
                let stale = match (c, w.get(&key)) {
                    (Change::Deleted(_), Some(_)) => true,
                    (_, Some(mine)) => rv_of(o) >= rv_of(mine),
                    _ => false,
                };
                if stale {
                    w.remove(&key);
                }
            }
            if let Change::Modified { old, .. } = c {
                if let Some(k) = controller_key(old, "Deployment", &ds) {
                    q.add(k);
                }
            }
            match controller_key(o, "Deployment", &ds) {
                Some(k) => q.add(k),
                None if crate::pods::controller_uid(o).is_none() => {
                    for k in matching_owners(o, &ds, "/spec/selector") {
                        q.add(k);
                    }
                }
                None => {}
            }
        });
        // Recreate waits for old pods to go: their deletion is news.
        let (q, ds, sets) = (
            self.queue.clone(),
            self.deployments.cache(),
            self.sets.cache(),
        );
        self.pods.on_change(move |c| {
            if let Change::Deleted(p) = c {
                let rs = controller_key(p, "ReplicaSet", &sets)
                    .and_then(|k| sets.get(&k.namespace, &k.name));
                if let Some(k) = rs.and_then(|rs| controller_key(&rs, "Deployment", &ds)) {
                    q.add(k);
                }
            }
        });
        self.deployments.wait_synced().await;
        self.sets.wait_synced().await;
        self.pods.wait_synced().await;
        let me = self.clone();
        run_workers(self.queue.clone(), WORKERS, "deployment", move |k| {
            let me = me.clone();
            async move { me.sync(k).await }
        })
        .await;
    }

    /// The namespace's ReplicaSets: the cache, overlaid with our writes.
    fn replica_sets(&self, ns: &str) -> Vec<Arc<Value>> {
        let mut by_key: BTreeMap<ObjectKey, Arc<Value>> = self
            .sets
            .cache()
            .list_namespace(ns)
            .into_iter()
            .map(|o| (ObjectKey::of(&o), o))
            .collect();
        for (k, mine) in lock(&self.written).iter() {
            if k.namespace != ns {
                continue;
            }
            match by_key.get(k) {
                Some(cached) if rv_of(cached) >= rv_of(mine) => {}
                _ => {
                    by_key.insert(k.clone(), mine.clone());
                }
            }
        }
        by_key.into_values().collect()
    }

    fn remember(&self, rs: Value) -> Value {
        lock(&self.written).insert(ObjectKey::of(&rs), Arc::new(rs.clone()));
        rs
    }

    fn forget_written(&self, rs: &Value) {
        lock(&self.written).remove(&ObjectKey::of(rs));
    }

    async fn sync(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(d) = self.deployments.cache().get(&key.namespace, &key.name) else {
            return Ok(None);
        };
        let d: Value = (*d).clone();
        let Some(selector) = selector_of(&d) else {
            return Ok(None);
        };
        if selector.is_empty() {
            self.ctx.recorder.record(
                &d,
                EventType::Warning,
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            );
            return Ok(None);
        }
        let owned = claim(
            &*self.ctx.api,
            &replicasets(),
            &d,
            &selector,
            self.replica_sets(&key.namespace),
            &|_| true,
        )
        .await?;
        let mut owned: Vec<Value> = owned.into_iter().map(|o| (*o).clone()).collect();
        owned.sort_by(|a, b| {
            let t = |o: &Value| {
                meta::str_field(o, "creationTimestamp")
                    .unwrap_or("")
                    .to_string()
            };
            t(a).cmp(&t(b)).then(meta::name(a).cmp(meta::name(b)))
        });
        let (new_rs, old) = revision::split(&d, owned);
        let mut r = Rollout {
            d,
            new_rs,
            old,
            progress_note: None,
        };
        if meta::is_deleting(&r.d) {
            return self.sync_status_only(&r).await;
        }
        if let Some(requeue) = self.check_paused(&mut r).await? {
            return Ok(requeue);
        }
        if r.d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
            self.sync_revision(&mut r, false).await?;
            scaling::scale(self, &mut r).await?;
            cleanup::old_replica_sets(self, &r).await?;
            return self.sync_status_only(&r).await;
        }
        if scaling::is_scaling_event(&r) {
            self.sync_revision(&mut r, false).await?;
            scaling::scale(self, &mut r).await?;
            return self.sync_status_only(&r).await;
        }
        if is_rolling(&r.d) {
            rolling::rollout(self, &mut r).await
        } else {
            recreate::rollout(self, &mut r).await
        }
    }

    /// Sets the Progressing condition to Unknown while the Deployment is
    /// paused (DeploymentPaused) and once it is resumed (DeploymentResumed).
    /// Returns Some when it wrote the status (the write brings a new pass).
    async fn check_paused(&self, r: &mut Rollout) -> Result<Option<Requeue>, ApiError> {
        if !status::has_deadline(&r.d) {
            return Ok(None);
        }
        let paused = r.d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
        let reason = crate::pods::condition(&r.d, "Progressing")
            .and_then(|c| c.get("reason"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let (want, msg) = if paused && reason != "DeploymentPaused" {
            ("DeploymentPaused", "Deployment is paused")
        } else if !paused && reason == "DeploymentPaused" {
            ("DeploymentResumed", "Deployment is resumed")
        } else {
            return Ok(None);
        };
        let mut st = r.d.get("status").cloned().unwrap_or_else(|| json!({}));
        let now = meta::format_time(self.ctx.clock.now());
        status::set_condition(&mut st, "Progressing", "Unknown", want, msg, &now, false);
        crate::replicaset::update_status(&*self.ctx.api, &deployments(), &r.d, st).await?;
        Ok(Some(None))
    }

    async fn sync_status_only(&self, r: &Rollout) -> Result<Requeue, ApiError> {
        let st = status::calculate(r, &self.ctx.clock.now());
        crate::replicaset::update_status(&*self.ctx.api, &deployments(), &r.d, st).await?;
        Ok(None)
    }

    /// Finds (and with `create`, creates) the new ReplicaSet and brings the
    /// revision annotations up to date.
    pub(crate) async fn sync_revision(
        &self,
        r: &mut Rollout,
        create: bool,
    ) -> Result<(), ApiError> {
        revision::sync(self, r, create).await
    }

    /// Scales `rs` to `to` and stamps the Deployment's desired and maximum
    /// sizes on it; records a ScalingReplicaSet event when the size changes.
    pub(crate) async fn scale_rs(
        &self,
        r: &Rollout,
        rs: &mut Value,
        to: i64,
    ) -> Result<bool, ApiError> {
        let from = spec_replicas(rs);
        let desired = r.replicas().to_string();
        let max = (r.replicas() + r.max_surge()).to_string();
        let ann = meta::annotations(rs);
        let anns_ok =
            ann.get(DESIRED_REPLICAS) == Some(&desired) && ann.get(MAX_REPLICAS) == Some(&max);
        if from == to && anns_ok {
            return Ok(false);
        }
        let patch = json!({
            "metadata": {"annotations": {DESIRED_REPLICAS: desired, MAX_REPLICAS: max}},
            "spec": {"replicas": to},
        });
        let updated = self
            .ctx
            .api
            .patch(
                &replicasets(),
                meta::namespace(rs),
                meta::name(rs),
                PatchType::Merge,
                patch.to_string().into_bytes(),
                None,
                &WriteOptions::default(),
            )
            .await?;
        *rs = self.remember(updated);
        if from != to {
            let dir = if to > from { "up" } else { "down" };
            self.ctx.recorder.record(
                &r.d,
                EventType::Normal,
                "ScalingReplicaSet",
                format!(
                    "Scaled {dir} replica set {} from {from} to {to}",
                    meta::name(rs)
                ),
            );
        }
        Ok(from != to)
    }

    /// Writes the status a finished pass computed, and asks for a pass at
    /// the progress deadline when the rollout is still going.
    pub(crate) async fn sync_rollout_status(&self, r: &Rollout) -> Result<Requeue, ApiError> {
        let now = self.ctx.clock.now();
        let st = status::rollout_status(r, &now);
        let requeue = status::requeue_stuck(&r.d, &st, &now);
        crate::replicaset::update_status(&*self.ctx.api, &deployments(), &r.d, st).await?;
        Ok(requeue)
    }
}
