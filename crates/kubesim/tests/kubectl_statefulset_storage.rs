//! End-to-end: a StatefulSet with a volume claim template, applied and
//! scaled with the real `kubectl` on emulated nodes. Every pod gets its
//! claim `<template>-<set>-<ordinal>` (Pending, as nothing provisions
//! storage), claims survive scale-down under the default Retain policy and
//! are collected under `whenScaled: Delete` and `whenDeleted: Delete`.

mod common;

use common::kubectl::Cluster;
use serde_json::Value;

const STATEFULSET: &str = r#"
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  replicas: 2
  serviceName: web
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: c
        image: nginx:1.25
        volumeMounts: [{name: data, mountPath: /usr/share/nginx/html}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"#;

/// The claims' names, sorted (those being deleted left out).
fn claims(c: &Cluster) -> Vec<String> {
    c.names(&["get", "pvc"])
}

fn claim(c: &Cluster, name: &str) -> Value {
    c.json(&["get", "pvc", name])
}

/// The set's live pods' names, sorted.
fn pods(c: &Cluster) -> Vec<String> {
    c.names(&["get", "pods", "-l", "app=web"])
}

/// Scales the set and waits until exactly `want` pods run and the status
/// says so.
fn scale(c: &Cluster, replicas: &str, want: &[&str]) {
    c.ok(&[
        "scale",
        "statefulset",
        "web",
        &format!("--replicas={replicas}"),
    ]);
    c.wait_for(&format!("pods {want:?}"), || pods(c) == want);
    c.rollout_status("statefulset/web");
}

#[test]
fn statefulset_claims_with_kubectl() {
    let c = Cluster::start_with("sts-storage", &["--nodes", "2"]);
    c.apply(STATEFULSET);
    c.rollout_status("statefulset/web");
    assert_eq!(pods(&c), ["web-0", "web-1"]);
    assert_eq!(claims(&c), ["data-web-0", "data-web-1"]);
    let table = c.ok(&["get", "pvc"]);
    for row in table.lines().skip(1) {
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "Pending", "nothing binds the claims: {table}");
    }
    for i in 0..2 {
        let p = c.json(&["get", "pod", &format!("web-{i}")]);
        assert_eq!(p["status"]["phase"], "Running", "{p}");
        let vol = p["spec"]["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "data")
            .cloned()
            .unwrap();
        assert_eq!(
            vol["persistentVolumeClaim"]["claimName"],
            format!("data-web-{i}")
        );
        let pvc = claim(&c, &format!("data-web-{i}"));
        assert_eq!(pvc["metadata"]["labels"]["app"], "web");
        assert!(pvc["metadata"]["ownerReferences"].is_null(), "{pvc}");
    }

    // Retain (the default): the claim of the removed ordinal stays, owned
    // by nothing, and the pod that comes back mounts it again.
    let uid = claim(&c, "data-web-1")["metadata"]["uid"].clone();
    scale(&c, "1", &["web-0"]);
    let kept = claim(&c, "data-web-1");
    assert_eq!(kept["metadata"]["uid"], uid);
    assert!(kept["metadata"]["ownerReferences"].is_null(), "{kept}");
    scale(&c, "2", &["web-0", "web-1"]);
    assert_eq!(claim(&c, "data-web-1")["metadata"]["uid"], uid);

    // whenScaled: Delete: the claim follows its pod.
    c.ok(&[
        "patch",
        "statefulset",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenScaled":"Delete"}}}"#,
    ]);
    scale(&c, "1", &["web-0"]);
    c.wait_for("data-web-1 collected", || claims(&c) == ["data-web-0"]);

    // whenDeleted: Delete: the set owns the claims and takes them along.
    c.ok(&[
        "patch",
        "statefulset",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"persistentVolumeClaimRetentionPolicy":{"whenDeleted":"Delete"}}}"#,
    ]);
    c.wait_for("data-web-0 owned by the set", || {
        let r = &claim(&c, "data-web-0")["metadata"]["ownerReferences"][0];
        r["kind"] == "StatefulSet" && r["name"] == "web" && r["controller"] == true
    });
    c.ok(&["delete", "statefulset", "web"]);
    c.wait_for("pods and claims gone", || {
        pods(&c).is_empty() && claims(&c).is_empty()
    });
}
