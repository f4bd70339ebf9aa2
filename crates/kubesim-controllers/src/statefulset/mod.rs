//! The StatefulSet controller: pods with stable names `<set>-0..N-1`,
//! created in ordinal order (with OrderedReady, each only once the previous
//! one is Running and Ready; with Parallel, all at once), removed from the
//! highest ordinal down, and updated from the highest ordinal down to the
//! partition, one pod at a time. Each pod carries the revision of the
//! template it was made from (`controller-revision-hash`). Pods get stable
//! storage from the set's claim templates (`claims`, `storage`), kept or
//! released as the retention policy says (`retention`).

pub mod claims;
pub mod retention;
mod storage;

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, EventType, Informer, ObjectKey, Requeue, ResourceRef, WorkQueue, WriteOptions,
};
use serde_json::{json, Value};

use crate::expectations::Expectations;
use crate::hash::template_hash;
use crate::history;
use crate::ownership::{claim, selector_of};
use crate::pods;
use crate::replicaset::{delete_pod, on_pod_change, pods_ref, update_status};
use crate::Context;

pub const REVISION_LABEL: &str = "controller-revision-hash";
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

const WORKERS: usize = 2;

pub fn statefulsets() -> ResourceRef {
    ResourceRef::new("apps", "v1", "statefulsets")
}

pub struct StatefulSetController {
    ctx: Arc<Context>,
    sets: Arc<Informer>,
    pods: Arc<Informer>,
    claims: Arc<Informer>,
    revisions: Option<Arc<Informer>>,
    queue: Arc<WorkQueue<ObjectKey>>,
    exp: Arc<Expectations>,
}

/// The ordinal of a pod named `<set>-<n>`.
pub fn ordinal(set: &str, pod: &str) -> Option<i64> {
    let n = pod.strip_prefix(set)?.strip_prefix('-')?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || (n.len() > 1 && n.starts_with('0'))
    {
        return None;
    }
    n.parse().ok()
}

