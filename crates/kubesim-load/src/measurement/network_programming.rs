//! NetworkProgrammingLatency, derived from what the API shows. Upstream
//! reads kube-proxy's `network_programming_duration` through Prometheus:
//! the time from a change of a Service's endpoints to the node's rules
//! reflecting it. Emulated nodes run no kube-proxy, so the part that can
//! be observed honestly is measured instead: for every pod that becomes
//! Ready while the measurement runs, the time from the change that makes
//! it an endpoint to when the runner sees an EndpointSlice list it as a
//! ready endpoint. The change is the later of the pod turning Ready and
//! its Service appearing, as kube-proxy's trigger time is the later of
//! the changes behind an endpoint. All moments are watch observations on
//! the same clock, so the watch delay cancels out. Pods behind no Service
//! are not counted.
//!
//! `start` … `gather`; the summary is `NetworkProgrammingLatency` (PerfData
//! v1, Perc50/90/99 in ms). With `enableViolations` (default false, as
//! upstream) a p99 above `threshold` is an SLO violation.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kubesim_gocompat::duration::format_std;
use kubesim_runtime::{Change, Clock, ResourceRef};
use parking_lot::Mutex;
use serde_json::Value;

use crate::params::{self, Params};
use crate::report::{PerfData, Summary};

use super::informer_pool::Subscription;
use super::latency::LatencyMetric;
use super::wait_pods::is_ready;
use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "NetworkProgrammingLatency";

/// Per pod UID: when it was seen Ready, and when it was seen as a ready
/// endpoint (the first time each, after the measurement started).
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    ready: Option<tokio::time::Instant>,
    programmed: Option<tokio::time::Instant>,
}

#[derive(Default)]
struct Shared {
    seen: Mutex<BTreeMap<String, Seen>>,
    /// Services (`namespace/name`) seen created during the measurement.
    services: Mutex<BTreeMap<String, tokio::time::Instant>>,
    /// Changes before both informers listed are the state at start, not
    /// transitions to measure.
    live: AtomicBool,
}

struct Running {
    shared: Arc<Shared>,
    enable_violations: bool,
    threshold: Duration,
    /// Its handlers on the shared informers; dropping them lets go.
    _subscriptions: Vec<Subscription>,
}

#[derive(Default)]
pub struct NetworkProgrammingLatency {
    running: Option<Running>,
}

fn on_pod(shared: &Shared, clock: &Clock, c: &Change) {
    let pod = match c {
        Change::Added(p) | Change::Modified { new: p, .. } => p,
        Change::Deleted(_) => return,
    };
    if !shared.live.load(Ordering::Acquire) || !is_ready(pod) {
        return;
    }
    let uid = kubesim_core::meta::uid(pod).to_string();
    let mut seen = shared.seen.lock();
    let s = seen.entry(uid).or_default();
    s.ready.get_or_insert(clock.instant());
}

fn on_service(shared: &Shared, clock: &Clock, c: &Change) {
    let Change::Added(svc) = c else { return };
    if !shared.live.load(Ordering::Acquire) {
        return;
    }
    let key = format!(
        "{}/{}",
        kubesim_core::meta::namespace(svc),
        kubesim_core::meta::name(svc)
    );
    shared.services.lock().entry(key).or_insert(clock.instant());
}

/// The UIDs of the pods a slice lists as ready endpoints.
fn ready_endpoints(slice: &Value) -> impl Iterator<Item = &str> {
    slice
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) == Some(true))
        .filter_map(|e| e.pointer("/targetRef/uid").and_then(Value::as_str))
}

