//! End-to-end: `kubesim up --nodes N` gives Ready emulated nodes that run
//! what kubectl asks for, moved along by kwok's default Stages; kwok's
//! chaos Stage file works unchanged (in `up`, and through `kubesim
//! emulate`); exec and port-forward say plainly
//! that they are not supported.

mod common;

use std::path::PathBuf;

use common::emulate::Emulate;
use common::kubectl::Cluster;

fn testdata(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn ready_nodes(c: &Cluster) -> usize {
    c.items(&["get", "nodes"])
        .iter()
        .filter(|n| {
            n["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .count()
}

#[test]
fn deployments_run_on_emulated_nodes() {
    let c = Cluster::start_with("emulator-deploy", &["--nodes", "3"]);
    c.wait_for("3 Ready nodes", || ready_nodes(&c) == 3);
    let wide = c.ok(&["get", "nodes", "-o", "wide"]);
    assert!(
        wide.contains("Ready") && wide.contains("kubesim-"),
        "{wide}"
    );

    c.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=4",
    ]);
    c.rollout_status("deployment/web");
    let pods = c.items(&["get", "pods", "-l", "app=web"]);
    assert_eq!(pods.len(), 4);
    let mut ips: Vec<String> = Vec::new();
    for p in &pods {
        assert_eq!(p["status"]["phase"], "Running", "{p}");
        let node = p["spec"]["nodeName"].as_str().unwrap();
        let n = c.json(&["get", "node", node]);
        let cidr = n["spec"]["podCIDR"].as_str().unwrap();
        let ip = p["status"]["podIP"].as_str().unwrap().to_string();
        // A /24 pod CIDR: the pod's address shares its first three octets.
        let prefix = cidr.rsplit_once('.').unwrap().0;
        assert!(ip.starts_with(prefix), "{ip} not in {cidr}");
        ips.push(ip);
    }
    ips.sort();
    ips.dedup();
    assert_eq!(ips.len(), 4, "distinct pod IPs");

    // The emulated kubelet finishes graceful deletion, so this returns.
    let victim = pods[0]["metadata"]["name"].as_str().unwrap();
    c.ok(&["delete", "pod", victim, "--timeout=60s"]);
    c.rollout_status("deployment/web");

    let stages = c.ok(&["get", "stages"]);
    for s in [
        "node-initialize",
        "node-heartbeat-with-lease",
        "pod-ready",
        "pod-complete",
        "job-pod-complete",
        "pod-delete",
    ] {
        assert!(stages.contains(s), "{stages}");
    }

    let running = c.items(&["get", "pods", "-l", "app=web"]);
    let name = running[0]["metadata"]["name"].as_str().unwrap();
    let err = c.fails(&["exec", name, "--", "true"]);
    assert!(err.to_lowercase().contains("not supported"), "{err}");
    let err = c.fails(&["port-forward", name, "8080:80"]);
    assert!(err.to_lowercase().contains("not supported"), "{err}");
}

#[test]
fn jobs_finish_after_their_run_duration() {
    let c = Cluster::start_with("emulator-job", &["--nodes", "1"]);
    c.wait_for("a Ready node", || ready_nodes(&c) == 1);
    c.apply(
        "apiVersion: batch/v1
kind: Job
metadata: {name: sim}
spec:
  completions: 2
  parallelism: 2
  template:
    metadata:
      annotations: {kubesim.io/run-duration: 2s}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
",
    );
    c.ok(&[
        "wait",
        "--for=condition=complete",
        "job/sim",
        "--timeout=60s",
    ]);
    let job = c.json(&["get", "job", "sim"]);
    assert_eq!(job["status"]["succeeded"], 2);
    for p in c.items(&["get", "pods", "-l", "job-name=sim"]) {
        assert_eq!(p["status"]["phase"], "Succeeded");
        let t = &p["status"]["containerStatuses"][0]["state"]["terminated"];
        assert_eq!(t["reason"], "Completed");
    }
}

#[test]
fn kwoks_chaos_stages_apply_unchanged() {
    kwoks_chaos_stage(&Cluster::start_with("emulator-chaos", &["--nodes", "1"]));
}

#[test]
fn kwoks_chaos_stages_act_through_emulate() {
    let c = Cluster::start_with("emulator-chaos-attached", &["--emulator", "none"]);
    let _emulate = Emulate::start(&c.kubeconfig, &["--nodes", "1"], &c.dir, "emulate");
    kwoks_chaos_stage(&c);
}

fn kwoks_chaos_stage(c: &Cluster) {
    c.wait_for("a Ready node", || ready_nodes(c) == 1);
    c.ok(&[
        "apply",
        "-f",
        &testdata("kwok/kustomize/stage/pod/chaos/pod-container-running-failed.yaml"),
    ]);
    c.until(&["get", "stage", "pod-container-running-failed"], |_| true);
    c.apply(
        "apiVersion: v1
kind: Pod
metadata:
  name: flaky
  labels: {pod-container-running-failed.stage.kwok.x-k8s.io: \"true\"}
  annotations: {pod-container-running-failed.stage.kwok.x-k8s.io/exit-code: \"3\"}
spec:
  containers: [{name: app, image: busybox}]
",
    );
    let out = c.until(
        &[
            "get",
            "pod",
            "flaky",
            "-o",
            "jsonpath={.status.containerStatuses[0].state.terminated.exitCode}",
        ],
        |o| o.trim() == "3",
    );
    assert_eq!(out.trim(), "3");
}

#[test]
fn kwoks_volume_stages_provision_and_bind_claims() {
    // kwok's volume Stages (CEL selectors, an `apply` step creating the
    // PersistentVolume) and their StorageClass, applied unchanged.
    let c = Cluster::start_with("emulator-volume", &["--nodes", "1"]);
    c.ok(&[
        "apply",
        "-f",
        &testdata("kwok/kustomize/stage/volume/fast/"),
    ]);
    c.until(&["get", "stage", "pvc-provision"], |_| true);
    c.apply(
        "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: kwok-volume
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
",
    );
    let phase = c.until(
        &["get", "pvc", "data", "-o", "jsonpath={.status.phase}"],
        |o| o.trim() == "Bound",
    );
    assert_eq!(phase.trim(), "Bound");
    let pvc = c.json(&["get", "pvc", "data"]);
    // As the API server's in-use protection admission sets it.
    assert_eq!(
        pvc["metadata"]["finalizers"],
        serde_json::json!(["kubernetes.io/pvc-protection"])
    );
    let volume = pvc["spec"]["volumeName"].as_str().unwrap().to_string();
    assert_eq!(
        volume,
        format!("pvc-{}", pvc["metadata"]["uid"].as_str().unwrap())
    );
    // The provisioned volume is bound to the claim by pv-bind.
    let pv_phase = c.until(
        &["get", "pv", &volume, "-o", "jsonpath={.status.phase}"],
        |o| o.trim() == "Bound",
    );
    assert_eq!(pv_phase.trim(), "Bound");
    let pv = c.json(&["get", "pv", &volume]);
    assert_eq!(pv["spec"]["claimRef"]["name"], "data");
    assert_eq!(pv["spec"]["capacity"]["storage"], "5Gi");

    // Deleting the claim releases the volume (pvc-delete, pv-delete).
    c.ok(&["delete", "pvc", "data", "--wait=true", "--timeout=60s"]);
    c.until(&["get", "pv", "-o", "name"], |o| !o.contains(&volume));
}

/// kube-controller-manager's `--terminated-pod-gc-threshold`: past it, the
/// pod garbage collector deletes the oldest finished pods, on its 20-second
/// beat.
#[test]
fn finished_pods_beyond_the_gc_threshold_are_deleted_oldest_first() {
    let c = Cluster::start_with(
        "emulator-podgc",
        &["--nodes", "1", "--terminated-pod-gc-threshold", "1"],
    );
    c.wait_for("a Ready node", || ready_nodes(&c) == 1);
    let phase = |name: &str| c.json(&["get", "pod", name])["status"]["phase"].clone();
    for name in ["first", "second", "third"] {
        c.apply(&format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations:\n    kubesim.io/run-duration: 1s\nspec:\n  restartPolicy: Never\n  containers:\n  - name: c\n    image: busybox\n"
        ));
        // Each finishes before the next is created, so that their creation
        // times (whole seconds) order them.
        c.wait_for(&format!("{name} Succeeded"), || phase(name) == "Succeeded");
    }
    c.wait_for("the two oldest collected", || {
        c.names(&["get", "pods"]) == ["third"]
    });
}
