//! The PodDisruptionBudget controller (the disruption controller): keeps
//! each budget's status current, chiefly `disruptionsAllowed`, which the
//! API server's eviction subresource consults and decrements.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use kubesim_core::selector::LabelSelector;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Change, ObjectKey, Requeue, ResourceRef, WorkQueue, WriteOptions,
};
use serde_json::{json, Map, Value};

use crate::{conditions, pods, resource_ref, Context};

/// How long an eviction the API server granted is trusted before the pod
/// must be seen going away.
const DISRUPTION_TIMEOUT: i64 = 120;

pub fn pdbs_ref() -> ResourceRef {
    ResourceRef::new("policy", "v1", "poddisruptionbudgets")
}

fn selector(pdb: &Value) -> Option<LabelSelector> {
    // A missing selector selects nothing; an empty one, every pod.
    LabelSelector::from_json(pdb.pointer("/spec/selector")?).ok()
}

/// An int-or-percent value scaled against `total`, rounding up.
pub fn scaled(v: &Value, total: i64) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let pct: i64 = s.strip_suffix('%')?.parse().ok()?;
            Some((pct.saturating_mul(total) + 99).div_euclid(100))
        }
        _ => None,
    }
}

/// (expectedPods, desiredHealthy) for a budget over `matching` pods whose
/// controllers ask for `scale` replicas in all (None when unknown).
pub fn budget(spec: &Value, matching: i64, scale: Option<i64>) -> (i64, i64) {
    if let Some(Value::Number(n)) = spec.get("minAvailable") {
        return (matching, n.as_i64().unwrap_or(0));
    }
    let expected = scale.unwrap_or(matching);
    if let Some(v) = spec.get("maxUnavailable") {
        let unavailable = scaled(v, expected).unwrap_or(0);
        return (expected, (expected - unavailable).max(0));
    }
    if let Some(v) = spec.get("minAvailable") {
        return (expected, scaled(v, expected).unwrap_or(0));
    }
    (expected, 0)
}

pub struct PdbController {
    ctx: Arc<Context>,
    queue: Arc<WorkQueue<ObjectKey>>,
}

