//! `kubesim load --prometheus` end to end: a real Prometheus server
//! scrapes the in-process cluster while a config runs, and the config's
//! GenericPrometheusQuery measurements run their PromQL on it.
//!
//! The test needs the `prometheus` executable (scripts/test installs it).
//! Without it the test prints a NOT RUN line and passes, except under CI
//! (`CI=true`), where a missing Prometheus is a failure.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::load::{files, json_file, load, scratch, testdata, text};

/// How many ConfigMaps the config creates; the queries must count them.
const CONFIGMAPS: usize = 12;
/// Pods created one a second, bound by the built-in scheduler.
const PODS: usize = 10;

fn prometheus_available() -> bool {
    let found = Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        let msg = "the prometheus executable is not on PATH \
                   (install it, e.g. apt-get install -y prometheus)";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}");
        }
        eprintln!("NOT RUN: load_prometheus: {msg}");
    }
    found
}

/// A config in ClusterLoader2's form: two GenericPrometheusQuery
/// measurements around the creation of ConfigMaps, the first counting
/// the creations from the API server's request counter and stored-object
/// gauge, the second with a threshold the creations break.
fn config(dir: &Path) -> std::path::PathBuf {
    let query = |name: &str, threshold: &str| {
        format!(
            r#"  - Identifier: {name}
    Method: GenericPrometheusQuery
    Params:
      action: start
      metricName: {name} configmaps
      metricVersion: v1
      unit: count
      dimensions:
      - verb
      queries:
      - name: Created
        query: sum by (verb) (max_over_time(apiserver_request_total{{job="master",resource="configmaps",verb="POST",code="201"}}[%v]))
        threshold: {threshold}
        requireSamples: true
      - name: Scraped
        query: min_over_time(up{{job="master"}}[%v])
        threshold: 1
        lowerBound: true
      - name: KubeletsScraped
        query: min(min_over_time(up{{job="kubelet"}}[%v]))
        threshold: 1
        lowerBound: true
        requireSamples: true
"#
        )
    };
    let text = format!(
        r#"name: prometheus-queries
namespace:
  number: 1
tuningSets:
- name: Uniform
  qpsLoad:
    qps: 4
- name: Slow
  qpsLoad:
    qps: 1
steps:
- name: Start the queries
  measurements:
{}{}  - Identifier: Throughput
    Method: SchedulingThroughputPrometheus
    Params:
      action: start
# A first binding, scraped twice before the others: a counter first seen
# at its final value would show no rate.
- name: Bind a first pod
  phases:
  - namespaceRange:
      min: 1
      max: 1
    replicasPerNamespace: 1
    tuningSet: Uniform
    objectBundle:
    - basename: early
      objectTemplatePath: pod.yaml
- name: Wait for the first binding's scrapes
  measurements:
  - Identifier: WaitFirst
    Method: Sleep
    Params:
      duration: 12s
- name: Create configmaps and pods
  phases:
  - namespaceRange:
      min: 1
      max: 1
    replicasPerNamespace: {CONFIGMAPS}
    tuningSet: Uniform
    objectBundle:
    - basename: cm
      objectTemplatePath: configmap.yaml
  # Bound over several scrapes, so that the binding rate is seen.
  - namespaceRange:
      min: 1
      max: 1
    replicasPerNamespace: {PODS}
    tuningSet: Slow
    objectBundle:
    - basename: pod
      objectTemplatePath: pod.yaml
- name: Wait for two scrapes
  measurements:
  - Identifier: Wait
    Method: Sleep
    Params:
      duration: 12s
- name: Gather the queries
  measurements:
  - Identifier: Throughput
    Method: SchedulingThroughputPrometheus
    Params:
      action: gather
  - Identifier: Counted
    Method: GenericPrometheusQuery
    Params:
      action: gather
      enableViolations: true
  - Identifier: Limited
    Method: GenericPrometheusQuery
    Params:
      action: gather
      enableViolations: true
"#,
        query("Counted", "1000"),
        query("Limited", "1"),
    );
    std::fs::write(
        dir.join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{.Name}}\nspec:\n  containers:\n  - name: c\n    image: registry.k8s.io/pause:3.10\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{.Name}}\ndata:\n  a: b\n",
    )
    .unwrap();
    let path = dir.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn generic_queries_run_on_a_real_prometheus() {
    if !prometheus_available() {
        return;
    }
    let src = scratch("prometheus-config");
    let cfg = config(&src);
    let dir = scratch("prometheus");
    let out = load(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--nodes",
            "2",
            "--report-dir",
            dir.to_str().unwrap(),
            "--prometheus",
        ],
        &[],
    );
    let log = text(&out);
    // The second measurement's threshold is broken, so the test fails,
    // naming the query and the value Prometheus returned.
    assert!(!out.status.success(), "{log}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("Created: {CONFIGMAPS} is above the threshold 1")),
        "{log}"
    );
    assert!(!stdout.contains("Counted configmaps:"), "{log}");

    let counted = json_file(
        &dir,
        "GenericPrometheusQuery Counted configmaps_prometheus-queries_",
    );
    assert_eq!(counted["version"], "v1");
    let items = counted["dataItems"].as_array().expect("dataItems");
    let post = items
        .iter()
        .find(|i| i["labels"]["verb"] == "POST")
        .unwrap_or_else(|| panic!("a POST item: {counted}"));
    assert_eq!(post["data"]["Created"], CONFIGMAPS as f64, "{counted}");
    assert_eq!(post["unit"], "count");
    // `up` has no verb label: its item is keyed by an empty verb.
    let up = items
        .iter()
        .find(|i| i["labels"]["verb"] == "")
        .unwrap_or_else(|| panic!("an item for up: {counted}"));
    assert_eq!(up["data"]["Scraped"], 1.0, "{counted}");
    // Every emulated node's kubelet endpoint answered every scrape.
    assert_eq!(up["data"]["KubeletsScraped"], 1.0, "{counted}");
    assert_eq!(
        files(&dir, "GenericPrometheusQuery Limited configmaps_").len(),
        1
    );

    // The built-in scheduler's bindings count as requests, so the
    // throughput query sees them.
    let throughput = files(&dir, "SchedulingThroughputPrometheus_");
    assert_eq!(throughput.len(), 1, "{log}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&throughput[0]).unwrap()).unwrap();
    let max = t["max"].as_f64().unwrap_or_else(|| panic!("{t}"));
    assert!(max > 0.0 && max <= (PODS + 1) as f64, "{t}");

    // The server's data stays in the report directory, stopped cleanly.
    assert!(dir.join("prometheus.yml").is_file());
    let tsdb = dir.join("prometheus");
    assert!(tsdb.join("wal").is_dir(), "{}", tsdb.display());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("kubesim: Prometheus stopped; its data is in"),
        "{log}"
    );
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&src).ok();
}

#[test]
fn without_prometheus_the_queries_are_skipped_saying_how_to_get_one() {
    let src = scratch("prometheus-skipped-config");
    let cfg = config(&src);
    let dir = scratch("prometheus-skipped");
    let out = load(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--nodes",
            "1",
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    let log = text(&out);
    assert!(out.status.success(), "{log}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    for id in ["Counted", "Limited"] {
        assert!(
            stdout.contains(&format!(
                "{id}: skipped: needs Prometheus: run kubesim load with --prometheus"
            )),
            "{log}"
        );
    }
    assert!(files(&dir, "GenericPrometheusQuery").is_empty());
    assert!(!dir.join("prometheus").exists());
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&src).ok();
}

#[test]
fn prometheus_is_refused_for_another_cluster_in_one_line() {
    let dir = scratch("prometheus-remote");
    let out = load(
        &[
            "--config",
            testdata("getting-started/config.yaml").to_str().unwrap(),
            "--kubeconfig",
            dir.join("absent-kubeconfig").to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
            "--prometheus",
        ],
        &[],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--prometheus runs only with the in-process cluster"),
        "{}",
        text(&out)
    );
    std::fs::remove_dir_all(&dir).ok();
}
