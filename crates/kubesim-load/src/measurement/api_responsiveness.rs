//! APIResponsivenessPrometheus, computed from the API server's own
//! `/metrics` instead of a Prometheus server: `start` keeps a scrape of the
//! request latency histogram, `gather` scrapes again and works on the
//! difference, as ClusterLoader2's `increase(...[window])` queries do.
//!
//! Per (verb, resource, subresource, scope): p50/p90/p99 by
//! `histogram_quantile`, the call count, and the calls slower than the SLO
//! bucket (1s, or 5s/30s for namespace/cluster LISTs). A call type violates
//! its threshold when any of the three percentiles exceeds it.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::prometheus::{self, Exposition, Histogram, Labels};
use super::{Ctx, Measurement, MeasurementError};
use crate::params::{self, Params};
use crate::report::{DataItem, PerfData, Summary};

const NAME: &str = "APIResponsivenessPrometheus";
/// The SLI histogram of Kubernetes ≥ 1.26, and the plain latency one that
/// older servers (and any server without the SLI) have.
const SLI_METRIC: &str = "apiserver_request_sli_duration_seconds";
const LATENCY_METRIC: &str = "apiserver_request_duration_seconds";
/// Long-running calls: their duration is the length of a stream, not a latency.
const LONG_RUNNING_VERBS: &[&str] = &["WATCH", "WATCHLIST"];
const STREAMING_SUBRESOURCES: &[&str] = &["log", "exec", "portforward", "attach", "proxy"];
const MULTIPLE_RESOURCES_THRESHOLD: Duration = Duration::from_secs(30);
/// How many of the slowest call types are logged even when they pass.
const TOP_TO_LOG: usize = 5;

#[derive(Default)]
pub struct ApiResponsiveness {
    start: Option<Exposition>,
}

/// One call type over the measured window.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiCall {
    pub verb: String,
    pub resource: String,
    pub subresource: String,
    pub scope: String,
    /// Seconds; NaN when the histogram cannot say.
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub count: u64,
    pub slow_count: u64,
}

type Key = (String, String, String, String); // resource, subresource, verb, scope

impl ApiCall {
    fn key(&self) -> Key {
        (
            self.resource.clone(),
            self.subresource.clone(),
            self.verb.clone(),
            self.scope.clone(),
        )
    }

    fn describe(&self) -> String {
        format!(
            "{} {}{} scope={} p50={:.3}ms p90={:.3}ms p99={:.3}ms count={} slowCount={}",
            self.verb,
            self.resource,
            if self.subresource.is_empty() {
                String::new()
            } else {
                format!("/{}", self.subresource)
            },
            self.scope,
            self.p50 * 1000.0,
            self.p90 * 1000.0,
            self.p99 * 1000.0,
            self.count,
            self.slow_count
        )
    }
}

#[async_trait::async_trait]
impl Measurement for ApiResponsiveness {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => {
                self.start = Some(scrape(ctx).await?);
                Ok(Vec::new())
            }
            "gather" => {
                let start = self.start.as_ref().ok_or_else(|| {
                    MeasurementError::failed(format!("{NAME} {identifier}: gather without a start"))
                })?;
                let end = scrape(ctx).await?;
                gather(ctx, identifier, p, start, &end)
            }
            other => Err(MeasurementError::unknown_action(NAME, other)),
        }
    }
}

async fn scrape(ctx: &Ctx) -> Result<Exposition, MeasurementError> {
    let text = ctx.cluster.get_text("/metrics").await.map_err(|e| {
        MeasurementError::failed(format!(
            "{NAME}: cannot read the API server's /metrics ({} {}: {}); \
             the measurement needs the request latency histograms it serves",
            e.code, e.reason, e.message
        ))
    })?;
    prometheus::parse(&text).map_err(|e| {
        MeasurementError::failed(format!(
            "{NAME}: the API server's /metrics is malformed: {e}"
        ))
    })
}

