//! End-to-end: the real kube-scheduler and kube-controller-manager (v1.36,
//! built from k8s.io/kubernetes by `scripts/real-components`) and a client-go
//! informer check (`tests/informers`) against `kubesim up`.
//!
//! The tests that run the binaries are ignored by a plain `cargo test`, so
//! that it shows them as ignored rather than failing where Go or the Go
//! module proxy is missing. `scripts/test` builds the binaries with
//! `scripts/real-components` and then runs these tests with `--ignored`,
//! or, when they cannot be built, prints the reason in a banner and the
//! count of tests not run. The binaries come from `KUBESIM_KUBE_SCHEDULER`,
//! `KUBESIM_KUBE_CONTROLLER_MANAGER` and `KUBESIM_INFORMER_CHECK`; run with
//! `--ignored` without them, the tests build them with the script (once),
//! and fail with the reason when they cannot: none passes without running.
//!
//! What each component logged about resources it could not list or watch
//! is printed (shown with `--nocapture`, and in the message of a failure).

mod common;

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::kubectl::Cluster;
use serde_json::Value;

/// The three programs under test.
struct Binaries {
    scheduler: PathBuf,
    controller_manager: PathBuf,
    informer_check: PathBuf,
}

const SCHEDULER_VAR: &str = "KUBESIM_KUBE_SCHEDULER";
const CONTROLLER_MANAGER_VAR: &str = "KUBESIM_KUBE_CONTROLLER_MANAGER";
const INFORMER_CHECK_VAR: &str = "KUBESIM_INFORMER_CHECK";
/// Set by `scripts/test` to the reason when `scripts/real-components` failed.
const ERROR_VAR: &str = "KUBESIM_REAL_COMPONENTS_ERROR";

/// The binaries, or a panic that says why they cannot be had.
fn binaries() -> &'static Binaries {
    static FOUND: OnceLock<Result<Binaries, String>> = OnceLock::new();
    match FOUND.get_or_init(find_binaries) {
        Ok(b) => b,
        Err(e) => panic!("the real Kubernetes components are not available: {e}"),
    }
}

