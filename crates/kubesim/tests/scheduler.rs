//! End-to-end: the built-in scheduler seen through the real `kubectl`.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::Kubesim;

fn kubectl(server: &Kubesim, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new("kubectl")
        .env("KUBECONFIG", server.kubeconfig())
        .arg("--cache-dir")
        .arg(server.data_dir().join("cache"))
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl is installed");
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn ok(server: &Kubesim, args: &[&str], stdin: Option<&str>) -> String {
    let o = kubectl(server, args, stdin);
    assert!(
        o.status.success(),
        "kubectl {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const NODES: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: worker-1, labels: {kubernetes.io/hostname: worker-1}}
status:
  capacity: {cpu: "2", memory: 4Gi, pods: "110"}
  allocatable: {cpu: "2", memory: 4Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata: {name: worker-2, labels: {kubernetes.io/hostname: worker-2}}
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
"#;

fn pod(name: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources: {{requests: {{cpu: \"{cpu}\", memory: 100Mi}}}}\n"
    )
}

#[test]
fn kubectl_sees_pods_scheduled_and_a_too_big_one_pending() {
    let server = Kubesim::start_ephemeral("scheduler");
    ok(&server, &["apply", "-f", "-"], Some(NODES));
    let manifest = [pod("small", "500m"), pod("medium", "3"), pod("huge", "16")].join("---\n");
    ok(&server, &["apply", "-f", "-"], Some(&manifest));

    let node_of = |name: &str| {
        ok(
            &server,
            &["get", "pod", name, "-o", "jsonpath={.spec.nodeName}"],
            None,
        )
    };
    let mut placed = (String::new(), String::new());
    for _ in 0..100 {
        placed = (node_of("small"), node_of("medium"));
        if !placed.0.is_empty() && !placed.1.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // 3 cpu fits only the 4-cpu node; 500m goes to the emptier node.
    assert_eq!(placed.1, "worker-2");
    assert!(!placed.0.is_empty(), "small was not scheduled");

    // 16 cpu fits nowhere.
    let mut describe = String::new();
    for _ in 0..100 {
        describe = ok(&server, &["describe", "pod", "huge"], None);
        if describe.contains("FailedScheduling") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(describe.contains("Pending"), "{describe}");
    assert!(describe.contains("FailedScheduling"), "{describe}");
    assert!(
        describe.contains("0/2 nodes are available: 2 Insufficient cpu."),
        "{describe}"
    );
    assert_eq!(node_of("huge"), "");

    let mut d = String::new();
    for _ in 0..100 {
        d = ok(&server, &["describe", "pod", "medium"], None);
        if d.contains("Scheduled") && d.contains("Successfully assigned default/medium to worker-2")
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        d.contains("Successfully assigned default/medium to worker-2"),
        "{d}"
    );
    assert!(d.contains("default-scheduler"), "{d}");
}
