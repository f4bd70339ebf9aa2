//! PodStartupLatency: a pod informer records when each pod is first seen
//! (create), first seen bound to a node (schedule) and first seen Running
//! (run = watch); `gather` reports the latencies between those moments as
//! three PerfData files (all, stateless and stateful pods) and checks the
//! `pod_startup` percentiles against the SLO thresholds.
//!
//! The times are those at which the watch events arrive, as upstream
//! records them since it measures at watch-receive precision. Containers'
//! `startedAt` is not used: it has one-second precision, so it would put
//! `run` up to a second before the pod was seen scheduled (upstream's old
//! negative latencies).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kubesim_core::meta;
use kubesim_runtime::{Change, Clock, ResourceRef};
use parking_lot::Mutex;
use serde_json::Value;

use crate::params::{self, Params};
use crate::report::{PerfData, Summary};

use super::informer_pool::Subscription;
use super::latency::LatencyMetric;
use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "PodStartupLatency";
const DEFAULT_THRESHOLD: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Create,
    Schedule,
    Run,
    Watch,
}

/// The reported transitions, in upstream's names and (for a stable
/// file) a fixed order.
const TRANSITIONS: [(&str, Phase, Phase); 6] = [
    ("create_to_schedule", Phase::Create, Phase::Schedule),
    ("schedule_to_run", Phase::Schedule, Phase::Run),
    ("run_to_watch", Phase::Run, Phase::Watch),
    ("schedule_to_watch", Phase::Schedule, Phase::Watch),
    ("pod_startup", Phase::Create, Phase::Watch),
    ("create_to_run", Phase::Create, Phase::Run),
];

#[derive(Debug, Clone, Default)]
struct PodTimes {
    create: Option<Timestamp>,
    schedule: Option<Timestamp>,
    run: Option<Timestamp>,
    watch: Option<Timestamp>,
    stateless: bool,
}

impl PodTimes {
    fn at(&self, p: Phase) -> Option<Timestamp> {
        match p {
            Phase::Create => self.create,
            Phase::Schedule => self.schedule,
            Phase::Run => self.run,
            Phase::Watch => self.watch,
        }
    }
}

type Records = Arc<Mutex<BTreeMap<String, PodTimes>>>;

/// Which pods a summary covers.
type Filter = fn(&PodTimes) -> bool;

struct Thresholds {
    p50: Duration,
    p90: Duration,
    p99: Duration,
}

struct Running {
    records: Records,
    thresholds: Thresholds,
    /// Its handler on the shared informer; dropping it lets go.
    _subscription: Subscription,
}

#[derive(Default)]
pub struct PodStartupLatency {
    running: Option<Running>,
}

#[async_trait::async_trait]
impl Measurement for PodStartupLatency {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::string_or(p, "action", "")?.as_str() {
            "start" => self.start(ctx, p).await.map(|()| Vec::new()),
            "gather" => self.gather(ctx, identifier),
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}

impl PodStartupLatency {
    async fn start(&mut self, ctx: &Ctx, p: &Params) -> Result<(), MeasurementError> {
        if self.running.is_some() {
            // Upstream ignores a second start rather than losing data.
            return Ok(());
        }
        let namespace = params::string_or(p, "namespace", "")?;
        let label_selector = params::string(p, "labelSelector")?.filter(|s| !s.is_empty());
        let field_selector = params::string(p, "fieldSelector")?.filter(|s| !s.is_empty());
        let threshold = params::duration_or(p, "threshold", DEFAULT_THRESHOLD)?;
        let thresholds = Thresholds {
            p50: params::duration_or(p, "perc50Threshold", threshold)?,
            p90: params::duration_or(p, "perc90Threshold", threshold)?,
            p99: params::duration_or(p, "perc99Threshold", threshold)?,
        };
        let informer = ctx.informer(
            ResourceRef::core("pods"),
            &namespace,
            label_selector,
            field_selector,
        );
        let records: Records = Arc::default();
        let (recs, clock) = (records.clone(), ctx.clock.clone());
        let subscription = super::subscribe_synced(ctx, METHOD, "pods", &informer, move |c| {
            record(&recs, &clock, c)
        })
        .await?;
        self.running = Some(Running {
            records,
            thresholds,
            _subscription: subscription,
        });
        Ok(())
    }

