//! GenericPrometheusQuery: PromQL queries, run on the Prometheus server
//! of the run when the measurement is gathered, over the window since it
//! was started.
//!
//! As in ClusterLoader2: `start` takes the parameters (metricName,
//! metricVersion, unit, queries, dimensions) and notes the time; `gather`
//! replaces every `%v` of a query with the window as whole seconds
//! (`123s`), runs it at the gather time, keys each answer by its values
//! of the `dimensions` labels, and writes one PerfData summary named
//! `GenericPrometheusQuery <metricName>`. A value beyond a query's
//! `threshold` (above it, or below it with `lowerBound`), more than one
//! answer for one key, and no answer at all with `requireSamples` are
//! violations, which fail the call only with `enableViolations`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::params::{self, Params};
use crate::report::{DataItem, PerfData, Summary};

use super::prometheus_method::{Gatherer, PrometheusMethod, Window};
use super::MeasurementError;

pub const NAME: &str = "GenericPrometheusQuery";

#[derive(Debug, Clone, PartialEq)]
struct Query {
    name: String,
    query: String,
    threshold: Option<f64>,
    lower_bound: bool,
    require_samples: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Spec {
    metric_name: String,
    metric_version: String,
    unit: String,
    dimensions: Vec<String>,
    queries: Vec<Query>,
}

fn bad(message: impl std::fmt::Display) -> MeasurementError {
    MeasurementError::failed(format!("{NAME}: {message}"))
}

fn spec(p: &Params) -> Result<Spec, MeasurementError> {
    let required = |name: &str| -> Result<String, MeasurementError> {
        match params::string(p, name)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(bad(format!("{name} is required"))),
        }
    };
    let metric_name = required("metricName")?;
    let metric_version = required("metricVersion")?;
    let unit = required("unit")?;
    let dimensions = match p.get("dimensions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|d| {
                d.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("dimensions: {d} is not a label name")))
            })
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(bad(format!("dimensions must be a list, got {v}"))),
    };
    let queries = match p.get("queries") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, q)| query(q).map_err(|e| bad(format!("queries[{i}]: {e}"))))
            .collect::<Result<_, _>>()?,
        Some(v) => return Err(bad(format!("queries must be a list, got {v}"))),
    };
    Ok(Spec {
        metric_name,
        metric_version,
        unit,
        dimensions,
        queries,
    })
}

fn query(v: &Value) -> Result<Query, String> {
    let p = v.as_object().ok_or_else(|| format!("{v} is not a map"))?;
    let name = params::string(p, "name")
        .map_err(|e| e.to_string())?
        .filter(|s| !s.is_empty())
        .ok_or("name is required")?;
    let query = params::string(p, "query")
        .map_err(|e| e.to_string())?
        .filter(|s| !s.is_empty())
        .ok_or("query is required")?;
    Ok(Query {
        name,
        query,
        threshold: params::float(p, "threshold").map_err(|e| e.to_string())?,
        lower_bound: params::bool_or(p, "lowerBound", false).map_err(|e| e.to_string())?,
        require_samples: params::bool_or(p, "requireSamples", false).map_err(|e| e.to_string())?,
    })
}

/// The queries of one GenericPrometheusQuery, from its `start`.
#[derive(Default)]
pub struct Queries {
    spec: Option<Spec>,
}

pub type GenericPrometheusQuery = PrometheusMethod<Queries>;

#[async_trait::async_trait]
impl Gatherer for Queries {
    const NAME: &'static str = NAME;

    fn start(&mut self, p: &Params) -> Result<(), MeasurementError> {
        self.spec = Some(spec(p)?);
        Ok(())
    }

    async fn gather(
        &mut self,
        window: &Window<'_>,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let Some(spec) = &self.spec else {
            return Err(bad("gather without a start"));
        };
        let enable_violations = params::bool_or(p, "enableViolations", false)?;
        let mut items: BTreeMap<String, DataItem> = BTreeMap::new();
        let mut violations = Vec::new();
        for q in &spec.queries {
            let samples = window
                .query(&format!("query {:?}", q.name), &q.query)
                .await?;
            if samples.is_empty() && q.require_samples {
                violations.push(format!(
                    "{}: query returned no samples for {}",
                    q.name, spec.metric_name
                ));
            }
            for s in samples {
                let labels: BTreeMap<String, String> = spec
                    .dimensions
                    .iter()
                    .map(|d| (d.clone(), s.metric.get(d).cloned().unwrap_or_default()))
                    .collect();
                let key = format!(
                    "[{}]",
                    labels.values().cloned().collect::<Vec<_>>().join(" ")
                );
                let item = items.entry(key.clone()).or_insert_with(|| DataItem {
                    data: BTreeMap::new(),
                    unit: spec.unit.clone(),
                    labels,
                });
                match item.data.get(&q.name) {
                    Some(prev) => violations.push(format!(
                        "{}: too many samples for {key}: {} and {prev}, expected one",
                        q.name, s.value
                    )),
                    None => {
                        item.data.insert(q.name.clone(), s.value);
                    }
                }
                if let Some(t) = q.threshold {
                    if q.lower_bound && s.value < t {
                        violations.push(format!(
                            "{}: {} is below the threshold {t}",
                            q.name, s.value
                        ));
                    } else if !q.lower_bound && s.value > t {
                        violations.push(format!(
                            "{}: {} is above the threshold {t}",
                            q.name, s.value
                        ));
                    }
                }
            }
        }
        let summary = Summary::json(
            format!("{NAME} {}", spec.metric_name),
            window.end,
            &PerfData {
                version: spec.metric_version.clone(),
                data_items: items.into_values().collect(),
            },
        );
        if enable_violations && !violations.is_empty() {
            return Err(MeasurementError::violation(
                format!("{NAME} {}: {}", spec.metric_name, violations.join("; ")),
                vec![summary],
            ));
        }
        Ok(vec![summary])
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::measurement::test_support::{ctx, sample, Canned};
    use crate::measurement::{Ctx, ErrorKind, Measurement};

