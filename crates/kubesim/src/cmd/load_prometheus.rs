//! `kubesim load --prometheus`: the Prometheus server of a run against the
//! in-process cluster. It scrapes kubesim's `/metrics` as job `master`
//! (where ClusterLoader2's Prometheus finds the control plane) and each
//! emulated node's kubelet resource endpoint as job `kubelet`, every 5
//! seconds, as ClusterLoader2 scrapes the control plane.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::anyhow;
use kubesim_load::prom::{PromServer, ServerOptions, Target};
use kubesim_runtime::remote::RemoteApi;
use kubesim_runtime::{Api, Clock, ListOptions, ResourceRef};
use serde_json::Value;

const SCRAPE_INTERVAL: Duration = Duration::from_secs(5);

/// kwok's Metric that serves each emulated node's kubelet
/// `/metrics/resource` (with `container_start_time_seconds`, which
/// ContainerRestarts reads): without one the kubelet targets answer 404.
const METRICS_RESOURCE: &str = include_str!("../../assets/metrics-resource.yaml");

/// Creates kwok's resource Metric unless one of its name exists.
async fn ensure_kubelet_metrics(api: &RemoteApi) -> anyhow::Result<()> {
    let metric: Value = serde_saphyr::from_str(METRICS_RESOURCE)
        .map_err(|e| anyhow!("the built-in kwok Metric: {e}"))?;
    let r = ResourceRef::new("kwok.x-k8s.io", "v1alpha1", "metrics");
    match api.create(&r, "", metric, &Default::default()).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(anyhow!(
            "cannot create kwok's resource Metric: {}",
            e.message
        )),
    }
}

/// Starts the server with its files in `report_dir`; `address` is the
/// in-process cluster's `127.0.0.1:<port>`.
pub async fn start(
    api: &RemoteApi,
    address: &str,
    report_dir: &Path,
    clock: &Clock,
) -> anyhow::Result<PromServer> {
    ensure_kubelet_metrics(api).await?;
    let nodes = api
        .list(&ResourceRef::core("nodes"), "", &ListOptions::default())
        .await
        .map_err(|e| anyhow!("cannot list nodes: {}", e.message))?;
    let names = nodes
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str));
    let opts = ServerOptions {
        binary: "prometheus".into(),
        dir: report_dir.to_path_buf(),
        scrape_interval: SCRAPE_INTERVAL,
        targets: targets(address, names),
    };
    let server = PromServer::start(&opts, clock)
        .await
        .map_err(|e| anyhow!("--prometheus: {e}"))?;
    eprintln!(
        "kubesim: Prometheus serves on http://{}, its data in {}",
        server.client.addr,
        server.tsdb.display()
    );
    Ok(server)
}

fn targets<'a>(address: &str, nodes: impl Iterator<Item = &'a str>) -> Vec<Target> {
    let mut out = vec![Target {
        job: "master".into(),
        address: address.into(),
        path: "/metrics".into(),
        labels: BTreeMap::from([("endpoint".to_string(), "apiserver".to_string())]),
    }];
    out.extend(nodes.map(|n| Target {
        job: "kubelet".into(),
        address: address.into(),
        path: format!("/metrics/nodes/{n}/metrics/resource"),
        labels: BTreeMap::from([("node".to_string(), n.to_string())]),
    }));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_control_plane_and_every_node_are_targets() {
        let t = targets("127.0.0.1:8080", ["n-1", "n-2"].into_iter());
        assert_eq!(t.len(), 3);
        assert_eq!(
            (t[0].job.as_str(), t[0].path.as_str()),
            ("master", "/metrics")
        );
        assert_eq!(t[2].job, "kubelet");
        assert_eq!(t[2].path, "/metrics/nodes/n-2/metrics/resource");
        assert_eq!(t[2].labels["node"], "n-2");
        assert!(t.iter().all(|t| t.address == "127.0.0.1:8080"));
    }
}
