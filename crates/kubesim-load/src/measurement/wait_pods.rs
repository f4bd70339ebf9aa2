//! WaitForRunningPods: a barrier until `desiredPodCount` selected pods
//! are Running and Ready and every other one has finished. Also the pod
//! status buckets other waiters share (upstream's
//! `ComputePodsStartupStatus`).

use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::ResourceRef;
use serde_json::Value;

use crate::params::{self, Params};
use crate::report::Summary;

use super::informer_pool::Pooled;
use super::{Ctx, Measurement, MeasurementError};
use kubesim_gocompat::duration::format_std;

const METHOD: &str = "WaitForRunningPods";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const DEFAULT_REFRESH: Duration = Duration::from_secs(5);
/// A zero refresh interval would poll without letting time pass.
const MIN_REFRESH: Duration = Duration::from_millis(1);

/// How a group of pods is doing, in upstream's buckets: terminating pods
/// are counted apart and in no other bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodsStatus {
    pub expected: i64,
    pub created: i64,
    /// Phase Running and Ready.
    pub running: i64,
    pub running_but_not_ready: i64,
    /// Pending and bound to a node.
    pub pending: i64,
    /// Pending and not yet bound.
    pub waiting: i64,
    /// Succeeded or Failed.
    pub inactive: i64,
    pub terminating: i64,
    pub unknown: i64,
    /// Bound to a node (not terminating).
    pub scheduled: i64,
}

impl PodsStatus {
    pub fn of<'a>(pods: impl IntoIterator<Item = &'a Value>, expected: i64) -> Self {
        let mut s = PodsStatus {
            expected,
            ..Default::default()
        };
        for p in pods {
            if meta::is_deleting(p) {
                s.terminating += 1;
                continue;
            }
            s.created += 1;
            match phase(p) {
                "Running" if is_ready(p) => s.running += 1,
                "Running" => s.running_but_not_ready += 1,
                "Pending" if node(p).is_empty() => s.waiting += 1,
                "Pending" => s.pending += 1,
                "Succeeded" | "Failed" => s.inactive += 1,
                "Unknown" => s.unknown += 1,
                // A pod the kubelet has not reported on yet.
                _ if node(p).is_empty() => s.waiting += 1,
                _ => s.pending += 1,
            }
            if !node(p).is_empty() {
                s.scheduled += 1;
            }
        }
        s
    }

    /// Upstream's wording, so logs and errors read the same.
    pub fn describe(&self) -> String {
        format!(
            "Pods: {} out of {} created, {} running, {} pending scheduled, {} not scheduled, \
             {} inactive, {} terminating, {} unknown, {} runningButNotReady",
            self.created,
            self.expected,
            self.running,
            self.pending,
            self.waiting,
            self.inactive,
            self.terminating,
            self.unknown,
            self.running_but_not_ready
        )
    }
}

pub fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub fn node(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The Ready condition is True.
pub fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// What CL2's waiters call running: phase Running, Ready, not being
/// deleted.
pub fn is_running_ready(pod: &Value) -> bool {
    !meta::is_deleting(pod) && phase(pod) == "Running" && is_ready(pod)
}

/// The pods a waiter looks at: a namespace (empty: all) and selectors.
#[derive(Debug, Clone, Default)]
pub struct PodSelector {
    pub namespace: String,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
}

impl PodSelector {
    pub fn parse(p: &Params) -> Result<Self, MeasurementError> {
        Ok(PodSelector {
            namespace: params::string_or(p, "namespace", "")?,
            label_selector: params::string(p, "labelSelector")?.filter(|s| !s.is_empty()),
            field_selector: params::string(p, "fieldSelector")?.filter(|s| !s.is_empty()),
        })
    }

    /// The test's shared informer on the selected pods.
    pub fn informer(&self, ctx: &Ctx) -> Arc<Pooled> {
        ctx.informer(
            ResourceRef::core("pods"),
            &self.namespace,
            self.label_selector.clone(),
            self.field_selector.clone(),
        )
    }
}

pub struct WaitForRunningPods;

#[async_trait::async_trait]
impl Measurement for WaitForRunningPods {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        // A single call: the `action` configs pass is ignored, as upstream.
        let desired = params::int(p, "desiredPodCount")?.ok_or_else(|| {
            MeasurementError::failed(format!(
                "{METHOD}: parameter \"desiredPodCount\" is required"
            ))
        })?;
        let selector = PodSelector::parse(p)?;
        let timeout = params::duration_or(p, "timeout", DEFAULT_TIMEOUT)?;
        let refresh = params::duration_or(p, "refreshInterval", DEFAULT_REFRESH)?.max(MIN_REFRESH);
        let fatal = params::bool_or(p, "isFatal", false)?;
        match wait(ctx, &selector, desired, timeout, refresh).await {
            Ok(()) => Ok(Vec::new()),
            Err(msg) if fatal => Err(MeasurementError::critical(msg)),
            Err(msg) => Err(MeasurementError::failed(msg)),
        }
    }
}

