//! End-to-end: Deployments, StatefulSets and DaemonSets driven by the real
//! `kubectl` against `kubesim up`, with a stand-in kubelet making pods
//! Running and Ready; ReplicationControllers on emulated nodes.

mod common;

use std::ops::Deref;

use common::kubectl::Cluster;
use common::kubelet::FakeKubelet;
use serde_json::Value;

/// A cluster with a stand-in kubelet that makes every pod Running and Ready.
struct Env {
    cluster: Cluster,
    _kubelet: FakeKubelet,
}

impl Deref for Env {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

fn start(name: &str) -> Env {
    let cluster = Cluster::start(&format!("workloads-{name}"));
    Env {
        _kubelet: FakeKubelet::start(cluster.server.port(), false),
        cluster,
    }
}

fn images(pods: &[Value]) -> Vec<String> {
    pods.iter()
        .map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx:1.25
"#;

#[test]
fn deployment_rollouts_with_kubectl() {
    let c = start("deploy");
    c.apply(DEPLOYMENT);
    c.rollout_status("deployment/web");
    let table = c.ok(&["get", "deploy", "web"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["web", "3/3", "3", "3"], "{table}");

    c.ok(&["scale", "deployment", "web", "--replicas=5"]);
    c.wait_for("5 pods", || {
        c.items(&["get", "pods", "-l", "app=web"]).len() == 5
    });
    c.rollout_status("deployment/web");
    let table = c.ok(&["get", "deploy", "web"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["web", "5/5", "5", "5"], "{table}");

    c.ok(&["set", "image", "deployment/web", "c=nginx:1.26"]);
    c.rollout_status("deployment/web");
    c.wait_for("new pods only", || {
        let pods = c.items(&["get", "pods", "-l", "app=web"]);
        pods.len() == 5 && images(&pods).iter().all(|i| i == "nginx:1.26")
    });
    let sets = c.items(&["get", "rs", "-l", "app=web"]);
    assert_eq!(sets.len(), 2);
    for s in &sets {
        let new = s["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26";
        assert_eq!(s["spec"]["replicas"], if new { 5 } else { 0 });
    }
    let history = c.ok(&["rollout", "history", "deployment/web"]);
    let revisions: Vec<&str> = history
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.parse::<u32>().is_ok())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");

    c.ok(&["rollout", "undo", "deployment/web"]);
    c.rollout_status("deployment/web");
    c.wait_for("old image back", || {
        let pods = c.items(&["get", "pods", "-l", "app=web"]);
        pods.len() == 5 && images(&pods).iter().all(|i| i == "nginx:1.25")
    });
    let sets = c.items(&["get", "rs", "-l", "app=web"]);
    let templates: Vec<String> = sets
        .iter()
        .map(|s| s["spec"]["template"].to_string())
        .collect();
    assert_eq!(
        sets.len(),
        2,
        "undo reuses the first ReplicaSet: {templates:#?}"
    );
    let d = c.json(&["get", "deploy", "web"]);
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );

    c.ok(&["rollout", "restart", "deployment/web"]);
    c.rollout_status("deployment/web");
    let sets = c.items(&["get", "rs", "-l", "app=web"]);
    assert_eq!(sets.len(), 3, "a restart makes a new ReplicaSet");
    let restarted = sets
        .iter()
        .find(|s| {
            s["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
                .is_string()
        })
        .expect("restarted template");
    assert_eq!(restarted["spec"]["replicas"], 5);
    c.wait_for("restarted pods only", || {
        let pods = c.items(&["get", "pods", "-l", "app=web"]);
        pods.len() == 5
            && pods.iter().all(|p| {
                p["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].is_string()
            })
    });

    c.ok(&[
        "delete",
        "deployment",
        "web",
        "--cascade=foreground",
        "--timeout=90s",
    ]);
    c.wait_for("everything gone", || {
        c.items(&["get", "rs", "-l", "app=web"]).is_empty()
            && c.items(&["get", "pods", "-l", "app=web"]).is_empty()
    });
    assert!(c.items(&["get", "deploy"]).is_empty());
}

const STATEFULSET: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: c
        image: redis:7
"#;

const NODES_AND_DAEMONSET: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {kubernetes.io/hostname: node-a}
---
apiVersion: v1
kind: Node
metadata:
  name: node-b
  labels: {kubernetes.io/hostname: node-b}
---
apiVersion: v1
kind: Node
metadata:
  name: node-tainted
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: c
        image: agent:1
"#;

#[test]
fn statefulset_and_daemonset_with_kubectl() {
    let c = start("sts-ds");
    c.apply(STATEFULSET);
    c.rollout_status("statefulset/db");
    let mut names: Vec<String> = c
        .items(&["get", "pods", "-l", "app=db"])
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["db-0", "db-1", "db-2"]);

    c.apply(NODES_AND_DAEMONSET);
    c.rollout_status("daemonset/agent");
    let pods = c.items(&["get", "pods", "-l", "app=agent"]);
    let mut nodes: Vec<String> = pods
        .iter()
        .map(|p| {
            p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node-a", "node-b"]);
    let ds = c.json(&["get", "ds", "agent"]);
    assert_eq!(ds["status"]["desiredNumberScheduled"], 2);
    assert_eq!(ds["status"]["numberReady"], 2);
}

const REPLICATION_CONTROLLER: &str = r#"
apiVersion: v1
kind: ReplicationController
metadata:
  name: legacy
spec:
  replicas: 3
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers:
      - name: c
        image: nginx:1.25
"#;

/// Pods labelled `app=legacy` (terminating ones too) and how many of them
/// are Running under the controller with `uid`.
fn legacy_pods(c: &Cluster, uid: &Value) -> (usize, usize) {
    let all = c.json(&["get", "pods", "-l", "app=legacy"])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let running = all
        .iter()
        .filter(|p| {
            let r = &p["metadata"]["ownerReferences"][0];
            p["metadata"]["deletionTimestamp"].is_null()
                && p["status"]["phase"] == "Running"
                && r["kind"] == "ReplicationController"
                && r["apiVersion"] == "v1"
                && r["controller"] == true
                && &r["uid"] == uid
        })
        .count();
    (all.len(), running)
}

#[test]
fn replication_controller_on_emulated_nodes() {
    let c = Cluster::start_with("workloads-rc", &["--nodes", "2"]);
    c.apply(REPLICATION_CONTROLLER);
    let rc = c.json(&["get", "rc", "legacy"]);
    assert_eq!(rc["spec"]["selector"]["app"], "legacy", "{rc}");
    let uid = rc["metadata"]["uid"].clone();
    c.wait_for("3 Running pods", || legacy_pods(&c, &uid) == (3, 3));
    c.wait_for("status caught up", || {
        let s = &c.json(&["get", "rc", "legacy"])["status"];
        s["readyReplicas"] == 3 && s["availableReplicas"] == 3 && s["observedGeneration"] == 1
    });
    let table = c.ok(&["get", "rc", "legacy"]);
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[..4], ["legacy", "3", "3", "3"], "{table}");

    c.ok(&["scale", "rc", "legacy", "--replicas=1"]);
    c.wait_for("2 pods gone", || legacy_pods(&c, &uid) == (1, 1));
    c.wait_for("status scaled", || {
        c.json(&["get", "rc", "legacy"])["status"]["replicas"] == 1
    });

    c.ok(&["delete", "rc", "legacy"]);
    c.wait_for("pods deleted with their controller", || {
        legacy_pods(&c, &uid) == (0, 0)
    });
}