    fn params(v: Value) -> Params {
        v.as_object().unwrap().clone()
    }

    fn start_params() -> Value {
        json!({
            "action": "start",
            "metricName": "Request rate",
            "metricVersion": "v1",
            "unit": "1/s",
            "dimensions": ["verb"],
            "queries": [
                {"name": "Max", "query": "max_over_time(sum by (verb) (rate(r[1m]))[%v:])",
                 "threshold": 100},
                {"name": "Floor", "query": "min_over_time(x[%v])", "threshold": 1,
                 "lowerBound": true},
                {"name": "Missing", "query": "absent_series", "requireSamples": true},
            ],
        })
    }

    async fn with(canned: Arc<Canned>) -> Ctx {
        let (mut c, _api) = ctx().await;
        c.prometheus = Some(canned);
        c
    }

    #[tokio::test(start_paused = true)]
    async fn queries_cover_the_window_and_fill_one_item_per_dimension_value() {
        let canned = Canned::new(vec![
            (
                "max_over_time",
                Ok(vec![
                    sample(&[("verb", "GET"), ("x", "1")], 40.0),
                    sample(&[("verb", "LIST")], 120.0),
                ]),
            ),
            ("min_over_time", Ok(vec![sample(&[("verb", "GET")], 0.5)])),
        ]);
        let c = with(canned.clone()).await;
        let mut m = GenericPrometheusQuery::default();
        m.execute(&c, "id", &params(start_params())).await.unwrap();
        c.clock
            .sleep(std::time::Duration::from_millis(90_700))
            .await;
        let out = m
            .execute(&c, "id", &params(json!({"action": "gather"})))
            .await
            .expect("violations are not enabled");
        let asked = canned.asked.lock().clone();
        assert_eq!(asked.len(), 3);
        assert_eq!(
            asked[0].0,
            "max_over_time(sum by (verb) (rate(r[1m]))[90s:])"
        );
        assert_eq!(asked[1].0, "min_over_time(x[90s])");
        assert_eq!(asked[0].1, c.clock.now());
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "GenericPrometheusQuery Request rate");
        let v: Value = serde_json::from_str(&out[0].content).unwrap();
        assert_eq!(v["version"], "v1");
        assert_eq!(
            v["dataItems"],
            json!([
                {"data": {"Floor": 0.5, "Max": 40.0}, "unit": "1/s", "labels": {"verb": "GET"}},
                {"data": {"Max": 120.0}, "unit": "1/s", "labels": {"verb": "LIST"}},
            ])
        );
    }

    #[tokio::test(start_paused = true)]
    async fn thresholds_bounds_duplicates_and_missing_samples_are_violations() {
        let canned = Canned::new(vec![
            (
                "max_over_time",
                Ok(vec![
                    sample(&[("verb", "LIST")], 120.0),
                    sample(&[("verb", "LIST"), ("y", "2")], 1.0),
                ]),
            ),
            ("min_over_time", Ok(vec![sample(&[("verb", "GET")], 0.5)])),
        ]);
        let c = with(canned).await;
        let mut m = GenericPrometheusQuery::default();
        m.execute(&c, "id", &params(start_params())).await.unwrap();
        let e = m
            .execute(
                &c,
                "id",
                &params(json!({"action": "gather", "enableViolations": true})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Violation);
        assert!(
            e.message.contains("Max: 120 is above the threshold 100"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("too many samples for [LIST]"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("Floor: 0.5 is below the threshold 1"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("Missing: query returned no samples"),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\n'));
        assert_eq!(e.summaries.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_query_fails_the_call_in_one_line() {
        let canned = Canned::new(vec![(
            "max_over_time",
            Err("Prometheus refused the query (400 bad_data): parse error".into()),
        )]);
        let c = with(canned).await;
        let mut m = GenericPrometheusQuery::default();
        m.execute(&c, "id", &params(start_params())).await.unwrap();
        let e = m
            .execute(&c, "id", &params(json!({"action": "gather"})))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
        assert_eq!(
            e.message,
            "GenericPrometheusQuery: query \"Max\": Prometheus refused the query (400 bad_data): parse error"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn bad_parameters_and_no_prometheus() {
        let canned = Canned::new(vec![]);
        let c = with(canned).await;
        let mut m = GenericPrometheusQuery::default();
        let mut p = start_params();
        p.as_object_mut().unwrap().remove("unit");
        let e = m.execute(&c, "id", &params(p)).await.unwrap_err();
        assert_eq!(e.message, "GenericPrometheusQuery: unit is required");
        let mut p = start_params();
        p["queries"][1] = json!({"name": "NoQuery"});
        let e = m.execute(&c, "id", &params(p)).await.unwrap_err();
        assert_eq!(
            e.message,
            "GenericPrometheusQuery: queries[1]: query is required"
        );
        let e = m
            .execute(&c, "id", &params(json!({"action": "gather"})))
            .await
            .unwrap_err();
        assert!(
            e.message.contains("gather without a start"),
            "{}",
            e.message
        );
        let mut p = start_params();
        p["prometheusClient"] = json!("managed");
        let e = m.execute(&c, "id", &params(p)).await.unwrap_err();
        assert!(e.message.contains("not supported"), "{}", e.message);

        let (plain, _api) = ctx().await;
        let e = m
            .execute(&plain, "id", &params(start_params()))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Skipped);
        assert!(e.message.contains("--prometheus"), "{}", e.message);
    }
}
