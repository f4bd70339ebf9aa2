//! `kubesim bench bringup --attach N`: the emulated kubelets run as N
//! `kubesim emulate` shards beside `kubesim up --emulator none`, over
//! HTTP, as they would against a real control plane; with `--hold`, each
//! shard's CPU and traffic with its nodes idle.

use std::time::Duration;

use anyhow::Context;
use kubesim_runtime::Clock;

use super::bench::{cpu_seconds, Child};

/// Starts `shards` emulate processes against the server whose data
/// directory is `dir`, and waits until every shard holds its Lease.
pub(crate) async fn start_shards(
    clock: &Clock,
    dir: &std::path::Path,
    shards: u32,
    qps: Option<f64>,
    pod_parallelism: Option<u16>,
) -> anyhow::Result<Vec<Child>> {
    let exe = std::env::current_exe()?;
    let kubeconfig = dir.join("kubeconfig");
    let mut out = Vec::new();
    let limits: Vec<String> = match qps {
        Some(q) => vec![
            "--kube-api-qps".into(),
            q.to_string(),
            "--kube-api-burst".into(),
            ((q * 2.0).ceil() as u64).max(1).to_string(),
        ],
        None => Vec::new(),
    };
    let parallelism: Vec<String> = pod_parallelism
        .map(|p| vec!["--pod-play-stage-parallelism".into(), p.to_string()])
        .unwrap_or_default();
    for i in 0..shards {
        let child = std::process::Command::new(&exe)
            .arg("emulate")
            .args(&limits)
            .args(&parallelism)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--shard", &format!("{i}/{shards}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("cannot start kubesim emulate")?;
        out.push(Child::new(child, dir.join(format!("shard-{i}"))));
    }
    // The shards find each other through their Leases within a renewal
    // (a third of the 10 s lease); nodes made earlier would go to
    // whichever shard saw itself alone first.
    clock.sleep(Duration::from_secs(4)).await;
    Ok(out)
}

/// Bytes a process has read and written through system calls so far
/// (sockets included): its traffic, as it logs nothing at rest.
fn io_bytes(pid: u32) -> u64 {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/io")) else {
        return 0;
    };
    text.lines()
        .filter(|l| l.starts_with("rchar:") || l.starts_with("wchar:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// Holds the idle nodes for `secs` and prints each shard's share of a
/// core and its traffic per node and minute.
pub(crate) async fn hold(clock: &Clock, shards: &[Child], nodes: usize, secs: u64) {
    let pids: Vec<u32> = shards.iter().map(|c| c.child.id()).collect();
    let before: Vec<(f64, u64)> = pids
        .iter()
        .map(|p| (cpu_seconds(&p.to_string()), io_bytes(*p)))
        .collect();
    clock.sleep(Duration::from_secs(secs)).await;
    let per_shard = nodes as f64 / shards.len().max(1) as f64;
    for (i, (pid, (cpu0, io0))) in pids.iter().zip(before).enumerate() {
        let cpu = (cpu_seconds(&pid.to_string()) - cpu0) / secs as f64;
        let bytes = io_bytes(*pid).saturating_sub(io0) as f64;
        println!(
            "shard {i}: {per_shard:.0} idle nodes for {secs} s: CPU {:.1} % of a core, traffic {:.0} bytes per node per minute",
            cpu * 100.0,
            bytes / per_shard / (secs as f64 / 60.0)
        );
    }
}