    fn gather(&mut self, ctx: &Ctx, identifier: &str) -> Result<Vec<Summary>, MeasurementError> {
        // Taking the state stops the informer: what was seen so far is the
        // measurement, as upstream stops observing at gather.
        let run = self.running.take().ok_or_else(|| {
            MeasurementError::failed(format!("metric {METHOD} has not been started"))
        })?;
        let records = run.records.lock().clone();
        let now = ctx.clock.now();
        let mut summaries = Vec::new();
        let mut violations = Vec::new();
        let checks: [(&str, Filter); 3] = [
            ("", |_| true),
            ("Stateless", |t| t.stateless),
            ("Stateful", |t| !t.stateless),
        ];
        for (prefix, keep) in checks {
            let pods: Vec<&PodTimes> = records.values().filter(|t| keep(t)).collect();
            let metrics = latencies(&pods);
            let startup = metrics
                .iter()
                .find(|(n, _)| *n == "pod_startup")
                .map(|(_, m)| *m)
                .unwrap_or_default();
            let t = &run.thresholds;
            if let Err(e) = startup.check(t.p50, t.p90, t.p99) {
                violations.push(format!("{prefix}{METHOD}: {e}"));
            }
            let perf = PerfData {
                version: "1.0".into(),
                data_items: metrics
                    .iter()
                    .map(|(name, m)| m.to_data_item(name))
                    .collect(),
            };
            summaries.push(Summary::json(
                format!("{prefix}{METHOD}_{identifier}"),
                now,
                &perf,
            ));
        }
        if violations.is_empty() {
            Ok(summaries)
        } else {
            Err(MeasurementError::violation(
                format!(
                    "measurement violated pod startup slo: {}",
                    violations.join("; ")
                ),
                summaries,
            ))
        }
    }
}

/// Notes the moments a pod is seen in: first at all, first bound, first
/// Running. Deletions change nothing: a pod that ran was measured.
fn record(records: &Records, clock: &Clock, change: &Change) {
    let pod = match change {
        Change::Added(p) | Change::Modified { new: p, .. } => p,
        Change::Deleted(_) => return,
    };
    let now = clock.now();
    let key = match meta::uid(pod) {
        "" => format!("{}/{}", meta::namespace(pod), meta::name(pod)),
        uid => uid.to_string(),
    };
    let mut all = records.lock();
    // Volumes cannot change after creation: classified once.
    let t = all.entry(key).or_insert_with(|| PodTimes {
        create: Some(now),
        stateless: is_stateless(pod),
        ..Default::default()
    });
    let node = pod.pointer("/spec/nodeName").and_then(Value::as_str);
    if t.schedule.is_none() && node.is_some_and(|n| !n.is_empty()) {
        t.schedule = Some(now);
    }
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if t.watch.is_none() && phase == Some("Running") {
        t.watch = Some(now);
        t.run = Some(now);
    }
}

/// Stateless pods keep no data of their own: every volume is one the
/// kubelet fills from the API (or scratch space).
fn is_stateless(pod: &Value) -> bool {
    const EPHEMERAL: [&str; 5] = [
        "emptyDir",
        "downwardAPI",
        "configMap",
        "secret",
        "projected",
    ];
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter().all(|v| {
                EPHEMERAL
                    .iter()
                    .any(|k| v.get(k).is_some_and(|x| !x.is_null()))
            })
        })
        .unwrap_or(true)
}

