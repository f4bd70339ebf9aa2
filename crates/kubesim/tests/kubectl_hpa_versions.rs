//! End-to-end: HorizontalPodAutoscalers served as autoscaling/v2 (the
//! storage version) and autoscaling/v1, one object seen through both.

mod common;

use common::kubectl::Cluster;
use serde_json::{json, Value};

// kubectl drops the version of a short name (`hpa.v1.autoscaling` reads
// the preferred version), so version-specific reads spell the resource out.
const V1: &str = "horizontalpodautoscalers.v1.autoscaling";
const V2: &str = "horizontalpodautoscalers.v2.autoscaling";
const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";

#[test]
fn hpa_through_both_versions() {
    let c = Cluster::start("kubectl-hpa-versions");

    // Discovery: both versions, v2 preferred.
    let g: Value = serde_json::from_str(&c.ok(&["get", "--raw", "/apis/autoscaling"])).unwrap();
    assert_eq!(g["preferredVersion"]["version"], "v2", "{g}");
    let versions: Vec<&str> = g["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, vec!["v2", "v1"]);
    let v1: Value = serde_json::from_str(&c.ok(&["get", "--raw", "/apis/autoscaling/v1"])).unwrap();
    assert!(
        v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "horizontalpodautoscalers/status"),
        "{v1}"
    );

    c.ok(&["create", "deployment", "web", "--image=nginx"]);
    c.ok(&[
        "autoscale",
        "deployment",
        "web",
        "--cpu-percent=50",
        "--min=1",
        "--max=3",
    ]);
    let h1 = c.json(&["get", V1, "web"]);
    assert_eq!(h1["apiVersion"], "autoscaling/v1");
    assert_eq!(h1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(h1["spec"]["maxReplicas"], 3);
    let h2 = c.json(&["get", V2, "web"]);
    assert_eq!(h2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        h2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        50
    );
    for what in [V1, "hpa.v1.autoscaling"] {
        let table = c.ok(&["get", what]);
        assert!(
            table.contains("Deployment/web") && table.contains("/50%"),
            "{table}"
        );
    }

    // A v2 object with a metric v1 cannot express: v1 carries it in an
    // annotation, and a write through v1 keeps it.
    c.apply(
        r#"{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler",
            "metadata":{"name":"mem","namespace":"default"},
            "spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},
              "minReplicas":1,"maxReplicas":4,
              "metrics":[{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"100Mi"}}},
                         {"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}]}}"#,
    );
    let m1 = c.json(&["get", V1, "mem"]);
    assert_eq!(m1["spec"]["targetCPUUtilizationPercentage"], 70);
    let others: Value =
        serde_json::from_str(m1["metadata"]["annotations"][METRICS].as_str().unwrap()).unwrap();
    assert_eq!(
        others,
        json!([{"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}])
    );
    c.ok(&[
        "patch",
        V1,
        "mem",
        "--type=merge",
        "-p",
        r#"{"spec":{"maxReplicas":6}}"#,
    ]);
    let m2 = c.json(&["get", V2, "mem"]);
    assert_eq!(m2["spec"]["maxReplicas"], 6);
    assert_eq!(m2["spec"]["metrics"].as_array().unwrap().len(), 2, "{m2}");
    assert!(m2["metadata"]["annotations"].get(METRICS).is_none(), "{m2}");

    // Created through v1 by manifest, listed and watched through both.
    c.apply(
        r#"{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler",
            "metadata":{"name":"old","namespace":"default"},
            "spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},
              "maxReplicas":2,"targetCPUUtilizationPercentage":40}}"#,
    );
    let list = c.json(&["get", V2]);
    let old = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "old")
        .expect("old in the v2 list")
        .clone();
    assert_eq!(old["apiVersion"], "autoscaling/v2");
    assert_eq!(old["spec"]["metrics"][0]["resource"]["name"], "cpu");
    let (code, body) = c.server.request(
        "GET",
        "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers?watch=true&timeoutSeconds=1",
        None,
    );
    assert_eq!(code, 200);
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(events.len(), 3, "{body}");
    assert!(events
        .iter()
        .all(|e| e["object"]["apiVersion"] == "autoscaling/v1"));
    let (code, body) = c.server.request(
        "GET",
        "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/old",
        None,
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"targetCPUUtilizationPercentage\":40"),
        "{body}"
    );

    // Bad input through v1: a broken annotation, a too small maximum.
    let bad = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bad", "annotations": {METRICS: "{"}},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 2}});
    let path = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    let (code, resp) = c.server.request("POST", path, Some(&bad.to_string()));
    assert_eq!(code, 400, "{resp}");
    let bad = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bad"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 0}});
    let (code, resp) = c.server.request("POST", path, Some(&bad.to_string()));
    assert_eq!(code, 422, "{resp}");

    c.ok(&["delete", V1, "old"]);
    let err = c.fails(&["get", V2, "old"]);
    assert!(err.contains("NotFound"), "{err}");
}
