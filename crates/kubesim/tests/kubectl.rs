//! End-to-end: the real `kubectl` against `kubesim up`.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::kubectl::Cluster;

fn start(name: &str) -> Cluster {
    Cluster::start(&format!("kubectl-{name}"))
}

const MANIFEST: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: web, tier: front}
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx:1.25
        ports: [{containerPort: 80}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80}]
"#;

#[test]
fn discovery_and_explain() {
    let c = start("discovery");
    let res = c.ok(&["api-resources"]);
    for want in [
        "pods",
        "deployments",
        "customresourcedefinitions",
        "horizontalpodautoscalers",
        "leases",
    ] {
        assert!(res.contains(want), "api-resources lacks {want}:\n{res}");
    }
    assert!(res.contains("deploy"), "short names are listed");
    let explain = c.ok(&["explain", "pod.spec.containers"]);
    assert!(explain.contains("image"), "{explain}");
    let version = c.ok(&["version", "-o", "json"]);
    assert!(version.contains("\"minor\": \"36\""), "{version}");
    let ns = c.ok(&["get", "namespaces", "-o", "name"]);
    for want in [
        "namespace/default",
        "namespace/kube-system",
        "namespace/kube-public",
        "namespace/kube-node-lease",
    ] {
        assert!(ns.contains(want), "{ns}");
    }
    // A watch without a resourceVersion is sent every namespace first.
    let watched = c.ok(&[
        "get",
        "--raw",
        "/api/v1/namespaces?watch=true&timeoutSeconds=1",
    ]);
    assert!(watched.contains("\"type\":\"ADDED\""), "{watched}");
    let metrics = c.ok(&["get", "--raw", "/metrics"]);
    assert!(metrics.contains("apiserver_request_total{"), "{metrics}");
    assert!(metrics.contains("apiserver_request_duration_seconds_bucket{"));
    let value = |series: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series}:\n{metrics}"))
            .parse()
            .unwrap()
    };
    // Four namespaces of some hundred bytes each.
    let size = value("apiserver_resource_size_estimate_bytes{group=\"\",resource=\"namespaces\"}");
    assert!(size >= 4 * 100, "{size}");
    let init = value("apiserver_init_events_total{group=\"\",resource=\"namespaces\"}");
    assert!(init >= 4, "{init}");
}

/// The built-in scheduler's series, under kube-scheduler's names, are on
/// the API server's `/metrics`, where ClusterLoader2's queries read them.
#[test]
fn scheduler_series_are_on_metrics() {
    let c = Cluster::start_with("kubectl-scheduler-metrics", &["--nodes", "1"]);
    c.until(&["get", "nodes"], |o| o.contains(" Ready"));
    c.ok(&["run", "placed", "--image=x"]);
    c.ok(&[
        "run",
        "stuck",
        "--image=x",
        "--overrides={\"spec\":{\"nodeSelector\":{\"no\":\"such-node\"}}}",
    ]);
    let metrics = c.until(&["get", "--raw", "/metrics"], |m| {
        m.contains("scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 1\n")
            && m.contains("scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"unschedulable\"}")
    });
    assert!(
        metrics.contains("scheduler_pod_scheduling_sli_duration_seconds_count{attempts=\"1\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("scheduler_scheduling_attempt_duration_seconds_bucket{profile=\"default-scheduler\",result=\"scheduled\",le=\"+Inf\"} 1\n"),
        "{metrics}"
    );
    // The in-process scheduler's binding counts as the request a real
    // scheduler sends: a POST of pods/binding.
    let binding = metrics
        .lines()
        .find(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains("resource=\"pods\"")
                && l.contains("subresource=\"binding\"")
                && l.contains("verb=\"POST\"")
                && l.contains("code=\"201\"")
        })
        .unwrap_or_else(|| panic!("no binding request counted:\n{metrics}"));
    assert!(binding.ends_with(" 1"), "{binding}");
    // The controllers' work queues, under client-go's names.
    assert!(
        metrics.contains("workqueue_adds_total{name=\""),
        "{metrics}"
    );
    assert!(metrics.contains("workqueue_work_duration_seconds_count{name=\""));
    assert!(metrics.contains("workqueue_queue_duration_seconds_count{name=\""));
    assert!(metrics.contains("workqueue_unfinished_work_seconds{name=\""));
    assert!(metrics.contains("workqueue_longest_running_processor_seconds{name=\""));
}

