//! End-to-end: Apate's example configurations applied unchanged with
//! kubectl, the scenario started with `kubesim scenario start`, the
//! emulator's doing seen through kubectl; with the emulator in `kubesim
//! up`, and as a `kubesim emulate` process over HTTP.

mod common;

use std::process::Command;

use common::emulate::Emulate;
use common::kubectl::Cluster;

const NODES: &str = "apiVersion: apate.opendc.org/v1
kind: NodeConfiguration
metadata:
    name: workers
spec:
    replicas: 2
    resources:
        memory: 5G
        cpu: 5
        storage: 5T
        ephemeral_storage: 120G
        max_pods: 150
";

/// Apate's examples/pod_crd.yml, verbatim.
const POD_CRD: &str = "apiVersion: apate.opendc.org/v1
kind: PodConfiguration
metadata:
    name: crd-deployment
spec:
    pod_resources:
        memory: 1G
    tasks:
        - timestamp: 1s
          state:
              pod_resources:
                  cpu: 1
                  memory: 5G
        - timestamp: 5s
          state:
              pod_status: FAILED
";

/// A workload as Apate's examples write them: on emulated nodes only.
const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: nginx
  labels: {apate: crd-deployment}
spec:
  nodeSelector: {emulated: \"yes\"}
  tolerations: [{key: emulated, operator: Exists, effect: NoSchedule}]
  containers: [{name: nginx, image: nginx}]
";

fn scenario(c: &Cluster, action: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args(["scenario", action, "--kubeconfig"])
        .arg(&c.kubeconfig)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "scenario {action}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn apate_configurations_with_kubectl() {
    apate_configurations(&Cluster::start("apate"));
}

#[test]
fn apate_configurations_through_emulate() {
    let c = Cluster::start_with("apate-attached", &["--emulator", "none"]);
    let _emulate = Emulate::start(&c.kubeconfig, &[], &c.dir, "emulate");
    apate_configurations(&c);
}

fn apate_configurations(c: &Cluster) {
    // The kinds are served once the emulator has defined them.
    c.until(&["api-resources", "--api-group=apate.opendc.org"], |o| {
        o.contains("nodeconfigurations") && o.contains("podconfigurations")
    });
    c.apply(NODES);
    c.apply(POD_CRD);
    let nodes = c.until(&["get", "nodes", "-l", "emulated=yes", "-o", "name"], |o| {
        o.lines().count() == 2
    });
    assert!(nodes.contains("node/workers-00000"), "{nodes}");
    let cap = c.ok(&[
        "get",
        "node",
        "workers-00001",
        "-o",
        "jsonpath={.status.capacity.cpu} {.status.capacity.pods} {.metadata.labels.apate-name}",
    ]);
    assert_eq!(cap, "5 150 workers");
    assert_eq!(
        c.ok(&["get", "nc", "-o", "name"]).trim(),
        "nodeconfiguration.apate.opendc.org/workers"
    );

    assert!(scenario(c, "status").contains("not started"));
    c.apply(POD);
    // Scheduled onto an emulated node (the only ones it tolerates).
    c.until(
        &["get", "pod", "nginx", "-o", "jsonpath={.spec.nodeName}"],
        |o| o.starts_with("workers-"),
    );
    let started = scenario(c, "start");
    assert!(started.starts_with("scenario started at "), "{started}");
    assert!(scenario(c, "status").contains("scenario started at"));
    // 5 s into the scenario the configuration fails the pod.
    c.until(
        &["get", "pod", "nginx", "-o", "jsonpath={.status.phase}"],
        |o| o == "Failed",
    );
    let events = c.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=nginx",
    ]);
    assert!(events.contains("EmulatedStatus"), "{events}");
    assert!(
        events.contains("PodConfiguration crd-deployment set the pod Failed"),
        "{events}"
    );

    // Scaling the configuration down removes a node.
    c.ok(&[
        "patch",
        "nc",
        "workers",
        "--type=merge",
        "-p",
        "{\"spec\":{\"replicas\":1}}",
    ]);
    c.until(&["get", "nodes", "-l", "emulated=yes", "-o", "name"], |o| {
        o.lines().count() == 1
    });
}
