//! End-to-end: kwok's usage and metric objects through the real kubectl.
//! kwok's `usage-from-annotation` ClusterResourceUsage and
//! `metrics-resource` Metric files apply unchanged; the annotation drives
//! `kubectl top pod`, a ResourceUsage overrides it, and the Metric's path
//! serves kubelet-style series for the emulated node.

mod common;

use std::path::PathBuf;

use common::kubectl::Cluster;

fn testdata(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: busy
  namespace: default
  annotations:
    kwok.x-k8s.io/usage-cpu: 250m
    kwok.x-k8s.io/usage-memory: 64Mi
spec:
  containers:
  - name: main
    image: busybox
"#;

const OVERRIDE: &str = r#"
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ResourceUsage
metadata:
  name: busy
  namespace: default
spec:
  usages:
  - usage:
      cpu:
        value: 500m
"#;

const BROKEN: &str = r#"
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterResourceUsage
metadata:
  name: broken
spec:
  usages:
  - usage:
      cpu:
        expression: 'pod.metadata.('
"#;

/// The CPU column of `kubectl top pod busy`, once it has a row.
fn top_cpu(out: &str) -> Option<String> {
    out.lines()
        .find(|l| l.starts_with("busy "))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(str::to_string)
}

#[test]
fn kwok_usage_and_metric_objects() {
    let c = Cluster::start_with("usage", &["--nodes", "1"]);
    // The kinds are defined by the emulator as it starts: retry until then.
    for file in [
        "kwok/kustomize/metrics/usage/usage-from-annotation.yaml",
        "kwok/kustomize/metrics/resource/metrics-resource.yaml",
    ] {
        c.until(&["apply", "-f", &testdata(file)], |o| o.contains("created"));
    }
    let listed = c.ok(&["get", "clusterresourceusages,metrics.kwok.x-k8s.io"]);
    assert!(
        listed.contains("usage-from-annotation") && listed.contains("metrics-resource"),
        "{listed}"
    );

    c.apply(POD);
    c.until(&["get", "pod", "busy"], |o| o.contains("Running"));
    let node = c.json(&["get", "pod", "busy"])["spec"]["nodeName"]
        .as_str()
        .unwrap()
        .to_string();

    // Usage is published on a 15 s beat: poll within `until`'s bound.
    c.until(&["top", "pod", "busy"], |o| {
        top_cpu(o).as_deref() == Some("250m")
    });
    c.apply(OVERRIDE);
    c.ok(&["get", "resourceusage", "busy"]);
    c.until(&["top", "pod", "busy"], |o| {
        top_cpu(o).as_deref() == Some("500m")
    });

    let path = format!("/metrics/nodes/{node}/metrics/resource");
    let (status, text) = c.server.request("GET", &path, None);
    assert_eq!(status, 200, "{text}");
    for want in [
        "# TYPE scrape_error gauge",
        "scrape_error 0",
        "container_start_time_seconds{container=\"main\",namespace=\"default\",pod=\"busy\"} ",
        "container_cpu_usage_seconds_total{container=\"main\",namespace=\"default\",pod=\"busy\"} ",
        "container_memory_working_set_bytes{container=\"main\",namespace=\"default\",pod=\"busy\"} 67108864",
        "pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"busy\"} ",
        "pod_memory_working_set_bytes{namespace=\"default\",pod=\"busy\"} 67108864",
        "node_cpu_usage_seconds_total ",
        "node_memory_working_set_bytes 67108864",
    ] {
        assert!(text.contains(want), "no {want:?} in\n{text}");
    }
    // Other nodes and paths are not found.
    let (status, _) = c
        .server
        .request("GET", "/metrics/nodes/nope/metrics/resource", None);
    assert_eq!(status, 404);

    // A usage object whose CEL does not parse is reported on itself.
    c.apply(BROKEN);
    c.until(
        &[
            "get",
            "events",
            "--field-selector",
            "reason=InvalidResourceUsage",
        ],
        |o| o.contains("broken"),
    );
    // and the rest keeps working.
    c.until(&["top", "pod", "busy"], |o| {
        top_cpu(o).as_deref() == Some("500m")
    });
}