fn gather(
    ctx: &Ctx,
    identifier: &str,
    p: &Params,
    start: &Exposition,
    end: &Exposition,
) -> Result<Vec<Summary>, MeasurementError> {
    let enable_violations = params::bool_or(p, "enableViolations", false)?;
    // Both queries come down to the same window here: the difference of
    // two scrapes has no 5-minute sub-windows to take quantiles over.
    let _simple = params::bool_or(p, "useSimpleLatencyQuery", false)?;
    let summary_name = params::string_or(p, "summaryName", NAME)?;
    let allowed_slow = params::int_or(p, "allowedSlowCalls", 0)?;
    let single = params::duration_or(p, "singleResourceThreshold", Duration::from_secs(1))?;
    let custom = custom_thresholds(&params::string_or(p, "customThresholds", "")?)?;

    let family = [SLI_METRIC, LATENCY_METRIC]
        .into_iter()
        .find(|f| end.has_family(f) || start.has_family(f))
        .ok_or_else(|| {
            MeasurementError::failed(format!(
                "{NAME}: the API server's /metrics has neither {SLI_METRIC} nor {LATENCY_METRIC}"
            ))
        })?;
    let calls = api_calls(&start.histograms(family), &end.histograms(family));

    for key in custom.keys() {
        if !calls.iter().any(|c| &c.key() == key) {
            tracing::info!(
                "{identifier}: custom threshold for an API call that was not made: {key:?}"
            );
        }
    }
    let mut bad = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let threshold = custom
            .get(&call.key())
            .copied()
            .unwrap_or(if call.scope == "resource" {
                single
            } else {
                MULTIPLE_RESOURCES_THRESHOLD
            });
        let slow_allowed = allowed_slow > 0 && call.slow_count as i64 <= allowed_slow;
        let t = threshold.as_secs_f64();
        let over = [call.p50, call.p90, call.p99].iter().any(|q| *q > t);
        let violates = over && !slow_allowed;
        if violates {
            bad.push(format!(
                "got: {}; expected perc99 <= {threshold:?}",
                call.describe()
            ));
        }
        if i < TOP_TO_LOG || violates {
            tracing::info!(
                "{identifier}: {}top latency metric: {}; threshold: {threshold:?}",
                if violates { "WARNING " } else { "" },
                call.describe()
            );
        }
    }

    let summary = Summary::json(summary_name, ctx.clock.now(), &perf_data(&calls));
    if bad.is_empty() {
        return Ok(vec![summary]);
    }
    let message = format!(
        "top latency metric: there should be no high-latency requests, but: [{}]",
        bad.join(", ")
    );
    if enable_violations {
        Err(MeasurementError::violation(message, vec![summary]))
    } else {
        tracing::warn!("{identifier}: {message} (enableViolations is off)");
        Ok(vec![summary])
    }
}

/// The call types measured between two scrapes, slowest p99 first.
pub fn api_calls(
    start: &BTreeMap<Labels, Histogram>,
    end: &BTreeMap<Labels, Histogram>,
) -> Vec<ApiCall> {
    let mut groups: BTreeMap<Key, Histogram> = BTreeMap::new();
    for (labels, h) in end {
        let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
        let verb = get("verb");
        let subresource = get("subresource");
        if LONG_RUNNING_VERBS.contains(&verb.as_str())
            || STREAMING_SUBRESOURCES.contains(&subresource.as_str())
        {
            continue;
        }
        let scope = labels
            .get("scope")
            .cloned()
            .unwrap_or_else(|| derived_scope(&verb).to_string());
        let delta = h.since(start.get(labels));
        groups
            .entry((get("resource"), subresource, verb, scope))
            .or_default()
            .add(&delta);
    }
    let mut calls: Vec<ApiCall> = groups
        .into_iter()
        .filter_map(|((resource, subresource, verb, scope), h)| {
            let count = h.count.round();
            // A call type with no call in the window has no latency to report.
            if count < 1.0 {
                return None;
            }
            let fast = h.count_at_or_below(fast_bound(&verb, &scope)).round();
            Some(ApiCall {
                p50: h.quantile(0.5),
                p90: h.quantile(0.9),
                p99: h.quantile(0.99),
                count: count as u64,
                slow_count: (count - fast).max(0.0) as u64,
                verb,
                resource,
                subresource,
                scope,
            })
        })
        .collect();
    // Stable, so equal p99s keep the key order and the file is reproducible.
    calls.sort_by(|a, b| nan_low(b.p99).total_cmp(&nan_low(a.p99)));
    calls
}

