//! The `prometheus` process of a `kubesim load --prometheus` run: its
//! configuration (one scrape job per kind of component, named as
//! ClusterLoader2's ServiceMonitors name them: `master` for the control
//! plane, `kubelet` for the nodes), its start on a free loopback port with
//! its TSDB in the report directory, readiness, and a graceful stop that
//! leaves the TSDB readable afterwards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kubesim_runtime::Clock;
use serde_json::{json, Value};

use super::query::QueryClient;

/// One endpoint to scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The `job` label.
    pub job: String,
    /// `host:port`.
    pub address: String,
    pub path: String,
    /// More labels for every series of the target.
    pub labels: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The `prometheus` executable (a bare name is looked up on PATH).
    pub binary: PathBuf,
    /// Where `prometheus.yml`, `prometheus.log` and the TSDB
    /// (`prometheus/`) go: the report directory.
    pub dir: PathBuf,
    pub scrape_interval: Duration,
    pub targets: Vec<Target>,
}

/// How long the server may take to replay its TSDB and become ready.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stopping server may take to flush its head block.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// The configuration file: JSON, which is YAML, so no value needs YAML
/// quoting. Each target's path goes in its `__metrics_path__` label, so
/// one job scrapes many paths on one address (kubelet endpoints of many
/// emulated nodes on kubesim's port).
pub fn config(scrape_interval: Duration, targets: &[Target]) -> String {
    let interval = format!("{}ms", scrape_interval.as_millis().max(1));
    let mut jobs: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for t in targets {
        let mut labels: BTreeMap<String, String> = t.labels.clone();
        labels.insert("__metrics_path__".into(), t.path.clone());
        jobs.entry(&t.job)
            .or_default()
            .push(json!({"targets": [t.address], "labels": labels}));
    }
    let scrape_configs: Vec<Value> = jobs
        .into_iter()
        .map(|(job, groups)| {
            json!({
                "job_name": job,
                "scrape_interval": interval,
                "scrape_timeout": interval,
                "static_configs": groups,
            })
        })
        .collect();
    let c = json!({
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": scrape_configs,
    });
    serde_json::to_string_pretty(&c).unwrap_or_default()
}

/// A running server; stop it with [`PromServer::stop`] (dropping it kills
/// the process without a flush).
pub struct PromServer {
    child: tokio::process::Child,
    pub client: QueryClient,
    /// The TSDB directory.
    pub tsdb: PathBuf,
    log: PathBuf,
    clock: Clock,
}

impl PromServer {
    /// Writes the configuration, starts the server and waits until it
    /// answers ready. Every error is one line naming what went wrong.
    pub async fn start(opts: &ServerOptions, clock: &Clock) -> Result<PromServer, String> {
        std::fs::create_dir_all(&opts.dir)
            .map_err(|e| format!("cannot create {}: {e}", opts.dir.display()))?;
        let cfg = opts.dir.join("prometheus.yml");
        std::fs::write(&cfg, config(opts.scrape_interval, &opts.targets))
            .map_err(|e| format!("cannot write {}: {e}", cfg.display()))?;
        let tsdb = opts.dir.join("prometheus");
        let log = opts.dir.join("prometheus.log");
        let log_file = std::fs::File::create(&log)
            .map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let addr = free_port()?;
        let child = tokio::process::Command::new(&opts.binary)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", tsdb.display()))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot run {}: {e} (install Prometheus, e.g. apt-get install prometheus)",
                    opts.binary.display()
                )
            })?;
        let mut server = PromServer {
            child,
            client: QueryClient {
                addr,
                clock: clock.clone(),
            },
            tsdb,
            log,
            clock: clock.clone(),
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = self.clock.instant() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "Prometheus exited ({status}) before it was ready: {}",
                    last_line(&self.log)
                ));
            }
            if matches!(self.client.get("/-/ready").await, Ok((200, _))) {
                return Ok(());
            }
            if self.clock.instant() >= deadline {
                return Err(format!(
                    "Prometheus was not ready within {}s: {}",
                    READY_TIMEOUT.as_secs(),
                    last_line(&self.log)
                ));
            }
            self.clock.sleep(Duration::from_millis(100)).await;
        }
    }

    /// Asks the server to stop (SIGTERM, so it writes out what it holds)
    /// and waits for it; kills it if it does not stop in time.
    pub async fn stop(mut self) -> Result<(), String> {
        if let Some(pid) = self.child.id() {
            // SAFETY: kill(2) on the id of a child this value owns and has
            // not yet reaped, so the id cannot name another process.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
        match self.clock.timeout(STOP_TIMEOUT, self.child.wait()).await {
            Some(Ok(_)) => Ok(()),
            Some(Err(e)) => Err(format!("cannot wait for Prometheus to stop: {e}")),
            None => {
                let _ = self.child.kill().await;
                Err(format!(
                    "Prometheus did not stop within {}s and was killed",
                    STOP_TIMEOUT.as_secs()
                ))
            }
        }
    }
}

