//! End-to-end: `kubesim emulate` as shards against a `kubesim up` whose
//! own emulator is off, over HTTP. Two shards split the nodes; a
//! Deployment of 1,000 replicas runs through them; a shard killed with
//! SIGKILL is taken over with no node going NotReady, and its nodes move
//! back when it returns. Which shard acts for a node is read from the
//! kubelet-style metrics endpoint each shard serves (kwok's own
//! `metrics-resource` Metric), which answers for its own nodes only.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::kubectl::Cluster;
use common::shards::{each_served_once, owners, within, Reader, Shard};
use serde_json::json;

const NODES: usize = 20;

fn shard(c: &Cluster, index: u32) -> Shard {
    Shard::start(&c.kubeconfig, &c.dir, index, 2, NODES, &[])
}

#[test]
fn shards_split_take_over_and_give_back_the_nodes() {
    let c = Cluster::start_with("emulate", &["--emulator", "none"]);
    let r = Reader {
        kubeconfig: c.kubeconfig.clone(),
    };
    let s0 = shard(&c, 0);
    let mut s1 = shard(&c, 1);

    // The pool, made by both shards at once, comes up Ready once.
    within(Duration::from_secs(90), "20 Ready nodes", || {
        let n = r.nodes();
        (n.len() == NODES && n.iter().all(common::shards::ready)).then_some(())
    });
    // kwok's Metric file, unchanged: its path answers for the nodes a
    // shard acts for (the emulators define the Metric kind as they start).
    let metric = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/kwok/kustomize/metrics/resource/metrics-resource.yaml");
    c.until(&["apply", "-f", metric.to_str().unwrap()], |o| {
        o.contains("created") || o.contains("unchanged")
    });
    let names = r.names();
    let split = each_served_once(Duration::from_secs(30), &names, &[&s0, &s1]);
    let of = |i| split.iter().filter(|v| v[0] == i).count();
    assert!(
        of(0) > 0 && of(1) > 0,
        "one shard holds every node: {split:?}"
    );

    // A Deployment of 1,000 replicas runs through both shards.
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1000, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
    c.server.json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some(&deploy),
        201,
    );
    within(Duration::from_secs(300), "1,000 Running pods", || {
        (r.running_pods() == 1000).then_some(())
    });

    // Shard 1 dies: shard 0 takes its nodes over within 30 s, and no
    // node goes NotReady past the node monitor's 40 s grace period.
    s1.process.kill9();
    let killed = Instant::now();
    each_served_once(Duration::from_secs(30), &names, &[&s0]);
    let takeover = killed.elapsed();
    r.all_ready_for(
        Duration::from_secs(45).saturating_sub(killed.elapsed()),
        "after the kill",
    );
    // Pods made now land on the nodes taken over too, and run.
    let scale = json!({"spec": {"replicas": 1100}});
    let (status, body) = c.server.request_bytes(
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/web",
        "application/merge-patch+json",
        scale.to_string().as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    within(Duration::from_secs(120), "1,100 Running pods", || {
        (r.running_pods() == 1100).then_some(())
    });

    // It returns: its nodes move back, and every lease keeps being renewed.
    s1.process.respawn();
    within(
        Duration::from_secs(30),
        "shard 1 to act for its nodes again",
        || {
            let o = owners(&names, &[&s0, &s1]);
            (o == split).then_some(())
        },
    );
    let before = r.renewals();
    r.all_ready_for(Duration::from_secs(15), "after the return");
    let after = r.renewals();
    assert_eq!(before.len(), NODES);
    for ((node, a), (_, b)) in before.iter().zip(&after) {
        assert!(
            b > a,
            "the lease of {node} was not renewed after the return: {a} then {b}"
        );
    }
    eprintln!(
        "takeover after SIGKILL: {:.1} s; shard 0 held {} nodes, shard 1 {}",
        takeover.as_secs_f64(),
        of(0),
        of(1)
    );
}
