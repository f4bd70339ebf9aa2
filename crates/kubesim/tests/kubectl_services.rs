//! End-to-end with the real `kubectl`: Services get Endpoints and
//! EndpointSlices of their ready pods, and a node that goes silent is
//! marked unreachable and emptied.

mod common;

use std::time::Duration;

use common::kubectl::Cluster;
use common::kubelet::{pod_ip, FakeKubelet};

const STEP: Duration = Duration::from_millis(250);

const SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-a, labels: {app: web}}
spec:
  containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: web-b, labels: {app: web}}
spec:
  containers: [{name: c, image: nginx, ports: [{name: http, containerPort: 8080}]}]
"#;

#[test]
fn services_get_endpoints_of_their_pods() {
    let c = Cluster::start("services");
    let _kubelet = FakeKubelet::start(c.server.port(), false);
    c.apply_stdin(&["apply", "-f", "-"], SERVICE);
    let mut want = vec![pod_ip("web-a"), pod_ip("web-b")];
    want.sort();
    let ips = c.eventually("endpoints of both pods", 120, STEP, || {
        let out = c.ok(&[
            "get",
            "endpoints",
            "web",
            "-o",
            "jsonpath={.subsets[0].addresses[*].ip}",
        ]);
        let mut ips: Vec<String> = out.split_whitespace().map(String::from).collect();
        ips.sort();
        (ips.len() == 2).then_some(ips)
    });
    assert_eq!(ips, want);
    let port = c.ok(&[
        "get",
        "endpoints",
        "web",
        "-o",
        "jsonpath={.subsets[0].ports[0].port}",
    ]);
    assert_eq!(
        port, "8080",
        "the named targetPort resolves to the container port"
    );
    // The table shows ip:port pairs.
    let table = c.ok(&["get", "endpoints", "web"]);
    assert!(table.contains(&format!("{}:8080", want[0])), "{table}");

    let slices = c.ok(&[
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=web",
        "-o",
        "jsonpath={.items[*].endpoints[*].addresses[0]}",
    ]);
    let mut got: Vec<&str> = slices.split_whitespace().collect();
    got.sort();
    assert_eq!(got, want.iter().map(String::as_str).collect::<Vec<_>>());

    // A deleted pod leaves the endpoints.
    c.ok(&["delete", "pod", "web-a", "--wait=false"]);
    c.eventually("the endpoints to drop web-a", 120, STEP, || {
        let out = c.ok(&[
            "get",
            "endpoints",
            "web",
            "-o",
            "jsonpath={.subsets[0].addresses[*].ip}",
        ]);
        (out.trim() == pod_ip("web-b")).then_some(())
    });
}

const NODE: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: silent}
---
apiVersion: v1
kind: Pod
metadata: {name: doomed}
spec:
  nodeName: silent
  tolerations:
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
  containers: [{name: c, image: nginx}]
"#;

/// Takes the node monitor's 40 s grace period in real time.
#[test]
fn a_silent_node_is_tainted_and_emptied() {
    let c = Cluster::start("silent-node");
    c.apply_stdin(&["apply", "-f", "-"], NODE);
    // No kubelet posts for the node: after the grace period it is Unknown,
    // tainted, and the pod (tolerating 1 s) is evicted.
    let taints = c.eventually("the unreachable taints", 240, STEP, || {
        let t = c.ok(&[
            "get",
            "node",
            "silent",
            "-o",
            "jsonpath={.spec.taints[*].key}",
        ]);
        (!t.is_empty()).then_some(t)
    });
    assert_eq!(
        taints,
        "node.kubernetes.io/unreachable node.kubernetes.io/unreachable"
    );
    let ready = c.ok(&[
        "get",
        "node",
        "silent",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
    ]);
    assert_eq!(ready, "Unknown");
    let table = c.ok(&["get", "node", "silent"]);
    assert!(table.contains("NotReady"), "{table}");
    c.eventually("the pod to be evicted", 120, STEP, || {
        let o = c.kubectl(&[
            "get",
            "pod",
            "doomed",
            "-o",
            "jsonpath={.metadata.deletionTimestamp}",
        ]);
        (!o.status.success() || !o.stdout.is_empty()).then_some(())
    });
    let events = c.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=doomed",
    ]);
    assert!(events.contains("TaintManagerEviction"), "{events}");
}