/// Polls a pod informer's cache every `refresh` until `desired` pods run
/// and the rest have finished; upstream checks first after one interval.
async fn wait(
    ctx: &Ctx,
    sel: &PodSelector,
    desired: i64,
    timeout: Duration,
    refresh: Duration,
) -> Result<(), String> {
    // Held until return, which lets the informer go.
    let pooled = sel.informer(ctx);
    let informer = pooled.informer();
    let deadline = ctx.clock.instant() + timeout;
    let mut status = PodsStatus {
        expected: desired,
        ..Default::default()
    };
    loop {
        let next = ctx.clock.instant() + refresh;
        if next > deadline {
            ctx.clock.sleep_until(deadline).await;
            break;
        }
        ctx.clock.sleep_until(next).await;
        if !informer.has_synced() {
            continue;
        }
        let pods = informer.cache().list();
        status = PodsStatus::of(pods.iter().map(|p| p.as_ref()), desired);
        // Evicted or completed pods may stay; everything else must run.
        if status.created == status.running + status.inactive && status.running == desired {
            return Ok(());
        }
    }
    Err(format!(
        "{METHOD}: timeout after {} while waiting for {desired} pods to be running in namespace '{}' \
         with labels '{}' and fields '{}' - only {} found running; {}",
        format_std(timeout),
        sel.namespace,
        sel.label_selector.as_deref().unwrap_or(""),
        sel.field_selector.as_deref().unwrap_or(""),
        status.running,
        status.describe()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::*;
    use crate::measurement::ErrorKind;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn buckets() {
        let pods = [
            json!({"spec": {}, "status": {"phase": "Pending"}}),
            json!({"spec": {"nodeName": "n"}, "status": {"phase": "Pending"}}),
            json!({"spec": {"nodeName": "n"}, "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({"spec": {"nodeName": "n"}, "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "False"}]}}),
            json!({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}}),
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"nodeName": "n"}, "status": {"phase": "Running"}}),
        ];
        let s = PodsStatus::of(pods.iter(), 3);
        assert_eq!(
            s,
            PodsStatus {
                expected: 3,
                created: 5,
                running: 1,
                running_but_not_ready: 1,
                pending: 1,
                waiting: 1,
                inactive: 1,
                terminating: 1,
                unknown: 0,
                scheduled: 4,
            }
        );
        assert_eq!(
            s.describe(),
            "Pods: 5 out of 3 created, 1 running, 1 pending scheduled, 1 not scheduled, \
             1 inactive, 1 terminating, 0 unknown, 1 runningButNotReady"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn returns_at_the_first_check_after_all_run() {
        let (ctx, api) = ctx().await;
        for name in ["a", "b"] {
            create_labeled_pod(&api, "default", name, json!({"app": "x"})).await;
        }
        create_labeled_pod(&api, "default", "other", json!({"app": "y"})).await;
        let clock = ctx.clock.clone();
        let api2 = api.clone();
        tokio::spawn(async move {
            clock.sleep(Duration::from_secs(7)).await;
            start_pod(&api2, "default", "a", &clock).await;
            start_pod(&api2, "default", "b", &clock).await;
        });
        let t0 = ctx.clock.instant();
        let p = params(json!({"action": "start", "desiredPodCount": 2,
            "labelSelector": "app=x", "refreshInterval": "2s"}));
        WaitForRunningPods
            .execute(&ctx, "w", &p)
            .await
            .expect("pods run");
        // Checks at 2, 4, 6, 8 s: the pods ran at 7 s.
        assert_eq!(ctx.clock.instant() - t0, Duration::from_secs(8));
    }

    #[tokio::test(start_paused = true)]
    async fn times_out_with_counts() {
        let (ctx, api) = ctx().await;
        create_pod(&api, "default", "a", json!({})).await;
        start_pod(&api, "default", "a", &ctx.clock).await;
        create_pod(&api, "default", "b", json!({})).await;
        bind(&api, "default", "b", "n1").await;
        create_pod(&api, "default", "c", json!({})).await;
        let t0 = ctx.clock.instant();
        let p = params(json!({"desiredPodCount": "3", "timeout": "30s"}));
        let err = WaitForRunningPods.execute(&ctx, "w", &p).await.unwrap_err();
        assert_eq!(ctx.clock.instant() - t0, Duration::from_secs(30));
        assert_eq!(err.kind, ErrorKind::Failed);
        assert!(
            err.message.contains("only 1 found running"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains(
                "Pods: 3 out of 3 created, 1 running, 1 pending scheduled, 1 not scheduled"
            ),
            "{}",
            err.message
        );

        let fatal = params(json!({"desiredPodCount": 3, "timeout": "10s", "isFatal": true}));
        let err = WaitForRunningPods
            .execute(&ctx, "w", &fatal)
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Critical);
    }

    #[tokio::test(start_paused = true)]
    async fn not_ready_pods_block_and_terminating_ones_do_not_count() {
        let (ctx, api) = ctx().await;
        create_pod(&api, "default", "a", json!({})).await;
        start_pod(&api, "default", "a", &ctx.clock).await;
        create_pod(&api, "default", "b", json!({})).await;
        bind(&api, "default", "b", "n1").await;
        patch_status(
            &api,
            "default",
            "b",
            json!({"phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}]}),
        )
        .await;
        let p = params(json!({"desiredPodCount": 1, "timeout": "10s"}));
        let err = WaitForRunningPods.execute(&ctx, "w", &p).await.unwrap_err();
        assert!(
            err.message.contains("1 runningButNotReady"),
            "{}",
            err.message
        );
        // Once b is being deleted (it is bound, so it waits for the
        // kubelet), only a is left.
        api.delete(&pods(), "default", "b", &Default::default())
            .await
            .expect("delete");
        WaitForRunningPods
            .execute(&ctx, "w", &p)
            .await
            .expect("terminating pods are not waited for");
    }

    #[tokio::test(start_paused = true)]
    async fn desired_count_is_required() {
        let (ctx, _api) = ctx().await;
        let err = WaitForRunningPods
            .execute(&ctx, "w", &params(json!({"timeout": "1s"})))
            .await
            .unwrap_err();
        assert!(err.message.contains("desiredPodCount"));
    }
}
