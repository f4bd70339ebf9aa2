//! `kubesim load` runs ClusterLoader2's own test configs, unmodified (from
//! `testdata/clusterloader2/`), against an in-process cluster and against a
//! running `kubesim up`, and writes ClusterLoader2's report files.

mod common;

use common::load::{json_file, load, scratch, testdata, text};

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The PerfData of a PodStartupLatency summary: six transitions, in ms,
/// and pod_startup within the 5 s SLO.
fn check_pod_startup(v: &Value) {
    let items = v["dataItems"].as_array().expect("dataItems");
    let mut metrics: Vec<&str> = items
        .iter()
        .map(|i| i["labels"]["Metric"].as_str().unwrap())
        .collect();
    metrics.sort();
    assert_eq!(
        metrics,
        [
            "create_to_run",
            "create_to_schedule",
            "pod_startup",
            "run_to_watch",
            "schedule_to_run",
            "schedule_to_watch"
        ]
    );
    for i in items {
        assert_eq!(i["unit"], "ms");
        for p in ["Perc50", "Perc90", "Perc99"] {
            assert!(i["data"][p].as_f64().is_some(), "{i}");
        }
    }
    let startup = items
        .iter()
        .find(|i| i["labels"]["Metric"] == "pod_startup")
        .unwrap();
    assert!(
        startup["data"]["Perc99"].as_f64().unwrap() <= 5000.0,
        "{startup}"
    );
}

fn check_junit(dir: &Path, name: &str, testcases: usize) {
    let junit = std::fs::read_to_string(dir.join("junit.xml")).unwrap();
    assert!(junit.contains("ClusterLoaderV2"), "{junit}");
    assert!(junit.contains(r#"failures="0""#), "{junit}");
    assert!(junit.contains(&format!("{name} overall")), "{junit}");
    assert_eq!(junit.matches("<testcase").count(), testcases, "{junit}");
}

#[test]
fn getting_started_deployment_on_an_in_process_cluster() {
    let dir = scratch("getting-started");
    let config = testdata("getting-started/config.yaml");
    let o = load(
        &[
            "--config",
            config.to_str().unwrap(),
            "--nodes",
            "10",
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    check_pod_startup(&json_file(
        &dir,
        "PodStartupLatency_PodStartupLatency_test_",
    ));
    json_file(&dir, "StatelessPodStartupLatency_PodStartupLatency_test_");
    json_file(&dir, "StatefulPodStartupLatency_PodStartupLatency_test_");
    // 4 steps: 2 start measurements, 1 phase step, 1 + 1 gathers.
    check_junit(&dir, "test", 1 + 2 + 1 + 1 + 1);
    assert!(dir.join("generatedConfig_test.yaml").is_file());
    let html = std::fs::read_to_string(dir.join("summary.html")).unwrap();
    assert!(
        html.contains("pod_startup") || html.contains("Pod startup"),
        "summary.html lacks pod startup"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn pod_startup_latency_with_replication_controllers_and_api_responsiveness() {
    let dir = scratch("pod-startup");
    let overrides = dir.join("overrides.yaml");
    std::fs::write(&overrides, "POD_COUNT: 6\nPOD_THROUGHPUT: 6\n").unwrap();
    let report = dir.join("report");
    let config = testdata("pod-startup-latency/config.yaml");
    let o = load(
        &[
            "--config",
            config.to_str().unwrap(),
            "--testoverrides",
            overrides.to_str().unwrap(),
            "--nodes",
            "3",
            "--report-dir",
            report.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    check_pod_startup(&json_file(
        &report,
        "PodStartupLatency_PodStartupLatency_pod-startup-latency_",
    ));
    // Computed from the API server's own /metrics: pod creates among them.
    let api = json_file(
        &report,
        "APIResponsivenessPrometheus_simple_pod-startup-latency_",
    );
    assert_eq!(api["version"], "v1");
    let items = api["dataItems"].as_array().unwrap();
    assert!(
        items.iter().any(|i| i["labels"]["Verb"] == "POST"
            && i["labels"]["Resource"] == "replicationcontrollers"
            && i["labels"]["Count"] == "6"),
        "{api}"
    );
    // 8 steps: 2 phase steps and 6 measurement steps with 2+1+1+1+1+1 calls.
    check_junit(&report, "pod-startup-latency", 1 + 2 + 7);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn scheduler_throughput_with_cl2_environment_parameters() {
    let dir = scratch("scheduler-throughput");
    let config = testdata("scheduler-throughput/config.yaml");
    let o = load(
        &[
            "--config",
            config.to_str().unwrap(),
            "--nodes",
            "50",
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        // Paced well below what a debug build schedules on a busy machine,
        // so the 5 s pod startup SLO holds with a wide margin.
        &[
            ("CL2_SCHEDULER_THROUGHPUT_PODS", "500"),
            ("CL2_UNIFORM_QPS", "100"),
            ("CL2_SCHEDULER_THROUGHPUT_THRESHOLD", "20"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let t = json_file(&dir, "SchedulingThroughput_direct-scheduler-throughput_");
    for k in ["perc50", "perc90", "perc99", "max"] {
        assert!(t[k].as_f64().is_some(), "{t}");
    }
    assert!(t["max"].as_f64().unwrap() >= 20.0, "{t}");
    check_pod_startup(&json_file(
        &dir,
        "PodStartupLatency_DirectSchedulerThroughputPodStartupLatency_direct-scheduler-throughput_",
    ));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn drives_a_running_cluster_through_its_kubeconfig_and_cleans_up() {
    let k = common::Kubesim::start_ephemeral_with("load-remote", &["--nodes", "4"]);
    let dir = scratch("remote");
    let config = testdata("getting-started/config.yaml");
    let kc = k.kubeconfig();
    let o = load(
        &[
            "--config",
            config.to_str().unwrap(),
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--report-dir",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    check_junit(&dir, "test", 6);
    // The automanaged namespace is gone again.
    let out = Command::new("kubectl")
        .args(["get", "namespaces", "-o", "name"])
        .env("KUBECONFIG", &kc)
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&out.stdout);
    assert!(!names.contains("namespace/test-"), "{names}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_configs_fail_before_anything_starts_with_file_and_line() {
    let dir = scratch("bad");
    std::fs::write(
        dir.join("config.yaml"),
        "name: bad\nsteps:\n- name: create\n  phases:\n  - replicasPerNamespace: 1\n    tuningSet: missing\n    objectBundle:\n    - basename: p\n      objectTemplatePath: nope.yaml\n",
    )
    .unwrap();
    let o = load(
        &[
            "--config",
            dir.join("config.yaml").to_str().unwrap(),
            "--report-dir",
            dir.join("r").to_str().unwrap(),
        ],
        &[],
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.contains("config.yaml:6:") && last.contains("not declared"),
        "{}",
        text(&o)
    );
    assert!(
        !dir.join("r").exists(),
        "no report for a config that did not compile"
    );
    std::fs::remove_dir_all(&dir).ok();
}