#[test]
fn apply_get_patch_and_delete() {
    let c = start("crud");
    let out = c.apply_stdin(&["apply", "-f", "-"], MANIFEST);
    assert!(out.contains("configmap/settings created"), "{out}");
    assert!(out.contains("deployment.apps/web created"), "{out}");
    // Applying again with a change sends a strategic merge patch.
    let changed = MANIFEST.replace("nginx:1.25", "nginx:1.26");
    let out = c.apply_stdin(&["apply", "-f", "-"], &changed);
    assert!(out.contains("configmap/settings unchanged"), "{out}");
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    assert_eq!(
        c.ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image} {.metadata.generation}"
        ]),
        "nginx:1.26 2"
    );
    // Server-side tables: the real column set.
    let table = c.ok(&["get", "deployments"]);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(
        table.contains("UP-TO-DATE") && table.contains("AVAILABLE"),
        "{table}"
    );
    let wide = c.ok(&["get", "services", "-o", "wide"]);
    assert!(
        wide.contains("CLUSTER-IP") && wide.contains("SELECTOR"),
        "{wide}"
    );
    assert!(wide.contains("80/TCP"), "{wide}");
    // Labels and selectors.
    c.ok(&["label", "configmap", "settings", "color=blue"]);
    c.ok(&["annotate", "configmap", "settings", "note=hello"]);
    assert_eq!(
        c.ok(&["get", "cm", "-l", "color=blue", "-o", "name"])
            .trim(),
        "configmap/settings"
    );
    assert_eq!(
        c.ok(&["get", "cm", "-l", "color in (red,green)", "-o", "name"])
            .trim(),
        ""
    );
    assert_eq!(
        c.ok(&[
            "get",
            "cm",
            "settings",
            "-o",
            "jsonpath={.metadata.annotations.note}"
        ]),
        "hello"
    );
    // The three patch types.
    c.ok(&[
        "patch",
        "configmap",
        "settings",
        "--type=merge",
        "-p",
        r#"{"data":{"a":"1"}}"#,
    ]);
    c.ok(&[
        "patch",
        "configmap",
        "settings",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/data/b","value":"2"}]"#,
    ]);
    c.ok(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}"#,
    ]);
    assert_eq!(
        c.ok(&[
            "get",
            "cm",
            "settings",
            "-o",
            "jsonpath={.data.a}{.data.b}{.data.mode}"
        ]),
        "12fast"
    );
    assert_eq!(
        c.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].ports[0].containerPort}"]),
        "nginx:2 80"
    );
    // Server-side apply and scale.
    let out = c.apply_stdin(
        &["apply", "--server-side", "--force-conflicts", "-f", "-"],
        MANIFEST,
    );
    assert!(out.contains("serverside-applied"), "{out}");
    c.ok(&["scale", "deployment", "web", "--replicas=5"]);
    assert_eq!(
        c.ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]),
        "5"
    );
    // Replace and edit through a non-interactive editor.
    let yaml = c.ok(&["get", "cm", "settings", "-o", "yaml"]);
    let replaced = yaml.replace("mode: fast", "mode: slow");
    c.apply_stdin(&["replace", "-f", "-"], &replaced);
    assert_eq!(
        c.ok(&["get", "cm", "settings", "-o", "jsonpath={.data.mode}"]),
        "slow"
    );
    let editor = c.dir.join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/mode: slow/mode: edited/' \"$1\"\n",
    )
    .unwrap();
    let o = Command::new("kubectl")
        .env("KUBECONFIG", &c.kubeconfig)
        .env("KUBE_EDITOR", format!("sh {}", editor.display()))
        .args(["edit", "configmap", "settings"])
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "edit: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        c.ok(&["get", "cm", "settings", "-o", "jsonpath={.data.mode}"]),
        "edited"
    );
    // Errors are Status objects kubectl understands.
    let err = c.fails(&["get", "configmap", "missing"]);
    assert!(
        err.contains("NotFound") && err.contains("configmaps \"missing\" not found"),
        "{err}"
    );
    let dup = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"}}"#;
    let o = c.kubectl_in(&["create", "-f", "-"], Some(dup));
    assert!(String::from_utf8_lossy(&o.stderr).contains("AlreadyExists"));
    let bad = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}"#;
    let o = c.kubectl_in(&["create", "-f", "-"], Some(bad));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown field \"bogus\""));
    // Deletion, waited for.
    c.ok(&["delete", "configmap", "settings", "--wait"]);
    assert!(c
        .fails(&["get", "configmap", "settings"])
        .contains("NotFound"));
}

