use serde_json::json;

use super::*;
use crate::Registry;

fn res(group: &str, version: &str, plural: &str) -> std::sync::Arc<ResourceInfo> {
    Registry::new().get(group, version, plural).expect(plural)
}

fn hpa_v2() -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 5,
            "metrics": [
                {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}
        },
        "status": {
            "currentReplicas": 2, "desiredReplicas": 3,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 70, "averageValue": "140m"}}}
            ],
            "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]
        }
    })
}

#[test]
fn hpa_v1_view_carries_the_rest_in_annotations() {
    let v1r = res("autoscaling", "v1", "horizontalpodautoscalers");
    let v1 = from_storage(&v1r, hpa_v2());
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 50);
    assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 70);
    assert!(v1["spec"].get("metrics").is_none());
    let notes = &v1["metadata"]["annotations"];
    assert_eq!(notes["team"], "a");
    let others: Value = serde_json::from_str(notes[hpa_key("metrics")].as_str().unwrap()).unwrap();
    assert_eq!(
        others,
        json!([
            {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}},
            {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10"}}
        ])
    );
    let current: Value =
        serde_json::from_str(notes[hpa_key("current-metrics")].as_str().unwrap()).unwrap();
    assert_eq!(
        current,
        json!([{"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 70, "currentAverageValue": "140m"}}])
    );
    assert!(notes[hpa_key("behavior")].is_string());
    assert!(notes[hpa_key("conditions")].is_string());

    // Back to v2: the same object, annotations consumed.
    let back = to_storage(&v1r, v1).unwrap();
    assert_eq!(back, hpa_v2());
}

fn hpa_key(k: &str) -> String {
    format!("autoscaling.alpha.kubernetes.io/{k}")
}

#[test]
fn hpa_v1_without_annotations() {
    let v1r = res("autoscaling", "v1", "horizontalpodautoscalers");
    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
        "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentCPUUtilizationPercentage": 20}});
    let v2 = to_storage(&v1r, v1.clone()).unwrap();
    assert_eq!(
        v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}])
    );
    assert_eq!(
        v2["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
        20
    );
    // The CPU status comes back with its annotation, which v1 readers ignore.
    let again = from_storage(&v1r, v2);
    assert_eq!(again["spec"], v1["spec"]);
    assert_eq!(again["status"]["currentCPUUtilizationPercentage"], 20);
}

#[test]
fn hpa_bad_annotation_is_a_bad_request() {
    let v1r = res("autoscaling", "v1", "horizontalpodautoscalers");
    let v1 = json!({"metadata": {"annotations": {hpa_key("metrics"): "{not json"}}, "spec": {}});
    assert_eq!(to_storage(&v1r, v1).unwrap_err().code, 400);
    let v1 = json!({"metadata": {"annotations": {hpa_key("behavior"): 5}}, "spec": {}});
    assert_eq!(to_storage(&v1r, v1).unwrap_err().code, 400);
}

#[test]
fn events_map_both_ways() {
    let ev = res("events.k8s.io", "v1", "events");
    let core = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started", "message": "started container",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:01:00Z",
        "count": 2, "type": "Normal", "eventTime": null,
        "reportingComponent": "", "reportingInstance": ""
    });
    let v1 = from_storage(&ev, core);
    assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
    assert_eq!(v1["regarding"]["name"], "p");
    assert_eq!(v1["note"], "started container");
    assert_eq!(v1["reportingController"], "kubelet");
    assert_eq!(v1["reportingInstance"], "node-1");
    assert_eq!(v1["deprecatedSource"]["host"], "node-1");
    assert_eq!(v1["deprecatedCount"], 2);
    assert_eq!(v1["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
    assert!(v1.get("involvedObject").is_none() && v1.get("message").is_none());

    let written = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e2", "namespace": "default"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
        "action": "Scale", "reason": "Scaled", "type": "Normal", "note": "scaled",
        "regarding": {"kind": "Deployment", "name": "d", "namespace": "default"},
        "related": {"kind": "ReplicaSet", "name": "r"},
        "series": {"count": 3, "lastObservedTime": "2026-01-01T00:00:05.000000Z"}
    });
    let stored = to_storage(&ev, written.clone()).unwrap();
    assert_eq!(stored["apiVersion"], "v1");
    assert_eq!(stored["involvedObject"]["kind"], "Deployment");
    assert_eq!(stored["message"], "scaled");
    assert_eq!(stored["reportingComponent"], "example.com/ctl");
    assert_eq!(stored["series"]["count"], 3);
    assert_eq!(from_storage(&ev, stored), written);
}

#[test]
fn storage_versions_share_one_key() {
    let r = Registry::new();
    for (a, b) in [
        (
            ("autoscaling", "v1", "horizontalpodautoscalers"),
            ("autoscaling", "v2", "horizontalpodautoscalers"),
        ),
        (("events.k8s.io", "v1", "events"), ("", "v1", "events")),
    ] {
        let a = r.get(a.0, a.1, a.2).unwrap();
        let b = r.get(b.0, b.1, b.2).unwrap();
        assert_eq!(a.storage_key(), b.storage_key());
        assert!(is_converted(&a) && !is_converted(&b));
    }
}

#[test]
fn hpa_every_metric_type_survives_v1() {
    let v2r = res("autoscaling", "v2", "horizontalpodautoscalers");
    let v1r = res("autoscaling", "v1", "horizontalpodautoscalers");
    let mut hpa = hpa_v2();
    hpa["spec"]["metrics"] = json!([
        {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "main"},
            "metric": {"name": "rps"}, "target": {"type": "Value", "value": "2k"}}},
        {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "main"},
            "metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "20"}}},
        {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
            "target": {"type": "Value", "value": "30"}}},
        {"type": "External", "external": {"metric": {"name": "queue"},
            "target": {"type": "AverageValue", "averageValue": "3"}}},
        {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
            "target": {"type": "Utilization", "averageUtilization": 80}}}
    ]);
    hpa["status"]["currentMetrics"] = json!([
        {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "main"},
            "metric": {"name": "rps"}, "current": {"value": "1k", "averageValue": "10"}}},
        {"type": "External", "external": {"metric": {"name": "queue"}, "current": {"value": "12", "averageValue": "4"}}},
        {"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "7"}}}
    ]);
    let v1 = from_storage(&v1r, hpa.clone());
    let notes = &v1["metadata"]["annotations"];
    let specs: Value = serde_json::from_str(notes[hpa_key("metrics")].as_str().unwrap()).unwrap();
    assert_eq!(
        specs[2],
        json!({"type": "External", "external": {"metricName": "queue",
            "metricSelector": {"matchLabels": {"q": "a"}}, "targetValue": "30"}})
    );
    assert_eq!(
        specs[1],
        json!({"type": "Object", "object": {"target": {"kind": "Ingress", "name": "main"},
            "metricName": "rps", "averageValue": "20"}})
    );
    assert_eq!(to_storage(&v1r, v1).unwrap(), hpa);
    assert_eq!(from_storage(&v2r, hpa.clone()), hpa);
}
