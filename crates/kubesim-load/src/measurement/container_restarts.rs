//! ContainerRestarts: how often each container started during the
//! measured window, from `changes(container_start_time_seconds[<window>])`
//! on the run's Prometheus, checked against the allowed restarts.
//!
//! As in ClusterLoader2: `start` notes the time; `gather` runs the query,
//! writes a `ContainerRestarts` summary (one entry per container:
//! `Container`, `Pod`, `Namespace`, `RestartCount`), and counts a
//! container that restarted more than allowed as a violation when
//! `failureEnabled` (default true) and `enableViolations` are both set.
//! The allowance is `defaultAllowedRestarts` (default 0), raised by the
//! entries of `customAllowedRestarts` (YAML: `pod` patterns where `*` is
//! any text, each with `allowedRestarts`) whose pattern matches the pod.
//!
//! Emulated pods run no containers, so on kubesim the query finds no
//! series and the summary is an empty list.

use serde::{Deserialize, Serialize};

use crate::params::{self, Params};
use crate::report::Summary;

use super::prometheus_method::{Gatherer, PrometheusMethod, Window};
use super::MeasurementError;

pub const NAME: &str = "ContainerRestarts";
const QUERY: &str = "changes(container_start_time_seconds[%v])";

/// The restart query and its allowances.
#[derive(Default)]
pub struct RestartsQuery;

pub type ContainerRestarts = PrometheusMethod<RestartsQuery>;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "PascalCase")]
struct Restarts {
    container: String,
    pod: String,
    namespace: String,
    restart_count: i64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Allowance {
    #[serde(default)]
    pod: String,
    #[serde(default)]
    allowed_restarts: i64,
}

fn bad(message: impl std::fmt::Display) -> MeasurementError {
    MeasurementError::failed(format!("{NAME}: {message}"))
}

/// `*` matches any text, everything else itself, over the whole name.
fn glob(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*` at all
    };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

fn allowances(p: &Params) -> Result<Vec<Allowance>, MeasurementError> {
    let text = params::string_or(p, "customAllowedRestarts", "")?;
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let list: Option<Vec<Allowance>> = serde_saphyr::from_str(&text)
        .map_err(|e| bad(format!("customAllowedRestarts: {e}").replace('\n', " ")))?;
    Ok(list.unwrap_or_default())
}

#[async_trait::async_trait]
impl Gatherer for RestartsQuery {
    const NAME: &'static str = NAME;

    async fn gather(
        &mut self,
        window: &Window<'_>,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let allowed = allowances(p)?;
        let default_allowed = params::int_or(p, "defaultAllowedRestarts", 0)?;
        let failure_enabled = params::bool_or(p, "failureEnabled", true)?;
        let enable_violations = params::bool_or(p, "enableViolations", false)?;
        let samples = window.query("query", QUERY).await?;
        let label =
            |s: &crate::prom::PromSample, k: &str| s.metric.get(k).cloned().unwrap_or_default();
        let restarts: Vec<Restarts> = samples
            .iter()
            .map(|s| Restarts {
                container: label(s, "container"),
                pod: label(s, "pod"),
                namespace: label(s, "namespace"),
                restart_count: s.value.round() as i64,
            })
            .collect();
        let too_many: Vec<String> = restarts
            .iter()
            .filter_map(|r| {
                let limit = allowed
                    .iter()
                    .filter(|a| glob(&a.pod, &r.pod))
                    .map(|a| a.allowed_restarts)
                    .fold(default_allowed, i64::max);
                (r.restart_count > limit).then(|| {
                    format!(
                        "{}/{} container {}: {} restarts, at most {limit} allowed",
                        r.namespace, r.pod, r.container, r.restart_count
                    )
                })
            })
            .collect();
        let summary = Summary::json(NAME, window.end, &restarts);
        if !too_many.is_empty() && failure_enabled && enable_violations {
            return Err(MeasurementError::violation(
                format!("{NAME}: {}", too_many.join("; ")),
                vec![summary],
            ));
        }
        Ok(vec![summary])
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::measurement::test_support::{ctx, sample, Canned};
    use crate::measurement::{ErrorKind, Measurement};
    use crate::prom::PromSample;

    fn restart(pod: &str, n: f64) -> PromSample {
        sample(&[("container", "c"), ("pod", pod), ("namespace", "ns")], n)
    }

    fn params(v: Value) -> Params {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(glob("coredns-*", "coredns-abc"));
        assert!(glob("*", "x"));
        assert!(glob("a*b*c", "a-b-b-c"));
        assert!(glob("exact", "exact"));
        assert!(!glob("exact", "exactly"));
        assert!(!glob("coredns-*", "kube-coredns-a"));
        assert!(!glob("a*bc", "abc-x"));
        assert!(glob("ab*b", "ab-b"));
        assert!(!glob("ab*ba", "aba"));
    }

    #[tokio::test(start_paused = true)]
    async fn restarts_beyond_the_allowance_are_violations() {
        let answer = Canned::always(vec![
            restart("coredns-1", 3.0),
            restart("web-1", 1.2),
            restart("db-0", 0.0),
        ]);
        let (mut c, _api) = ctx().await;
        c.prometheus = Some(answer.clone());
        let mut m = ContainerRestarts::default();
        m.execute(&c, "r", &params(json!({"action": "start"})))
            .await
            .unwrap();
        c.clock.sleep(std::time::Duration::from_secs(42)).await;
        let gather = json!({
            "action": "gather",
            "enableViolations": true,
            "customAllowedRestarts": "- pod: coredns-*\n  allowedRestarts: 5\n",
        });
        let e = m
            .execute(&c, "r", &params(gather.clone()))
            .await
            .unwrap_err();
        assert_eq!(
            answer.queries()[0],
            "changes(container_start_time_seconds[42s])"
        );
        assert_eq!(e.kind, ErrorKind::Violation);
        assert_eq!(
            e.message,
            "ContainerRestarts: ns/web-1 container c: 1 restarts, at most 0 allowed"
        );
        let v: Value = serde_json::from_str(&e.summaries[0].content).unwrap();
        assert_eq!(
            v[0],
            json!({"Container": "c", "Pod": "coredns-1", "Namespace": "ns", "RestartCount": 3})
        );
        assert_eq!(v.as_array().unwrap().len(), 3);

        // failureEnabled: false, or no enableViolations: reported, passing.
        let mut off = gather.clone();
        off["failureEnabled"] = json!(false);
        assert!(m.execute(&c, "r", &params(off)).await.is_ok());
        let mut quiet = gather;
        quiet.as_object_mut().unwrap().remove("enableViolations");
        assert!(m.execute(&c, "r", &params(quiet)).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn bad_allowances_and_no_prometheus() {
        let (mut c, _api) = ctx().await;
        let mut m = ContainerRestarts::default();
        let e = m
            .execute(&c, "r", &params(json!({"action": "start"})))
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Skipped);
        assert!(e.message.contains("--prometheus"), "{}", e.message);
        c.prometheus = Some(Canned::always(Vec::new()));
        m.execute(&c, "r", &params(json!({"action": "start"})))
            .await
            .unwrap();
        let e = m
            .execute(
                &c,
                "r",
                &params(json!({"action": "gather", "customAllowedRestarts": "pod: [unclosed"})),
            )
            .await
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
        assert!(
            e.message
                .starts_with("ContainerRestarts: customAllowedRestarts: "),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\n'));
        let ok = m
            .execute(&c, "r", &params(json!({"action": "gather"})))
            .await
            .unwrap();
        assert_eq!(ok[0].content.trim(), "[]");
    }
}
