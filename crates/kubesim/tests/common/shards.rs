//! `kubesim emulate --shard I/N` processes against any API server, and what
//! the tests read of the cluster they emulate nodes for. Every read goes
//! through kubectl with the cluster's kubeconfig, so the same checks run
//! against `kubesim up` and against a real kube-apiserver.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::emulate::Emulate;

/// One `kubesim emulate --shard I/N` process with its metrics endpoint.
pub struct Shard {
    pub index: u32,
    port: u16,
    pub process: Emulate,
}

impl Shard {
    /// Starts shard `index` of `of`, making `nodes` nodes, with `extra`
    /// arguments; its log goes to `dir`.
    pub fn start(
        kubeconfig: &Path,
        dir: &Path,
        index: u32,
        of: u32,
        nodes: usize,
        extra: &[&str],
    ) -> Shard {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut args = vec![
            "--nodes".to_string(),
            nodes.to_string(),
            "--shard".to_string(),
            format!("{index}/{of}"),
            "--metrics-listen".to_string(),
            format!("127.0.0.1:{port}"),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let process = Emulate::start(kubeconfig, &args, dir, &format!("shard-{index}"));
        Shard {
            index,
            port,
            process,
        }
    }

    /// Whether this shard serves the node's metrics, that is acts for it.
    pub fn serves(&self, node: &str) -> bool {
        let path = format!("/metrics/nodes/{node}/metrics/resource");
        matches!(
            super::http_request(self.port, "GET", &path, None),
            Ok((200, _))
        )
    }
}

/// A cluster as its kubeconfig reaches it.
pub struct Reader {
    pub kubeconfig: PathBuf,
}

impl Reader {
    /// `GET path` through kubectl, decoded.
    pub fn get(&self, path: &str) -> Value {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(["get", "--raw", path])
            .output()
            .expect("run kubectl");
        assert!(
            out.status.success(),
            "kubectl get --raw {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON from kubectl")
    }

    fn items(&self, path: &str) -> Vec<Value> {
        self.get(path)["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub fn nodes(&self) -> Vec<Value> {
        self.items("/api/v1/nodes")
    }

    pub fn names(&self) -> Vec<String> {
        self.nodes()
            .iter()
            .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn running_pods(&self) -> usize {
        self.items("/api/v1/namespaces/default/pods?fieldSelector=status.phase%3DRunning")
            .len()
    }

    /// Every node's lease renewTime, by node.
    pub fn renewals(&self) -> Vec<(String, String)> {
        self.items("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases")
            .iter()
            .map(|l| {
                (
                    l["metadata"]["name"].as_str().unwrap_or("").to_string(),
                    l["spec"]["renewTime"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    /// Watches for `span`, every second, that every node stays Ready.
    pub fn all_ready_for(&self, span: Duration, while_doing: &str) {
        let end = Instant::now() + span;
        while Instant::now() < end {
            for n in self.nodes() {
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
}

pub fn ready(node: &Value) -> bool {
    node["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The shards serving each node.
pub fn owners(names: &[String], shards: &[&Shard]) -> Vec<Vec<u32>> {
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

/// Waits up to `limit` until the shards together serve each node once; the
/// shard of each node, then.
pub fn each_served_once(limit: Duration, names: &[String], shards: &[&Shard]) -> Vec<Vec<u32>> {
    within(limit, "one shard per node", || {
        let o = owners(names, shards);
        o.iter().all(|v| v.len() == 1).then_some(o)
    })
}

/// Polls `check` every half second until it gives Some or `limit` passes.
pub fn within<T>(limit: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
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
