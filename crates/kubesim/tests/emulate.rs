//! End-to-end: `kubesim emulate` as shards against a `kubesim up` whose
//! own emulator is off, over HTTP. Two shards split the nodes; a
//! Deployment of 1,000 replicas runs through them; a shard killed with
//! SIGKILL is taken over with no node going NotReady, and its nodes move
//! back when it returns. Which shard acts for a node is read from the
//! kubelet-style metrics endpoint each shard serves (kwok's own
//! `metrics-resource` Metric), which answers for its own nodes only.

mod common;

use std::net::TcpListener;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::emulate::Emulate;
use common::kubectl::Cluster;
use serde_json::{json, Value};

const NODES: usize = 20;

/// One `kubesim emulate --shard I/2` process with its metrics endpoint.
struct Shard {
    index: u32,
    port: u16,
    process: Emulate,
}

impl Shard {
    fn start(c: &Cluster, index: u32) -> Shard {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let args = [
            "--nodes".to_string(),
            NODES.to_string(),
            "--shard".to_string(),
            format!("{index}/2"),
            "--metrics-listen".to_string(),
            format!("127.0.0.1:{port}"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let process = Emulate::start(&c.kubeconfig, &args, &c.dir, &format!("shard-{index}"));
        Shard {
            index,
            port,
            process,
        }
    }

    /// Whether this shard serves the node's metrics, that is acts for it.
    fn serves(&self, node: &str) -> bool {
        let path = format!("/metrics/nodes/{node}/metrics/resource");
        matches!(
            common::http_request(self.port, "GET", &path, None),
            Ok((200, _))
        )
    }
}

fn nodes(c: &Cluster) -> Vec<Value> {
    c.server.json("GET", "/api/v1/nodes", None, 200)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn ready(node: &Value) -> bool {
    node["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn names(c: &Cluster) -> Vec<String> {
    nodes(c)
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The shards serving each node.
fn owners(names: &[String], shards: &[&Shard]) -> Vec<Vec<u32>> {
    names
        .iter()
        .map(|n| {
            shards
                .iter()
                .filter(|s| s.serves(n))
                .map(|s| s.index)
                .collect()
        })
        .collect()
}

fn running_pods(c: &Cluster) -> usize {
    let list = c.server.json(
        "GET",
        "/api/v1/namespaces/default/pods?fieldSelector=status.phase%3DRunning",
        None,
        200,
    );
    list["items"].as_array().map_or(0, Vec::len)
}

/// Every node's lease renewTime, by node.
fn renewals(c: &Cluster) -> Vec<(String, String)> {
    let list = c.server.json(
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
        None,
        200,
    );
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            (
                l["metadata"]["name"].as_str().unwrap_or("").to_string(),
                l["spec"]["renewTime"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// Polls `check` every half second until it gives Some or `limit` passes.
fn within<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Watches for `span`, every second, that every node stays Ready.
fn all_ready_for(c: &Cluster, span: Duration, while_doing: &str) {
    let end = Instant::now() + span;
    while Instant::now() < end {
        for n in nodes(c) {
            assert!(
                ready(&n),
                "node {} went NotReady {while_doing}: {}",
                n["metadata"]["name"],
                n["status"]["conditions"]
            );
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn shards_split_take_over_and_give_back_the_nodes() {
    let c = Cluster::start_with("emulate", &["--emulator", "none"]);
    let s0 = Shard::start(&c, 0);
    let mut s1 = Shard::start(&c, 1);

    // The pool, made by both shards at once, comes up Ready once.
    within(Duration::from_secs(90), "20 Ready nodes", || {
        let n = nodes(&c);
        (n.len() == NODES && n.iter().all(ready)).then_some(())
    });
    // kwok's Metric file, unchanged: its path answers for the nodes a
    // shard acts for (the emulators define the Metric kind as they start).
    let metric = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/kwok/kustomize/metrics/resource/metrics-resource.yaml");
    c.until(&["apply", "-f", metric.to_str().unwrap()], |o| {
        o.contains("created") || o.contains("unchanged")
    });
    let names = names(&c);
    let split = within(Duration::from_secs(30), "one shard per node", || {
        let o = owners(&names, &[&s0, &s1]);
        o.iter().all(|v| v.len() == 1).then_some(o)
    });
    let of = |i| split.iter().filter(|v| v[0] == i).count();
    assert!(
        of(0) > 0 && of(1) > 0,
        "one shard holds every node: {split:?}"
    );

    // A Deployment of 1,000 replicas runs through both shards.
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1000, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
    c.server.json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some(&deploy),
        201,
    );
    within(Duration::from_secs(300), "1,000 Running pods", || {
        (running_pods(&c) == 1000).then_some(())
    });

    // Shard 1 dies: shard 0 takes its nodes over within 30 s, and no
    // node goes NotReady past the node monitor's 40 s grace period.
    s1.process.kill9();
    let killed = Instant::now();
    within(
        Duration::from_secs(30),
        "shard 0 to act for every node",
        || {
            owners(&names, &[&s0])
                .iter()
                .all(|v| v.len() == 1)
                .then_some(())
        },
    );
    let takeover = killed.elapsed();
    all_ready_for(
        &c,
        Duration::from_secs(45).saturating_sub(killed.elapsed()),
        "after the kill",
    );
    // Pods made now land on the nodes taken over too, and run.
    let scale = json!({"spec": {"replicas": 1100}});
    let (status, body) = c.server.request_bytes(
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web",
        "application/merge-patch+json",
        scale.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    within(Duration::from_secs(120), "1,100 Running pods", || {
        (running_pods(&c) == 1100).then_some(())
    });

    // It returns: its nodes move back, and every lease keeps being renewed.
    s1.process.respawn();
    within(
        Duration::from_secs(30),
        "shard 1 to act for its nodes again",
        || {
            let o = owners(&names, &[&s0, &s1]);
            (o == split).then_some(())
        },
    );
    let before = renewals(&c);
    all_ready_for(&c, Duration::from_secs(15), "after the return");
    let after = renewals(&c);
    assert_eq!(before.len(), NODES);
    for ((node, a), (_, b)) in before.iter().zip(&after) {
        assert!(
            b > a,
            "the lease of {node} was not renewed after the return: {a} then {b}"
        );
    }
    eprintln!(
        "takeover after SIGKILL: {:.1} s; shard 0 held {} nodes, shard 1 {}",
        takeover.as_secs_f64(),
        of(0),
        of(1)
    );
}
