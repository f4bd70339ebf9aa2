//! End-to-end: a DaemonSet updated with `kubectl set image` under
//! `maxSurge: 1, maxUnavailable: 0` on emulated nodes. A `kubectl get -w`
//! records every state the pods pass through: at some point a node runs
//! the old and the new pod side by side (and never more than those two),
//! and no node is ever without a Ready pod that is not being deleted.

mod common;

use std::collections::BTreeMap;
use std::io::BufReader;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use common::kubectl::Cluster;
use serde_json::Value;

const NODES: usize = 3;

const DAEMONSET: &str = r#"
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector: {matchLabels: {app: agent}}
  # The new pod must stay Ready this long before the old one goes.
  minReadySeconds: 2
  updateStrategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
      - name: c
        image: agent:1
"#;

/// The node a daemon pod is for: bound or pinned by node affinity.
fn node_of(p: &Value) -> String {
    let bound = p["spec"]["nodeName"].as_str().unwrap_or("");
    if !bound.is_empty() {
        return bound.to_string();
    }
    p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn ready(p: &Value) -> bool {
    p["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// What the watch saw.
#[derive(Default)]
struct Observed {
    /// The pods as last seen, by uid.
    pods: BTreeMap<String, Value>,
    /// Once the initial list is in: the most live pods on one node, and
    /// the fewest nodes with a live Ready pod, over every state seen.
    tracking: bool,
    most_on_a_node: usize,
    fewest_ready_nodes: usize,
    /// One line per event, for the failure message.
    trace: Vec<String>,
}

impl Observed {
    fn apply(&mut self, event: &Value) {
        let obj = &event["object"];
        let uid = obj["metadata"]["uid"].as_str().unwrap_or("").to_string();
        if event["type"] == "DELETED" {
            self.pods.remove(&uid);
        } else {
            self.pods.insert(uid, obj.clone());
        }
        self.trace.push(format!(
            "{} {} on {} {} ready={} deleting={}",
            event["type"].as_str().unwrap_or(""),
            obj["metadata"]["name"].as_str().unwrap_or(""),
            node_of(obj),
            obj["spec"]["containers"][0]["image"].as_str().unwrap_or(""),
            ready(obj),
            !obj["metadata"]["deletionTimestamp"].is_null(),
        ));
        if !self.tracking && self.pods.len() >= NODES {
            self.tracking = true;
            self.fewest_ready_nodes = NODES;
        }
        if !self.tracking {
            return;
        }
        let mut live: BTreeMap<String, Vec<&Value>> = BTreeMap::new();
        for p in self.pods.values() {
            if p["metadata"]["deletionTimestamp"].is_null() {
                live.entry(node_of(p)).or_default().push(p);
            }
        }
        let most = live.values().map(Vec::len).max().unwrap_or(0);
        self.most_on_a_node = self.most_on_a_node.max(most);
        let ready_nodes = live
            .values()
            .filter(|ps| ps.iter().any(|p| ready(p)))
            .count();
        self.fewest_ready_nodes = self.fewest_ready_nodes.min(ready_nodes);
    }
}

/// `kubectl get pods -w` in the background, folding events into
/// [`Observed`]. Killed when stopped.
struct PodWatch {
    child: Child,
    reader: Option<JoinHandle<()>>,
    seen: Arc<Mutex<Observed>>,
}

impl PodWatch {
    fn start(c: &Cluster, selector: &str) -> Self {
        let mut child = Command::new("kubectl")
            .env("KUBECONFIG", &c.kubeconfig)
            .arg("--cache-dir")
            .arg(c.dir.join("cache"))
            .args([
                "get",
                "pods",
                "-l",
                selector,
                "--watch",
                "--output-watch-events",
                "-o",
                "json",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl is installed");
        let out = BufReader::new(child.stdout.take().unwrap());
        let seen = Arc::new(Mutex::new(Observed::default()));
        let s = seen.clone();
        let reader = std::thread::spawn(move || {
            // Events are JSON objects one after another.
            for event in serde_json::Deserializer::from_reader(out).into_iter::<Value>() {
                match event {
                    Ok(e) => s.lock().unwrap().apply(&e),
                    Err(_) => break,
                }
            }
        });
        PodWatch {
            child,
            reader: Some(reader),
            seen,
        }
    }

    fn stop(mut self) -> Arc<Mutex<Observed>> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.seen.clone()
    }
}

fn images(c: &Cluster) -> Vec<String> {
    c.items(&["get", "pods", "-l", "app=agent"])
        .iter()
        .map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn daemonset_surge_update_with_kubectl() {
    let c = Cluster::start_with("ds-surge", &["--nodes", &NODES.to_string()]);
    c.apply(DAEMONSET);
    c.rollout_status("daemonset/agent");
    assert_eq!(images(&c), vec!["agent:1"; NODES]);

    let watch = PodWatch::start(&c, "app=agent");
    c.wait_for("the watch's initial list", || {
        watch.seen.lock().unwrap().tracking
    });
    c.ok(&["set", "image", "daemonset/agent", "c=agent:2"]);
    c.rollout_status("daemonset/agent");
    c.wait_for("only new pods", || images(&c) == vec!["agent:2"; NODES]);
    let ds = c.json(&["get", "ds", "agent"]);
    for k in [
        "desiredNumberScheduled",
        "updatedNumberScheduled",
        "numberAvailable",
    ] {
        assert_eq!(ds["status"][k], NODES, "{k}: {}", ds["status"]);
    }
    // Let the watch catch up with the end state before judging it.
    c.wait_for("the watch saw the end", || {
        let s = watch.seen.lock().unwrap();
        s.pods.len() == NODES
            && s.pods
                .values()
                .all(|p| p["spec"]["containers"][0]["image"] == "agent:2")
    });
    let seen = watch.stop();
    let seen = seen.lock().unwrap();
    let trace = seen.trace.join("\n");
    assert_eq!(
        seen.most_on_a_node, 2,
        "an old and a new pod side by side on a node:\n{trace}"
    );
    assert_eq!(
        seen.fewest_ready_nodes, NODES,
        "every node kept a Ready pod throughout:\n{trace}"
    );
}
