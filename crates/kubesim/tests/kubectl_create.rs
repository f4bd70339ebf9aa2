//! End-to-end: kubectl commands whose typed clients send protobuf bodies
//! (`create <kind>`, `autoscale`, `drain`), checked by reading back what the
//! server stored.

mod common;

use std::path::PathBuf;
use std::process::Command;

use base64::Engine as _;
use common::Kubesim;
use serde_json::{json, Value};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

struct Cluster {
    server: Kubesim,
    dir: PathBuf,
}

fn start(name: &str) -> Cluster {
    let server = Kubesim::start_ephemeral(&format!("kubectl-create-{name}"));
    Cluster {
        dir: server.data_dir().to_path_buf(),
        server,
    }
}

impl Cluster {
    /// Runs kubectl, expects success, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let o = Command::new("kubectl")
            .env("KUBECONFIG", self.server.kubeconfig())
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args)
            .output()
            .expect("kubectl is installed");
        assert!(
            o.status.success(),
            "kubectl {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// `kubectl get <what> -o json`, parsed.
    fn get(&self, what: &[&str]) -> Value {
        let args = [&["get"], what, &["-o", "json"]].concat();
        serde_json::from_str(&self.ok(&args)).expect("kubectl prints JSON")
    }

    fn apply(&self, manifest: &str) {
        let path = self.dir.join("manifest.yaml");
        std::fs::write(&path, manifest).unwrap();
        self.ok(&["apply", "-f", path.to_str().unwrap()]);
    }
}

/// Just enough protobuf encoding for raw requests.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn key(mut self, tag: u8, wire: u8) -> Self {
        self.0.push((tag << 3) | wire);
        self
    }
    fn int(self, tag: u8, v: u8) -> Self {
        let mut s = self.key(tag, 0);
        s.0.push(v);
        s
    }
    fn bytes(self, tag: u8, b: &[u8]) -> Self {
        assert!(b.len() < 128, "one-byte lengths only");
        let mut s = self.key(tag, 2);
        s.0.push(b.len() as u8);
        s.0.extend_from_slice(b);
        s
    }
    fn str(self, tag: u8, v: &str) -> Self {
        self.bytes(tag, v.as_bytes())
    }
    fn msg(self, tag: u8, m: Pb) -> Self {
        self.bytes(tag, &m.0)
    }
}

/// `k8s\0` + runtime.Unknown{typeMeta{apiVersion, kind}, raw}.
fn envelope(api_version: &str, kind: &str, raw: Pb) -> Vec<u8> {
    let unknown = Pb::default()
        .msg(1, Pb::default().str(1, api_version).str(2, kind))
        .msg(2, raw);
    [b"k8s\0".as_slice(), &unknown.0].concat()
}

/// ObjectMeta{name (1), namespace (3)}.
fn meta(name: &str, namespace: &str) -> Pb {
    Pb::default().str(1, name).str(3, namespace)
}

#[test]
fn create_namespace_configmap_secret_and_serviceaccount() {
    let c = start("basics");
    c.ok(&["create", "namespace", "team"]);
    let ns = c.get(&["namespace", "team"]);
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));

    c.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=mode=fast",
        "--from-literal=level=3",
    ]);
    let cm = c.get(&["configmap", "settings", "-n", "team"]);
    assert_eq!(cm["data"], json!({"level": "3", "mode": "fast"}));
    assert_eq!(cm["metadata"]["namespace"], "team");

    let secret = "p@ss=w0rd!\u{e9}";
    c.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "team",
        &format!("--from-literal=password={secret}"),
    ]);
    let s = c.get(&["secret", "creds", "-n", "team"]);
    let stored = s["data"]["password"].as_str().expect("base64 data");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(stored)
        .unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), secret);
    // The empty type on the wire means unset, so it is defaulted.
    assert_eq!(s["type"], "Opaque");

    c.ok(&["create", "serviceaccount", "builder", "-n", "team"]);
    let sa = c.get(&["serviceaccount", "builder", "-n", "team"]);
    assert_eq!(sa["metadata"]["name"], "builder");
    assert!(sa.get("automountServiceAccountToken").is_none(), "{sa}");
}