/// A loopback address with a port free a moment ago. Prometheus must be
/// told its port before it binds; another process taking the port in
/// between makes the start fail with the server's own message.
fn free_port() -> Result<std::net::SocketAddr, String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot find a free port for Prometheus: {e}"))?;
    l.local_addr()
        .map_err(|e| format!("cannot find a free port for Prometheus: {e}"))
}

/// The last non-empty line of the server's log, for error messages.
fn last_line(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let line = text.lines().rev().find(|l| !l.trim().is_empty());
    match line {
        Some(l) => format!("{} (log: {})", l.trim(), log.display()),
        None => format!("nothing logged (log: {})", log.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(job: &str, path: &str, node: Option<&str>) -> Target {
        Target {
            job: job.into(),
            address: "127.0.0.1:6443".into(),
            path: path.into(),
            labels: node
                .map(|n| BTreeMap::from([("node".to_string(), n.to_string())]))
                .unwrap_or_default(),
        }
    }

    #[test]
    fn one_job_per_name_with_each_targets_path() {
        let c = config(
            Duration::from_secs(5),
            &[
                target("master", "/metrics", None),
                target(
                    "kubelet",
                    "/metrics/nodes/n-1/metrics/resource",
                    Some("n-1"),
                ),
                target(
                    "kubelet",
                    "/metrics/nodes/n-2/metrics/resource",
                    Some("n-2"),
                ),
            ],
        );
        let v: Value = serde_json::from_str(&c).unwrap();
        assert_eq!(v["global"]["scrape_interval"], "5000ms");
        let jobs = v["scrape_configs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0]["job_name"], "kubelet");
        let groups = jobs[0]["static_configs"].as_array().unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(
            groups[1]["labels"]["__metrics_path__"],
            "/metrics/nodes/n-2/metrics/resource"
        );
        assert_eq!(groups[1]["labels"]["node"], "n-2");
        assert_eq!(jobs[1]["job_name"], "master");
        assert_eq!(jobs[1]["static_configs"][0]["targets"][0], "127.0.0.1:6443");
    }

    /// Starts `binary` as the server in a directory of its own; its error.
    async fn start_error(name: &str, binary: impl FnOnce(&Path) -> PathBuf) -> String {
        let dir = std::env::temp_dir().join(format!("kubesim-prom-{name}-{}", std::process::id()));
        let opts = ServerOptions {
            binary: binary(&dir),
            dir: dir.clone(),
            scrape_interval: Duration::from_secs(5),
            targets: vec![],
        };
        let e = PromServer::start(&opts, &Clock::wall())
            .await
            .err()
            .expect("the server does not start");
        std::fs::remove_dir_all(&dir).ok();
        e
    }

    #[tokio::test]
    async fn a_missing_binary_is_one_clear_error() {
        let e = start_error("missing", |d| d.join("no-such-prometheus")).await;
        assert!(e.starts_with("cannot run "), "{e}");
        assert!(e.contains("install Prometheus"), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[tokio::test]
    async fn a_server_that_exits_at_once_is_reported_with_its_log() {
        // `false` stands for a prometheus that refuses its configuration.
        let e = start_error("exit", |_| "false".into()).await;
        assert!(e.starts_with("Prometheus exited"), "{e}");
        assert!(e.contains("prometheus.log"), "{e}");
    }
}
