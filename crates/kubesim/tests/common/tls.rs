//! `kubesim up --tls` for the tests that need credentials (tokens,
//! client certificates): plain HTTP acts as the admin whatever is sent,
//! and kubectl sends no tokens over it.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A running `kubesim up --tls`, killed (and its directory removed) on drop.
pub struct TlsServer {
    pub child: Child,
    pub dir: PathBuf,
    pub port: u16,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TlsServer {
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The admin's kubeconfig, with the CA and the admin token.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--request-timeout", "20s"])
        .args(args)
        .output()
        .expect("run kubectl")
}

/// Starts `kubesim up --tls --ephemeral` with `extra` arguments in a
/// fresh directory.
pub fn start(name: &str, extra: &[&str]) -> TlsServer {
    let dir = std::env::temp_dir().join(format!("kubesim-tls-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut args = vec!["--ephemeral"];
    args.extend_from_slice(extra);
    start_in(dir, &args)
}

/// Starts `kubesim up --tls` on `dir` as it is (a restart keeps its store
/// and PKI), and waits until kubectl gets `/readyz` with its kubeconfig.
pub fn start_in(dir: PathBuf, extra: &[&str]) -> TlsServer {
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args(["up", "--tls"])
        .args(extra)
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("run kubesim");
    let mut server = TlsServer { child, dir, port };
    let kc = server.kubeconfig();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            let log = std::fs::read_to_string(server.dir.join("server.log")).unwrap_or_default();
            panic!("kubesim exited with {status}:\n{log}");
        }
        if kc.exists() && kubectl(&kc, &["get", "--raw", "/readyz"]).status.success() {
            return server;
        }
        assert!(Instant::now() < deadline, "kubesim --tls not ready in time");
        std::thread::sleep(Duration::from_millis(100));
    }
}
