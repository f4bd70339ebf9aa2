//! The DaemonSet controller: one pod on every node the pod template may
//! run on (nodeSelector, required node affinity, tolerated taints), each
//! pinned to its node with node affinity on `metadata.name` so that the
//! scheduler places it, and rolled to a new template either at most
//! `maxUnavailable` nodes at a time or, with `maxSurge`, by starting the new
//! pod beside the old one (`rolling`).

pub mod rolling;

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
use crate::node_fit::{matches_node, untolerated_taints};
use crate::ownership::{claim, selector_of};
use crate::pods;
use crate::replicaset::{delete_pod, on_pod_change, pods_ref, update_status};
use crate::Context;
use rolling::{Availability, Budget};

pub const REVISION_LABEL: &str = "controller-revision-hash";
pub const GENERATION_LABEL: &str = "pod-template-generation";
const WORKERS: usize = 2;

pub fn daemonsets() -> ResourceRef {
    ResourceRef::new("apps", "v1", "daemonsets")
}

/// The tolerations every DaemonSet pod gets, so that node conditions do
/// not evict or keep out the node's own daemons.
pub fn automatic_tolerations(host_network: bool) -> Vec<Value> {
    let mut t = vec![
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}),
        json!({"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}),
    ];
    if host_network {
        t.push(json!({"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}));
    }
    t
}

/// The template's pod spec with the automatic tolerations added.
fn with_tolerations(spec: &Value) -> Value {
    let mut spec = spec.clone();
    let host = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    if !spec.is_object() {
        spec = json!({});
    }
    let mut tols: Vec<Value> = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for t in automatic_tolerations(host) {
        let same = |x: &Value| x.get("key") == t.get("key") && x.get("effect") == t.get("effect");
        if !tols.iter().any(same) {
            tols.push(t);
        }
    }
    spec["tolerations"] = json!(tols);
    spec
}

/// Pins a pod spec to `node`: every required node-affinity term gets the
/// field requirement `metadata.name In [node]` (a spec without terms gets
/// one term with only that requirement).
pub fn pin_to_node(spec: &mut Value, node: &str) {
    let field = json!([{"key": "metadata.name", "operator": "In", "values": [node]}]);
    let terms = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let terms: Vec<Value> = if terms.is_empty() {
        vec![json!({"matchFields": field})]
    } else {
        terms
            .into_iter()
            .map(|mut t| {
                t["matchFields"] = field.clone();
                t
            })
            .collect()
    };
    if spec.get("affinity").and_then(Value::as_object).is_none() {
        spec["affinity"] = json!({});
    }
    if spec["affinity"]
        .get("nodeAffinity")
        .and_then(Value::as_object)
        .is_none()
    {
        spec["affinity"]["nodeAffinity"] = json!({});
    }
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
        json!({"nodeSelectorTerms": terms});
}

/// The node a DaemonSet pod is for: where it is bound, or else where its
/// node affinity pins it.
pub fn target_node(pod: &Value) -> Option<String> {
    if let Some(n) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
        if !n.is_empty() {
            return Some(n.to_string());
        }
    }
    pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")?
        .as_array()?
        .iter()
        .flat_map(|t| t.get("matchFields").and_then(Value::as_array).into_iter().flatten())
        .find(|f| f.get("key").and_then(Value::as_str) == Some("metadata.name")
            && f.get("operator").and_then(Value::as_str) == Some("In"))
        .and_then(|f| f.pointer("/values/0"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Whether the DaemonSet's pods belong on `node`.
pub fn should_run(template_spec: &Value, node: &Value) -> bool {
    if meta::is_deleting(node) {
        return false;
    }
    let spec = with_tolerations(template_spec);
    matches_node(&spec, node) && untolerated_taints(&spec, node).is_empty()
}

pub struct DaemonSetController {
    ctx: Arc<Context>,
    sets: Arc<Informer>,
    pods: Arc<Informer>,
    nodes: Arc<Informer>,
    revisions: Option<Arc<Informer>>,
    queue: Arc<WorkQueue<ObjectKey>>,
    exp: Arc<Expectations>,
}

impl DaemonSetController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        let revisions =
            history::served(&ctx).then(|| ctx.informers.get(&history::controller_revisions()));
        Arc::new(DaemonSetController {
            sets: ctx.informers.get(&daemonsets()),
            pods: ctx.informers.get(&pods_ref()),
            nodes: ctx.informers.get(&ResourceRef::core("nodes")),
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
            on_pod_change(c, "DaemonSet", &sets, &q, &exp, "/spec/selector");
        });
        // Any node change may change where every DaemonSet runs.
        let (q, sets) = (self.queue.clone(), self.sets.cache());
        self.nodes.on_change(move |c| {
            let relevant = match c {
                kubesim_runtime::Change::Modified { old, new } => {
                    old.get("metadata")
                        .map(|m| (m.get("labels"), m.get("deletionTimestamp")))
                        != new
                            .get("metadata")
                            .map(|m| (m.get("labels"), m.get("deletionTimestamp")))
                        || old.pointer("/spec") != new.pointer("/spec")
                }
                _ => true,
            };
            if relevant {
                for k in sets.keys() {
                    q.add(k);
                }
            }
        });
        self.sets.wait_synced().await;
        self.pods.wait_synced().await;
        self.nodes.wait_synced().await;
        if let Some(r) = &self.revisions {
            r.wait_synced().await;
        }
        let me = self.clone();
        run_workers(self.queue.clone(), WORKERS, "daemonset", move |k| {
            let me = me.clone();
            async move { me.sync(k).await }
        })
        .await;
    }

    async fn sync(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(ds) = self.sets.cache().get(&key.namespace, &key.name) else {
            self.exp.forget(&key);
            return Ok(None);
        };
        let Some(selector) = selector_of(&ds) else {
            return Ok(None);
        };
        // Expectations are read before the cache: a creation observed
        // between a cache read and this check would let a pass act on a
        // view that lacks the pod, and create it twice.
        let trusted = self.exp.satisfied(&key);
        let owned = claim(
            &*self.ctx.api,
            &pods_ref(),
            &ds,
            &selector,
            self.pods.cache().list_namespace(&key.namespace),
            &|_| true,
        )
        .await?;
        let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let collisions = ds.pointer("/status/collisionCount").and_then(Value::as_i64);
        let hash = template_hash(&template, collisions);
        if let Some(revs) = &self.revisions {
            let name = format!("{}-{hash}", key.name);
            history::ensure(&self.ctx, &revs.cache(), &ds, &name, &template).await?;
        }
        let template_spec = template.get("spec").cloned().unwrap_or(json!({}));
        let nodes: BTreeMap<String, Arc<Value>> = self
            .nodes
            .cache()
            .list()
            .into_iter()
            .map(|n| (meta::name(&n).to_string(), n))
            .collect();
        let mut by_node: BTreeMap<String, Vec<Arc<Value>>> = BTreeMap::new();
        let mut stray = Vec::new();
        for p in owned.iter().filter(|p| !meta::is_deleting(p)) {
            match target_node(p) {
                Some(n) if nodes.contains_key(&n) => by_node.entry(n).or_default().push(p.clone()),
                _ => stray.push(p.clone()),
            }
        }
        for ps in by_node.values_mut() {
            ps.sort_by(|a, b| oldest_first(a, b));
        }
        let eligible: Vec<&String> = nodes
            .iter()
            .filter(|(_, n)| should_run(&template_spec, n))
            .map(|(name, _)| name)
            .collect();
        if trusted && !meta::is_deleting(&ds) {
            self.manage(&key, &ds, &template, &hash, &eligible, &by_node, &stray)
                .await?;
        }
        let min_ready = ds
            .pointer("/spec/minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let now = self.ctx.clock.now();
        let mut scheduled = 0;
        let mut ready = 0;
        let mut available = 0;
        let mut updated = 0;
        // Each node counts by its oldest pod, as upstream: during a surge
        // the old pod, until it is gone.
        for n in &eligible {
            let Some(p) = by_node.get(*n).and_then(|ps| ps.first()) else {
                continue;
            };
            scheduled += 1;
            ready += i64::from(pods::is_ready(p));
            available += i64::from(pods::is_available(p, min_ready, now));
            updated += i64::from(meta::labels(p).get(REVISION_LABEL) == Some(&hash));
        }
        let misscheduled = by_node.keys().filter(|n| !eligible.contains(n)).count();
        let desired = eligible.len() as i64;
        let status = json!({
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": scheduled,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
            "updatedNumberScheduled": updated,
            "observedGeneration": ds.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0),
        });
        update_status(&*self.ctx.api, &daemonsets(), &ds, status).await?;
        if let Some(revs) = &self.revisions {
            let live = format!("{}-{hash}", key.name);
            history::prune(&self.ctx, &revs.cache(), &ds, &[live.as_str()]).await?;
        }
        Ok(owned
            .iter()
            .filter_map(|p| pods::until_available(p, min_ready, now))
            .min()
            .map(|d| d + std::time::Duration::from_millis(1)))
    }

    #[allow(clippy::too_many_arguments)]
    async fn manage(
        &self,
        key: &ObjectKey,
        ds: &Value,
        template: &Value,
        hash: &str,
        eligible: &[&String],
        by_node: &BTreeMap<String, Vec<Arc<Value>>>,
        stray: &[Arc<Value>],
    ) -> Result<(), ApiError> {
        let mut create: Vec<String> = Vec::new();
        let mut delete: Vec<Arc<Value>> = stray.to_vec();
        for (node, ps) in by_node {
            if !eligible.contains(&node) {
                delete.extend(ps.iter().cloned());
            }
        }
        let desired = eligible.len() as i64;
        let budget = Budget::of(ds, desired)?;
        let at = Availability {
            min_ready_seconds: ds
                .pointer("/spec/minReadySeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            now: self.ctx.clock.now(),
        };
        for node in eligible {
            let ps = by_node.get(*node).cloned().unwrap_or_default();
            let (failed, alive): (Vec<_>, Vec<_>) = ps
                .into_iter()
                .partition(|p| matches!(pods::phase(p), "Failed" | "Succeeded"));
            delete.extend(failed);
            if alive.is_empty() {
                create.push((*node).clone());
                continue;
            }
            delete.extend(rolling::excess_on_node(&alive, hash, budget.surging(), at));
        }
        // Rolling update, once every node has its pods in order.
        let rolling_update = ds
            .pointer("/spec/updateStrategy/type")
            .and_then(Value::as_str)
            != Some("OnDelete");
        if rolling_update && create.is_empty() && delete.is_empty() {
            if budget.surging() {
                let step = rolling::surge_step(eligible, by_node, hash, budget.max_surge, at);
                create = step.create;
                delete = step.delete;
            } else {
                delete =
                    rolling::unavailable_step(eligible, by_node, hash, budget.max_unavailable, at);
            }
        }
        if !create.is_empty() {
            self.exp.expect_creations(key, create.len());
            let mut err = None;
            for node in &create {
                let mut pod =
                    pods::from_template(template, ds, &format!("{}-", meta::name(ds)), None);
                let mut spec = with_tolerations(&pod["spec"]);
                pin_to_node(&mut spec, node);
                pod["spec"] = spec;
                if let Some(m) = pod.pointer_mut("/metadata").and_then(Value::as_object_mut) {
                    let labels = m.entry("labels").or_insert_with(|| json!({}));
                    if let Some(l) = labels.as_object_mut() {
                        l.insert(REVISION_LABEL.into(), json!(hash));
                        let generation = ds
                            .pointer("/metadata/generation")
                            .and_then(Value::as_i64)
                            .unwrap_or(1);
                        l.insert(GENERATION_LABEL.into(), json!(generation.to_string()));
                    }
                }
                match self
                    .ctx
                    .api
                    .create(&pods_ref(), &key.namespace, pod, &WriteOptions::default())
                    .await
                {
                    Ok(p) => self.ctx.recorder.record(
                        ds,
                        EventType::Normal,
                        "SuccessfulCreate",
                        format!("Created pod: {}", meta::name(&p)),
                    ),
                    Err(e) => {
                        self.exp.creation_observed(key);
                        err = err.or(Some(e));
                    }
                }
            }
            if let Some(e) = err {
                return Err(e);
            }
        }
        if !delete.is_empty() {
            self.exp
                .expect_deletions(key, delete.iter().map(|p| meta::name(p).to_string()));
            let mut err = None;
            for p in &delete {
                match delete_pod(&*self.ctx.api, p).await {
                    Ok(()) => self.ctx.recorder.record(
                        ds,
                        EventType::Normal,
                        "SuccessfulDelete",
                        format!("Deleted pod: {}", meta::name(p)),
                    ),
                    Err(e) => {
                        self.exp.deletion_observed(key, meta::name(p));
                        err = err.or(Some(e));
                    }
                }
            }
            if let Some(e) = err {
                return Err(e);
            }
        }
        Ok(())
    }
}

/// Upstream's order of a node's daemon pods: bound before unbound, then
/// oldest first, then by name.
fn oldest_first(a: &Value, b: &Value) -> std::cmp::Ordering {
    let (bound, created) = (crate::pods::is_bound, crate::pods::created_at);
    bound(b)
        .cmp(&bound(a))
        .then(created(a).cmp(&created(b)))
        .then(meta::name(a).cmp(meta::name(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_keeps_label_terms_and_is_read_back() {
        let mut spec = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}});
        pin_to_node(&mut spec, "n1");
        let term = &spec["affinity"]["nodeAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0];
        assert_eq!(term["matchExpressions"][0]["key"], "zone");
        assert_eq!(term["matchFields"][0]["values"][0], "n1");
        assert_eq!(target_node(&json!({"spec": spec})), Some("n1".into()));
        let mut bare = json!({});
        pin_to_node(&mut bare, "n2");
        assert_eq!(target_node(&json!({"spec": bare})), Some("n2".into()));
    }

    #[test]
    fn daemon_pods_tolerate_node_conditions_but_not_other_taints() {
        let unschedulable = json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]}});
        assert!(should_run(&json!({}), &unschedulable));
        let dedicated = json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}});
        assert!(!should_run(&json!({}), &dedicated));
        let net = json!({"metadata": {"name": "n"}, "spec": {"taints": [
            {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]}});
        assert!(!should_run(&json!({}), &net));
        assert!(should_run(&json!({"hostNetwork": true}), &net));
    }
}