fn find_binaries() -> Result<Binaries, String> {
    if let Ok(e) = std::env::var(ERROR_VAR) {
        if !e.is_empty() {
            return Err(e);
        }
    }
    let vars = [SCHEDULER_VAR, CONTROLLER_MANAGER_VAR, INFORMER_CHECK_VAR];
    let set: Vec<Option<String>> = vars
        .iter()
        .map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
        .collect();
    let paths = if set.iter().all(Option::is_some) {
        set.into_iter().map(Option::unwrap).collect::<Vec<_>>()
    } else if set.iter().any(Option::is_some) {
        return Err(format!("set all of {vars:?} or none of them"));
    } else {
        build_with_script()?
    };
    let checked = paths
        .into_iter()
        .map(|p| {
            let p = PathBuf::from(p);
            if p.is_file() {
                Ok(p)
            } else {
                Err(format!("{} does not exist", p.display()))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let [scheduler, controller_manager, informer_check] =
        <[PathBuf; 3]>::try_from(checked).expect("three paths");
    Ok(Binaries {
        scheduler,
        controller_manager,
        informer_check,
    })
}

/// Runs `scripts/real-components` and reads the paths it prints.
fn build_with_script() -> Result<Vec<String>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/real-components");
    eprintln!(
        "{} not set: running {} (the first build takes a while)",
        SCHEDULER_VAR,
        script.display()
    );
    let out = Command::new("bash")
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "scripts/real-components failed ({}):\n{}",
            out.status,
            tail.join("\n")
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    [SCHEDULER_VAR, CONTROLLER_MANAGER_VAR, INFORMER_CHECK_VAR]
        .iter()
        .map(|var| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{var}=")))
                .map(str::to_string)
                .ok_or_else(|| format!("scripts/real-components printed no {var}:\n{stdout}"))
        })
        .collect()
}

/// A real component running against a cluster; killed on drop.
struct Component {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Component {
    /// Starts `binary` with the flags every component here gets: the
    /// cluster's kubeconfig, no leader election, and no HTTPS port of its
    /// own (nothing here asks it for health or metrics, and a port picked as
    /// free could be taken by a parallel test), nor delegated
    /// authentication, which plain HTTP cannot offer.
    fn start(name: &'static str, binary: &Path, cluster: &Cluster, extra: &[&str]) -> Self {
        Self::start_as(name, binary, cluster, &cluster.kubeconfig, extra)
    }

    /// [`start`](Self::start) with the identity of `kubeconfig`.
    fn start_as(
        name: &'static str,
        binary: &Path,
        cluster: &Cluster,
        kubeconfig: &Path,
        extra: &[&str],
    ) -> Self {
        let dir = cluster.dir.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("log");
        let kubeconfig = kubeconfig.display().to_string();
        let mut cmd = Command::new(binary);
        cmd.arg(format!("--kubeconfig={kubeconfig}"))
            .arg("--leader-elect=false")
            .arg("--secure-port=0")
            .arg("--authentication-skip-lookup=true")
            .arg("--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
            .arg("--v=2")
            .args(extra);
        // stdout and stderr share one file, opened once.
        let file = File::create(&log).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(file.try_clone().unwrap()))
            .stderr(Stdio::from(file));
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary.display()));
        Component { name, child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// What the component's log says it could not list or watch, and the
    /// other errors it logged, de-duplicated.
    fn complaints(&self) -> String {
        complaints(&self.log())
    }

    /// The complaints and the log's last lines, for a failure message.
    fn report(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        format!(
            "{} {}\n--- last lines of the {} log ---\n{tail}",
            self.name,
            complaints(&log),
            self.name
        )
    }

    /// Panics with the report if the component has exited.
    fn check_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("{} exited with {status}\n{}", self.name, self.report());
        }
    }

    /// Polls `check` every 250 ms until it returns Some, for at most
    /// `timeout`; panics with `what` and the component's report otherwise.
    fn wait_for<T>(
        &mut self,
        what: &str,
        timeout: Duration,
        mut check: impl FnMut() -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            self.check_running();
            if let Some(v) = check() {
                return v;
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out after {timeout:?} waiting for {what}\n{}",
                    self.report()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Component {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        eprintln!("{} {}", self.name, self.complaints());
    }
}

/// Reads a component's log for the resources it could not list or watch
/// (client-go's reflector names them as `(get <resource>)` or by type) and
/// other errors, each once.
fn complaints(log: &str) -> String {
    let mut resources = BTreeSet::new();
    let mut errors = BTreeSet::new();
    for line in log.lines() {
        let failed_list = line.contains("Failed to watch")
            || line.contains("failed to list")
            || line.contains("Failed to list");
        if failed_list {
            let mut found = false;
            for part in line.split("(get ").skip(1) {
                if let Some(r) = part.split(')').next() {
                    resources.insert(r.to_string());
                    found = true;
                }
            }
            if !found {
                if let Some(i) = line.find("failed to list ") {
                    let rest = &line[i + "failed to list ".len()..];
                    let ty = rest.split([':', ' ', '"']).next().unwrap_or(rest);
                    resources.insert(ty.to_string());
                    found = true;
                }
            }
            if found {
                continue;
            }
        }
        // klog's error lines start with E and the date (E1127), possibly
        // after a prefix; keep the message without the timestamp and source
        // location so that repeats fold together.
        let is_error = line.split_whitespace().take(2).any(|t| {
            t.len() == 5 && t.starts_with('E') && t[1..].bytes().all(|b| b.is_ascii_digit())
        });
        if is_error {
            let msg = line.split_once("] ").map(|(_, m)| m).unwrap_or(line);
            let msg: String = msg.chars().take(300).collect();
            errors.insert(msg);
        }
    }
    let mut out = String::new();
    if resources.is_empty() {
        out.push_str("listed and watched everything it asked for");
    } else {
        out.push_str(&format!(
            "could not list or watch: {}",
            resources.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    if !errors.is_empty() {
        out.push_str(&format!("; {} distinct errors logged:", errors.len()));
        for e in errors.iter().take(40) {
            out.push_str("\n  ");
            out.push_str(e);
        }
    }
    out
}

fn get(c: &Cluster, args: &[&str]) -> Option<Value> {
    let mut a = args.to_vec();
    a.extend(["-o", "json"]);
    let o = c.kubectl(&a);
    if !o.status.success() {
        return None;
    }
    serde_json::from_slice(&o.stdout).ok()
}

fn items(c: &Cluster, args: &[&str]) -> Vec<Value> {
    get(c, args)
        .and_then(|v| v["items"].as_array().cloned())
        .unwrap_or_default()
}

fn gone(c: &Cluster, args: &[&str]) -> bool {
    let o = c.kubectl(args);
    !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("NotFound")
}

fn rv(v: &Value) -> String {
    v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
#[ignore = "needs the real kube-scheduler and kube-controller-manager: scripts/test runs it with --ignored once scripts/real-components has built them, and says loudly when it could not"]
fn informer_check_syncs_every_served_resource() {
    let b = binaries();
    let c = Cluster::start_with("real-informers", &["--nodes", "1"]);
    let out = Command::new(&b.informer_check)
        .arg(format!("--kubeconfig={}", c.kubeconfig.display()))
        .arg("--timeout=30s")
        .stdin(Stdio::null())
        .output()
        .expect("run the informer check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("informer check:\n{stdout}");
    assert!(
        out.status.success(),
        "client-go informers did not all sync ({}):\n{stdout}\n--- stderr ---\n{}",
        out.status,
        stderr
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        resources: {requests: {cpu: 100m, memory: 64Mi}}
"#;

#[test]
#[ignore = "needs the real kube-scheduler and kube-controller-manager: scripts/test runs it with --ignored once scripts/real-components has built them, and says loudly when it could not"]
fn real_scheduler_binds_a_deployments_pods() {
    let c = Cluster::start_with("real-scheduler", &["--scheduler", "none", "--nodes", "3"]);
    let kubeconfig = c.kubeconfig.clone();
    let s = scheduler_binds_web(&c, &kubeconfig);
    // The binding went through the scheduler's own events.
    let events = c.ok(&["get", "events", "--field-selector", "reason=Scheduled"]);
    assert!(events.contains("Successfully assigned"), "{events}");
    drop(s);
}

#[test]
#[ignore = "needs the real kube-scheduler and kube-controller-manager: scripts/test runs it with --ignored once scripts/real-components has built them, and says loudly when it could not"]
fn real_scheduler_works_as_system_kube_scheduler_under_rbac() {
    // Over TLS with RBAC on, the scheduler gets the client certificate
    // `kubesim up` writes for it, and so only the rights of upstream's
    // system:kube-scheduler and system:volume-scheduler roles.
    let c = Cluster::start_with(
        "real-scheduler-rbac",
        &["--tls", "--scheduler", "none", "--nodes", "3"],
    );
    let kubeconfig = c.dir.join("pki").join("kube-scheduler.kubeconfig");
    assert!(kubeconfig.is_file(), "{} is missing", kubeconfig.display());
    let s = scheduler_binds_web(&c, &kubeconfig);
    let log = s.log();
    assert!(
        !log.contains("forbidden"),
        "the scheduler was refused something its role should allow\n{}",
        s.report()
    );
    let events = c.ok(&["get", "events", "--field-selector", "reason=Scheduled"]);
    assert!(events.contains("Successfully assigned"), "{events}");
}

/// Applies the Deployment `web` on a cluster with no scheduler of its own,
/// checks its pods stay unbound, then starts the real kube-scheduler with
/// `kubeconfig` and waits until it has bound all three and they run.
fn scheduler_binds_web(c: &Cluster, kubeconfig: &Path) -> Component {
    let b = binaries();
    let nodes: BTreeSet<String> = c
        .names(&["get", "nodes"])
        .into_iter()
        .collect::<BTreeSet<_>>();
    assert_eq!(nodes.len(), 3, "{nodes:?}");
    c.apply(WEB);

    // kubesim's own scheduler is off: the pods are created but stay unbound.
    c.wait_for("the Deployment's 3 pods", || {
        items(c, &["get", "pods", "-l", "app=web"]).len() == 3
    });
    std::thread::sleep(Duration::from_secs(2));
    for p in items(c, &["get", "pods", "-l", "app=web"]) {
        assert!(
            p["spec"]["nodeName"].is_null(),
            "bound without a scheduler: {p}"
        );
    }

    let mut s = Component::start_as("kube-scheduler", &b.scheduler, c, kubeconfig, &[]);
    let bound = s.wait_for(
        "the real scheduler to bind 3 pods",
        Duration::from_secs(90),
        || {
            let pods = items(c, &["get", "pods", "-l", "app=web"]);
            let bound: Vec<String> = pods
                .iter()
                .filter_map(|p| p["spec"]["nodeName"].as_str().map(str::to_string))
                .collect();
            (bound.len() == 3).then_some(bound)
        },
    );
    for n in &bound {
        assert!(nodes.contains(n), "bound to {n}, not one of {nodes:?}");
    }
    // The emulated kubelets run what the scheduler placed.
    s.wait_for("the 3 pods to run", Duration::from_secs(60), || {
        let pods = items(c, &["get", "pods", "-l", "app=web"]);
        (pods.len() == 3 && pods.iter().all(|p| p["status"]["phase"] == "Running")).then_some(())
    });
    s.check_running();
    s
}

/// A cluster whose own controllers are off, and the real
/// kube-controller-manager with its default controllers.
fn with_controller_manager(name: &str) -> (Cluster, Component) {
    let b = binaries();
    let c = Cluster::start_with(name, &["--controllers", "none", "--nodes", "3"]);
    let kcm = Component::start(
        "kube-controller-manager",
        &b.controller_manager,
        &c,
        &["--use-service-account-credentials=false"],
    );
    (c, kcm)
}

/// Waits until the Deployment `web` has all 3 replicas available.
fn web_available(c: &Cluster, kcm: &mut Component) {
    c.apply(WEB);
    kcm.wait_for(
        "Deployment web to have 3 available replicas",
        Duration::from_secs(120),
        || {
            let d = get(c, &["get", "deployment", "web"])?;
            let s = &d["status"];
            let done = s["observedGeneration"] == d["metadata"]["generation"]
                && s["replicas"] == 3
                && s["updatedReplicas"] == 3
                && s["availableReplicas"] == 3;
            done.then_some(())
        },
    );
}

fn web_replicasets(c: &Cluster) -> Vec<Value> {
    items(c, &["get", "replicasets", "-l", "app=web"])
        .into_iter()
        .filter(|rs| {
            rs["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| o.iter().any(|r| r["kind"] == "Deployment"))
        })
        .collect()
}

#[test]
#[ignore = "needs the real kube-scheduler and kube-controller-manager: scripts/test runs it with --ignored once scripts/real-components has built them, and says loudly when it could not"]
fn real_controller_manager_rolls_out_a_deployment_and_then_rests() {
    let (c, mut kcm) = with_controller_manager("real-kcm-deploy");
    web_available(&c, &mut kcm);
    let rs = web_replicasets(&c);
    assert_eq!(rs.len(), 1, "one ReplicaSet for the Deployment: {rs:?}");
    assert_eq!(rs[0]["status"]["readyReplicas"], 3, "{}", rs[0]);
    let pods = items(&c, &["get", "pods", "-l", "app=web"]);
    assert_eq!(pods.len(), 3, "{pods:?}");

    // No hot loop: once settled, neither object is written again.
    kcm.wait_for(
        "the Deployment and its ReplicaSet to stop changing",
        Duration::from_secs(60),
        || {
            let before = (
                rv(&get(&c, &["get", "deployment", "web"])?),
                web_replicasets(&c).first().map(rv)?,
            );
            std::thread::sleep(Duration::from_secs(10));
            let after = (
                rv(&get(&c, &["get", "deployment", "web"])?),
                web_replicasets(&c).first().map(rv)?,
            );
            if before != after {
                eprintln!("still changing: {before:?} -> {after:?}");
            }
            (before == after).then_some(())
        },
    );
    assert_eq!(web_replicasets(&c).len(), 1);
    kcm.check_running();
}

const JOB: &str = r#"
apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
"#;

#[test]
#[ignore = "needs the real kube-scheduler and kube-controller-manager: scripts/test runs it with --ignored once scripts/real-components has built them, and says loudly when it could not"]
fn real_controller_manager_completes_a_job() {
    let (c, mut kcm) = with_controller_manager("real-kcm-job");
    c.apply(JOB);
    kcm.wait_for(
        "Job once to complete with succeeded: 1",
        Duration::from_secs(120),
        || {
            let j = get(&c, &["get", "job", "once"])?;
            let complete = j["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|x| x["type"] == "Complete" && x["status"] == "True")
            });
            (complete && j["status"]["succeeded"] == 1).then_some(())
        },
    );
    // The Job controller removes its tracking finalizer from the pod.
    let pods = items(&c, &["get", "pods", "-l", "job-name=once"]);
    assert_eq!(pods.len(), 1, "{pods:?}");
    assert_eq!(pods[0]["status"]["phase"], "Succeeded", "{}", pods[0]);
    kcm.wait_for(
        "the Job's pod to lose its tracking finalizer",
        Duration::from_secs(30),
        || {
            let pods = items(&c, &["get", "pods", "-l", "job-name=once"]);
            pods.iter()
                .all(|p| {
                    p["metadata"]["finalizers"]
                        .as_array()
                        .is_none_or(|f| !f.iter().any(|x| x == "batch.kubernetes.io/job-tracking"))
                })
                .then_some(())
        },
    );
    kcm.check_running();
}

#[test]
#[ignore = "needs the real kube-scheduler and kube-controller-manager: scripts/test runs it with --ignored once scripts/real-components has built them, and says loudly when it could not"]
fn real_controller_manager_garbage_collects_a_deleted_deployment() {
    let (c, mut kcm) = with_controller_manager("real-kcm-gc");
    web_available(&c, &mut kcm);
    assert_eq!(web_replicasets(&c).len(), 1);
    c.ok(&["delete", "deployment", "web", "--wait=false"]);
    kcm.wait_for(
        "the garbage collector to delete the ReplicaSet and its pods",
        Duration::from_secs(120),
        || {
            let rs = items(&c, &["get", "replicasets", "-l", "app=web"]);
            let pods = items(&c, &["get", "pods", "-l", "app=web"]);
            (rs.is_empty() && pods.is_empty()).then_some(())
        },
    );
    kcm.check_running();
}

const SCRATCH: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: scratch}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: scratch}
data: {a: "1"}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: scratch}
stringData: {t: x}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: scratch}
spec:
  replicas: 2
  selector:
    matchLabels: {app: scratch}
  template:
    metadata:
      labels: {app: scratch}
    spec:
      containers:
      - name: c
        image: nginx
"#;

#[test]
#[ignore = "needs the real kube-scheduler and kube-controller-manager: scripts/test runs it with --ignored once scripts/real-components has built them, and says loudly when it could not"]
fn real_controller_manager_empties_a_deleted_namespace() {
    let (c, mut kcm) = with_controller_manager("real-kcm-namespace");
    c.apply(SCRATCH);
    kcm.wait_for(
        "the Deployment in namespace scratch to run 2 pods",
        Duration::from_secs(120),
        || {
            let pods = items(&c, &["get", "pods", "-n", "scratch"]);
            (pods.len() == 2 && pods.iter().all(|p| p["status"]["phase"] == "Running"))
                .then_some(())
        },
    );
    c.ok(&["delete", "namespace", "scratch", "--wait=false"]);
    kcm.wait_for(
        "namespace scratch and its content to be gone",
        Duration::from_secs(120),
        || gone(&c, &["get", "namespace", "scratch"]).then_some(()),
    );
    for kind in [
        "configmaps",
        "secrets",
        "deployments",
        "replicasets",
        "pods",
    ] {
        let left = items(&c, &["get", kind, "-n", "scratch"]);
        assert!(left.is_empty(), "{kind} left in scratch: {left:?}");
    }
    kcm.check_running();
}

/// The log reading that the reports above rely on, on lines as client-go's
/// reflector and klog write them (with and without a prefix).
#[test]
fn complaints_name_what_a_component_could_not_list() {
    let log = r#"I1127 07:13:06.069812   18945 reflector.go:507] "Caches populated" type="*v1.PersistentVolumeClaim"
E1127 07:13:06.073177   18945 reflector.go:227] "Failed to watch" err="failed to list *v1.CSIStorageCapacity: the server could not find the requested resource" logger="UnhandledError"
x E1127 07:13:06.074522   18945 reflector.go:227] "Failed to watch" err="failed to list *v1.CSINode: the server could not find the requested resource (get csinodes.storage.k8s.io)"
E1127 07:13:07.073177   18945 reflector.go:227] "Failed to watch" err="failed to list *v1.CSIStorageCapacity: the server could not find the requested resource" logger="UnhandledError"
x E1127 07:13:08.000000   18945 controller.go:1] "Error syncing" err="boom"
E1127 07:13:09.000000   18945 controller.go:1] "Error syncing" err="boom"
"#;
    let c = complaints(log);
    assert!(
        c.starts_with("could not list or watch: *v1.CSIStorageCapacity, csinodes.storage.k8s.io;"),
        "{c}"
    );
    assert!(
        c.contains("1 distinct errors logged:\n  \"Error syncing\" err=\"boom\""),
        "{c}"
    );
    assert_eq!(
        complaints("I1127 07:13:06.069812   1 x.go:1] fine\n"),
        "listed and watched everything it asked for"
    );
}
