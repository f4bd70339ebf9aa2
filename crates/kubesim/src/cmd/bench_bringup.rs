//! `kubesim bench bringup`: kwok's CI benchmark against `kubesim up`, over
//! HTTP. Creates `--nodes` emulated nodes and waits until all are Ready,
//! creates `--pods` pods bound to them and waits until all are Running,
//! deletes them and waits until they are gone; with `--hold`, before the
//! deletion, it keeps the cluster idle (heartbeats only) once its stored
//! objects have settled, and samples its CPU and memory.
//!
//! Progress is followed with one watch per step, as kwok's CI follows
//! `kubectl get --watch`.

use std::collections::BTreeSet;
use std::sync::Arc;

use anyhow::{bail, Context};
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyStream, Full};
use kubesim_runtime::Clock;
use serde_json::{json, Value};

use super::bench::{connect, drive, request, rss_kib, start_server, BenchArgs, MakeRequest};

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(bringup(args))
}

fn node(i: usize) -> Bytes {
    let v = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": format!("fake-node-{i:06}"),
            "annotations": {"kwok.x-k8s.io/node": "fake"},
            "labels": {"type": "kwok", "kubernetes.io/hostname": format!("fake-node-{i:06}")}},
        "spec": {"taints": [{"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"}}});
    Bytes::from(v.to_string())
}

fn pod(i: usize, nodes: usize) -> Bytes {
    let v = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("fake-pod-{i:06}"), "labels": {"app": "fake-pod"}},
        "spec": {"nodeName": format!("fake-node-{:06}", i % nodes.max(1)),
            "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "container-0", "image": "busybox"}]}});
    Bytes::from(v.to_string())
}

async fn open_watch(
    port: u16,
    path: &str,
    rv: &str,
) -> anyhow::Result<(
    hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    hyper::Response<hyper::body::Incoming>,
)> {
    let mut c = connect(port).await?;
    let req = hyper::Request::builder()
        .uri(format!("{path}?watch=true&resourceVersion={rv}"))
        .header("host", "localhost")
        .body(Full::new(Bytes::new()))?;
    c.ready().await?;
    let resp = c.send_request(req).await?;
    if resp.status() != 200 {
        bail!("watch {path} answered {}", resp.status());
    }
    Ok((c, resp))
}

/// Follows a watch on `path` from `rv`, handing every event (type and
/// object) to `seen` until it says the wait is over. A watch the server
/// ends (a watcher too slow for the write rate is dropped, as upstream
/// drops it) is resumed from the last resourceVersion seen.
async fn follow(
    port: u16,
    path: &str,
    rv: String,
    mut seen: impl FnMut(&str, &Value) -> bool + Send + 'static,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let first = open_watch(port, path, &rv).await?;
    let path = path.to_string();
    Ok(tokio::spawn(async move {
        let mut rv = rv;
        let mut next = Some(first);
        for _ in 0..100 {
            let (c, resp) = match next.take() {
                Some(w) => w,
                None => open_watch(port, &path, &rv).await?,
            };
            let _keep = c;
            let mut body = BodyStream::new(resp.into_body());
            let mut buf = Vec::new();
            while let Some(frame) = body.next().await {
                let frame = frame?;
                let Some(data) = frame.data_ref() else {
                    continue;
                };
                buf.extend_from_slice(data);
                while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = buf.drain(..=nl).collect();
                    let ev: Value = serde_json::from_slice(&line).context("bad watch event")?;
                    let obj = &ev["object"];
                    if let Some(v) = obj["metadata"]["resourceVersion"].as_str() {
                        rv = v.to_string();
                    }
                    if seen(ev["type"].as_str().unwrap_or(""), obj) {
                        return Ok(());
                    }
                }
            }
        }
        bail!("watch {path} kept ending")
    }))
}

/// Waits until `n` objects of `path` (watched from `rv`) satisfy `counts`.
async fn watch_until(
    port: u16,
    path: &str,
    rv: String,
    counts: impl Fn(&Value) -> bool + Send + 'static,
    n: usize,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let mut names = BTreeSet::new();
    follow(port, path, rv, move |kind, obj| {
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        if kind == "DELETED" || !counts(obj) {
            names.remove(&name);
        } else if kind == "ADDED" || kind == "MODIFIED" {
            names.insert(name);
        }
        names.len() >= n
    })
    .await
}

