use std::path::PathBuf;
use std::time::Duration;

use kubesim_runtime::{Cache, Clock, Rng};
use serde_json::json;

use super::*;
use crate::apate::Faults;
use crate::managed::NodeSelector;
use crate::usage::rules::{Rule, Rules};

fn fixture(rel: &str) -> Arc<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/kwok/kustomize/metrics")
        .join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    Arc::new(serde_saphyr::from_str(&text).unwrap())
}

/// A model on one emulated node with one running two-container pod,
/// started 100 s before the clock's epoch.
fn model() -> Arc<Model> {
    let epoch: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let nodes = Arc::new(Cache::default());
    nodes.upsert(json!({"kind": "Node", "metadata": {"name": "n1",
        "labels": {"kwok.x-k8s.io/node": "fake"}, "creationTimestamp": "2025-12-31T23:00:00Z"}}));
    let pods = Arc::new(Cache::default());
    pods.upsert(json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "d", "uid": "u1",
            "annotations": {"kwok.x-k8s.io/usage-cpu": "250m", "kwok.x-k8s.io/usage-memory": "64Mi"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running", "startTime": "2025-12-31T23:58:20Z"}}));
    let m = Model::new(
        Clock::simulated(epoch),
        Rng::seeded(1),
        Arc::new(Faults::default()),
        NodeSelector::marked(),
        pods,
        nodes,
        None,
    );
    let rule = Rule::from_object(fixture("usage/usage-from-annotation.yaml"), true).unwrap();
    m.set_rules(Rules {
        cluster: vec![rule],
        ..Rules::default()
    });
    m.set_metrics(vec![MetricSet::from_object(fixture(
        "resource/metrics-resource.yaml",
    ))
    .unwrap()]);
    m
}

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
}

#[tokio::test(start_paused = true)]
async fn the_kwok_resource_metrics_fixture() {
    let m = model();
    let path = "/metrics/nodes/n1/metrics/resource";
    let text = serve(&m, path).unwrap();
    assert!(text.contains("# HELP scrape_error [ALPHA] 1 if there was an error"));
    assert!(text.contains("# TYPE container_cpu_usage_seconds_total counter"));
    assert_eq!(line(&text, "scrape_error"), "scrape_error 0");
    assert_eq!(
        line(&text, "container_start_time_seconds{container=\"a\""),
        "container_start_time_seconds{container=\"a\",namespace=\"d\",pod=\"p\"} 100"
    );
    // 250m for 100 s since the pod started.
    assert_eq!(
        line(&text, "container_cpu_usage_seconds_total{container=\"b\""),
        "container_cpu_usage_seconds_total{container=\"b\",namespace=\"d\",pod=\"p\"} 25"
    );
    assert_eq!(
        line(&text, "container_memory_working_set_bytes{container=\"a\""),
        "container_memory_working_set_bytes{container=\"a\",namespace=\"d\",pod=\"p\"} 67108864"
    );
    assert_eq!(
        line(&text, "pod_cpu_usage_seconds_total"),
        "pod_cpu_usage_seconds_total{namespace=\"d\",pod=\"p\"} 50"
    );
    assert_eq!(
        line(&text, "pod_memory_working_set_bytes"),
        "pod_memory_working_set_bytes{namespace=\"d\",pod=\"p\"} 134217728"
    );
    assert_eq!(
        line(&text, "node_cpu_usage_seconds_total"),
        "node_cpu_usage_seconds_total 50"
    );
    assert_eq!(
        line(&text, "node_memory_working_set_bytes"),
        "node_memory_working_set_bytes 134217728"
    );

    // Counters follow the clock: 10 s later, half a core more for 10 s.
    tokio::time::advance(Duration::from_secs(10)).await;
    let text = serve(&m, path).unwrap();
    assert_eq!(
        line(&text, "pod_cpu_usage_seconds_total"),
        "pod_cpu_usage_seconds_total{namespace=\"d\",pod=\"p\"} 55"
    );
    assert_eq!(
        line(&text, "node_cpu_usage_seconds_total"),
        "node_cpu_usage_seconds_total 55"
    );

    // Unknown nodes and paths are not served.
    assert!(serve(&m, "/metrics/nodes/n2/metrics/resource").is_none());
    assert!(serve(&m, "/metrics/nodes/n1/metrics/other").is_none());
    // The same text twice: nothing random, ordered output.
    assert_eq!(serve(&m, path), serve(&m, path));
}

#[tokio::test(start_paused = true)]
async fn a_resource_usage_beats_the_cluster_one() {
    let m = model();
    let own = Rule::from_object(
        Arc::new(
            json!({"kind": "ResourceUsage", "metadata": {"name": "p", "namespace": "d"},
            "spec": {"usages": [{"containers": ["a"], "usage": {"cpu": {"value": "1"}}}]}}),
        ),
        false,
    )
    .unwrap();
    let cluster = Rule::from_object(fixture("usage/usage-from-annotation.yaml"), true).unwrap();
    let mut rules = Rules::default();
    rules.by_pod.insert(("d".into(), "p".into()), own);
    rules.cluster.push(cluster);
    m.set_rules(rules);
    let pod = m.pods.get("d", "p").unwrap();
    let u = m.pod_usage(&pod);
    // Container a's cpu comes from the ResourceUsage; its memory and all of
    // b from the annotations through the ClusterResourceUsage.
    assert_eq!((u[0].1.cpu_milli, u[0].1.memory), (1000, 64 << 20));
    assert_eq!((u[1].1.cpu_milli, u[1].1.memory), (250, 64 << 20));
}

#[tokio::test(start_paused = true)]
async fn a_failing_expression_falls_through_and_skips_its_sample() {
    let m = model();
    let bad = Rule::from_object(
        Arc::new(
            json!({"kind": "ClusterResourceUsage", "metadata": {"name": "a-bad"},
            "spec": {"usages": [{"usage": {"cpu": {"expression": "pod.metadata.nothing"}}}]}}),
        ),
        true,
    )
    .unwrap();
    m.set_rules(Rules {
        cluster: vec![bad],
        ..Rules::default()
    });
    let pod = m.pods.get("d", "p").unwrap();
    // The annotation still answers.
    assert_eq!(m.pod_usage(&pod)[0].1.cpu_milli, 250);
    let metric = MetricSet::from_object(Arc::new(json!({"kind": "Metric",
        "metadata": {"name": "m"}, "spec": {"path": "/metrics/x/{nodeName}", "metrics": [
            {"name": "broken", "kind": "gauge", "dimension": "pod", "value": "pod.nope"},
            {"name": "fine", "kind": "gauge", "dimension": "node", "value": "1"}]}})))
    .unwrap();
    m.set_metrics(vec![metric]);
    let text = serve(&m, "/metrics/x/n1").unwrap();
    assert!(!text.lines().any(|l| l.starts_with("broken")), "{text}");
    assert!(text.contains("fine 1"));
}

#[test]
fn bad_metrics_are_refused_with_the_field() {
    let bad = |spec: Value| {
        MetricSet::from_object(Arc::new(json!({"metadata": {"name": "m"}, "spec": spec})))
            .unwrap_err()
    };
    assert!(bad(json!({"path": "/other"})).contains("spec.path"));
    let e = bad(json!({"path": "/metrics", "metrics": [
        {"name": "x", "kind": "gauge", "dimension": "node", "value": "1 +"}]}));
    assert!(
        e.contains("Metric m") && e.contains("spec.metrics[0].value"),
        "{e}"
    );
    assert!(bad(json!({"path": "/metrics", "metrics": [
        {"name": "x", "kind": "summary", "dimension": "node", "value": "1"}]}))
    .contains("kind"));
    assert!(bad(json!({"path": "/metrics", "metrics": [
        {"name": "bad name", "kind": "gauge", "dimension": "node", "value": "1"}]}))
    .contains("name"));
}

#[tokio::test(start_paused = true)]
async fn histograms() {
    let m = model();
    let metric = MetricSet::from_object(Arc::new(json!({"kind": "Metric",
        "metadata": {"name": "h"}, "spec": {"path": "/metrics/h", "metrics": [
            {"name": "lat", "kind": "histogram", "dimension": "node", "value": "7",
             "labels": [{"name": "node", "value": "node.metadata.name"}],
             "buckets": [{"le": 1, "value": "2"}, {"le": 0.5, "value": "1", "hidden": true},
                         {"le": 5, "value": "3"}]}]}})))
    .unwrap();
    m.set_metrics(vec![metric]);
    let text = serve(&m, "/metrics/h").unwrap();
    assert_eq!(
        text,
        "# TYPE lat histogram\n\
         lat_bucket{node=\"n1\",le=\"1\"} 2\n\
         lat_bucket{node=\"n1\",le=\"5\"} 3\n\
         lat_bucket{node=\"n1\",le=\"+Inf\"} 3\n\
         lat_sum{node=\"n1\"} 7\n\
         lat_count{node=\"n1\"} 3\n"
    );
}
