//! `kubesim bench`: the measurements behind docs/performance.md.
//!
//! `bench api` starts `kubesim up --ephemeral` as a child process (so its
//! memory is measured alone) and drives it over HTTP/1.1 from many
//! connections, as real clients do.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use kubesim_runtime::Clock;
use serde_json::{json, Value};

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// What to measure: `api`, `scheduler`, `bringup`, `simulate` or `load`.
    pub what: String,
    /// Pods to create.
    #[arg(long, default_value_t = 20_000)]
    pub pods: usize,
    /// Concurrent client connections.
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Watchers for the watch-delivery measurement.
    #[arg(long, default_value_t = 100)]
    pub watchers: usize,
    /// Events written while the watchers listen.
    #[arg(long, default_value_t = 10_000)]
    pub events: usize,
    /// `scheduler`, `bringup`, `simulate`: nodes in the cluster.
    #[arg(long, default_value_t = 5_000)]
    pub nodes: usize,
    /// `scheduler`: give pods a preferred pod anti-affinity and a zone
    /// topology spread constraint.
    #[arg(long)]
    pub affinity: bool,
    /// `scheduler`: make the pods through one Deployment of `--pods`
    /// replicas (controllers and scheduler together) instead of directly.
    #[arg(long)]
    pub deployment: bool,
    /// `simulate`: jobs to run (from the synthetic trace, or from `--trace`
    /// repeated as often as needed).
    #[arg(long, default_value_t = 100_000)]
    pub jobs: usize,
    /// `simulate`: a workload file (e.g. an SWF trace) instead of the
    /// synthetic trace. Copies of it follow one another in time until there
    /// are `--jobs` jobs; SWF processors are capped at a node's 16 cpus.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// `load`: a ClusterLoader2 config to run (with `CL2_*` parameters from
    /// the environment) instead of the create-and-delete test.
    #[arg(long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
    /// `simulate`: run every member of the benchmark family
    /// (`kubesim workload synth` workloads: light and saturated load,
    /// short and long jobs, narrow and wide pods, 1,000 and 10,000 nodes;
    /// and the KTH and NASA traces, built in, as `--trace` runs them)
    /// with `--jobs` jobs each, and print a table.
    #[arg(long)]
    pub family: bool,
    /// `simulate --family`: only the members whose name contains this
    /// text (`base`, `wide`, `10,000`).
    #[arg(long, value_name = "TEXT", requires = "family")]
    pub member: Option<String>,
    /// `simulate --family`: run only the member at this place in the
    /// family and print its row alone (each member runs so, in a process
    /// of its own).
    #[arg(long, hide = true, requires = "family")]
    pub member_index: Option<usize>,
    /// `simulate --family`: run each member this many times, round after
    /// round, and print each one's median and range.
    #[arg(long, default_value_t = 1, requires = "family",
        value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// `simulate --family`: another kubesim binary to compare with; each
    /// run of a member is paired with a run of it by that binary, and the
    /// table gives the ratio of each pair.
    #[arg(long, value_name = "BINARY", requires = "family")]
    pub against: Option<std::path::PathBuf>,
    /// `simulate`: terminated pods kept before the pod garbage collector
    /// deletes the oldest (0 keeps them all).
    #[arg(long, default_value_t = kubesim_controllers::podgc::DEFAULT_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,
    /// `load`: actions per second the runner is asked for.
    #[arg(long, default_value_t = 5_000.0)]
    pub qps: f64,
    /// `bringup`: seconds to hold the cluster with its pods running, once
    /// its stored objects have settled, sampling CPU and memory each
    /// minute.
    #[arg(long, default_value_t = 0)]
    pub hold: u64,
    /// `bringup`: run the emulated kubelets as this many `kubesim emulate`
    /// shards over HTTP (`kubesim up --emulator none`) instead of in the
    /// server; with `--hold`, measure each shard with its nodes idle.
    #[arg(long, value_name = "SHARDS", num_args = 0..=1, default_missing_value = "2")]
    pub attach: Option<u32>,
    /// `bringup --attach`: each shard's `--kube-api-qps` (its burst twice
    /// that; 0 for no limit); by default, `kubesim emulate`'s own.
    #[arg(long, value_name = "QPS")]
    pub kube_api_qps: Option<f64>,
    /// `bringup --attach`: each shard's `--pod-play-stage-parallelism`; by
    /// default, `kubesim emulate`'s own.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub pod_play_stage_parallelism: Option<u16>,
    /// `api`: give the pods a scheduler name nobody serves, so that no
    /// component writes to them: the API server's own cost per stored
    /// pod. By default the cluster's scheduler (with no nodes to offer)
    /// marks every pod unschedulable, which adds a second version of the
    /// pod to the watch history and an Event.
    #[arg(long)]
    pub unscheduled: bool,
    /// `api`: send every request as a ServiceAccount bound to `edit` in
    /// the namespace, with a token of its own, so that authentication and
    /// RBAC are on each request's path. Without it, requests carry no
    /// credentials and act as the admin, whom RBAC allows first.
    #[arg(long)]
    pub as_service_account: bool,
    /// `api`: the server's `--authorization-mode` (RBAC or AlwaysAllow).
    #[arg(long, default_value = "RBAC")]
    pub authorization_mode: String,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    println!("{}", super::machine::describe());
    match args.what.as_str() {
        "api" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(api(args))
        }
        "scheduler" => super::bench_scheduler::run(&args),
        "bringup" => super::bench_bringup::run(&args),
        "simulate" => super::bench_simulate::run(&args),
        "load" => super::bench_load::run(&args),
        other => {
            bail!("unknown benchmark {other:?}: available: api, scheduler, bringup, simulate, load")
        }
    }
}