#[test]
fn create_deployment_then_autoscale() {
    let c = start("deploy");
    c.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    let d = c.get(&["deployment", "web"]);
    let spec = &d["spec"];
    assert_eq!(spec["replicas"], 2);
    assert_eq!(spec["selector"]["matchLabels"], json!({"app": "web"}));
    assert_eq!(spec["strategy"]["type"], "RollingUpdate");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxUnavailable"], "25%");
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], "nginx");
    // Empty strings and false value fields on the wire are unset, so
    // defaulting fills them and nothing spurious is stored.
    assert_eq!(
        pod["containers"][0]["terminationMessagePath"],
        "/dev/termination-log"
    );
    assert_eq!(pod["restartPolicy"], "Always");
    assert!(pod.get("hostNetwork").is_none(), "{pod}");
    assert!(spec.get("paused").is_none(), "{spec}");
    assert!(d["metadata"].get("generateName").is_none());

    // replicas is a pointer: an explicit zero survives.
    c.ok(&[
        "create",
        "deployment",
        "idle",
        "--image=nginx",
        "--replicas=0",
    ]);
    assert_eq!(c.get(&["deployment", "idle"])["spec"]["replicas"], 0);

    let out = c.ok(&[
        "autoscale",
        "deployment",
        "web",
        "--min=1",
        "--max=3",
        "--cpu-percent=50",
    ]);
    assert!(out.contains("autoscaled"), "{out}");
    // kubectl 1.32 tries autoscaling/v2 first; that is the version served.
    let hpa = c.get(&["hpa", "web"]);
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    assert_eq!(
        hpa["spec"]["scaleTargetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
    );
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(hpa["spec"]["maxReplicas"], 3);
    assert_eq!(
        hpa["spec"]["metrics"][0],
        json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}})
    );
}

#[test]
fn create_job_cronjob_service_priorityclass_and_pdb() {
    let c = start("kinds");
    c.ok(&[
        "create",
        "job",
        "once",
        "--image=busybox",
        "--",
        "echo",
        "hi",
    ]);
    let job = c.get(&["job", "once"]);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["command"], json!(["echo", "hi"]));
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(job["spec"]["backoffLimit"], 6);

    c.ok(&[
        "create",
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/5 * * * *",
    ]);
    let cj = c.get(&["cronjob", "tick"]);
    assert_eq!(cj["spec"]["schedule"], "*/5 * * * *");
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    let tmpl = &cj["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(tmpl["containers"][0]["image"], "busybox");
    assert_eq!(tmpl["restartPolicy"], "OnFailure");

    c.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let svc = c.get(&["service", "web"]);
    assert_eq!(svc["spec"]["type"], "ClusterIP");
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    assert_eq!(svc["spec"]["selector"], json!({"app": "web"}));
    let ip = svc["spec"]["clusterIP"].as_str().unwrap_or("");
    assert!(ip.contains('.'), "a cluster IP is allocated: {svc}");

    c.ok(&[
        "create",
        "priorityclass",
        "high",
        "--value=1000",
        "--description=important work",
    ]);
    let pc = c.get(&["priorityclass", "high"]);
    assert_eq!(pc["value"], 1000);
    assert_eq!(pc["description"], "important work");
    assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
    assert!(pc.get("globalDefault").is_none(), "{pc}");

    c.ok(&[
        "create",
        "poddisruptionbudget",
        "web",
        "--selector=app=web",
        "--min-available=50%",
    ]);
    let pdb = c.get(&["pdb", "web"]);
    assert_eq!(pdb["spec"]["minAvailable"], "50%");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"],
        json!({"app": "web"})
    );
}

const NODE_AND_PODS: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: default}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx}]
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: default}
spec:
  nodeName: n1
  containers: [{name: c, image: nginx}]
"#;

