//! ClusterLoader2's own test suite (`testdata/clusterloader2/`, unmodified)
//! run end to end by `kubesim load` at small sizes: the measurements each
//! config names run or are reported as skipped with their reason, and the
//! report has ClusterLoader2's files.

mod common;

use std::path::Path;
use std::process::Output;

use common::load::{json_file, scratch, testdata, text};

use serde_json::Value;

/// `kubesim load` of one suite config at `nodes` nodes, reporting to `dir`.
fn load(config: &str, nodes: &str, dir: &Path, env: &[(&str, &str)]) -> Output {
    load_with(config, nodes, dir, env, &[])
}

/// [`load`] with more arguments.
fn load_with(
    config: &str,
    nodes: &str,
    dir: &Path,
    env: &[(&str, &str)],
    extra: &[&str],
) -> Output {
    let config = testdata(config);
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "--nodes",
        nodes,
        "--report-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::load::load(&args, env)
}

/// The PerfData items of a summary by their `Metric` label.
fn metrics(v: &Value) -> Vec<String> {
    let mut m: Vec<String> = v["dataItems"]
        .as_array()
        .expect("dataItems")
        .iter()
        .map(|i| i["labels"]["Metric"].as_str().unwrap().to_string())
        .collect();
    m.sort();
    m
}