pub(crate) struct Child {
    pub(crate) child: std::process::Child,
    dir: std::path::PathBuf,
}

impl Child {
    pub(crate) fn new(child: std::process::Child, dir: std::path::PathBuf) -> Child {
        Child { child, dir }
    }

    /// The server's data directory (its kubeconfig is there).
    pub(crate) fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn rss_kib(pid: u32) -> u64 {
    status_kib(&pid.to_string(), "VmRSS:")
}

/// A memory figure (`VmRSS:`, `VmHWM:` for the peak) of a process from
/// `/proc` (`proc` is a pid or `self`), in KiB; 0 where there is none.
pub(crate) fn status_kib(proc: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{proc}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

pub(crate) async fn connect(port: u16) -> anyhow::Result<SendRequest<Full<Bytes>>> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    tcp.set_nodelay(true)?;
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
    tokio::spawn(conn);
    Ok(send)
}

pub(crate) async fn request(
    c: &mut SendRequest<Full<Bytes>>,
    method: &str,
    path: &str,
    body: Option<Bytes>,
) -> anyhow::Result<(u16, Bytes)> {
    request_as(c, method, path, body, None).await
}

/// [`request`] with a bearer token (None: no credentials, the admin).
pub(crate) async fn request_as(
    c: &mut SendRequest<Full<Bytes>>,
    method: &str,
    path: &str,
    body: Option<Bytes>,
    token: Option<&str>,
) -> anyhow::Result<(u16, Bytes)> {
    let mut req = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req.body(Full::new(body.unwrap_or_default()))?;
    c.ready().await?;
    let resp = c.send_request(req).await?;
    let code = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((code, body))
}

/// A pod about the size of a real one (~2.5 KB of JSON once defaulted).
fn pod(i: usize, unscheduled: bool) -> Bytes {
    let mut v = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("bench-{i:07}"), "labels": {"app": "bench", "shard": (i % 16).to_string(), "pod-template-hash": "5d8f7c9b6"},
            "annotations": {"kubesim.io/run-duration": "60s"}},
        "spec": {"containers": [{"name": "app", "image": "registry.example/team/app:1.2.3",
            "ports": [{"containerPort": 8080, "name": "http"}],
            "env": [{"name": "MODE", "value": "production"}, {"name": "REGION", "value": "eu-west"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}}]}
    });
    if unscheduled {
        v["spec"]["schedulerName"] = json!("kubesim-bench-unserved");
    }
    Bytes::from(serde_json::to_vec(&v).unwrap_or_default())
}

/// Items in a list body: each stored pod starts with the same prefix.
fn count_items(body: &[u8]) -> usize {
    let needle = b"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"";
    body.windows(needle.len()).filter(|w| w == needle).count()
}

