//! The HorizontalPodAutoscaler controller (autoscaling/v2): every 15 s it
//! reads the target's scale, the pods its selector picks and their
//! PodMetrics, computes the replica count each Resource metric asks for,
//! takes the largest, applies `behavior`, and writes the new count through
//! the target's `scale` subresource.

pub mod behavior;
pub mod replicas;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::SignedDuration;
use kubesim_core::quantity::Quantity;
use kubesim_core::selector::LabelSelector;
use kubesim_core::{meta, ApiError};
use kubesim_runtime::{
    run_workers, Change, EventType, ObjectKey, Requeue, ResourceRef, WorkQueue, WriteOptions,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::{conditions, pods, resource_ref, Context};
use behavior::{Behavior, Sample};
use replicas::{PodSample, Target};

pub const SYNC_PERIOD: Duration = Duration::from_secs(15);
pub const TOLERANCE: f64 = 0.1;

pub fn hpas_ref() -> ResourceRef {
    ResourceRef::new("autoscaling", "v2", "horizontalpodautoscalers")
}

pub fn pod_metrics_ref() -> ResourceRef {
    ResourceRef::new("metrics.k8s.io", "v1beta1", "pods")
}

/// What an autoscaler remembers between passes (as upstream, in memory).
#[derive(Default)]
struct History {
    recommendations: Vec<Sample>,
    /// Signed replica changes this controller made.
    scale_events: Vec<Sample>,
}

pub struct HpaController {
    ctx: Arc<Context>,
    queue: Arc<WorkQueue<ObjectKey>>,
    history: Mutex<BTreeMap<ObjectKey, History>>,
}

/// One metric's evaluation.
struct Evaluated {
    replicas: i64,
    name: String,
    status: Value,
}

fn milli(q: &Value) -> Option<i64> {
    let q = Quantity::parse(q.as_str()?).ok()?;
    i64::try_from(q.milli()).ok()
}

fn format_milli(m: i64) -> String {
    if m % 1000 == 0 {
        (m / 1000).to_string()
    } else {
        format!("{m}m")
    }
}

/// Sum over the pod's containers of `resources.requests[resource]`; None
/// when any container lacks it.
fn pod_request(pod: &Value, resource: &str) -> Option<i64> {
    let cs = pod.pointer("/spec/containers")?.as_array()?;
    let mut total = 0i64;
    for c in cs {
        total = total.saturating_add(milli(
            c.pointer(&format!("/resources/requests/{resource}"))?,
        )?);
    }
    Some(total)
}

fn metrics_usage(pm: &Value, resource: &str) -> Option<i64> {
    let cs = pm.get("containers")?.as_array()?;
    if cs.is_empty() {
        return None;
    }
    let mut total = 0i64;
    for c in cs {
        total = total.saturating_add(milli(c.pointer(&format!("/usage/{resource}"))?)?);
    }
    Some(total)
}

impl HpaController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Arc::new(HpaController {
            queue: WorkQueue::new(ctx.clock.clone()),
            ctx,
            history: Mutex::new(BTreeMap::new()),
        })
    }

    pub async fn run(self: Arc<Self>) {
        let hpas = self.ctx.informers.get(&hpas_ref());
        let pods = self.ctx.informers.get(&ResourceRef::core("pods"));
        let metrics = self.ctx.informers.get(&pod_metrics_ref());
        let q = self.queue.clone();
        // Spec changes act at once; status writes (our own) do not, or
        // each pass would trigger the next.
        hpas.on_change(move |c| match c {
            Change::Added(o) => q.add(ObjectKey::of(o)),
            Change::Modified { old, new } if old.get("spec") != new.get("spec") => {
                q.add(ObjectKey::of(new))
            }
            _ => {}
        });
        hpas.wait_synced().await;
        pods.wait_synced().await;
        metrics.wait_synced().await;
        let me = self.clone();
        run_workers(
            self.queue.clone(),
            1,
            "horizontal-pod-autoscaler",
            move |key| {
                let me = me.clone();
                async move { me.reconcile(key).await }
            },
        )
        .await;
    }

    async fn reconcile(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(hpa) = self
            .ctx
            .informers
            .get(&hpas_ref())
            .cache()
            .get(&key.namespace, &key.name)
        else {
            self.history.lock().remove(&key);
            return Ok(None);
        };
        let hpa = (*hpa).clone();
        let now = self.ctx.clock.now();
        let now_s = meta::format_time(now);
        let old_status = hpa.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut status = old_status.clone();
        status["observedGeneration"] = hpa
            .pointer("/metadata/generation")
            .cloned()
            .unwrap_or(json!(1));

        let target_ref = hpa
            .pointer("/spec/scaleTargetRef")
            .cloned()
            .unwrap_or(json!({}));
        let api_version = target_ref
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = target_ref.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = target_ref.get("name").and_then(Value::as_str).unwrap_or("");
        let resource = self
            .ctx
            .registry
            .by_kind(api_version, kind)
            .filter(|r| r.has_subresource("scale"));
        let target = match resource {
            Some(r) => self
                .ctx
                .api
                .get_scale(&resource_ref(&r), &key.namespace, name)
                .await
                .map(|o| (r, o)),
            None => Err(ApiError::not_found(kind, api_version, name)),
        };
        let (resource, target) = match target {
            Ok(x) => x,
            Err(e) => {
                let msg = format!(
                    "the HPA controller was unable to get the target's current scale: {}",
                    e.message
                );
                conditions::set(
                    &mut status,
                    "AbleToScale",
                    "False",
                    "FailedGetScale",
                    &msg,
                    &now_s,
                    false,
                );
                self.ctx
                    .recorder
                    .record(&hpa, EventType::Warning, "FailedGetScale", e.message);
                self.write_status(&hpa, status, &old_status).await?;
                return Ok(Some(SYNC_PERIOD));
            }
        };
        // The target's Scale, as upstream's controller reads it (its role
        // may get `*/scale`, not the targets themselves).
        let current = target
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let selector = target
            .pointer("/status/selector")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .and_then(|s| LabelSelector::parse(s).ok());
        status["currentReplicas"] = target
            .pointer("/status/replicas")
            .cloned()
            .unwrap_or(json!(0));
        let min = hpa
            .pointer("/spec/minReplicas")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        let max = hpa
            .pointer("/spec/maxReplicas")
            .and_then(Value::as_i64)
            .unwrap_or(min);
        let b = Behavior::from_spec(hpa.get("spec").unwrap_or(&Value::Null));

        let (desired, reason) = if current == 0 && min != 0 {
            conditions::set(
                &mut status,
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
                &now_s,
                false,
            );
            (0, String::new())
        } else if current > max {
            (
                max,
                "Current number of replicas above Spec.MaxReplicas".to_string(),
            )
        } else if current < min {
            (
                min,
                "Current number of replicas below Spec.MinReplicas".to_string(),
            )
        } else {
            let Some(selector) = selector else {
                conditions::set(
                    &mut status,
                    "ScalingActive",
                    "False",
                    "InvalidSelector",
                    "the HPA target's scale is missing a selector",
                    &now_s,
                    false,
                );
                self.write_status(&hpa, status, &old_status).await?;
                return Ok(Some(SYNC_PERIOD));
            };
            let evaluated = self.evaluate(&hpa, &key.namespace, &selector, current);
            let mut best: Option<Evaluated> = None;
            let mut statuses = Vec::new();
            let mut errors = Vec::new();
            for e in evaluated {
                match e {
                    Ok(ev) => {
                        statuses.push(ev.status.clone());
                        if best.as_ref().is_none_or(|b| ev.replicas > b.replicas) {
                            best = Some(ev);
                        }
                    }
                    Err(msg) => errors.push(msg),
                }
            }
            status["currentMetrics"] = json!(statuses);
            let Some(best) = best else {
                let msg = format!(
                    "the HPA was unable to compute the replica count: {}",
                    errors.join("; ")
                );
                conditions::set(
                    &mut status,
                    "AbleToScale",
                    "True",
                    "SucceededGetScale",
                    "the HPA controller was able to get the target's current scale",
                    &now_s,
                    false,
                );
                conditions::set(
                    &mut status,
                    "ScalingActive",
                    "False",
                    "FailedGetResourceMetric",
                    &msg,
                    &now_s,
                    false,
                );
                self.ctx.recorder.record(
                    &hpa,
                    EventType::Warning,
                    "FailedComputeMetricsReplicas",
                    msg,
                );
                self.write_status(&hpa, status, &old_status).await?;
                return Ok(Some(SYNC_PERIOD));
            };
            conditions::set(
                &mut status,
                "ScalingActive",
                "True",
                "ValidMetricFound",
                &format!(
                    "the HPA was able to successfully calculate a replica count from {}",
                    best.name
                ),
                &now_s,
                false,
            );
            let (stabilized, limited) = {
                let mut hist = self.history.lock();
                let h = hist.entry(key.clone()).or_default();
                let stabilized =
                    behavior::stabilize(now, current, best.replicas, &h.recommendations, &b);
                let horizon = SignedDuration::from_secs(b.horizon());
                h.recommendations.retain(|s| s.at > now - horizon);
                h.recommendations.push(Sample {
                    at: now,
                    value: best.replicas,
                });
                h.scale_events.retain(|s| s.at > now - horizon);
                let limited =
                    behavior::apply_rates(now, current, stabilized, min, max, &h.scale_events, &b);
                (stabilized, limited)
            };
            if stabilized != best.replicas {
                conditions::set(&mut status, "AbleToScale", "True", "ScaleDownStabilized",
                    "recent recommendations were higher than current one, applying the highest recent recommendation", &now_s, false);
            } else {
                conditions::set(
                    &mut status,
                    "AbleToScale",
                    "True",
                    "ReadyForNewScale",
                    "recommended size matches current size",
                    &now_s,
                    false,
                );
            }
            conditions::set(
                &mut status,
                "ScalingLimited",
                if limited.limited { "True" } else { "False" },
                limited.reason,
                limited.message,
                &now_s,
                false,
            );
            let reason = if limited.replicas > current {
                format!("{} above target", best.name)
            } else {
                "All metrics below target".to_string()
            };
            (limited.replicas, reason)
        };

        status["desiredReplicas"] = json!(desired);
        if desired != current {
            let scale = json!({
                "apiVersion": "autoscaling/v1",
                "kind": "Scale",
                "metadata": {"name": name, "namespace": key.namespace},
                "spec": {"replicas": desired},
            });
            match self
                .ctx
                .api
                .update(
                    &resource_ref(&resource),
                    &key.namespace,
                    scale,
                    Some("scale"),
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) => {
                    self.ctx.recorder.record(
                        &hpa,
                        EventType::Normal,
                        "SuccessfulRescale",
                        format!("New size: {desired}; reason: {reason}"),
                    );
                    conditions::set(
                        &mut status,
                        "AbleToScale",
                        "True",
                        "SucceededRescale",
                        &format!(
                            "the HPA controller was able to update the target scale to {desired}"
                        ),
                        &now_s,
                        false,
                    );
                    status["lastScaleTime"] = json!(now_s);
                    self.history
                        .lock()
                        .entry(key.clone())
                        .or_default()
                        .scale_events
                        .push(Sample {
                            at: now,
                            value: desired - current,
                        });
                }
                Err(e) => {
                    let msg = format!(
                        "the HPA controller was unable to update the target scale: {}",
                        e.message
                    );
                    conditions::set(
                        &mut status,
                        "AbleToScale",
                        "False",
                        "FailedUpdateScale",
                        &msg,
                        &now_s,
                        false,
                    );
                    self.ctx.recorder.record(
                        &hpa,
                        EventType::Warning,
                        "FailedRescale",
                        format!(
                            "New size: {desired}; reason: {reason}; error: {}",
                            e.message
                        ),
                    );
                }
            }
        }
        self.write_status(&hpa, status, &old_status).await?;
        Ok(Some(SYNC_PERIOD))
    }

    async fn write_status(&self, hpa: &Value, status: Value, old: &Value) -> Result<(), ApiError> {
        if &status == old {
            return Ok(());
        }
        let mut obj = hpa.clone();
        obj["status"] = status;
        match self
            .ctx
            .api
            .update(
                &hpas_ref(),
                meta::namespace(hpa),
                obj,
                Some("status"),
                &WriteOptions::default(),
            )
            .await
        {
            Ok(_) => Ok(()),
            // The next pass writes a fresh status anyway.
            Err(e) if e.code == 409 || e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Every metric of the spec, evaluated (Resource metrics only).
    fn evaluate(
        &self,
        hpa: &Value,
        ns: &str,
        selector: &LabelSelector,
        current: i64,
    ) -> Vec<Result<Evaluated, String>> {
        let pods: Vec<Arc<Value>> = self
            .ctx
            .informers
            .get(&ResourceRef::core("pods"))
            .cache()
            .list_namespace(ns)
            .into_iter()
            .filter(|p| selector.matches_map(&meta::labels(p)))
            .collect();
        let metrics = self.ctx.informers.get(&pod_metrics_ref()).cache();
        let default = vec![json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}})];
        let specs = hpa
            .pointer("/spec/metrics")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .cloned()
            .unwrap_or(default);
        specs
            .iter()
            .map(|m| {
                if m.get("type").and_then(Value::as_str) != Some("Resource") {
                    return Err(format!(
                        "metric type {} is not supported",
                        m.get("type").and_then(Value::as_str).unwrap_or("")
                    ));
                }
                let res = m.pointer("/resource/name").and_then(Value::as_str).unwrap_or("");
                let t = m.pointer("/resource/target").cloned().unwrap_or(json!({}));
                let target = match t.get("type").and_then(Value::as_str) {
                    Some("Utilization") => Target::Utilization(
                        t.get("averageUtilization").and_then(Value::as_i64).unwrap_or(80),
                    ),
                    Some("AverageValue") => Target::AverageValue(
                        t.get("averageValue").and_then(milli).ok_or("invalid averageValue")?,
                    ),
                    _ => return Err(format!("invalid target for {res}")),
                };
                let samples: Vec<PodSample> = pods
                    .iter()
                    .map(|p| {
                        let pending = matches!(pods::phase(p), "" | "Pending");
                        PodSample {
                            name: meta::name(p).to_string(),
                            ignored: meta::is_deleting(p)
                                || matches!(pods::phase(p), "Failed" | "Succeeded"),
                            // Readiness matters for cpu only: a starting
                            // container's cpu burst says nothing of load.
                            unready: pending || (res == "cpu" && !pods::is_ready(p)),
                            request: pod_request(p, res),
                            usage: metrics
                                .get(ns, meta::name(p))
                                .and_then(|pm| metrics_usage(&pm, res)),
                        }
                    })
                    .collect();
                let p = replicas::proposal(current, &samples, target, TOLERANCE)
                    .map_err(|e| format!("failed to get {res} utilization: {e}"))?;
                let (name, current_status) = match target {
                    Target::Utilization(_) => (
                        format!("{res} resource utilization (percentage of request)"),
                        json!({"averageUtilization": p.utilization.unwrap_or(0),
                               "averageValue": format_milli(p.average)}),
                    ),
                    Target::AverageValue(_) => (
                        format!("{res} resource"),
                        json!({"averageValue": format_milli(p.average)}),
                    ),
                };
                Ok(Evaluated {
                    replicas: p.replicas,
                    name,
                    status: json!({"type": "Resource", "resource": {"name": res, "current": current_status}}),
                })
            })
            .collect()
    }
}
