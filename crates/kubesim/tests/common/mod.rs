//! Shared helpers for the end-to-end tests: run the real `kubesim` binary on a
//! free port with its own data directory, wait until it is ready, and kill it
//! (`SIGKILL`, no graceful shutdown) or restart it on the same port and data.

#![allow(dead_code)]

pub mod emulate;
pub mod kubectl;
pub mod kubelet;
pub mod load;
pub mod shards;
pub mod tls;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long the server may take to become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A running `kubesim up`. Killed (and its data directory removed) on drop.
pub struct Kubesim {
    /// Extra arguments to `kubesim up`.
    args: Vec<String>,
    child: Option<Child>,
    dir: PathBuf,
    port: u16,
    ephemeral: bool,
    starts: usize,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind an ephemeral port")
        .local_addr()
        .unwrap()
        .port()
}

impl Kubesim {
    /// Starts a server with a durable store in a fresh data directory.
    pub fn start(name: &str) -> Self {
        Self::launch(name, false, &[])
    }

    /// Starts a server whose store lives in memory only.
    pub fn start_ephemeral(name: &str) -> Self {
        Self::launch(name, true, &[])
    }

    /// An in-memory server started with extra `kubesim up` arguments.
    pub fn start_ephemeral_with(name: &str, args: &[&str]) -> Self {
        Self::launch(name, true, args)
    }

    fn launch(name: &str, ephemeral: bool, args: &[&str]) -> Self {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir =
            std::env::temp_dir().join(format!("kubesim-e2e-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create data dir");
        let mut last_err = String::new();
        // A port picked as free can be taken by someone else before the
        // server binds it: try a few.
        for _ in 0..5 {
            let mut k = Kubesim {
                args: args.iter().map(|a| a.to_string()).collect(),
                child: None,
                dir: dir.clone(),
                port: free_port(),
                ephemeral,
                starts: 0,
            };
            match k.spawn_and_wait() {
                Ok(()) => return k,
                Err(e) => {
                    last_err = e;
                    k.kill9();
                    // Keep the directory for the next attempt.
                    std::mem::forget(k);
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        panic!("kubesim did not start: {last_err}");
    }

    fn log_path(&self) -> PathBuf {
        self.dir.join(format!("server-{}.log", self.starts))
    }

    fn spawn_and_wait(&mut self) -> Result<(), String> {
        self.starts += 1;
        let log = std::fs::File::create(self.log_path()).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubesim"));
        cmd.arg("up")
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .arg("--data-dir")
            .arg(self.data_dir());
        if self.ephemeral {
            cmd.arg("--ephemeral");
        }
        cmd.args(&self.args);
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("cannot run kubesim: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                return Err(format!("kubesim exited with {status}:\n{}", self.log()));
            }
            if self.ready() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("kubesim not ready in time:\n{}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the server answers its readiness probe: over plain HTTP
    /// here, or through kubectl and the kubeconfig it wrote with `--tls`.
    fn ready(&self) -> bool {
        if !self.args.iter().any(|a| a == "--tls") {
            return matches!(self.try_request("GET", "/readyz", None), Ok((200, _)));
        }
        self.kubeconfig().exists()
            && Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(self.kubeconfig())
                .args(["--request-timeout", "5s", "get", "--raw", "/readyz"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
    }

    /// The data directory (holds the store and the kubeconfig).
    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    /// The kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server's log output (all runs).
    pub fn log(&self) -> String {
        let mut out = String::new();
        for i in 1..=self.starts {
            let p = self.dir.join(format!("server-{i}.log"));
            if let Ok(s) = std::fs::read_to_string(&p) {
                out.push_str(&format!("--- run {i} ---\n{s}"));
            }
        }
        out
    }

    /// Kills the server with SIGKILL: no shutdown code runs.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            // `Child::kill` sends SIGKILL on Unix.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server with SIGKILL and starts it again on the same port
    /// with the same data directory; returns once it is ready.
    pub fn restart(&mut self) {
        self.kill9();
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match self.spawn_and_wait() {
                Ok(()) => return,
                Err(e) => {
                    self.kill9();
                    // The port may linger briefly after the kill.
                    if Instant::now() > deadline {
                        panic!("kubesim did not restart: {e}");
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> std::io::Result<(u16, String)> {
        http_request(self.port, method, path, body)
    }

    /// One plain HTTP/1.1 request; returns the status and the body.
    pub fn request(&self, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
        self.try_request(
            method,
            path,
            body.map(|b| ("application/json", b.as_bytes())),
        )
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// One request with a binary body of the given content type.
    pub fn request_bytes(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: &[u8],
    ) -> (u16, String) {
        self.try_request(method, path, Some((content_type, body)))
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// A request whose response must be JSON with the given status.
    pub fn json(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
        want: u16,
    ) -> serde_json::Value {
        let text = body.map(|b| b.to_string());
        let (status, resp) = self.request(method, path, text.as_deref());
        assert_eq!(status, want, "{method} {path}: {resp}");
        serde_json::from_str(&resp).unwrap_or_else(|e| panic!("{method} {path}: {e}: {resp}"))
    }
}

/// One plain HTTP/1.1 request to the server on `port`; `body` is
/// (content type, bytes). Returns the status and the body.
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> std::io::Result<(u16, String)> {
    http_request_accepting(port, method, path, "application/json", body)
}

/// [`http_request`] with the given Accept header.
pub fn http_request_accepting(
    port: u16,
    method: &str,
    path: &str,
    accept: &str,
    body: Option<(&str, &[u8])>,
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.set_write_timeout(Some(Duration::from_secs(10)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\nConnection: close\r\n"
    )
    .into_bytes();
    match body {
        Some((content_type, b)) => {
            req.extend_from_slice(
                format!(
                    "Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
                    b.len()
                )
                .as_bytes(),
            );
            req.extend_from_slice(b);
        }
        None => req.extend_from_slice(b"\r\n"),
    }
    s.write_all(&req)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    parse_response(&raw)
}

impl Drop for Kubesim {
    fn drop(&mut self) {
        self.kill9();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn parse_response(raw: &[u8]) -> std::io::Result<(u16, String)> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| bad("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let body = &raw[split + 4..];
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| bad("no status"))?;
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    let body = if chunked {
        dechunk(body).ok_or_else(|| bad("bad chunked body"))?
    } else {
        body.to_vec()
    };
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn dechunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size_text = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}