fn nan_low(v: f64) -> f64 {
    if v.is_nan() {
        f64::NEG_INFINITY
    } else {
        v
    }
}

/// The scope of a series that lacks the label (servers older than the
/// label): verbs on one object are "resource"; for collections the series
/// do not tell namespace from cluster, and "cluster" has the loosest SLO, so
/// no call is reported slow for want of the label.
fn derived_scope(verb: &str) -> &'static str {
    match verb {
        "LIST" | "DELETECOLLECTION" => "cluster",
        _ => "resource",
    }
}

/// The SLO bound in seconds: 1s for single-object calls and mutations, 5s
/// for LISTs in a namespace, 30s for cluster-wide LISTs.
fn fast_bound(verb: &str, scope: &str) -> f64 {
    match (verb, scope) {
        ("LIST", "cluster") => 30.0,
        ("LIST", _) => 5.0,
        _ => 1.0,
    }
}

fn perf_data(calls: &[ApiCall]) -> PerfData {
    let ms = |s: f64| s * 1000.0;
    PerfData {
        version: "v1".into(),
        data_items: calls
            .iter()
            .map(|c| DataItem {
                data: BTreeMap::from([
                    ("Perc50".to_string(), ms(c.p50)),
                    ("Perc90".to_string(), ms(c.p90)),
                    ("Perc99".to_string(), ms(c.p99)),
                ]),
                unit: "ms".into(),
                labels: BTreeMap::from([
                    ("Verb".to_string(), c.verb.clone()),
                    ("Resource".to_string(), c.resource.clone()),
                    ("Subresource".to_string(), c.subresource.clone()),
                    ("Scope".to_string(), c.scope.clone()),
                    ("Count".to_string(), c.count.to_string()),
                    ("SlowCount".to_string(), c.slow_count.to_string()),
                ]),
            })
            .collect(),
    }
}