/// Each transition's percentiles over the pods that reached both ends.
fn latencies(pods: &[&PodTimes]) -> Vec<(&'static str, LatencyMetric)> {
    TRANSITIONS
        .iter()
        .map(|&(name, from, to)| {
            let samples = pods
                .iter()
                .filter_map(|t| Some((t.at(from)?, t.at(to)?)))
                .map(|(a, b)| {
                    // A later phase seen first (e.g. a pod created bound)
                    // counts as no latency, as upstream clamps it.
                    Duration::try_from(b.duration_since(a)).unwrap_or(Duration::ZERO)
                })
                .collect();
            (name, LatencyMetric::of(samples))
        })
        .collect()
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

    /// The data items of a PerfData summary, by metric name.
    fn items(s: &Summary) -> BTreeMap<String, Value> {
        let v: Value = serde_json::from_str(&s.content).expect("json");
        assert_eq!(v["version"], "1.0");
        v["dataItems"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| {
                assert_eq!(i["unit"], "ms");
                (
                    i["labels"]["Metric"].as_str().unwrap_or("").to_string(),
                    i["data"].clone(),
                )
            })
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn measures_each_transition_exactly() {
        let (ctx, api) = ctx().await;
        let mut m = PodStartupLatency::default();
        let start = params(json!({"action": "start", "namespace": "default", "threshold": "10s"}));
        m.execute(&ctx, "PSL", &start).await.expect("start");

        // A stateless pod: 1 s to schedule, 2 s more to run.
        create_pod(&api, "default", "a", json!({})).await;
        ctx.clock.sleep(Duration::from_secs(1)).await;
        bind(&api, "default", "a", "n1").await;
        ctx.clock.sleep(Duration::from_secs(2)).await;
        run_pod(&api, "default", "a", &ctx.clock).await;
        // A stateful pod (a PVC volume): 3 s to schedule, 4 s to run.
        let pvc = json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}]});
        create_pod(&api, "default", "b", pvc).await;
        ctx.clock.sleep(Duration::from_secs(3)).await;
        bind(&api, "default", "b", "n1").await;
        ctx.clock.sleep(Duration::from_secs(4)).await;
        run_pod(&api, "default", "b", &ctx.clock).await;
        // Never scheduled: only counts where it has both ends (none).
        create_pod(&api, "default", "c", json!({})).await;
        ctx.clock.sleep(Duration::from_millis(10)).await;

        let gather = params(json!({"action": "gather"}));
        let sums = m.execute(&ctx, "PSL", &gather).await.expect("gather");
        let names: Vec<&str> = sums.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "PodStartupLatency_PSL",
                "StatelessPodStartupLatency_PSL",
                "StatefulPodStartupLatency_PSL"
            ]
        );
        let all = items(&sums[0]);
        assert_eq!(all.len(), 6);
        // Two samples: nearest rank p50 is the smaller, p90/p99 the larger.
        assert_eq!(
            all["pod_startup"],
            json!({"Perc50": 3000.0, "Perc90": 7000.0, "Perc99": 7000.0})
        );
        assert_eq!(
            all["create_to_schedule"],
            json!({"Perc50": 1000.0, "Perc90": 3000.0, "Perc99": 3000.0})
        );
        assert_eq!(
            all["schedule_to_run"],
            json!({"Perc50": 2000.0, "Perc90": 4000.0, "Perc99": 4000.0})
        );
        assert_eq!(
            all["run_to_watch"],
            json!({"Perc50": 0.0, "Perc90": 0.0, "Perc99": 0.0})
        );
        let stateless = items(&sums[1]);
        assert_eq!(
            stateless["pod_startup"],
            json!({"Perc50": 3000.0, "Perc90": 3000.0, "Perc99": 3000.0})
        );
        assert_eq!(
            stateless["schedule_to_watch"],
            json!({"Perc50": 2000.0, "Perc90": 2000.0, "Perc99": 2000.0})
        );
        let stateful = items(&sums[2]);
        assert_eq!(
            stateful["create_to_run"],
            json!({"Perc50": 7000.0, "Perc90": 7000.0, "Perc99": 7000.0})
        );

        // The measurement ended with the gather.
        let again = m.execute(&ctx, "PSL", &gather).await.unwrap_err();
        assert_eq!(again.kind, ErrorKind::Failed);
    }

    #[tokio::test(start_paused = true)]
    async fn second_precision_container_start_times_are_not_used() {
        let (ctx, api) = ctx().await;
        let mut m = PodStartupLatency::default();
        let start = params(json!({"action": "start"}));
        m.execute(&ctx, "x", &start).await.expect("start");
        create_pod(&api, "default", "a", json!({})).await;
        bind(&api, "default", "a", "n1").await;
        ctx.clock.sleep(Duration::from_secs(2)).await;
        let started = meta::format_time(ctx.clock.now());
        ctx.clock.sleep(Duration::from_secs(3)).await;
        // Reported Running 3 s after the container started.
        patch_status(
            &api,
            "default",
            "a",
            json!({"phase": "Running", "containerStatuses": [
                {"name": "c", "ready": true, "restartCount": 0, "image": "i", "imageID": "",
                 "state": {"running": {"startedAt": started}}}]}),
        )
        .await;
        ctx.clock.sleep(Duration::from_millis(1)).await;
        let sums = m
            .execute(&ctx, "x", &params(json!({"action": "gather"})))
            .await
            .expect("gather");
        let all = items(&sums[0]);
        assert_eq!(all["create_to_run"]["Perc50"], json!(5000.0));
        assert_eq!(all["run_to_watch"]["Perc50"], json!(0.0));
        assert_eq!(all["pod_startup"]["Perc50"], json!(5000.0));
        assert_eq!(all["create_to_schedule"]["Perc50"], json!(0.0));
    }

    #[tokio::test(start_paused = true)]
    async fn slow_pods_violate_the_slo() {
        let (ctx, api) = ctx().await;
        let mut m = PodStartupLatency::default();
        let start = params(json!({"action": "start", "threshold": "5s", "perc50Threshold": "2s"}));
        m.execute(&ctx, "slo", &start).await.expect("start");
        create_pod(&api, "default", "a", json!({})).await;
        bind(&api, "default", "a", "n1").await;
        ctx.clock.sleep(Duration::from_secs(3)).await;
        run_pod(&api, "default", "a", &ctx.clock).await;
        ctx.clock.sleep(Duration::from_millis(1)).await;
        let err = m
            .execute(&ctx, "slo", &params(json!({"action": "gather"})))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Violation);
        assert!(
            err.message
                .contains("too high latency 50th percentile: got 3s expected: 2s"),
            "{}",
            err.message
        );
        // The latencies are still reported.
        assert_eq!(err.summaries.len(), 3);
        assert_eq!(
            items(&err.summaries[0])["pod_startup"]["Perc99"],
            json!(3000.0)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn selectors_limit_the_pods() {
        let (ctx, api) = ctx().await;
        let mut m = PodStartupLatency::default();
        let start = params(json!({"action": "start", "labelSelector": "group = latency"}));
        m.execute(&ctx, "sel", &start).await.expect("start");
        create_labeled_pod(&api, "default", "in", json!({"group": "latency"})).await;
        create_labeled_pod(&api, "default", "out", json!({"group": "other"})).await;
        ctx.clock.sleep(Duration::from_secs(1)).await;
        for name in ["in", "out"] {
            bind(&api, "default", name, "n1").await;
        }
        ctx.clock.sleep(Duration::from_secs(1)).await;
        run_pod(&api, "default", "in", &ctx.clock).await;
        ctx.clock.sleep(Duration::from_secs(5)).await;
        run_pod(&api, "default", "out", &ctx.clock).await;
        ctx.clock.sleep(Duration::from_millis(1)).await;
        let sums = m
            .execute(&ctx, "sel", &params(json!({"action": "gather"})))
            .await
            .expect("only the fast pod is measured");
        assert_eq!(items(&sums[0])["pod_startup"]["Perc99"], json!(2000.0));
    }

    #[tokio::test(start_paused = true)]
    async fn gather_without_start_fails() {
        let (ctx, _api) = ctx().await;
        let mut m = PodStartupLatency::default();
        let err = m
            .execute(&ctx, "x", &params(json!({"action": "gather"})))
            .await
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::Failed);
        let err = m
            .execute(&ctx, "x", &params(json!({"action": "bogus"})))
            .await
            .unwrap_err();
        assert!(err.message.contains("unknown action"));
    }

    #[test]
    fn statelessness_by_volume_kind() {
        assert!(is_stateless(&json!({"spec": {}})));
        assert!(is_stateless(&json!({"spec": {"volumes": [
            {"name": "a", "emptyDir": {}}, {"name": "b", "configMap": {"name": "x"}},
            {"name": "c", "secret": {}}, {"name": "d", "projected": {}},
            {"name": "e", "downwardAPI": {}}]}})));
        assert!(!is_stateless(&json!({"spec": {"volumes": [
            {"name": "a", "emptyDir": {}}, {"name": "b", "hostPath": {"path": "/x"}}]}})));
    }
}
