//! End-to-end: Jobs, CronJobs, autoscalers and `kubectl top` with the real
//! `kubectl` against `kubesim up`, a stand-in kubelet running the pods.

mod common;

use std::time::Duration;

use common::kubectl::Cluster;
use common::kubelet::FakeKubelet;
use serde_json::json;

fn start(name: &str) -> Cluster {
    Cluster::start(&format!("batch-{name}"))
}

const JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 3
  parallelism: 2
  template:
    metadata:
      annotations: {test.kubesim.io/finish: "ok"}
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl
        command: ["perl", "-e", "print 3.14"]
"#;

#[test]
fn job_runs_to_completion_and_kubectl_wait_sees_it() {
    let c = start("job");
    let _kubelet = FakeKubelet::start(c.server.port(), false);
    c.apply(JOB);
    c.ok(&[
        "wait",
        "--for=condition=complete",
        "job/pi",
        "--timeout=60s",
    ]);
    let out = c.ok(&["get", "job", "pi"]);
    assert!(out.contains("Complete"), "{out}");
    assert!(out.contains("3/3"), "{out}");
    let succeeded = c.ok(&["get", "job", "pi", "-o", "jsonpath={.status.succeeded}"]);
    assert_eq!(succeeded, "3");
    let pods = c.ok(&["get", "pods", "-l", "job-name=pi", "-o", "name"]);
    assert_eq!(pods.lines().count(), 3, "{pods}");
}

const CRONJOB: &str = r#"
apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
spec:
  schedule: "* * * * *"
  jobTemplate:
    spec:
      template:
        metadata:
          annotations: {test.kubesim.io/finish: "ok"}
        spec:
          restartPolicy: Never
          containers:
          - name: c
            image: busybox
"#;

/// Waits for the next whole minute of real time: the one slow test here.
#[test]
fn cronjob_fires_every_minute() {
    let c = start("cron");
    let _kubelet = FakeKubelet::start(c.server.port(), false);
    c.apply(CRONJOB);
    let mut found = String::new();
    for _ in 0..90 {
        let out = c.ok(&["get", "jobs", "-o", "name"]);
        if let Some(l) = out.lines().find(|l| l.starts_with("job.batch/tick-")) {
            found = l.to_string();
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    assert!(!found.is_empty(), "no job within 90 s");
    // The suffix is the scheduled minute since the epoch.
    let minutes: i64 = found
        .trim_start_matches("job.batch/tick-")
        .parse()
        .expect("numeric suffix");
    let stamp = c.ok(&[
        "get",
        &found,
        "-o",
        "jsonpath={.metadata.annotations.batch\\.kubernetes\\.io/cronjob-scheduled-timestamp}",
    ]);
    // On a whole minute, in UTC.
    assert!(stamp.ends_with(":00Z"), "{stamp}");
    assert!(minutes > 29_000_000, "{found}");
    c.ok(&["wait", "--for=condition=complete", &found, "--timeout=60s"]);
    c.until(
        &[
            "get",
            "cronjob",
            "tick",
            "-o",
            "jsonpath={.status.lastSuccessfulTime}",
        ],
        |s| !s.trim().is_empty(),
    );
}

const TARGET: &str = r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: ReplicaSet, name: web}
  minReplicas: 1
  maxReplicas: 10
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 50}
"#;

fn pod(name: &str) -> String {
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: web}}
spec:
  containers:
  - name: c
    image: nginx
    resources: {{requests: {{cpu: 500m, memory: 64Mi}}}}
"#
    )
}

#[test]
fn hpa_scales_a_replica_set_from_pod_metrics_and_top_shows_usage() {
    let c = start("hpa");
    let _kubelet = FakeKubelet::start(c.server.port(), false);
    // The pods exist before the autoscaler looks, with metrics at 400m of
    // 500m requested: 80 % against a 50 % target.
    for name in ["web-a", "web-b"] {
        c.apply(&pod(name));
        let metrics = json!({"apiVersion": "metrics.k8s.io/v1beta1", "kind": "PodMetrics",
            // As metrics-server does, the pod's labels are copied so that
            // `kubectl top pod -l` can select them.
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "timestamp": "2026-01-01T00:00:00Z", "window": "15s",
            "containers": [{"name": "c", "usage": {"cpu": "400m", "memory": "40Mi"}}]});
        c.server.json(
            "POST",
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
            Some(&metrics),
            201,
        );
    }
    c.until(&["get", "pods", "-l", "app=web"], |s| {
        s.matches("Running").count() == 2
    });
    c.apply(TARGET);
    // ceil(1.6 × 2) = 4.
    c.until(
        &["get", "rs", "web", "-o", "jsonpath={.spec.replicas}"],
        |s| s == "4",
    );
    let hpa = c.until(&["get", "hpa", "web"], |s| s.contains("80%/50%"));
    assert!(hpa.contains("80%/50%"), "{hpa}");
    let events = c.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=web",
    ]);
    assert!(events.contains("SuccessfulRescale"), "{events}");
    assert!(events.contains("New size: 4"), "{events}");

    let top = c.ok(&["top", "pod", "-l", "app=web"]);
    assert!(top.contains("web-a"), "{top}");
    assert!(top.contains("400m"), "{top}");
    assert!(top.contains("40Mi"), "{top}");
}

const BUDGET: &str = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: db
spec:
  minAvailable: 2
  selector: {matchLabels: {app: db}}
"#;

#[test]
fn evictions_spend_the_budget() {
    let c = start("pdb");
    let _kubelet = FakeKubelet::start(c.server.port(), false);
    for name in ["db-0", "db-1", "db-2"] {
        c.apply(&pod(name).replace("app: web", "app: db"));
    }
    c.until(&["get", "pods", "-l", "app=db"], |s| {
        s.matches("Running").count() == 3
    });
    c.apply(BUDGET);
    let out = c.until(&["get", "pdb", "db"], |s| {
        s.lines()
            .nth(1)
            .is_some_and(|l| l.split_whitespace().nth(3) == Some("1"))
    });
    assert!(out.contains("db"), "{out}");
    let evict = |pod: &str| {
        let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": pod, "namespace": "default"}})
        .to_string();
        c.server.request(
            "POST",
            &format!("/api/v1/namespaces/default/pods/{pod}/eviction"),
            Some(&body),
        )
    };
    let (status, body) = evict("db-0");
    assert_eq!(status, 201, "{body}");
    // The one allowed disruption is spent at once, before the controller
    // has seen the pod go.
    let allowed = c.ok(&[
        "get",
        "pdb",
        "db",
        "-o",
        "jsonpath={.status.disruptionsAllowed}",
    ]);
    assert_eq!(allowed, "0");
    let (status, body) = evict("db-1");
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("disruption budget"), "{body}");
}
