//! `kubesim bench scheduler`: how fast the scheduler places a backlog of
//! pending pods on a large cluster. Everything runs in this process on an
//! ephemeral store, reached through the in-process Api (no HTTP).

use std::sync::Arc;
use std::time::Duration;

use kubesim_runtime::{Clock, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Options};
use serde_json::{json, Value};

use super::bench::{cpu_seconds, percentile, BenchArgs};

const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(bench(args.nodes, args.pods, args.affinity, args.deployment))
}

fn node(i: usize) -> Value {
    let name = format!("node-{i:05}");
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": ZONES[i % ZONES.len()],
        }},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"},
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"},
        },
    })
}

fn pod(i: usize, affinity: bool) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i:06}"), "namespace": "default", "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
    });
    if affinity {
        let sel = json!({"matchLabels": {"app": "bench"}});
        p["spec"]["affinity"] = json!({"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
                "labelSelector": sel, "topologyKey": "kubernetes.io/hostname"}}]}});
        p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": sel}]);
    }
    p
}

async fn bench(nodes: usize, pods: usize, affinity: bool, deployment: bool) -> anyhow::Result<()> {
    let clock = Clock::wall();
    let cluster = kubesim_cluster::Cluster::bootstrap(kubesim_cluster::ClusterOptions {
        store: Arc::new(MemStore::ephemeral(Options::default())),
        clock: clock.clone(),
        rng: Rng::seeded(1),
    })
    .await?;
    let api = cluster.api("bench");
    let w = WriteOptions::default();
    let t0 = clock.instant();
    for i in 0..nodes {
        api.create(&ResourceRef::core("nodes"), "", node(i), &w)
            .await
            .map_err(|e| anyhow::anyhow!("create node: {}", e.message))?;
    }
    if deployment {
        // One Deployment of `pods` replicas: the controllers make the pods
        // while the scheduler places them.
        let template = pod(0, affinity);
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "bench", "namespace": "default"},
            "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "bench"}},
                "template": {"metadata": {"labels": {"app": "bench"}}, "spec": template["spec"]}}});
        api.create(
            &ResourceRef::new("apps", "v1", "deployments"),
            "default",
            d,
            &w,
        )
        .await
        .map_err(|e| anyhow::anyhow!("create deployment: {}", e.message))?;
        println!(
            "created {nodes} nodes and a Deployment of {pods} replicas in {:.2}s",
            (clock.instant() - t0).as_secs_f64()
        );
    } else {
        for i in 0..pods {
            api.create(&ResourceRef::core("pods"), "default", pod(i, affinity), &w)
                .await
                .map_err(|e| anyhow::anyhow!("create pod: {}", e.message))?;
        }
        println!(
            "created {nodes} nodes and {pods} pending pods in {:.2}s",
            (clock.instant() - t0).as_secs_f64()
        );
    }

    let metrics = Arc::new(kubesim_scheduler::Metrics::with_samples());
    let start = clock.instant();
    let cpu0 = cpu_seconds("self");
    // The nodes have no kubelets renewing Leases (as in kube-scheduler's
    // own benchmarks), so the node lifecycle controller stays off rather
    // than taint every node unreachable after 40 s.
    let running = cluster
        .start(kubesim_cluster::Components {
            controllers: deployment.then(|| kubesim_cluster::ControllerManager {
                options: kubesim_controllers::Options {
                    node_lifecycle: false,
                    ..Default::default()
                },
                root_ca: None,
            }),
            scheduler: Some(kubesim_cluster::SchedulerPart {
                config: kubesim_scheduler::SchedulerConfig::default(),
                builtin: true,
                metrics: Some(metrics.clone()),
            }),
            emulator: None,
        })
        .await?;
    // Bindings are counted by the scheduler's own metrics, so that the
    // measurement adds no watch of its own to the process.
    let mut finished = false;
    for _ in 0..60_000 {
        if metrics.attempt_durations.lock().len() >= pods {
            finished = true;
            break;
        }
        clock.sleep(Duration::from_millis(10)).await;
    }
    let elapsed = clock.instant() - start;
    let cpu = cpu_seconds("self") - cpu0;
    drop(running);
    let mut lat = metrics.attempt_durations.lock().clone();
    let placed = lat.len();
    lat.sort();
    println!(
        "scheduler: {placed}/{pods} pods bound on {nodes} nodes in {:.2}s: {:.0} pods/s{}",
        elapsed.as_secs_f64(),
        placed as f64 / elapsed.as_secs_f64(),
        match (deployment, affinity) {
            (true, true) => " (from a Deployment, with affinity/spread)",
            (true, false) => " (from a Deployment: controllers creating them too)",
            (false, true) => " (with affinity/spread)",
            (false, false) => "",
        }
    );
    println!(
        "scheduling attempt (queue pop to binding written): p50 {:.3} ms, p99 {:.3} ms",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
    println!(
        "process CPU while scheduling: {cpu:.2}s ({:.0} pods per CPU-second; the machine's other load does not count)",
        placed as f64 / cpu.max(0.01)
    );
    if !finished {
        anyhow::bail!("not every pod was bound within 10 minutes");
    }
    Ok(())
}
