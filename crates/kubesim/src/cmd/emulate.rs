//! `kubesim emulate`: the emulated kubelets alone, against any cluster a
//! kubeconfig names (a `kubesim up`, kind, k3s, a cloud cluster), as kwok's
//! controller runs. Several processes split the nodes as shards.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use kubesim_core::selector::LabelSelector;
use kubesim_emulator::managed::{NodeRule, NodeSelector};
use kubesim_emulator::shard::{self, ShardLease, Shards};
use kubesim_runtime::client_limits::{ClientLimits, DEFAULT_RETRIES};
use kubesim_runtime::remote::RemoteApi;
use kubesim_runtime::{Api, Clock, Informers, Rng};

#[derive(clap::Args, Debug)]
pub struct EmulateArgs {
    /// The cluster to join (default: $KUBECONFIG, then ~/.kube/config,
    /// then the in-cluster service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    #[command(flatten)]
    pub pool: super::emulation::NodePoolArgs,
    /// Act as the kubelet of every node (a cluster with no real kubelets).
    #[arg(long, group = "manage")]
    pub manage_all_nodes: bool,
    /// Act for the nodes whose annotations match this selector, such as
    /// `kwok.x-k8s.io/node=fake`. Without any `--manage-*` flag: nodes
    /// annotated or labelled `kwok.x-k8s.io/node: fake` or
    /// `kubesim.io/emulated`.
    #[arg(
        long,
        value_name = "SELECTOR",
        alias = "manage-nodes-with-annotation-selector",
        group = "manage"
    )]
    pub manage_nodes_with_annotation: Option<String>,
    /// Act for the nodes whose labels match this selector.
    #[arg(long, value_name = "SELECTOR", group = "manage")]
    pub manage_nodes_with_label_selector: Option<String>,
    /// This process is shard I of N: the live shards split the nodes by a
    /// stable hash of their names, each holding a Lease; when one stops,
    /// the others take its nodes over. N may change at run time.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Shards of one group share the nodes (several groups need node
    /// rules that do not overlap).
    #[arg(long, default_value = "default")]
    pub shard_group: String,
    /// The namespace of the shard Leases.
    #[arg(long, default_value = "kube-system")]
    pub shard_lease_namespace: String,
    /// A shard whose Lease was not renewed for this long is taken over (Go
    /// duration). Renewals come three times a lease.
    #[arg(long, default_value = "10s")]
    pub shard_lease_duration: String,
    /// Serve the nodes' kubelet-style metrics endpoints here
    /// (`/metrics/nodes/<node>/metrics/resource` and kwok's Metric paths).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<SocketAddr>,
    /// Requests a second to the API server, on average (0: no limit).
    /// Real kubelets may send 50 each; a shard acting for thousands of
    /// nodes sends far fewer in all: 10,000 idle nodes need 1,000 lease
    /// renewals a second.
    #[arg(long, default_value_t = 1000.0)]
    pub kube_api_qps: f64,
    /// Requests sent at once above the average rate.
    #[arg(long, default_value_t = 2000)]
    pub kube_api_burst: u32,
    /// Pods whose stages are played at once, as kwok's option of the same
    /// name. Each step waits for the API server's answer, so this bounds
    /// how many pods a shard moves a second; the request limits above
    /// still bound the rate.
    #[arg(long, default_value_t = POD_PARALLELISM, value_parser = clap::value_parser!(u16).range(1..))]
    pub pod_play_stage_parallelism: u16,
    /// Nodes whose stages are played at once, as kwok's option.
    #[arg(long, default_value_t = kubesim_emulator::DEFAULT_PARALLELISM as u16, value_parser = clap::value_parser!(u16).range(1..))]
    pub node_play_stage_parallelism: u16,
    /// Seed of the random generator (stage delays, addresses).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// The default of `--pod-play-stage-parallelism`: kwok's 4 holds a shard
/// to the answers of four requests at a time. `kubesim bench bringup
/// --nodes 5000 --pods 10000 --attach 2` (release, 2 cores): 10,000 pods
/// Running in 8.3 s and deleted in 10.9 s at 4; 5.3 s and 7.0-7.3 s at 32;
/// 5.2 s and 5.9-6.2 s at 64. 32 takes most of the gain while a shard's
/// requests in flight stay well inside a shared API server's limits.
const POD_PARALLELISM: u16 = 32;