fn on_slice(shared: &Shared, clock: &Clock, c: &Change) {
    let slice = match c {
        Change::Added(s) | Change::Modified { new: s, .. } => s,
        Change::Deleted(_) => return,
    };
    if !shared.live.load(Ordering::Acquire) {
        return;
    }
    let service = slice
        .pointer("/metadata/labels/kubernetes.io~1service-name")
        .and_then(Value::as_str)
        .map(|n| format!("{}/{n}", kubesim_core::meta::namespace(slice)));
    let created = service.and_then(|k| shared.services.lock().get(&k).copied());
    let mut seen = shared.seen.lock();
    for uid in ready_endpoints(slice) {
        // Only pods seen becoming Ready during the measurement count.
        if let Some(s) = seen.get_mut(uid) {
            if let (Some(ready), None) = (s.ready, s.programmed) {
                // A Service made after the pod was Ready is the trigger.
                s.ready = Some(created.map_or(ready, |c| c.max(ready)));
                s.programmed = Some(clock.instant());
            }
        }
    }
}

#[async_trait::async_trait]
impl Measurement for NetworkProgrammingLatency {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => self.start(ctx, p).await.map(|()| Vec::new()),
            "gather" => self.gather(ctx),
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}

impl NetworkProgrammingLatency {
    async fn start(&mut self, ctx: &Ctx, p: &Params) -> Result<(), MeasurementError> {
        if self.running.is_some() {
            return Ok(());
        }
        let enable_violations = params::bool_or(p, "enableViolations", false)?;
        let threshold = params::duration(p, "threshold")?.unwrap_or(Duration::ZERO);
        if enable_violations && threshold.is_zero() {
            return Err(MeasurementError::failed(format!(
                "{METHOD}: parameter \"threshold\" is required with enableViolations"
            )));
        }
        let shared = Arc::new(Shared::default());
        let pool = |resource| ctx.informer(resource, "", None, None);
        let pods = pool(ResourceRef::core("pods"));
        let slices = pool(ResourceRef::new("discovery.k8s.io", "v1", "endpointslices"));
        let services = pool(ResourceRef::core("services"));
        let (s, clock) = (shared.clone(), ctx.clock.clone());
        let mut subscriptions = vec![pods.subscribe(move |c| on_pod(&s, &clock, c))];
        let (s, clock) = (shared.clone(), ctx.clock.clone());
        subscriptions.push(slices.subscribe(move |c| on_slice(&s, &clock, c)));
        let (s, clock) = (shared.clone(), ctx.clock.clone());
        subscriptions.push(services.subscribe(move |c| on_service(&s, &clock, c)));
        super::wait_synced(
            ctx,
            METHOD,
            "pods, Services and EndpointSlices",
            &[&pods, &slices, &services],
        )
        .await?;
        shared.live.store(true, Ordering::Release);
        self.running = Some(Running {
            shared,
            enable_violations,
            threshold,
            _subscriptions: subscriptions,
        });
        Ok(())
    }

