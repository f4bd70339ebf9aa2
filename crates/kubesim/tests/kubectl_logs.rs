//! End-to-end: `kubectl logs` on emulated containers, and the clear
//! refusal of `kubectl exec` and `port-forward`.

mod common;

use common::kubectl::Cluster;

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    kubesim.io/logs.app: |-
      listening on :8080
      GET / 200
spec:
  nodeName: somewhere
  containers:
  - {name: app, image: nginx:1.25}
  - {name: sidecar, image: busybox}
";

#[test]
fn logs_exec_and_port_forward() {
    let c = Cluster::start("logs");
    c.apply(POD);
    // Not started yet: the real server's refusal.
    let err = c.fails(&["logs", "web", "-c", "app"]);
    assert!(
        err.contains("container \"app\" in pod \"web\" is waiting to start"),
        "{err}"
    );
    let err = c.fails(&["logs", "web", "-c", "nope"]);
    assert!(
        err.contains("container nope is not valid for pod web"),
        "{err}"
    );
    // The kubelet's report: app runs, sidecar has exited.
    c.ok(&[
        "patch",
        "pod",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running","containerStatuses":[
            {"name":"app","image":"nginx:1.25","ready":true,"restartCount":0,
             "state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}},
            {"name":"sidecar","image":"busybox","ready":false,"restartCount":0,
             "state":{"terminated":{"exitCode":3,"reason":"Error",
               "startedAt":"2026-01-01T00:00:00Z","finishedAt":"2026-01-01T00:01:00Z"}}}]}}"#,
    ]);
    assert_eq!(
        c.ok(&["logs", "web", "-c", "app"]),
        "listening on :8080\nGET / 200\n"
    );
    assert_eq!(
        c.ok(&["logs", "web", "-c", "app", "--tail=1"]),
        "GET / 200\n"
    );
    assert_eq!(
        c.ok(&["logs", "web", "-c", "app", "--timestamps", "--tail=1"]),
        "2026-01-01T00:00:00Z GET / 200\n"
    );
    assert_eq!(
        c.ok(&["logs", "web", "-c", "sidecar"]),
        "kubesim: container sidecar (image busybox) started on node somewhere\n\
         kubesim: container sidecar exited with code 3 (Error)\n"
    );
    // -f returns what there is and ends.
    assert_eq!(
        c.ok(&["logs", "-f", "web", "-c", "app", "--tail=1"]),
        "GET / 200\n"
    );
    let err = c.fails(&["logs", "web", "-c", "app", "--previous"]);
    assert!(err.contains("previous terminated container"), "{err}");

    let err = c.fails(&["exec", "web", "-c", "app", "--", "true"]);
    assert!(err.to_lowercase().contains("not supported"), "{err}");
    let err = c.fails(&["port-forward", "pod/web", "18080:8080"]);
    assert!(err.to_lowercase().contains("not supported"), "{err}");
}