/// `metadata.continue` of a list body, which precedes the items.
fn continue_token(body: &[u8]) -> String {
    let head = &body[..body.len().min(1024)];
    let text = String::from_utf8_lossy(head);
    text.split("\"continue\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or("")
        .to_string()
}

/// Request `i` of a run: method, path, body and the status it must get.
pub(crate) type MakeRequest =
    dyn Fn(usize) -> (&'static str, String, Option<Bytes>, u16) + Send + Sync;

/// Sends `total` requests over `clients` connections, each taking the next
/// index; returns the sorted latencies and the elapsed seconds.
pub(crate) async fn drive(
    clock: &Clock,
    port: u16,
    clients: usize,
    total: usize,
    make: Arc<MakeRequest>,
) -> anyhow::Result<(Vec<Duration>, f64)> {
    drive_as(clock, port, clients, total, make, None).await
}

/// [`drive`] with every request carrying `token`.
pub(crate) async fn drive_as(
    clock: &Clock,
    port: u16,
    clients: usize,
    total: usize,
    make: Arc<MakeRequest>,
    token: Option<Arc<str>>,
) -> anyhow::Result<(Vec<Duration>, f64)> {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let started = clock.instant();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (next, make, clock, token) = (next.clone(), make.clone(), clock.clone(), token.clone());
        tasks.push(tokio::spawn(async move {
            let mut c = connect(port).await?;
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let (method, path, body, want) = make(i);
                let t = clock.instant();
                let (code, resp) =
                    request_as(&mut c, method, &path, body, token.as_deref()).await?;
                if code != want {
                    bail!(
                        "{method} {path} answered {code}: {}",
                        String::from_utf8_lossy(&resp)
                    );
                }
                lat.push(t.elapsed());
            }
            Ok::<_, anyhow::Error>(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort();
    Ok((all, secs))
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// Starts `kubesim up --ephemeral` with `extra` arguments as a child
/// process on a free port and waits until it is ready.
pub(crate) async fn start_server(clock: &Clock, extra: &[&str]) -> anyhow::Result<(Child, u16)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let dir = std::env::temp_dir().join(format!("kubesim-bench-{}", std::process::id()));
    let exe = std::env::current_exe()?;
    let child = std::process::Command::new(exe)
        .args([
            "up",
            "--ephemeral",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(&dir)
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("cannot start the server")?;
    let child = Child { child, dir };
    for _ in 0..200 {
        if let Ok(mut c) = connect(port).await {
            if matches!(request(&mut c, "GET", "/readyz", None).await, Ok((200, _))) {
                return Ok((child, port));
            }
        }
        clock.sleep(Duration::from_millis(50)).await;
    }
    bail!("the server did not become ready")
}

/// A ServiceAccount bound to `edit` in `default`, and a token for it.
async fn service_account_token(port: u16) -> anyhow::Result<Arc<str>> {
    let mut c = connect(port).await?;
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bench"}});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "bench-edit"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"kind": "ServiceAccount", "name": "bench", "namespace": "default"}]});
    for (path, body) in [
        ("/api/v1/namespaces/default/serviceaccounts", sa),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            binding,
        ),
    ] {
        let (code, resp) =
            request(&mut c, "POST", path, Some(Bytes::from(body.to_string()))).await?;
        if code != 201 {
            bail!(
                "POST {path} answered {code}: {}",
                String::from_utf8_lossy(&resp)
            );
        }
    }
    let req = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 86400}});
    let path = "/api/v1/namespaces/default/serviceaccounts/bench/token";
    let (code, resp) = request(&mut c, "POST", path, Some(Bytes::from(req.to_string()))).await?;
    if code != 201 {
        bail!(
            "POST {path} answered {code}: {}",
            String::from_utf8_lossy(&resp)
        );
    }
    let v: Value = serde_json::from_slice(&resp)?;
    let token = v["status"]["token"]
        .as_str()
        .context("no token in the TokenRequest")?;
    Ok(token.into())
}

async fn api(args: BenchArgs) -> anyhow::Result<()> {
    let clock = Clock::wall();
    let (child, port) =
        start_server(&clock, &["--authorization-mode", &args.authorization_mode]).await?;
    let token = if args.as_service_account {
        Some(service_account_token(port).await?)
    } else {
        None
    };
    let pid = child.child.id();
    let rss_before = rss_kib(pid);

    let unscheduled = args.unscheduled;
    let create_pod: Arc<MakeRequest> = Arc::new(move |i| {
        (
            "POST",
            "/api/v1/namespaces/default/pods".to_string(),
            Some(pod(i, unscheduled)),
            201,
        )
    });
    let cpu_before = cpu_seconds(&pid.to_string());
    let (create_lat, create_secs) = drive_as(
        &clock,
        port,
        args.clients,
        args.pods,
        create_pod,
        token.clone(),
    )
    .await?;
    // The server's own CPU per create: unlike throughput, it hardly moves
    // when other work shares the machine.
    let create_cpu_us = (cpu_seconds(&pid.to_string()) - cpu_before) * 1e6 / args.pods as f64;
    let rss_after = rss_kib(pid);

    let gets = args.pods.min(20_000);
    let get_pod: Arc<MakeRequest> = Arc::new(|i| {
        (
            "GET",
            format!("/api/v1/namespaces/default/pods/bench-{i:07}"),
            None,
            200,
        )
    });
    let (get_lat, get_secs) =
        drive_as(&clock, port, args.clients, gets, get_pod, token.clone()).await?;

    // A full list, paged by 500 as kubectl and informers do.
    let mut c = connect(port).await?;
    let started = clock.instant();
    let mut cont = String::new();
    let mut listed = 0usize;
    let mut page_lat = Vec::new();
    loop {
        let mut path = "/api/v1/namespaces/default/pods?limit=500".to_string();
        if !cont.is_empty() {
            path.push_str(&format!("&continue={cont}"));
        }
        let t = clock.instant();
        let (code, body) = request_as(&mut c, "GET", &path, None, token.as_deref()).await?;
        page_lat.push(t.elapsed());
        if code != 200 {
            bail!("list failed with {code}");
        }
        // Count items and read the token without parsing the page: the
        // client's own parsing is not what is being measured.
        listed += count_items(&body);
        cont = continue_token(&body);
        if cont.is_empty() {
            break;
        }
    }
    let list_secs = started.elapsed().as_secs_f64();
    page_lat.sort();

    // Watch delivery: every watcher must see every event.
    let (code, body) = request_as(
        &mut c,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        token.as_deref(),
    )
    .await?;
    if code != 200 {
        bail!("list configmaps failed with {code}");
    }
    let rv = serde_json::from_slice::<Value>(&body)?["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string();
    let mut watchers = Vec::new();
    for _ in 0..args.watchers {
        let mut w = connect(port).await?;
        let path = format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}&timeoutSeconds=600");
        let mut req = hyper::Request::builder()
            .uri(path)
            .header("host", "localhost");
        if let Some(t) = &token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(Full::new(Bytes::new()))?;
        w.ready().await?;
        let resp = w.send_request(req).await?;
        let want = args.events;
        watchers.push(tokio::spawn(async move {
            let mut body = resp.into_body();
            let mut seen = 0usize;
            while seen < want {
                match body.frame().await {
                    Some(Ok(f)) => {
                        if let Some(d) = f.data_ref() {
                            seen += d.iter().filter(|b| **b == b'\n').count();
                        }
                    }
                    _ => break,
                }
            }
            seen
        }));
    }
    let started = clock.instant();
    let create_cm: Arc<MakeRequest> = Arc::new(|i| {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("w-{i}")}, "data": {"k": "v"}});
        (
            "POST",
            "/api/v1/namespaces/default/configmaps".to_string(),
            Some(Bytes::from(body.to_string())),
            201,
        )
    });
    drive_as(
        &clock,
        port,
        args.clients.min(16),
        args.events,
        create_cm,
        token.clone(),
    )
    .await?;
    let mut delivered = 0usize;
    for w in watchers {
        delivered += w.await?;
    }
    let watch_secs = started.elapsed().as_secs_f64();

    let per_pod = (rss_after.saturating_sub(rss_before)) as f64 * 1024.0 / args.pods as f64;
    println!(
        "kubesim bench api: {} pods, {} clients, {} watchers x {} events, as {}, authorization {}",
        args.pods,
        args.clients,
        args.watchers,
        args.events,
        if token.is_some() {
            "a ServiceAccount (edit)"
        } else {
            "the admin"
        },
        args.authorization_mode
    );
    println!(
        "create:  {:>9.0} pods/s   p50 {:.2} ms   p99 {:.2} ms   server CPU {:.0} µs per create",
        args.pods as f64 / create_secs,
        percentile(&create_lat, 0.5),
        percentile(&create_lat, 0.99),
        create_cpu_us
    );
    println!(
        "get:     {:>9.0} req/s    p50 {:.2} ms   p99 {:.2} ms",
        gets as f64 / get_secs,
        percentile(&get_lat, 0.5),
        percentile(&get_lat, 0.99)
    );
    println!(
        "list:    {listed} pods in pages of 500: {:.3} s   page p50 {:.2} ms   p99 {:.2} ms",
        list_secs,
        percentile(&page_lat, 0.5),
        percentile(&page_lat, 0.99)
    );
    println!(
        "watch:   {delivered} events delivered to {} watchers in {:.2} s = {:.0} events/s per watcher, {:.0} in total",
        args.watchers,
        watch_secs,
        delivered as f64 / args.watchers.max(1) as f64 / watch_secs,
        delivered as f64 / watch_secs
    );
    println!(
        "memory:  {:.0} bytes RSS per stored pod ({} KiB -> {} KiB)",
        per_pod, rss_before, rss_after
    );
    Ok(())
}

/// User and system CPU seconds a process has used so far (`proc` is a pid
/// or `self`; Linux only, 0 elsewhere).
pub(crate) fn cpu_seconds(proc: &str) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{proc}/stat")) else {
        return 0.0;
    };
    // Fields after the command name (which may hold spaces) start at ")".
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here;
    // the kernel counts them in 100 Hz ticks.
    (ticks(11) + ticks(12)) / 100.0
}