    fn gather(&mut self, ctx: &Ctx) -> Result<Vec<Summary>, MeasurementError> {
        let run = self.running.take().ok_or_else(|| {
            MeasurementError::failed(format!("{METHOD}: measurement has not been started"))
        })?;
        let samples: Vec<Duration> = run
            .shared
            .seen
            .lock()
            .values()
            .filter_map(|s| Some(s.programmed?.saturating_duration_since(s.ready?)))
            .collect();
        let n = samples.len();
        let latency = LatencyMetric::of(samples);
        let perf = PerfData {
            version: "v1".into(),
            data_items: vec![latency.to_data_item(METHOD)],
        };
        tracing::info!("{METHOD}: {n} pods seen Ready and then as ready endpoints");
        let summary = Summary::json(METHOD, ctx.clock.now(), &perf);
        if run.enable_violations && latency.perc99 > run.threshold {
            return Err(MeasurementError::violation(
                format!(
                    "Network Programming Latency: actual latency {} > threshold {}",
                    format_std(latency.perc99),
                    format_std(run.threshold)
                ),
                vec![summary],
            ));
        }
        Ok(vec![summary])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    fn slices() -> ResourceRef {
        ResourceRef::new("discovery.k8s.io", "v1", "endpointslices")
    }

    fn slice(name: &str, pods: &[&Value], ready: bool) -> Value {
        let endpoints: Vec<Value> = pods
            .iter()
            .map(|p| json!({"addresses": ["10.0.0.1"], "conditions": {"ready": ready},
                "targetRef": {"kind": "Pod", "namespace": "default",
                              "name": kubesim_core::meta::name(p), "uid": kubesim_core::meta::uid(p)}}))
            .collect();
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": name, "labels": {"kubernetes.io/service-name": "s"}},
               "addressType": "IPv4", "endpoints": endpoints})
    }

    #[tokio::test(start_paused = true)]
    async fn from_pod_ready_to_ready_endpoint() {
        let (ctx, api) = ctx().await;
        // Ready before the start: not a transition of this measurement.
        let before = create_pod(&api, "default", "before", json!({})).await;
        start_pod(&api, "default", "before", &ctx.clock).await;
        let mut m = NetworkProgrammingLatency::default();
        let start = params(json!({"action": "start", "enableViolations": true, "threshold": "2s"}));
        m.execute(&ctx, "N", &start).await.unwrap();
        let p = create_pod(&api, "default", "p", json!({})).await;
        start_pod(&api, "default", "p", &ctx.clock).await;
        ctx.clock.sleep(Duration::from_millis(1500)).await;
        create(
            &api,
            &slices(),
            "default",
            slice("s-1", &[&before, &p], true),
        )
        .await;
        ctx.clock.sleep(Duration::from_millis(100)).await;
        let s = m
            .execute(&ctx, "N", &params(json!({"action": "gather"})))
            .await
            .unwrap();
        let v: Value = serde_json::from_str(&s[0].content).unwrap();
        assert_eq!(s[0].name, "NetworkProgrammingLatency");
        let p99 = v["dataItems"][0]["data"]["Perc99"].as_f64().unwrap();
        // One sample (the pod started after start), about 1.5 s.
        assert!((1500.0..1600.0).contains(&p99), "{v}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_service_made_after_the_pod_is_ready_is_the_trigger() {
        let (ctx, api) = ctx().await;
        let mut m = NetworkProgrammingLatency::default();
        m.execute(&ctx, "N", &params(json!({"action": "start"})))
            .await
            .unwrap();
        let p = create_pod(&api, "default", "p", json!({})).await;
        start_pod(&api, "default", "p", &ctx.clock).await;
        ctx.clock.sleep(Duration::from_secs(10)).await;
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                         "spec": {"ports": [{"port": 80}]}});
        create(&api, &ResourceRef::core("services"), "default", svc).await;
        ctx.clock.sleep(Duration::from_millis(300)).await;
        create(&api, &slices(), "default", slice("s-1", &[&p], true)).await;
        ctx.clock.sleep(Duration::from_millis(100)).await;
        let s = m
            .execute(&ctx, "N", &params(json!({"action": "gather"})))
            .await
            .unwrap();
        let v: Value = serde_json::from_str(&s[0].content).unwrap();
        let p99 = v["dataItems"][0]["data"]["Perc99"].as_f64().unwrap();
        // From the Service's creation, not the pod's 10 s earlier readiness.
        assert!((300.0..400.0).contains(&p99), "{v}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_p99_over_the_threshold_is_a_violation_when_enabled() {
        let (ctx, api) = ctx().await;
        let mut m = NetworkProgrammingLatency::default();
        let start = params(json!({"action": "start", "enableViolations": true, "threshold": "1s"}));
        m.execute(&ctx, "N", &start).await.unwrap();
        let p = create_pod(&api, "default", "p", json!({})).await;
        start_pod(&api, "default", "p", &ctx.clock).await;
        ctx.clock.sleep(Duration::from_secs(3)).await;
        create(&api, &slices(), "default", slice("s-1", &[&p], true)).await;
        ctx.clock.sleep(Duration::from_millis(100)).await;
        let e = m
            .execute(&ctx, "N", &params(json!({"action": "gather"})))
            .await
            .unwrap_err();
        assert_eq!(e.kind, crate::measurement::ErrorKind::Violation);
        assert_eq!(e.summaries.len(), 1);
        let no_threshold = params(json!({"action": "start", "enableViolations": true}));
        assert!(NetworkProgrammingLatency::default()
            .execute(&ctx, "N", &no_threshold)
            .await
            .is_err());
    }
}