pub fn run(args: EmulateArgs) -> anyhow::Result<()> {
    let rule = node_rule(&args)?;
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    let lease_duration = kubesim_gocompat::duration::parse_std(&args.shard_lease_duration)
        .map_err(|e| anyhow!("bad --shard-lease-duration: {e}"))?;
    if lease_duration < Duration::from_secs(3) {
        anyhow::bail!("bad --shard-lease-duration: at least 3s");
    }
    check_group(&args.shard_group)?;
    if !(args.kube_api_qps >= 0.0 && args.kube_api_qps.is_finite()) {
        anyhow::bail!("bad --kube-api-qps: a rate of 0 or more");
    }
    let (template, stages) = args.pool.read()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let clock = Clock::wall();
        let remote = RemoteApi::from_kubeconfig(args.kubeconfig.as_deref())
            .await
            .map_err(|e| anyhow!("{e}"))?
            .with_limits(ClientLimits::new(
                clock.clone(),
                args.kube_api_qps,
                args.kube_api_burst,
                DEFAULT_RETRIES,
            ));
        let api: Arc<dyn Api> = Arc::new(remote);
        let shards = shard.map(|(i, _)| Shards::new(i));
        let lease = ShardLease {
            namespace: args.shard_lease_namespace.clone(),
            group: args.shard_group.clone(),
            identity: identity(),
            duration: lease_duration,
        };
        if let Some(s) = &shards {
            tokio::spawn(shard::hold(
                api.clone(),
                clock.clone(),
                s.clone(),
                lease.clone(),
            ));
        }
        let informers = Informers::new(api.clone(), clock.clone());
        let emulator = kubesim_emulator::Emulator::new(
            api.clone(),
            informers,
            clock.clone(),
            Rng::seeded(args.seed),
            kubesim_emulator::EmulatorConfig {
                nodes: args.pool.nodes,
                template,
                stages,
                selector: NodeSelector {
                    rule,
                    shards: shards.clone(),
                },
                pod_parallelism: args.pod_play_stage_parallelism.into(),
                node_parallelism: args.node_play_stage_parallelism.into(),
                ..Default::default()
            },
        );
        if let Some(addr) = args.metrics_listen {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            tokio::spawn(super::kubelet_metrics::serve(listener, emulator.usage()));
        }
        tracing::info!(shard = ?args.shard, "emulating kubelets");
        tokio::select! {
            _ = emulator.run() => {}
            _ = shutdown() => {
                tracing::info!("shutting down");
                if let Some(s) = &shards {
                    shard::release(&*api, s, &lease).await;
                }
            }
        }
        Ok(())
    })
}

/// The `--manage-*` flags as a rule.
fn node_rule(args: &EmulateArgs) -> anyhow::Result<NodeRule> {
    let parse = |flag: &str, s: &str| {
        LabelSelector::parse(s).map_err(|e| anyhow!("bad --{flag}: {}", e.message))
    };
    Ok(if args.manage_all_nodes {
        NodeRule::All
    } else if let Some(s) = &args.manage_nodes_with_annotation {
        NodeRule::Annotations(parse("manage-nodes-with-annotation", s)?)
    } else if let Some(s) = &args.manage_nodes_with_label_selector {
        NodeRule::Labels(parse("manage-nodes-with-label-selector", s)?)
    } else {
        NodeRule::Marked
    })
}

/// The group names the shard Leases (`kubesim-emulate-<group>-<I>`) and
/// labels them, so it must fit in both: a DNS label, short enough.
fn check_group(group: &str) -> anyhow::Result<()> {
    let ok = !group.is_empty()
        && group.len() <= 40
        && group
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !group.starts_with('-')
        && !group.ends_with('-');
    if !ok {
        anyhow::bail!(
            "bad --shard-group {group:?}: lower-case letters, digits and '-', at most 40, not starting or ending with '-'"
        );
    }
    Ok(())
}

/// `I/N` with I < N.
fn parse_shard(s: &str) -> anyhow::Result<(u32, u32)> {
    let bad = || anyhow!("bad --shard {s:?}: expected I/N with 0 <= I < N, such as 0/2");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (i.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// This process as a shard Lease's holder: host name and process id, as
/// client-go's leader election names its holders.
fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kubesim".into());
    format!("{host}_{}", std::process::id())
}

/// Completes on SIGINT or SIGTERM (what a StatefulSet's pod receives).
async fn shutdown() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_groups() {
        for good in ["default", "a", "team-1"] {
            assert!(check_group(good).is_ok(), "{good}");
        }
        for bad in ["", "My Group", "-a", "a-", "a.b", &"x".repeat(41)] {
            let e = check_group(bad).unwrap_err().to_string();
            assert!(e.starts_with("bad --shard-group"), "{bad}: {e}");
        }
    }

    #[test]
    fn shard_specs() {
        assert_eq!(parse_shard("0/2").unwrap(), (0, 2));
        assert_eq!(parse_shard("3/4").unwrap(), (3, 4));
        for bad in ["2/2", "1", "a/2", "1/b", "-1/2", ""] {
            let e = parse_shard(bad).unwrap_err().to_string();
            assert!(e.starts_with("bad --shard"), "{bad}: {e}");
        }
    }
}