impl PdbController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Arc::new(PdbController {
            queue: WorkQueue::new(ctx.clock.clone()),
            ctx,
        })
    }

    pub async fn run(self: Arc<Self>) {
        let pdbs = self.ctx.informers.get(&pdbs_ref());
        let pods = self.ctx.informers.get(&ResourceRef::core("pods"));
        let q = self.queue.clone();
        pdbs.on_change(move |c| {
            if !matches!(c, Change::Deleted(_)) {
                q.add(ObjectKey::of(c.object()))
            }
        });
        let q = self.queue.clone();
        let cache = pdbs.cache();
        pods.on_change(move |c| {
            let pod = c.object();
            let pdbs = cache.list_namespace(meta::namespace(pod));
            // Without a budget in the namespace no label is worth reading.
            if pdbs.is_empty() {
                return;
            }
            let mut label_sets = vec![meta::labels(pod)];
            if let Change::Modified { old, .. } = c {
                let before = old.labels();
                if before != label_sets[0] {
                    label_sets.push(before);
                }
            }
            for pdb in pdbs {
                if selector(&pdb).is_some_and(|s| label_sets.iter().any(|l| s.matches_map(l))) {
                    q.add(ObjectKey::of(&pdb));
                }
            }
        });
        pdbs.wait_synced().await;
        pods.wait_synced().await;
        let me = self.clone();
        run_workers(self.queue.clone(), 1, "disruption", move |key| {
            let me = me.clone();
            async move { me.reconcile(key).await }
        })
        .await;
    }

    /// Total replicas the controllers of `pods` ask for; None when some
    /// pod has no controller with a scale.
    async fn controllers_scale(&self, pods: &[Arc<Value>]) -> Result<Option<i64>, ApiError> {
        let mut seen = BTreeSet::new();
        let mut total = 0i64;
        for p in pods {
            let Some(r) = p
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|r| r.get("controller") == Some(&json!(true))))
            else {
                return Ok(None);
            };
            let Some(mut owner) = self.fetch_owner(meta::namespace(p), r).await? else {
                return Ok(None);
            };
            // A ReplicaSet run by a Deployment: the Deployment's count is
            // the one that will hold.
            if owner.get("kind").and_then(Value::as_str) == Some("ReplicaSet") {
                if let Some(dref) = owner
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                    .and_then(|a| {
                        a.iter().find(|r| {
                            r.get("controller") == Some(&json!(true))
                                && r.get("kind").and_then(Value::as_str) == Some("Deployment")
                        })
                    })
                    .cloned()
                {
                    if let Some(d) = self.fetch_owner(meta::namespace(p), &dref).await? {
                        owner = d;
                    }
                }
            }
            if seen.insert(meta::uid(&owner).to_string()) {
                total += owner
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
            }
        }
        Ok(Some(total))
    }

    /// The object an ownerReference names, if it exists and has a scale.
    async fn fetch_owner(&self, ns: &str, r: &Value) -> Result<Option<Value>, ApiError> {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let Some(res) = self
            .ctx
            .registry
            .by_kind(s("apiVersion"), s("kind"))
            .filter(|res| res.has_subresource("scale"))
        else {
            return Ok(None);
        };
        match self.ctx.api.get(&resource_ref(&res), ns, s("name")).await {
            Ok(o) if meta::uid(&o) == s("uid") => Ok(Some(o)),
            Ok(_) => Ok(None),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn reconcile(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(pdb) = self
            .ctx
            .informers
            .get(&pdbs_ref())
            .cache()
            .get(&key.namespace, &key.name)
        else {
            return Ok(None);
        };
        let now = self.ctx.clock.now();
        let matching: Vec<Arc<Value>> = match selector(&pdb) {
            Some(sel) => self
                .ctx
                .informers
                .get(&ResourceRef::core("pods"))
                .cache()
                .list_namespace(&key.namespace)
                .into_iter()
                .filter(|p| sel.matches_map(&meta::labels(p)))
                .collect(),
            None => Vec::new(),
        };
        let spec = pdb.get("spec").cloned().unwrap_or_else(|| json!({}));
        let percent_or_max = !matches!(spec.get("minAvailable"), Some(Value::Number(_)));
        let scale = if percent_or_max {
            self.controllers_scale(&matching).await?
        } else {
            None
        };
        let (expected, desired) = budget(&spec, matching.len() as i64, scale);

        // Evictions granted but not yet seen through: the pod counts as
        // gone until it is, or until the grant times out.
        let live: BTreeMap<&str, &Arc<Value>> =
            matching.iter().map(|p| (meta::name(p), p)).collect();
        let mut disrupted = Map::new();
        let mut requeue: Requeue = None;
        if let Some(m) = pdb
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object)
        {
            for (name, at) in m {
                let Some(t) = at.as_str().and_then(meta::parse_time) else {
                    continue;
                };
                let expires = t + SignedDuration::from_secs(DISRUPTION_TIMEOUT);
                let pending = live
                    .get(name.as_str())
                    .is_some_and(|p| !meta::is_deleting(p));
                if pending && expires > now {
                    disrupted.insert(name.clone(), at.clone());
                    let wait = until(now, expires);
                    requeue = Some(requeue.map_or(wait, |r: Duration| r.min(wait)));
                }
            }
        }
        let healthy = matching
            .iter()
            .filter(|p| {
                !meta::is_deleting(p) && pods::is_ready(p) && !disrupted.contains_key(meta::name(p))
            })
            .count() as i64;
        let allowed = (healthy - desired).max(0);

        let old_status = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut status = old_status.clone();
        status["observedGeneration"] = pdb
            .pointer("/metadata/generation")
            .cloned()
            .unwrap_or(json!(1));
        status["currentHealthy"] = json!(healthy);
        status["desiredHealthy"] = json!(desired);
        status["expectedPods"] = json!(expected);
        status["disruptionsAllowed"] = json!(allowed);
        if disrupted.is_empty() {
            if let Some(m) = status.as_object_mut() {
                m.remove("disruptedPods");
            }
        } else {
            status["disruptedPods"] = Value::Object(disrupted);
        }
        let (value, reason) = if allowed > 0 {
            ("True", "SufficientPods")
        } else {
            ("False", "InsufficientPods")
        };
        conditions::set(
            &mut status,
            "DisruptionAllowed",
            value,
            reason,
            "",
            &meta::format_time(now),
            false,
        );
        if status != old_status {
            let mut obj = (*pdb).clone();
            obj["status"] = status;
            self.ctx
                .api
                .update(
                    &pdbs_ref(),
                    &key.namespace,
                    obj,
                    Some("status"),
                    &WriteOptions::default(),
                )
                .await?;
        }
        Ok(requeue)
    }
}

fn until(now: Timestamp, t: Timestamp) -> Duration {
    Duration::try_from(t.duration_since(now)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_by_hand() {
        // minAvailable 2 of 3 matching pods.
        assert_eq!(budget(&json!({"minAvailable": 2}), 3, Some(5)), (3, 2));
        // minAvailable 50 % of a scale of 5 rounds up to 3.
        assert_eq!(budget(&json!({"minAvailable": "50%"}), 3, Some(5)), (5, 3));
        // maxUnavailable 1 of 4: 3 must stay healthy.
        assert_eq!(budget(&json!({"maxUnavailable": 1}), 4, Some(4)), (4, 3));
        // maxUnavailable 30 % of 4 rounds up to 2 unavailable: 2 healthy.
        assert_eq!(
            budget(&json!({"maxUnavailable": "30%"}), 4, Some(4)),
            (4, 2)
        );
        // Without a known controller the matching pods stand in.
        assert_eq!(budget(&json!({"maxUnavailable": "50%"}), 4, None), (4, 2));
        assert_eq!(scaled(&json!("x%"), 4), None);
    }
}