#[test]
fn batch_waits_for_every_job_and_reports_job_lifecycle_latency() {
    let dir = scratch("batch");
    // Each Job pod runs perf-tests' sleep image for 5 s.
    let o = load(
        "batch/config.yaml",
        "10",
        &dir,
        &[("CL2_JOB_RUNNING_TIME", "5s")],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("batch: 3 steps in")
            && stdout.contains(" 0 failure(s), 0 measurement call(s) skipped"),
        "{stdout}"
    );
    let v = json_file(&dir, "JobLifecycleLatency_JobLifecycleLatency_batch_");
    assert_eq!(metrics(&v), ["create_to_start", "start_to_complete"]);
    let data = |metric: &str, p: &str| -> f64 {
        let items = v["dataItems"].as_array().unwrap();
        let item = items
            .iter()
            .find(|i| i["labels"]["Metric"] == metric)
            .unwrap();
        item["data"][p].as_f64().unwrap()
    };
    for m in ["create_to_start", "start_to_complete"] {
        // Job times have one-second precision: whole seconds, ordered.
        let (p50, p90, p99) = (data(m, "Perc50"), data(m, "Perc90"), data(m, "Perc99"));
        assert!(p50 <= p90 && p90 <= p99, "{v}");
        assert_eq!(p99 % 1000.0, 0.0, "{v}");
    }
    // The Jobs ran their pods' 5 s (and all 33 Jobs within a few more).
    assert!(data("start_to_complete", "Perc50") >= 5000.0, "{v}");
    assert!(data("start_to_complete", "Perc99") <= 15000.0, "{v}");
    assert!(data("create_to_start", "Perc99") <= 5000.0, "{v}");
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    // Overall, 2 starts, the create phase, 2 gathers.
    assert_eq!(junit.matches("<testcase").count(), 6, "{junit}");
    assert!(junit.contains(r#"failures="0""#), "{junit}");
    assert!(
        junit.contains("Wait for Indexed jobs to finish [01] - WaitForFinishedJobs"),
        "{junit}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn load_runs_to_the_end_with_skipped_probes_and_derived_network_programming() {
    let dir = scratch("load");
    // 10 nodes, 300 pods, created and deleted at 50 pods/s instead of 10.
    let o = load(
        "load/config.yaml",
        "10",
        &dir,
        &[
            ("CL2_LOAD_TEST_THROUGHPUT", "50"),
            ("CL2_DELETE_TEST_THROUGHPUT", "50"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("load: 17 steps in")
            && stdout.contains(" 0 failure(s), 12 measurement call(s) skipped"),
        "{stdout}"
    );
    assert!(
        stdout.contains("InClusterNetworkLatency: skipped: not applicable to emulated nodes"),
        "{stdout}"
    );

    // Measured: pod startup within its SLO, API calls, network programming.
    let startup = json_file(&dir, "PodStartupLatency_CreatePhasePodStartupLatency_load_");
    assert!(
        metrics(&startup).contains(&"pod_startup".to_string()),
        "{startup}"
    );
    json_file(&dir, "APIResponsivenessPrometheus_load_");
    json_file(&dir, "APIResponsivenessPrometheus_simple_load_");
    let np = json_file(&dir, "NetworkProgrammingLatency_load_");
    assert_eq!(metrics(&np), ["NetworkProgrammingLatency"]);
    let p50 = np["dataItems"][0]["data"]["Perc50"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 < 30_000.0, "{np}");
    // TestMetrics' MetricsForE2E is a real scrape of the API server.
    let e2e = json_file(&dir, "MetricsForE2E_load_");
    let requests = &e2e["ApiServerMetrics"]["apiserver_request_total"];
    assert!(requests.as_array().is_some_and(|a| !a.is_empty()), "{e2e}");

    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(
        junit.contains(r#"failures="0" errors="0" skipped="12""#),
        "{junit}"
    );
    assert_eq!(
        junit
            .matches("<skipped message=\"not applicable to emulated nodes")
            .count(),
        2,
        "{junit}"
    );
    assert_eq!(
        junit
            .matches("<skipped message=\"needs Prometheus: run kubesim load with --prometheus to start one\">")
            .count(),
        8,
        "{junit}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn load_runs_against_a_kubesim_up_cluster() {
    // The same test driven through a kubeconfig at a `kubesim up` cluster
    // with its default Stages: load's Jobs run `pause`, whose pods must
    // keep running for WaitForControlledPodsRunning, as in process.
    let k = common::Kubesim::start_ephemeral_with("load-suite-up", &["--nodes", "10"]);
    let dir = scratch("load-up");
    let kc = k.kubeconfig();
    let o = load_with(
        "load/config.yaml",
        "10",
        &dir,
        &[
            ("CL2_LOAD_TEST_THROUGHPUT", "50"),
            ("CL2_DELETE_TEST_THROUGHPUT", "50"),
        ],
        &["--kubeconfig", kc.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("load: 17 steps in") && stdout.contains(" 0 failure(s), "),
        "{stdout}"
    );
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"failures="0" errors="0""#), "{junit}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn watch_list_informer_job_finishes_after_its_timeout() {
    // watch-list's config fixes 80,000 pods and a 5 minute informer run;
    // its unmodified job.yaml here runs in a config of its own for 3 s.
    let dir = scratch("watch-list-job");
    std::fs::copy(testdata("watch-list/job.yaml"), dir.join("job.yaml")).unwrap();
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        r#"name: informer-job
namespace:
  number: 1
tuningSets:
- name: Uniform
  qpsLoad:
    qps: 10
steps:
- name: Start waiting
  measurements:
  - Identifier: WaitForFinishedJobs
    Method: WaitForFinishedJobs
    Params:
      action: start
      labelSelector: group = watch-list
  - Identifier: JobLifecycleLatency
    Method: JobLifecycleLatency
    Params:
      action: start
      labelSelector: group = watch-list
  - Identifier: WaitForRunningJobs
    Method: WaitForControlledPodsRunning
    Params:
      action: start
      apiVersion: batch/v1
      kind: Job
      labelSelector: group = watch-list
      operationTimeout: 1m
- name: Start the informer
  phases:
  - namespaceRange:
      min: 1
      max: 1
    replicasPerNamespace: 1
    tuningSet: Uniform
    objectBundle:
    - basename: watch-list
      objectTemplatePath: job.yaml
      templateFillMap:
        Duration: 3s
        EnableWatchListFeature: false
- name: Wait for the informer pod to run
  measurements:
  - Identifier: WaitForRunningJobs
    Method: WaitForControlledPodsRunning
    Params:
      action: gather
- name: Wait for the informer job to finish
  measurements:
  - Identifier: JobLifecycleLatency
    Method: JobLifecycleLatency
    Params:
      action: gather
      timeout: 1m
  - Identifier: WaitForFinishedJobs
    Method: WaitForFinishedJobs
    Params:
      action: gather
      timeout: 1m
"#,
    )
    .unwrap();
    let o = common::load::load(
        &[
            "--config",
            config.to_str().unwrap(),
            "--nodes",
            "2",
            "--report-dir",
            dir.join("report").to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(" 0 failure(s)"), "{stdout}");
    // It ran its 3 s, not finished at once as the default Stages would
    // (Job times have one-second precision).
    let v = json_file(
        &dir.join("report"),
        "JobLifecycleLatency_JobLifecycleLatency_informer-job_",
    );
    let run = v["dataItems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["labels"]["Metric"] == "start_to_complete")
        .unwrap_or_else(|| panic!("{v}"));
    let p50 = run["data"]["Perc50"].as_f64().unwrap();
    assert!((3000.0..=5000.0).contains(&p50), "{v}");
    let junit = std::fs::read_to_string(dir.join("report/junit.xml")).unwrap();
    assert!(junit.contains(r#"failures="0""#), "{junit}");
    std::fs::remove_dir_all(&dir).ok();
}