fn ready(node: &Value) -> bool {
    node["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

async fn list_rv(port: u16, path: &str) -> anyhow::Result<String> {
    let mut c = connect(port).await?;
    let (code, body) = request(&mut c, "GET", &format!("{path}?limit=1"), None).await?;
    if code != 200 {
        bail!("list {path} answered {code}");
    }
    let v: Value = serde_json::from_slice(&body)?;
    Ok(v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("0")
        .to_string())
}

async fn bringup(args: &BenchArgs) -> anyhow::Result<()> {
    let clock = Clock::wall();
    let server_args: &[&str] = match args.attach {
        Some(_) => &["--emulator", "none"],
        None => &[],
    };
    let (child, port) = start_server(&clock, server_args).await?;
    let pid = child.child.id();
    let shards = match args.attach {
        Some(n) => {
            super::bench_attach::start_shards(
                &clock,
                child.dir(),
                n.max(1),
                args.kube_api_qps,
                args.pod_play_stage_parallelism,
            )
            .await?
        }
        None => Vec::new(),
    };
    let (n_nodes, n_pods) = (args.nodes, args.pods);
    println!(
        "kubesim bench bringup: {n_nodes} nodes, {n_pods} pods, {} clients{}",
        args.clients,
        match args.attach {
            Some(n) => format!(
                ", kubelets in {} kubesim emulate shards{}{}",
                n.max(1),
                match args.kube_api_qps {
                    Some(q) => format!(" at --kube-api-qps {q}"),
                    None => String::new(),
                },
                match args.pod_play_stage_parallelism {
                    Some(p) => format!(", --pod-play-stage-parallelism {p}"),
                    None => String::new(),
                }
            ),
            None => String::new(),
        }
    );

    // Nodes Ready.
    let rv = list_rv(port, "/api/v1/nodes").await?;
    let started = clock.instant();
    let waiter = watch_until(port, "/api/v1/nodes", rv, ready, n_nodes).await?;
    let make: Arc<MakeRequest> = Arc::new(|i| ("POST", "/api/v1/nodes".into(), Some(node(i)), 201));
    drive(&clock, port, args.clients, n_nodes, make).await?;
    waiter.await??;
    let nodes_secs = started.elapsed().as_secs_f64();
    println!(
        "nodes Ready:   {n_nodes:>7} in {nodes_secs:6.2} s ({:.0}/s)",
        n_nodes as f64 / nodes_secs
    );

    if !shards.is_empty() && args.hold > 0 {
        super::bench_attach::hold(&clock, &shards, n_nodes, args.hold).await;
    }
    if n_pods == 0 {
        return Ok(());
    }

    // Pods Running.
    let rv = list_rv(port, "/api/v1/namespaces/default/pods").await?;
    let started = clock.instant();
    let waiter = watch_until(
        port,
        "/api/v1/namespaces/default/pods",
        rv,
        |p| p["status"]["phase"] == "Running",
        n_pods,
    )
    .await?;
    let nn = n_nodes;
    let make: Arc<MakeRequest> = Arc::new(move |i| {
        (
            "POST",
            "/api/v1/namespaces/default/pods".into(),
            Some(pod(i, nn)),
            201,
        )
    });
    drive(&clock, port, args.clients, n_pods, make).await?;
    waiter.await??;
    let pods_secs = started.elapsed().as_secs_f64();
    println!(
        "pods Running:  {n_pods:>7} in {pods_secs:6.2} s ({:.0}/s)",
        n_pods as f64 / pods_secs
    );
    let rss_running = rss_kib(pid);
    if args.hold > 0 && shards.is_empty() {
        super::bench_hold::settle(&clock, port, std::time::Duration::from_secs(600)).await;
        let label = format!("{n_nodes} nodes heartbeating, {n_pods} pods running");
        super::bench_hold::hold(&clock, pid, port, args.hold, &label).await;
    }

    // Pods deleted (gracefully, as `kubectl delete` does: the emulated
    // kubelet finishes each deletion).
    let rv = list_rv(port, "/api/v1/namespaces/default/pods").await?;
    let started = clock.instant();
    let remaining = Arc::new(std::sync::atomic::AtomicUsize::new(n_pods));
    let r = remaining.clone();
    let waiter = follow(
        port,
        "/api/v1/namespaces/default/pods",
        rv,
        move |kind, _| {
            kind == "DELETED" && r.fetch_sub(1, std::sync::atomic::Ordering::Relaxed) == 1
        },
    )
    .await?;
    let make: Arc<MakeRequest> = Arc::new(|i| {
        (
            "DELETE",
            format!("/api/v1/namespaces/default/pods/fake-pod-{i:06}"),
            None,
            200,
        )
    });
    drive(&clock, port, args.clients, n_pods, make).await?;
    waiter.await??;
    let delete_secs = started.elapsed().as_secs_f64();
    println!(
        "pods deleted:  {n_pods:>7} in {delete_secs:6.2} s ({:.0}/s)",
        n_pods as f64 / delete_secs
    );
    println!(
        "RSS with {n_nodes} nodes and {n_pods} pods running: {} MiB",
        rss_running / 1024
    );

    drop(child);
    Ok(())
}