/// `customThresholds`: a YAML list of `{verb, resource, subresource, scope,
/// threshold}` with Go duration thresholds.
fn custom_thresholds(yaml: &str) -> Result<BTreeMap<Key, Duration>, MeasurementError> {
    let bad = |m: String| MeasurementError::failed(format!("{NAME}: customThresholds: {m}"));
    if yaml.trim().is_empty() {
        return Ok(BTreeMap::new());
    }
    let v: Value = serde_saphyr::from_str(yaml).map_err(|e| bad(format!("not YAML: {e}")))?;
    let entries = match v {
        Value::Null => return Ok(BTreeMap::new()),
        Value::Array(a) => a,
        other => return Err(bad(format!("expected a list, got {other}"))),
    };
    let mut out = BTreeMap::new();
    for e in entries {
        let Value::Object(o) = e else {
            return Err(bad(format!(
                "expected an entry with verb, resource, ..., got {e}"
            )));
        };
        let field = |k: &str| match o.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(bad(format!("{k}: expected a string, got {other}"))),
        };
        let threshold = match o.get("threshold") {
            Some(Value::String(s)) => {
                kubesim_gocompat::duration::parse_std(s).map_err(|e| bad(e.to_string()))?
            }
            // A bare number is nanoseconds, as a YAML integer decodes into Go's Duration.
            Some(Value::Number(n)) => Duration::from_nanos(n.as_u64().unwrap_or(0)),
            _ => Duration::ZERO,
        };
        if threshold.is_zero() {
            return Err(bad(
                "custom threshold must be set to a positive time duration".into(),
            ));
        }
        let key = (
            field("resource")?,
            field("subresource")?,
            field("verb")?,
            field("scope")?,
        );
        out.insert(key, threshold);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::ErrorKind;
    use crate::Cluster;
    use kubesim_core::ApiError;
    use kubesim_runtime::{Api, ResourceRef};
    use serde_json::json;
    use std::sync::Arc;

    /// Serves canned `/metrics` texts, one per call.
    struct Canned(parking_lot::Mutex<Vec<Result<String, ApiError>>>);

    #[async_trait::async_trait]
    impl Cluster for Canned {
        fn api(&self) -> Arc<dyn Api> {
            unreachable!("the measurement only reads /metrics")
        }
        async fn resolve(&self, _: &str, _: &str) -> Result<(ResourceRef, bool), ApiError> {
            Err(ApiError::new(404, "NotFound", "no discovery here"))
        }
        async fn get_text(&self, path: &str) -> Result<String, ApiError> {
            assert_eq!(path, "/metrics");
            let mut q = self.0.lock();
            if q.is_empty() {
                return Err(ApiError::new(503, "ServiceUnavailable", "no more scrapes"));
            }
            q.remove(0)
        }
    }

    async fn ctx(texts: Vec<Result<String, ApiError>>) -> Ctx {
        let (mut c, _) = crate::measurement::test_support::ctx().await;
        c.cluster = Arc::new(Canned(parking_lot::Mutex::new(texts)));
        c
    }

    const BOUNDS: &[&str] = &["0.05", "0.1", "0.5", "1", "5", "30", "+Inf"];

    /// A histogram series in the latency family, with cumulative counts.
    fn series(out: &mut String, family: &str, labels: &str, counts: &[u64]) {
        for (le, n) in BOUNDS.iter().zip(counts) {
            out.push_str(&format!("{family}_bucket{{{labels},le=\"{le}\"}} {n}\n"));
        }
        let total = counts.last().copied().unwrap_or(0);
        out.push_str(&format!(
            "{family}_sum{{{labels}}} 0\n{family}_count{{{labels}}} {total}\n"
        ));
    }

    fn lbl(verb: &str, resource: &str, sub: &str, scope: &str, version: &str) -> String {
        format!(
            "component=\"apiserver\",group=\"\",resource=\"{resource}\",scope=\"{scope}\",subresource=\"{sub}\",verb=\"{verb}\",version=\"{version}\""
        )
    }

    fn metrics(family: &str, after: bool) -> String {
        let mut s = format!("# HELP {family} Latency.\n# TYPE {family} histogram\n");
        let k = |before: &[u64], later: &[u64]| {
            if after {
                later.to_vec()
            } else {
                before.to_vec()
            }
        };
        // 100 creates in the window: 10 ≤50ms, 40 more ≤100ms, 40 more ≤0.5s, 10 in (0.5, 1].
        series(
            &mut s,
            family,
            &lbl("POST", "pods", "", "resource", "v1"),
            &k(&[5, 5, 5, 5, 5, 5, 5], &[15, 55, 95, 105, 105, 105, 105]),
        );
        // Namespace LISTs split over two API versions that sum up: 10 calls, 3 over 5s.
        series(
            &mut s,
            family,
            &lbl("LIST", "pods", "", "namespace", "v1"),
            &k(&[0, 0, 0, 0, 0, 0, 0], &[0, 0, 0, 2, 4, 6, 6]),
        );
        series(
            &mut s,
            family,
            &lbl("LIST", "pods", "", "namespace", "v1beta1"),
            &k(&[0, 0, 0, 0, 0, 0, 0], &[0, 0, 0, 1, 3, 4, 4]),
        );
        // A GET that started after `start` (series new in the second scrape).
        if after {
            series(
                &mut s,
                family,
                &lbl("GET", "nodes", "status", "resource", "v1"),
                &[0, 0, 0, 0, 4, 4, 4],
            );
        }
        // Dropped: watches and streaming subresources.
        series(
            &mut s,
            family,
            &lbl("WATCH", "pods", "", "namespace", "v1"),
            &k(&[0; 7], &[0, 0, 0, 0, 0, 0, 9]),
        );
        series(
            &mut s,
            family,
            &lbl("GET", "pods", "log", "resource", "v1"),
            &k(&[0; 7], &[0, 0, 0, 0, 0, 0, 9]),
        );
        // No call in the window: not reported.
        series(
            &mut s,
            family,
            &lbl("DELETE", "pods", "", "resource", "v1"),
            &[1, 1, 1, 1, 1, 1, 1],
        );
        s
    }

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    async fn run(c: &Ctx, gather: Value) -> Result<Vec<Summary>, MeasurementError> {
        let mut m = ApiResponsiveness::default();
        m.execute(c, "api", &params(json!({"action": "start"})))
            .await?;
        m.execute(c, "api", &params(gather)).await
    }

    fn items(s: &Summary) -> Vec<Value> {
        let v: Value = serde_json::from_str(&s.content).expect("json");
        assert_eq!(v["version"], "v1");
        v["dataItems"].as_array().cloned().unwrap_or_default()
    }

    fn close(v: &Value, want: f64) -> bool {
        v.as_f64().is_some_and(|x| (x - want).abs() < 1e-9)
    }

    #[tokio::test(start_paused = true)]
    async fn quantiles_counts_and_slow_calls_from_two_scrapes() {
        let c = ctx(vec![
            Ok(metrics(LATENCY_METRIC, false)),
            Ok(metrics(LATENCY_METRIC, true)),
        ])
        .await;
        let out = run(&c, json!({"action": "gather"})).await.expect("passes");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "APIResponsivenessPrometheus");
        let it = items(&out[0]);
        let names: Vec<String> = it
            .iter()
            .map(|i| {
                format!(
                    "{} {} {}",
                    i["labels"]["Verb"], i["labels"]["Resource"], i["labels"]["Scope"]
                )
            })
            .collect();
        // Sorted by p99, slowest first.
        assert_eq!(
            names,
            [
                r#""LIST" "pods" "namespace""#,
                r#""GET" "nodes" "resource""#,
                r#""POST" "pods" "resource""#
            ]
        );
        let list = &it[0];
        assert_eq!(list["unit"], "ms");
        assert_eq!(list["labels"]["Count"], "10");
        assert_eq!(list["labels"]["SlowCount"], "3");
        assert_eq!(list["labels"]["Subresource"], "");
        // 10 calls: 3 ≤1s, 4 more ≤5s, 3 more ≤30s. p50: rank 5 in (1,5] → 1 + 4*(2/4).
        assert!(close(&list["data"]["Perc50"], 3000.0), "{list}");
        // p90: rank 9 in (5,30] → 5 + 25*(2/3).
        assert!(
            close(&list["data"]["Perc90"], 5000.0 + 25000.0 * 2.0 / 3.0),
            "{list}"
        );
        assert!(
            close(&list["data"]["Perc99"], 5000.0 + 25000.0 * 2.9 / 3.0),
            "{list}"
        );
        let get = &it[1];
        assert_eq!(get["labels"]["Subresource"], "status");
        assert_eq!(get["labels"]["Count"], "4");
        assert_eq!(get["labels"]["SlowCount"], "4");
        let post = &it[2];
        assert_eq!(post["labels"]["Count"], "100");
        assert_eq!(post["labels"]["SlowCount"], "0");
        // p50: rank 50 in (0.05, 0.1] holding 40 from 10 → 50 + 50*(40/40) ms.
        assert!(close(&post["data"]["Perc50"], 100.0), "{post}");
        // p90: rank 90 in (0.1, 0.5] → 100 + 400*(40/40).
        assert!(close(&post["data"]["Perc90"], 500.0), "{post}");
        // p99: rank 99 in (0.5, 1] holding 10 from 90 → 500 + 500*(9/10).
        assert!(close(&post["data"]["Perc99"], 950.0), "{post}");
    }

    #[tokio::test(start_paused = true)]
    async fn violations_fail_only_when_enabled() {
        // The GET on one object took 4s: over the 1s single-resource threshold.
        let texts = || {
            vec![
                Ok(metrics(SLI_METRIC, false)),
                Ok(metrics(SLI_METRIC, true)),
            ]
        };
        let out = run(&ctx(texts()).await, json!({"action": "gather"}))
            .await
            .expect("logged only");
        assert_eq!(items(&out[0]).len(), 3);

        let err = run(
            &ctx(texts()).await,
            json!({"action": "gather", "enableViolations": true}),
        )
        .await
        .expect_err("violates");
        assert_eq!(err.kind, ErrorKind::Violation);
        assert!(
            err.message.contains("GET nodes/status scope=resource"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("expected perc99 <= 1s"),
            "{}",
            err.message
        );
        assert!(
            !err.message.contains("LIST"),
            "30s holds for the LIST: {}",
            err.message
        );
        assert_eq!(err.summaries.len(), 1);

        // Up to 4 slow calls allowed: passes.
        let ok = run(
            &ctx(texts()).await,
            json!({"action": "gather", "enableViolations": true, "allowedSlowCalls": 4}),
        )
        .await;
        assert!(ok.is_ok());

        // A custom threshold for the GET; the LIST threshold lowered below its p99.
        let custom = "- verb: GET\n  resource: nodes\n  subresource: status\n  scope: resource\n  threshold: 5s\n\
                      - verb: LIST\n  resource: pods\n  scope: namespace\n  threshold: 10s\n";
        let err = run(
            &ctx(texts()).await,
            json!({"action": "gather", "enableViolations": true, "customThresholds": custom,
                   "summaryName": "APIResponsivenessPrometheus_simple", "useSimpleLatencyQuery": true}),
        )
        .await
        .expect_err("LIST over 10s");
        assert!(
            err.message.contains("LIST pods scope=namespace"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains("expected perc99 <= 10s"),
            "{}",
            err.message
        );
        assert!(!err.message.contains("GET"), "{}", err.message);
        assert_eq!(err.summaries[0].name, "APIResponsivenessPrometheus_simple");

        // singleResourceThreshold raises the default for scope=resource.
        let ok = run(
            &ctx(texts()).await,
            json!({"action": "gather", "enableViolations": true, "singleResourceThreshold": "5s"}),
        )
        .await;
        assert!(ok.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn the_sli_histogram_wins_over_the_plain_one() {
        let both = |after| {
            format!("{}{}", metrics(SLI_METRIC, after), {
                // The plain histogram says every POST took 60s; it must be ignored.
                let mut s = String::new();
                series(
                    &mut s,
                    LATENCY_METRIC,
                    &lbl("POST", "pods", "", "resource", "v1"),
                    &if after {
                        [0, 0, 0, 0, 0, 0, 500]
                    } else {
                        [0; 7]
                    },
                );
                s
            })
        };
        let out = run(
            &ctx(vec![Ok(both(false)), Ok(both(true))]).await,
            json!({"action": "gather"}),
        )
        .await
        .expect("passes");
        let it = items(&out[0]);
        let post = it
            .iter()
            .find(|i| i["labels"]["Verb"] == "POST")
            .expect("POST");
        assert_eq!(post["labels"]["Count"], "100");
    }

    #[tokio::test(start_paused = true)]
    async fn scope_is_derived_when_the_series_lack_it() {
        let text = |n: u64| {
            let mut s = String::new();
            series(
                &mut s,
                LATENCY_METRIC,
                "resource=\"pods\",verb=\"GET\"",
                &[n, n, n, n, n, n, n],
            );
            series(
                &mut s,
                LATENCY_METRIC,
                "resource=\"pods\",verb=\"LIST\"",
                &[0, 0, 0, 0, 0, n, n],
            );
            s
        };
        let out = run(
            &ctx(vec![Ok(text(0)), Ok(text(2))]).await,
            json!({"action": "gather"}),
        )
        .await
        .expect("passes");
        let scopes: BTreeMap<String, (String, String)> = items(&out[0])
            .iter()
            .map(|i| {
                let l = &i["labels"];
                (
                    l["Verb"].as_str().unwrap_or_default().to_string(),
                    (
                        l["Scope"].as_str().unwrap_or_default().to_string(),
                        l["SlowCount"].as_str().unwrap_or_default().to_string(),
                    ),
                )
            })
            .collect();
        assert_eq!(scopes["GET"], ("resource".to_string(), "0".to_string()));
        // A cluster LIST's fast bucket is 30s: the 2 calls in (5, 30] are not slow.
        assert_eq!(scopes["LIST"], ("cluster".to_string(), "0".to_string()));
    }

    #[tokio::test(start_paused = true)]
    async fn counter_resets_take_the_later_scrape() {
        let later = {
            let mut s = String::new();
            series(
                &mut s,
                LATENCY_METRIC,
                &lbl("POST", "pods", "", "resource", "v1"),
                &[2, 2, 2, 2, 2, 2, 2],
            );
            s
        };
        let out = run(
            &ctx(vec![Ok(metrics(LATENCY_METRIC, true)), Ok(later)]).await,
            json!({"action": "gather"}),
        )
        .await
        .expect("passes");
        let it = items(&out[0]);
        assert_eq!(it.len(), 1);
        assert_eq!(it[0]["labels"]["Count"], "2");
    }

    #[tokio::test(start_paused = true)]
    async fn unreadable_or_foreign_metrics_fail_clearly() {
        let err = run(
            &ctx(vec![Err(ApiError::new(403, "Forbidden", "no"))]).await,
            json!({"action": "gather"}),
        )
        .await
        .expect_err("no /metrics");
        assert_eq!(err.kind, ErrorKind::Failed);
        assert!(
            err.message
                .contains("cannot read the API server's /metrics"),
            "{}",
            err.message
        );

        let err = run(
            &ctx(vec![Ok("x{".into())]).await,
            json!({"action": "gather"}),
        )
        .await
        .expect_err("malformed");
        assert!(err.message.contains("malformed: line 1"), "{}", err.message);

        let other = "# TYPE up gauge\nup 1\n".to_string();
        let err = run(
            &ctx(vec![Ok(other.clone()), Ok(other)]).await,
            json!({"action": "gather"}),
        )
        .await
        .expect_err("no histogram");
        assert!(err.message.contains("has neither"), "{}", err.message);

        let mut m = ApiResponsiveness::default();
        let c = ctx(vec![]).await;
        let err = m
            .execute(&c, "api", &params(json!({"action": "gather"})))
            .await
            .expect_err("no start");
        assert!(err.message.contains("without a start"));
        let err = m
            .execute(&c, "api", &params(json!({"action": "stop"})))
            .await
            .expect_err("action");
        assert!(err.message.contains("unknown action"));
    }

    #[test]
    fn custom_thresholds_are_checked() {
        assert!(custom_thresholds("").expect("empty").is_empty());
        let t = custom_thresholds(
            "- verb: PUT\n  resource: leases\n  scope: namespace\n  threshold: 500ms\n",
        )
        .expect("parses");
        let key = (
            "leases".to_string(),
            String::new(),
            "PUT".to_string(),
            "namespace".to_string(),
        );
        assert_eq!(t[&key], Duration::from_millis(500));
        assert!(custom_thresholds("- verb: PUT\n").is_err());
        assert!(custom_thresholds("verb: PUT").is_err());
        assert!(custom_thresholds("- threshold: soon").is_err());
    }
}
