//! Per-request costs in the object model: selectors, patches, tables,
//! decoding checks.

use criterion::{criterion_group, criterion_main, Criterion};
use kubesim_core::patch::{apply_patch, PatchType};
use kubesim_core::selector::LabelSelector;
use kubesim_core::table::{table, IncludeObject, TableOptions};
use kubesim_core::Registry;
use serde_json::json;

fn selectors(c: &mut Criterion) {
    let text = "app=web,tier in (front,back),!canary,env!=test";
    c.bench_function("selector/parse", |b| {
        b.iter(|| LabelSelector::parse(text).expect("parse"))
    });
    let sel = LabelSelector::parse(text).expect("parse");
    let labels: std::collections::BTreeMap<String, String> = [
        ("app", "web"),
        ("tier", "front"),
        ("env", "prod"),
        ("pod-template-hash", "abc"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    c.bench_function("selector/match", |b| b.iter(|| sel.matches_map(&labels)));
}

fn patches(c: &mut Criterion) {
    let reg = Registry::new();
    let deploy = reg.get("apps", "v1", "deployments").expect("deployments");
    let cur = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}]}, {"name": "side", "image": "busybox"}]}}}});
    let body = br#"{"spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"side"}],"template":{"spec":{"containers":[{"name":"c","image":"nginx:2"}]}}}}"#;
    c.bench_function("patch/strategic merge of a deployment", |b| {
        b.iter(|| apply_patch(PatchType::Strategic, &deploy, &cur, body).expect("patch"))
    });
}

fn tables(c: &mut Criterion) {
    let reg = Registry::new();
    let pods = reg.get("", "v1", "pods").expect("pods");
    let objs: Vec<_> = (0..500)
        .map(|i| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("p{i}"), "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "state": {"running": {}}}]}}))
        .collect();
    let opts = TableOptions {
        include: IncludeObject::Metadata,
        now: "2026-01-01T01:00:00Z".parse().expect("time"),
        headers: true,
    };
    c.bench_function("table/500 pods", |b| b.iter(|| table(&pods, &objs, &opts)));
}

/// What checking a write's types costs: a pod as a controller or kubectl
/// sends it (defaulted fields included), walked against the Pod schema.
fn decoding(c: &mut Criterion) {
    let reg = Registry::new();
    let pods = reg.get("", "v1", "pods").expect("pods");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-7d4b9c-abcde", "namespace": "default", "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c", "uid": "u", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "securityContext": {}, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]}});
    c.bench_function("decode/type check of a pod", |b| {
        b.iter(|| {
            let mut p = pod.clone();
            kubesim_core::schema::decode_object(&pods, &mut p).expect("decodes")
        })
    });
    c.bench_function("decode/clone of the same pod (baseline)", |b| {
        b.iter(|| pod.clone())
    });
}

criterion_group!(benches, selectors, patches, tables, decoding);
criterion_main!(benches);
