//! End-to-end: `kubesim emulate` shards against a real kube-apiserver on
//! etcd, the control plane kwok's users attach to. Two shards split the
//! nodes and bring them up, pods bound to them run, a shard killed with
//! SIGKILL is taken over within 30 s while every Lease keeps being
//! renewed, and its nodes move back when it returns.
//!
//! A real kube-apiserver is not built here: the test is ignored by a plain
//! `cargo test`, and `scripts/test` runs it with `--ignored` when
//! `KUBE_APISERVER` names the binary (etcd comes from the distribution's
//! `etcd-server` package, or `ETCD`), and says loudly when it is not set.
//! There is no scheduler or controller manager beside that server, so the
//! pods are created bound to their nodes and no node lifecycle controller
//! marks nodes NotReady: the Leases' renewals are what is checked.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::shards::{each_served_once, owners, ready, within, Reader, Shard};
use common::tls::free_port;
use serde_json::json;

const NODES: usize = 20;
const ADMIN_TOKEN: &str = "kubesim-test-admin";

/// A child process killed on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn binary(var: &str, fallback: Option<&str>) -> PathBuf {
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => match fallback {
            Some(f) => PathBuf::from(f),
            None => panic!("{var} is not set: it must name the kube-apiserver binary"),
        },
    }
}

fn spawn(program: &Path, args: &[String], log: &Path) -> Process {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(log).unwrap()))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    Process(child)
}

/// etcd and kube-apiserver in `dir`, and an admin kubeconfig for them.
fn control_plane(dir: &Path) -> (Process, Process, PathBuf) {
    let etcd_bin = binary("ETCD", Some("/usr/bin/etcd"));
    let apiserver_bin = binary("KUBE_APISERVER", None);
    let (client, peer, secure) = (free_port(), free_port(), free_port());
    let etcd = spawn(
        &etcd_bin,
        &[
            "--name=test".into(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls=http://127.0.0.1:{client}"),
            format!("--advertise-client-urls=http://127.0.0.1:{client}"),
            format!("--listen-peer-urls=http://127.0.0.1:{peer}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"),
            format!("--initial-cluster=test=http://127.0.0.1:{peer}"),
        ],
        &dir.join("etcd.log"),
    );
    // The key that signs ServiceAccount tokens; its public half is taken
    // from the same file. RSA: the server reads the public half of an EC
    // key only from a SEC1 file.
    let key_file = dir.join("sa.key");
    let made = Command::new("openssl")
        .args(["genrsa", "-out"])
        .arg(&key_file)
        .arg("2048")
        .output()
        .expect("run openssl");
    assert!(made.status.success(), "openssl genrsa failed");
    let tokens = dir.join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("{ADMIN_TOKEN},kubesim-test-admin,kubesim-test-admin,\"system:masters\"\n"),
    )
    .unwrap();
    let apiserver = spawn(
        &apiserver_bin,
        &[
            format!("--etcd-servers=http://127.0.0.1:{client}"),
            "--bind-address=127.0.0.1".into(),
            format!("--secure-port={secure}"),
            format!("--cert-dir={}", dir.join("certs").display()),
            format!("--token-auth-file={}", tokens.display()),
            "--authorization-mode=Node,RBAC".into(),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", key_file.display()),
            format!("--service-account-signing-key-file={}", key_file.display()),
            "--service-cluster-ip-range=10.96.0.0/16".into(),
        ],
        &dir.join("kube-apiserver.log"),
    );
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: https://127.0.0.1:{secure}\n    insecure-skip-tls-verify: true\nusers:\n- name: admin\n  user:\n    token: {ADMIN_TOKEN}\ncontexts:\n- name: real\n  context: {{cluster: real, user: admin}}\ncurrent-context: real\n"
        ),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let ok = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["get", "--raw", "/readyz"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "kube-apiserver was not ready within 90 s; its log:\n{}",
            std::fs::read_to_string(dir.join("kube-apiserver.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    (etcd, apiserver, kubeconfig)
}

#[test]
#[ignore = "needs a real kube-apiserver: scripts/test runs it with --ignored when KUBE_APISERVER names one, and says loudly when it does not"]
fn shards_against_a_real_kube_apiserver() {
    let dir = std::env::temp_dir().join(format!("kubesim-real-apiserver-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (_etcd, _apiserver, kubeconfig) = control_plane(&dir);
    let r = Reader {
        kubeconfig: kubeconfig.clone(),
    };
    let s0 = Shard::start(&kubeconfig, &dir, 0, 2, NODES, &[]);
    let mut s1 = Shard::start(&kubeconfig, &dir, 1, 2, NODES, &[]);

    within(Duration::from_secs(120), "20 Ready nodes", || {
        let n = r.nodes();
        (n.len() == NODES && n.iter().all(ready)).then_some(())
    });
    let names = r.names();
    let split = each_served_once(Duration::from_secs(30), &names, &[&s0, &s1]);
    assert!(
        split.iter().any(|v| v[0] == 0) && split.iter().any(|v| v[0] == 1),
        "one shard holds every node: {split:?}"
    );

    // Pods bound to every node run through the shard acting for it.
    let pods: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, node)| {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("p{i}"), "namespace": "default"},
                "spec": {"nodeName": node,
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": pods});
    let mut apply = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["create", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    apply
        .stdin
        .take()
        .unwrap()
        .write_all(list.to_string().as_bytes())
        .unwrap();
    assert!(apply.wait().unwrap().success(), "kubectl create failed");
    within(
        Duration::from_secs(120),
        "a Running pod on every node",
        || (r.running_pods() == NODES).then_some(()),
    );

    // Shard 1 dies: shard 0 acts for every node within 30 s, and every
    // Lease is renewed within the node monitor's 40 s grace period.
    let before = r.renewals();
    s1.process.kill9();
    each_served_once(Duration::from_secs(30), &names, &[&s0]);
    within(
        Duration::from_secs(40),
        "every Lease renewed after the kill",
        || {
            let after = r.renewals();
            (after.len() == NODES && after.iter().zip(&before).all(|((_, b), (_, a))| b > a))
                .then_some(())
        },
    );

    // It returns, and its nodes move back.
    s1.process.respawn();
    within(
        Duration::from_secs(30),
        "shard 1 to act for its nodes again",
        || (owners(&names, &[&s0, &s1]) == split).then_some(()),
    );
    let _ = std::fs::remove_dir_all(&dir);
}