#[test]
fn drain_evict_and_update_with_protobuf_bodies() {
    let c = start("drain");
    c.apply(NODE_AND_PODS);

    // An eviction POSTed as protobuf: policy/v1 Eviction{metadata,
    // deleteOptions{gracePeriodSeconds: 0}}.
    let eviction = envelope(
        "policy/v1",
        "Eviction",
        Pb::default()
            .msg(1, meta("a", "default"))
            .msg(2, Pb::default().int(1, 0)),
    );
    let (code, body) = c.server.request_bytes(
        "POST",
        "/api/v1/namespaces/default/pods/a/eviction",
        PROTOBUF,
        &eviction,
    );
    assert_eq!(code, 201, "{body}");
    let (code, _) = c
        .server
        .request("GET", "/api/v1/namespaces/default/pods/a", None);
    assert_eq!(code, 404, "the evicted pod is gone");

    // With --disable-eviction, drain DELETEs with a protobuf DeleteOptions
    // body carrying gracePeriodSeconds: 0, so the pod goes at once.
    let out = c.ok(&[
        "drain",
        "n1",
        "--force",
        "--disable-eviction",
        "--grace-period=0",
        "--timeout=30s",
    ]);
    assert!(out.contains("pod/b deleted"), "{out}");
    assert!(out.contains("drained"), "{out}");
    assert_eq!(c.ok(&["get", "pods", "-o", "name"]).trim(), "");
    assert_eq!(c.get(&["node", "n1"])["spec"]["unschedulable"], true);

    // An update (PUT) in protobuf.
    c.ok(&["create", "configmap", "cm", "--from-literal=k=old"]);
    let update = envelope(
        "v1",
        "ConfigMap",
        Pb::default()
            .msg(1, meta("cm", "default"))
            .msg(2, Pb::default().str(1, "k").str(2, "new")),
    );
    let (code, body) = c.server.request_bytes(
        "PUT",
        "/api/v1/namespaces/default/configmaps/cm",
        PROTOBUF,
        &update,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(c.get(&["configmap", "cm"])["data"], json!({"k": "new"}));

    // Garbage is a 400 that says what went wrong.
    let (code, body) = c.server.request_bytes(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        PROTOBUF,
        b"k8s\0\x0a\x7f",
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("unable to decode protobuf body"), "{body}");
}

/// The field manager owns what the client sent plus the scheme defaults,
/// not what admission or the create strategy added afterwards (the token
/// volume, priority, default tolerations, the initial status), as on a
/// real cluster.
#[test]
fn run_records_the_writers_fields_only() {
    let c = start("managed");
    c.ok(&["run", "web", "--image=nginx:1.27", "--restart=Never"]);
    let pod = c.get(&["pod", "web", "--show-managed-fields"]);
    let entries = pod["metadata"]["managedFields"].as_array().unwrap();
    let run = entries
        .iter()
        .find(|m| m["manager"] == "kubectl-run")
        .unwrap_or_else(|| panic!("no kubectl-run entry: {entries:?}"));
    assert_eq!(run["operation"], "Update");
    let fields = &run["fieldsV1"];
    let spec = fields["f:spec"].as_object().unwrap();
    for owned in [
        "f:containers",
        "f:dnsPolicy",
        "f:enableServiceLinks",
        "f:restartPolicy",
        "f:schedulerName",
        "f:securityContext",
        "f:terminationGracePeriodSeconds",
    ] {
        assert!(spec.contains_key(owned), "{owned} missing: {fields}");
    }
    for added in [
        "f:volumes",
        "f:tolerations",
        "f:priority",
        "f:preemptionPolicy",
        "f:serviceAccountName",
    ] {
        assert!(!spec.contains_key(added), "{added} owned: {fields}");
    }
    let container = &spec["f:containers"]["k:{\"name\":\"web\"}"];
    assert!(container.get("f:imagePullPolicy").is_some(), "{fields}");
    assert!(container.get("f:volumeMounts").is_none(), "{fields}");
    assert!(fields.get("f:status").is_none(), "{fields}");
    // The fields themselves are there all the same.
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
    // Priority admission: no class named and no global default, so 0.
    assert_eq!(pod["spec"]["priority"], 0);
    assert_eq!(pod["spec"]["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(pod["status"]["phase"], "Pending");
}
