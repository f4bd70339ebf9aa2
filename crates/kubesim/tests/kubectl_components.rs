//! End-to-end: each built-in component of `kubesim up` can be turned off,
//! so that a real kube-scheduler or kube-controller-manager can take its
//! place; and the kinds those programs inform on are served to kubectl.

mod common;

use std::process::Command;
use std::time::Duration;

use common::kubectl::Cluster;

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: nginx}]
"#;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: lone}
spec:
  containers: [{name: c, image: nginx}]
"#;

/// Long enough for any in-process controller or scheduler to have acted.
const SETTLE: Duration = Duration::from_secs(3);

#[test]
fn without_controllers_a_deployment_gets_no_replicaset() {
    let c = Cluster::start_with("no-controllers", &["--nodes", "1", "--controllers", "none"]);
    c.apply(DEPLOYMENT);
    // The scheduler still runs: a bare pod is bound, so the cluster is
    // working, only its controllers are off.
    c.apply(POD);
    c.until(
        &["get", "pod", "lone", "-o", "jsonpath={.spec.nodeName}"],
        |out| !out.trim().is_empty(),
    );
    std::thread::sleep(SETTLE);
    assert!(c.names(&["get", "replicasets"]).is_empty());
    assert_eq!(c.names(&["get", "pods"]), vec!["lone".to_string()]);
}

#[test]
fn one_controller_can_be_left_out() {
    let c = Cluster::start_with(
        "no-deployments",
        &["--controllers", "*,-deployment-controller"],
    );
    c.apply(DEPLOYMENT);
    // The ReplicaSet controller still runs: a ReplicaSet made by hand gets
    // its pods, the Deployment none.
    c.apply(
        r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: by-hand}
spec:
  replicas: 1
  selector: {matchLabels: {app: by-hand}}
  template:
    metadata: {labels: {app: by-hand}}
    spec:
      containers: [{name: c, image: nginx}]
"#,
    );
    c.wait_for("the hand-made ReplicaSet's pod", || {
        c.names(&["get", "pods", "-l", "app=by-hand"]).len() == 1
    });
    std::thread::sleep(SETTLE);
    assert_eq!(
        c.names(&["get", "replicasets"]),
        vec!["by-hand".to_string()]
    );
}

#[test]
fn without_the_scheduler_pods_stay_unbound() {
    let c = Cluster::start_with("no-scheduler", &["--nodes", "1", "--scheduler", "none"]);
    c.apply(DEPLOYMENT);
    // The controllers still run: the Deployment's pods are made.
    c.wait_for("the Deployment's pods", || {
        c.names(&["get", "pods", "-l", "app=web"]).len() == 2
    });
    std::thread::sleep(SETTLE);
    for pod in c.items(&["get", "pods"]) {
        assert!(pod["spec"]["nodeName"].is_null(), "bound: {pod}");
        assert_eq!(pod["status"]["phase"], "Pending");
    }
    // Emulated nodes publish their CSINode, as kubelets do, for a real
    // scheduler's volume plugins.
    let csinodes = c.names(&["get", "csinodes"]);
    assert_eq!(csinodes.len(), 1, "{csinodes:?}");
}

#[test]
fn an_unknown_controller_is_one_clear_error() {
    let o = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args([
            "up",
            "--ephemeral",
            "--listen",
            "127.0.0.1:0",
            "--controllers",
            "*,-deployments",
        ])
        .output()
        .expect("run kubesim");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("\"deployments\" is not in the list of known controllers"),
        "{err}"
    );
}

#[test]
fn kubectl_reads_the_control_plane_kinds() {
    let c = Cluster::start_with("control-plane-kinds", &["--nodes", "1"]);
    let resources = c.ok(&["api-resources", "-o", "name"]);
    for r in [
        "csinodes.storage.k8s.io",
        "csidrivers.storage.k8s.io",
        "csistoragecapacities.storage.k8s.io",
        "volumeattachments.storage.k8s.io",
        "volumeattributesclasses.storage.k8s.io",
        "resourceclaims.resource.k8s.io",
        "resourceclaimtemplates.resource.k8s.io",
        "resourceslices.resource.k8s.io",
        "deviceclasses.resource.k8s.io",
        "validatingadmissionpolicies.admissionregistration.k8s.io",
        "validatingadmissionpolicybindings.admissionregistration.k8s.io",
        "validatingwebhookconfigurations.admissionregistration.k8s.io",
        "mutatingwebhookconfigurations.admissionregistration.k8s.io",
        "servicecidrs.networking.k8s.io",
        "ipaddresses.networking.k8s.io",
        "certificatesigningrequests.certificates.k8s.io",
    ] {
        assert!(
            resources.lines().any(|l| l == r),
            "{r} missing:\n{resources}"
        );
    }
    let table = c.until(&["get", "csinodes"], |out| out.contains("DRIVERS"));
    assert!(table.contains("AGE"), "{table}");
    c.apply(
        r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec: {}
"#,
    );
    let table = c.ok(&["get", "deviceclasses"]);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.contains("gpu.example.com"), "{table}");
}

#[test]
fn kubectl_certificate_approve_writes_the_condition() {
    use base64::Engine;
    let c = Cluster::start("csr-approve");
    let pem = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n");
    c.apply(&format!(
        r#"
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {{name: alice}}
spec:
  request: {pem}
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth]
"#
    ));
    let table = c.ok(&["get", "csr", "alice"]);
    assert!(table.contains("Pending"), "{table}");
    c.ok(&["certificate", "approve", "alice"]);
    let table = c.ok(&["get", "csr", "alice"]);
    assert!(table.contains("Approved"), "{table}");
    let csr = c.json(&["get", "csr", "alice"]);
    assert_eq!(csr["status"]["conditions"][0]["reason"], "KubectlApprove");
}