fn revision_label(p: &Value) -> &str {
    p.pointer("/metadata/labels/controller-revision-hash")
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl StatefulSetController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        let revisions =
            history::served(&ctx).then(|| ctx.informers.get(&history::controller_revisions()));
        Arc::new(StatefulSetController {
            sets: ctx.informers.get(&statefulsets()),
            pods: ctx.informers.get(&pods_ref()),
            claims: ctx.informers.get(&claims::claims_ref()),
            revisions,
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
            on_pod_change(c, "StatefulSet", &sets, &q, &exp, "/spec/selector");
        });
        // A claim that goes away may be what a pod's creation waits for
        // (see `storage`); any change to one is worth a look by its set.
        let (q, sets) = (self.queue.clone(), self.sets.cache());
        self.claims.on_change(move |c| {
            let claim = c.object();
            for set in sets.list_namespace(meta::namespace(claim)) {
                if claims::is_claim_of(&set, meta::name(claim)) {
                    q.add(ObjectKey::of(&set));
                }
            }
        });
        self.sets.wait_synced().await;
        self.pods.wait_synced().await;
        self.claims.wait_synced().await;
        if let Some(r) = &self.revisions {
            r.wait_synced().await;
        }
        let me = self.clone();
        run_workers(self.queue.clone(), WORKERS, "statefulset", move |k| {
            let me = me.clone();
            async move { me.sync(k).await }
        })
        .await;
    }

    async fn sync(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(set) = self.sets.cache().get(&key.namespace, &key.name) else {
            return Ok(None);
        };
        let Some(selector) = selector_of(&set) else {
            return Ok(None);
        };
        // Expectations are read before the cache: a creation observed
        // between a cache read and this check would let a pass act on a
        // view that lacks the pod.
        let trusted = self.exp.satisfied(&key);
        let name = key.name.clone();
        let candidates: Vec<Arc<Value>> = self.pods.cache().list_namespace(&key.namespace);
        let owned = claim(
            &*self.ctx.api,
            &pods_ref(),
            &set,
            &selector,
            candidates,
            &|p| ordinal(&name, meta::name(p)).is_some(),
        )
        .await?;
        let by_ordinal: BTreeMap<i64, Arc<Value>> = owned
            .iter()
            .filter_map(|p| ordinal(&name, meta::name(p)).map(|o| (o, p.clone())))
            .collect();

        let template = set.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let collisions = set
            .pointer("/status/collisionCount")
            .and_then(Value::as_i64);
        let update_rev = format!("{name}-{}", template_hash(&template, collisions));
        let current_rev = match set
            .pointer("/status/currentRevision")
            .and_then(Value::as_str)
        {
            Some(r) if !r.is_empty() => r.to_string(),
            _ => update_rev.clone(),
        };
        if let Some(revs) = &self.revisions {
            history::ensure(&self.ctx, &revs.cache(), &set, &update_rev, &template).await?;
        }
        if trusted && !meta::is_deleting(&set) {
            self.manage(
                &key,
                &set,
                &by_ordinal,
                &current_rev,
                &update_rev,
                &template,
            )
            .await?;
        }
        let status = self.status(&set, &by_ordinal, &current_rev, &update_rev);
        update_status(&*self.ctx.api, &statefulsets(), &set, status.clone()).await?;
        if let Some(revs) = &self.revisions {
            let live = [current_rev.as_str(), update_rev.as_str()];
            let mut in_use: Vec<&str> = by_ordinal.values().map(|p| revision_label(p)).collect();
            in_use.extend(live);
            history::prune(&self.ctx, &revs.cache(), &set, &in_use).await?;
        }
        Ok(None)
    }

    /// The template of revision `rev`, from its ControllerRevision.
    fn template_for(&self, set: &Value, rev: &str, update_rev: &str, current: &Value) -> Value {
        if rev == update_rev {
            return current.clone();
        }
        self.revisions
            .as_ref()
            .and_then(|r| r.cache().get(meta::namespace(set), rev))
            .and_then(|cr| history::template_of(&cr).cloned())
            .unwrap_or_else(|| current.clone())
    }

    async fn create(
        &self,
        key: &ObjectKey,
        set: &Value,
        i: i64,
        rev: &str,
        template: &Value,
    ) -> Result<(), ApiError> {
        let name = format!("{}-{i}", meta::name(set));
        // The claims come first, so the pod never starts without its
        // storage; while one is unusable the pod waits.
        if !self.prepare_claims(set, i, &name).await? {
            return Ok(());
        }
        let mut pod = pods::from_template(template, set, "", Some(&name));
        claims::mount_claims(&mut pod["spec"], set, i);
        if let Some(m) = pod.pointer_mut("/metadata").and_then(Value::as_object_mut) {
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert(REVISION_LABEL.into(), json!(rev));
                l.insert(POD_NAME_LABEL.into(), json!(name));
                l.insert(POD_INDEX_LABEL.into(), json!(i.to_string()));
            }
        }
        pod["spec"]["hostname"] = json!(name);
        if let Some(svc) = set.pointer("/spec/serviceName").and_then(Value::as_str) {
            if !svc.is_empty() {
                pod["spec"]["subdomain"] = json!(svc);
            }
        }
        self.exp.expect_creations(key, 1);
        match self
            .ctx
            .api
            .create(&pods_ref(), &key.namespace, pod, &WriteOptions::default())
            .await
        {
            Ok(_) => {
                self.ctx.recorder.record(
                    set,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!(
                        "create Pod {name} in StatefulSet {} successful",
                        meta::name(set)
                    ),
                );
                Ok(())
            }
            Err(e) => {
                self.exp.creation_observed(key);
                // Already there: a create the cache has not shown yet.
                if e.code == 409 {
                    Ok(())
                } else {
                    Err(e)
                }
            }
        }
    }

    async fn delete(&self, key: &ObjectKey, set: &Value, pod: &Value) -> Result<(), ApiError> {
        self.exp
            .expect_deletions(key, [meta::name(pod).to_string()]);
        let r = delete_pod(&*self.ctx.api, pod).await;
        if r.is_err() {
            self.exp.deletion_observed(key, meta::name(pod));
        } else {
            self.ctx.recorder.record(
                set,
                EventType::Normal,
                "SuccessfulDelete",
                format!(
                    "delete Pod {} in StatefulSet {} successful",
                    meta::name(pod),
                    meta::name(set)
                ),
            );
        }
        r
    }

    async fn manage(
        &self,
        key: &ObjectKey,
        set: &Value,
        by_ordinal: &BTreeMap<i64, Arc<Value>>,
        current_rev: &str,
        update_rev: &str,
        template: &Value,
    ) -> Result<(), ApiError> {
        let replicas = set
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(0);
        let parallel = set
            .pointer("/spec/podManagementPolicy")
            .and_then(Value::as_str)
            == Some("Parallel");
        let rolling = set
            .pointer("/spec/updateStrategy/type")
            .and_then(Value::as_str)
            != Some("OnDelete");
        let partition = if rolling {
            set.pointer("/spec/updateStrategy/rollingUpdate/partition")
                .and_then(Value::as_i64)
                .unwrap_or(0)
        } else {
            0
        };
        // Claims of every pod first: those of condemned pods must point at
        // their pods before the pods go, or nothing would collect them.
        self.reconcile_claims(set, by_ordinal, replicas).await?;
        // Wanted ordinals, lowest first.
        for i in 0..replicas {
            match by_ordinal.get(&i) {
                None => {
                    let rev = if rolling && i < partition {
                        current_rev
                    } else {
                        update_rev
                    };
                    let t = self.template_for(set, rev, update_rev, template);
                    self.create(key, set, i, rev, &t).await?;
                    if !parallel {
                        return Ok(());
                    }
                }
                Some(p) if meta::is_deleting(p) => {
                    if !parallel {
                        return Ok(());
                    }
                }
                Some(p) if pods::phase(p) == "Failed" || pods::phase(p) == "Succeeded" => {
                    // Replaced by a fresh pod once this one is gone.
                    self.delete(key, set, p).await?;
                    if !parallel {
                        return Ok(());
                    }
                }
                Some(p) if !pods::is_running_and_ready(p) => {
                    if !parallel {
                        return Ok(());
                    }
                }
                Some(_) => {}
            }
        }
        // Surplus ordinals, highest first.
        let condemned: Vec<&Arc<Value>> =
            by_ordinal.range(replicas..).rev().map(|(_, p)| p).collect();
        for p in &condemned {
            if meta::is_deleting(p) {
                if !parallel {
                    return Ok(());
                }
                continue;
            }
            self.delete(key, set, p).await?;
            if !parallel {
                return Ok(());
            }
        }
        if !condemned.is_empty() || !rolling {
            return Ok(());
        }
        // Rolling update: every wanted pod healthy, then the highest pod
        // not yet at the update revision is replaced.
        let healthy = (0..replicas).all(|i| {
            by_ordinal
                .get(&i)
                .is_some_and(|p| !meta::is_deleting(p) && pods::is_running_and_ready(p))
        });
        if !healthy {
            return Ok(());
        }
        for i in (partition..replicas).rev() {
            if let Some(p) = by_ordinal.get(&i) {
                if revision_label(p) != update_rev {
                    return self.delete(key, set, p).await;
                }
            }
        }
        Ok(())
    }

    fn status(
        &self,
        set: &Value,
        by_ordinal: &BTreeMap<i64, Arc<Value>>,
        current_rev: &str,
        update_rev: &str,
    ) -> Value {
        let replicas = set
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
            .max(0);
        let min_ready = set
            .pointer("/spec/minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let now = self.ctx.clock.now();
        let live: Vec<&Arc<Value>> = by_ordinal
            .values()
            .filter(|p| !meta::is_deleting(p))
            .collect();
        let count = |f: &dyn Fn(&Value) -> bool| live.iter().filter(|p| f(p)).count() as i64;
        let ready = count(&|p| pods::is_ready(p));
        let available = count(&|p| pods::is_available(p, min_ready, now));
        let mut current = count(&|p| revision_label(p) == current_rev);
        let updated = count(&|p| revision_label(p) == update_rev);
        let mut current_revision = current_rev.to_string();
        // Once every replica runs the update revision, it is current.
        if updated == replicas && live.len() as i64 == replicas && ready == replicas {
            current_revision = update_rev.to_string();
            current = updated;
        }
        let mut st = json!({
            "observedGeneration": set.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0),
            "replicas": live.len(),
            "readyReplicas": ready,
            "availableReplicas": available,
            "currentReplicas": current,
            "updatedReplicas": updated,
            "currentRevision": current_revision,
            "updateRevision": update_rev,
            "collisionCount": set.pointer("/status/collisionCount").and_then(Value::as_i64).unwrap_or(0),
        });
        if let Some(c) = set.pointer("/status/conditions") {
            st["conditions"] = c.clone();
        }
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_parse_only_canonical_numbers() {
        assert_eq!(ordinal("web", "web-0"), Some(0));
        assert_eq!(ordinal("web", "web-12"), Some(12));
        assert_eq!(ordinal("web", "web-01"), None);
        assert_eq!(ordinal("web", "web-x"), None);
        assert_eq!(ordinal("web", "webby-1"), None);
        assert_eq!(ordinal("web", "web-"), None);
    }
}
