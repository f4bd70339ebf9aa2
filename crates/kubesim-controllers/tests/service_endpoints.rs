//! The Endpoints and EndpointSlice controllers in simulated time.

use std::time::Duration;

use kubesim_runtime::{DeleteOptions, ListOptions, ResourceRef};
use serde_json::{json, Value};

mod support;

fn pods() -> ResourceRef {
    ResourceRef::core("pods")
}

fn slices() -> ResourceRef {
    ResourceRef::new("discovery.k8s.io", "v1", "endpointslices")
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx",
            "ports": [{"name": "http", "containerPort": 8080}]}]}})
}

async fn run_pod(c: &support::Env, name: &str, ip: &str, ready: bool) {
    c.create(&pods(), "default", pod(name)).await;
    let status = if ready { "True" } else { "False" };
    c.patch_status_of(
        &pods(),
        "default",
        name,
        json!({"phase": "Running", "podIP": ip,
            "conditions": [{"type": "Ready", "status": status}]}),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn services_get_endpoints_and_slices_of_their_pods() {
    let c = support::start().await;
    c.create(
        &ResourceRef::core("services"),
        "default",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"},
                "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
    )
    .await;
    run_pod(&c, "a", "10.0.0.2", true).await;
    run_pod(&c, "b", "10.0.0.1", false).await;
    // A pod the selector does not match stays out.
    let mut other = pod("other");
    other["metadata"]["labels"]["app"] = json!("db");
    c.create(&pods(), "default", other).await;
    c.clock.sleep(Duration::from_secs(1)).await;

    let ep = c
        .get(&ResourceRef::core("endpoints"), "default", "web")
        .await
        .expect("endpoints");
    // The named targetPort resolves to the container port; the not-ready
    // pod is listed apart.
    assert_eq!(
        ep["subsets"],
        json!([{
            "addresses": [{"ip": "10.0.0.2", "nodeName": "n1",
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "a",
                    "uid": ep["subsets"][0]["addresses"][0]["targetRef"]["uid"]}}],
            "notReadyAddresses": [{"ip": "10.0.0.1", "nodeName": "n1",
                "targetRef": {"kind": "Pod", "namespace": "default", "name": "b",
                    "uid": ep["subsets"][0]["notReadyAddresses"][0]["targetRef"]["uid"]}}],
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
        }])
    );

    let list = c
        .api
        .list(&slices(), "default", &ListOptions::default())
        .await
        .unwrap();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "one slice: {items:?}");
    let s = &items[0];
    assert_eq!(s["metadata"]["labels"]["kubernetes.io/service-name"], "web");
    assert_eq!(s["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert_eq!(s["addressType"], "IPv4");
    let mut eps: Vec<(String, bool)> = s["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["addresses"][0].as_str().unwrap().to_string(),
                e["conditions"]["ready"].as_bool().unwrap(),
            )
        })
        .collect();
    eps.sort();
    assert_eq!(eps, [("10.0.0.1".into(), false), ("10.0.0.2".into(), true)]);

    // A pod going away leaves the endpoints; the service going away takes
    // its Endpoints with it.
    c.api
        .delete(
            &pods(),
            "default",
            "a",
            &DeleteOptions {
                grace_period_seconds: Some(0),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    c.clock.sleep(Duration::from_secs(1)).await;
    let ep = c
        .get(&ResourceRef::core("endpoints"), "default", "web")
        .await
        .unwrap();
    assert!(ep["subsets"][0].get("addresses").is_none(), "{ep}");
    c.api
        .delete(
            &ResourceRef::core("services"),
            "default",
            "web",
            &DeleteOptions::default(),
        )
        .await
        .unwrap();
    c.clock.sleep(Duration::from_secs(1)).await;
    assert!(c
        .get(&ResourceRef::core("endpoints"), "default", "web")
        .await
        .is_none());
}