#[test]
fn pods_get_defaults_and_delete_immediately_when_unscheduled() {
    let c = start("pods");
    c.ok(&["run", "p1", "--image=busybox", "--labels=app=p"]);
    let out = c.ok(&["get", "pods", "-o", "wide"]);
    assert!(
        out.contains("p1") && out.contains("Pending") && out.contains("0/1"),
        "{out}"
    );
    assert_eq!(
        c.ok(&[
            "get",
            "pod",
            "p1",
            "-o",
            "jsonpath={.spec.schedulerName} {.spec.restartPolicy} {.status.qosClass}"
        ]),
        "default-scheduler Always BestEffort"
    );
    let described = c.ok(&["describe", "pod", "p1"]);
    assert!(described.contains("busybox"), "{described}");
    let o = c.kubectl(&["get", "pods", "--field-selector=spec.bogus=x"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("field label not supported"));
    c.ok(&["delete", "pod", "p1", "--wait=true"]);
    c.ok(&["wait", "--for=delete", "pod/p1", "--timeout=10s"]);
}

#[test]
fn watch_sees_changes() {
    let c = start("watch");
    let mut w = Command::new("kubectl")
        .env("KUBECONFIG", &c.kubeconfig)
        .args([
            "get",
            "configmaps",
            "-w",
            "-o",
            "name",
            "--request-timeout=8s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    for n in ["w1", "w2"] {
        let cm = format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{n}"}}}}"#);
        c.apply_stdin(&["create", "-f", "-"], &cm);
    }
    std::thread::sleep(Duration::from_millis(800));
    let _ = w.kill();
    let out = w.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("configmap/w1") && text.contains("configmap/w2"),
        "{text}"
    );
}

#[test]
fn custom_resources_are_served() {
    let c = start("crd");
    let crd = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
"#;
    c.apply_stdin(&["apply", "-f", "-"], crd);
    c.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=10s",
    ]);
    let w = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3}\n";
    c.apply_stdin(&["apply", "-f", "-"], w);
    let out = c.ok(&["get", "wd"]);
    assert!(
        out.contains("SIZE") && out.contains("w1") && out.contains('3'),
        "{out}"
    );
    c.ok(&["delete", "crd", "widgets.example.com"]);
}

#[test]
fn namespaces_and_cascading_deletes() {
    let c = start("cascade");
    c.apply_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n",
    );
    c.apply_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside, namespace: team}\ndata: {a: b}\n",
    );
    c.ok(&[
        "delete",
        "namespace",
        "team",
        "--wait=true",
        "--timeout=30s",
    ]);
    assert!(c.fails(&["get", "namespace", "team"]).contains("NotFound"));

    // A dependent with an owner reference goes with its owner.
    c.apply_stdin(
        &["create", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: owner}\n",
    );
    let uid = c.ok(&["get", "cm", "owner", "-o", "jsonpath={.metadata.uid}"]);
    let dependent = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dependent\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}, blockOwnerDeletion: true}}\n"
    );
    c.apply_stdin(&["create", "-f", "-"], &dependent);
    c.ok(&[
        "delete",
        "cm",
        "owner",
        "--cascade=foreground",
        "--wait=true",
        "--timeout=30s",
    ]);
    c.ok(&["wait", "--for=delete", "cm/dependent", "--timeout=30s"]);
    assert!(c.fails(&["get", "cm", "dependent"]).contains("NotFound"));
}

#[test]
fn table_watch_prints_rows() {
    let c = start("tablewatch");
    let mut w = Command::new("kubectl")
        .env("KUBECONFIG", &c.kubeconfig)
        .args(["get", "configmaps", "-w", "--request-timeout=8s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    c.apply_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"t1"},"data":{"x":"y"}}"#,
    );
    std::thread::sleep(Duration::from_millis(800));
    let _ = w.kill();
    let out = w.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("NAME"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("t1 ") && l.contains(" 1 ")),
        "{text}"
    );
}
