//! Jobs as the Pods that run them, and what a node offers them.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use kubesim_core::meta;
use kubesim_core::quantity::Quantity;
use serde_json::{json, Map, Value};

use super::SimJob;

pub use crate::workload::manifests::RUN_DURATION;

/// The label carrying a pod's job index (its position in the input).
pub const JOB_INDEX: &str = "kubesim.io/job-index";

/// A Pod per job, as Batkube made them: requests equal to limits, never
/// restarted, running for its run time (or its walltime, if shorter).
pub fn pod(job: &SimJob, index: usize, name: &str) -> Value {
    let ms = run_millis(job.planned_run());
    // Built from the inside out, every part moved into its parent:
    // `json!` would serialize an interpolated `Value` again.
    let mut resources = Map::new();
    resources.insert("cpu".into(), format!("{}m", job.cpu_millis).into());
    if job.memory_bytes > 0 {
        resources.insert("memory".into(), job.memory_bytes.to_string().into());
    }
    let resources = Value::Object(resources);
    let mut container = json!({"name": "job", "image": "busybox",
        "command": ["sleep", format!("{}", ms as f64 / 1000.0)]});
    container["resources"] = meta::object([("requests", resources.clone()), ("limits", resources)]);
    let mut spec = json!({
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
    });
    spec["containers"] = Value::Array(vec![container]);
    if let Some(s) = &job.scheduler {
        if s != "default" {
            spec["schedulerName"] = json!(s);
        }
    }
    let mut annotations = Map::new();
    // A job timed at placement gets its run time once its pods are bound.
    if job.work.is_none() {
        annotations.insert(RUN_DURATION.into(), format!("{ms}ms").into());
    }
    annotations.insert("kubesim.io/job-id".into(), job.id.clone().into());
    annotations.insert("kubesim.io/workload".into(), job.workload.clone().into());
    let annotations = Value::Object(annotations);
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default",
            "labels": {JOB_INDEX: index.to_string()},
            "annotations": annotations}});
    if let Some(w) = job.walltime.filter(|w| *w > 0.0) {
        let ms = (w * 1000.0).round() as u64;
        pod["metadata"]["labels"][kubesim_scheduler::batsim::WALLTIME] = json!(format!("{ms}ms"));
    }
    pod["spec"] = spec;
    pod
}

/// Simulated time moves in whole milliseconds: a pod runs until the
/// first millisecond at or after its job's end (10.000013 s runs to
/// 10.001 s), so its host is never freed before the job is over. The
/// job's own end is still recorded exactly (see the recorder).
pub fn run_millis(secs: f64) -> u64 {
    // Whole nanoseconds first, so that 10 s (10,000,000,000.000002 ns
    // in floating point) is not taken for a hair over 10,000 ms.
    let ns = (secs.max(0.0) * 1e9).round() as u128;
    u64::try_from(ns.div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

/// The name of pod `k` of a job on several hosts named `name`.
pub fn member_name(name: &str, k: u32) -> String {
    format!("{name}-{k}")
}

/// The names of a job's pods: `name` alone, or one per host.
pub fn pod_names(job: &SimJob, name: &str) -> Vec<String> {
    if job.hosts > 1 && job.manifest.is_none() {
        (0..job.hosts).map(|k| member_name(name, k)).collect()
    } else {
        vec![name.to_string()]
    }
}

/// Labels `pod` with its job's position in submission order, which the
/// batch policies (`BatsimFCFS`, `BatsimEASYBackfilling`) queue by.
pub fn set_submit_order(pod: &mut Value, rank: usize) {
    pod["metadata"]["labels"][kubesim_scheduler::batsim::SUBMIT_ORDER] = json!(rank.to_string());
}

/// A job on several hosts: its PodGroup (scheduler-plugins' kind, with
/// `minMember` the number of hosts) and one pod per host, named
/// `<name>-<k>` and labelled with the group, so the Coscheduling plugin
/// binds them all together or none.
pub fn gang(job: &SimJob, index: usize, name: &str) -> (Value, Vec<Value>) {
    use kubesim_scheduler::coscheduling::{crd, LABEL};
    let group = json!({
        "apiVersion": format!("{}/{}", crd::GROUP, crd::VERSION),
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": job.hosts},
    });
    let pods = (0..job.hosts)
        .map(|k| {
            let mut p = pod(job, index, &member_name(name, k));
            p["metadata"]["labels"][LABEL] = json!(name);
            p
        })
        .collect();
    (group, pods)
}

/// DNS-1123 names from `<workload>-<id>`, made unique by a suffix.
pub fn unique_names(jobs: &[impl Borrow<SimJob>]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            let j: &SimJob = j.borrow();
            let raw = format!("{}-{}", j.workload, j.id).to_ascii_lowercase();
            let mut name: String = raw
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                        c
                    } else {
                        '-'
                    }
                })
                .collect();
            name = name
                .trim_matches(|c: char| !c.is_ascii_alphanumeric())
                .to_string();
            name.truncate(200);
            if name.is_empty() {
                name = "job".into();
            }
            if !seen.insert(name.clone()) {
                name = format!("{name}-{i}");
                seen.insert(name.clone());
            }
            name
        })
        .collect()
}

fn quantity(v: &Value) -> i128 {
    v.as_str()
        .and_then(|s| Quantity::parse(s).ok())
        .map(|q| q.milli())
        .unwrap_or(0)
}

/// A node's allocatable cpu (capacity when it states none), millicores.
pub fn node_cpu_millis(node: &Value) -> u64 {
    let status = &node["status"];
    let v = if status["allocatable"]["cpu"].is_null() {
        &status["capacity"]["cpu"]
    } else {
        &status["allocatable"]["cpu"]
    };
    quantity(v).max(0) as u64
}

fn node_memory(node: &Value) -> i128 {
    let status = &node["status"];
    let v = if status["allocatable"]["memory"].is_null() {
        &status["capacity"]["memory"]
    } else {
        &status["allocatable"]["memory"]
    };
    quantity(v) / 1000
}

pub fn is_ready(node: &Value) -> bool {
    meta::path(node, "status.conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// Whether a job could ever fit on some node, were it empty: jobs that
/// cannot are rejected at submission, as Batsim rejects them.
pub struct Fits {
    nodes: Vec<(u64, i128)>,
}

impl Fits {
    pub fn new(nodes: &[Value]) -> Self {
        Fits {
            nodes: nodes
                .iter()
                .map(|n| (node_cpu_millis(n), node_memory(n)))
                .collect(),
        }
    }

    /// Whether enough nodes could hold the job's pods, one per node.
    pub fn fits(&self, job: &SimJob) -> bool {
        self.nodes
            .iter()
            .filter(|(cpu, mem)| job.cpu_millis <= *cpu && (job.memory_bytes as i128) <= *mem)
            .take(job.hosts.max(1) as usize)
            .count()
            == job.hosts.max(1) as usize
    }
}

/// A manifest ready to create: where, and whether its pods are followed
/// (Pods and Jobs are; other kinds are only created).
pub struct Prepared {
    pub resource: kubesim_runtime::ResourceRef,
    pub namespace: String,
    pub object: Value,
    pub followed: bool,
}

/// Labels a manifest's pods with the job index and its position in
/// submission order (unless it gives its own), and finds its resource.
pub fn manifest(
    m: &Value,
    index: usize,
    rank: usize,
    registry: &kubesim_core::Registry,
) -> Result<Prepared, String> {
    let api_version = m["apiVersion"].as_str().unwrap_or("");
    let kind = m["kind"].as_str().unwrap_or("");
    let info = registry
        .by_kind(api_version, kind)
        .ok_or_else(|| format!("{api_version}/{kind} is not a kind kubesim serves"))?;
    let mut obj = m.clone();
    let followed = matches!((api_version, kind), ("v1", "Pod") | ("batch/v1", "Job"));
    if followed {
        let meta_path = if kind == "Job" {
            "/spec/template/metadata"
        } else {
            "/metadata"
        };
        let label = |obj: &mut Value, path: &str| {
            if obj.pointer(path).is_none_or(|v| !v.is_object()) {
                if let Some(parent) = obj.pointer_mut(&path[..path.rfind('/').unwrap_or(0)]) {
                    parent[path.rsplit('/').next().unwrap_or("")] = json!({});
                }
            }
            if let Some(md) = obj.pointer_mut(path) {
                if !md["labels"].is_object() {
                    md["labels"] = json!({});
                }
                md["labels"][JOB_INDEX] = json!(index.to_string());
                let order = kubesim_scheduler::batsim::SUBMIT_ORDER;
                if md["labels"][order].is_null() {
                    md["labels"][order] = json!(rank.to_string());
                }
            }
        };
        label(&mut obj, meta_path);
    }
    let namespace = if info.namespaced() {
        m.pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string()
    } else {
        String::new()
    };
    Ok(Prepared {
        resource: kubesim_runtime::ResourceRef::new(&info.group, &info.version, &info.plural),
        namespace,
        object: obj,
        followed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str) -> SimJob {
        SimJob {
            id: id.into(),
            workload: "w0".into(),
            profile: "delay".into(),
            submit: 0.0,
            res: 1,
            walltime: Some(100.0),
            run_time: 170.5,
            hosts: 1,
            cpu_millis: 1000,
            memory_bytes: 0,
            scheduler: Some("default".into()),
            manifest: None,
            work: None,
        }
    }

    #[test]
    fn pods_run_for_the_shorter_of_run_time_and_walltime() {
        let p = pod(&job("1"), 0, "w0-1");
        assert_eq!(
            p["metadata"]["annotations"]["kubesim.io/run-duration"],
            "100000ms"
        );
        assert_eq!(
            p["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "1000m"
        );
        assert!(p["spec"]["schedulerName"].is_null());
        let mut long = job("2");
        long.walltime = None;
        let p = pod(&long, 1, "w0-2");
        assert_eq!(
            p["metadata"]["annotations"]["kubesim.io/run-duration"],
            "170500ms"
        );
    }

    #[test]
    fn a_run_time_below_the_millisecond_rounds_up() {
        assert_eq!(run_millis(10.0), 10_000);
        assert_eq!(run_millis(10.000013), 10_001);
        assert_eq!(run_millis(0.0001), 1);
        assert_eq!(run_millis(0.0), 0);
        assert_eq!(run_millis(-3.0), 0);
        assert_eq!(
            run_millis(0.1 + 0.2),
            300,
            "float noise is not a millisecond"
        );
        assert_eq!(run_millis(f64::MAX), u64::MAX);
    }

    #[test]
    fn pods_serialize_with_the_fields_in_their_written_order() {
        let mut j = job("7");
        j.memory_bytes = 1 << 20;
        j.scheduler = Some("other".into());
        let resources = json!({"cpu": "1000m", "memory": "1048576"});
        let want = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "w0-7", "namespace": "default",
                "labels": {JOB_INDEX: "3", "kubesim.io/walltime": "100000ms"},
                "annotations": {"kubesim.io/run-duration": "100000ms",
                    "kubesim.io/job-id": "7", "kubesim.io/workload": "w0"}},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "job", "image": "busybox",
                    "command": ["sleep", "100"],
                    "resources": {"requests": resources, "limits": resources}}],
                "schedulerName": "other"}});
        assert_eq!(pod(&j, 3, "w0-7").to_string(), want.to_string());
    }

    #[test]
    fn manifest_pods_carry_their_submission_order() {
        use kubesim_scheduler::batsim::SUBMIT_ORDER;
        let registry = kubesim_core::Registry::new();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        let p = manifest(&pod, 4, 2, &registry).unwrap();
        assert_eq!(p.object["metadata"]["labels"][SUBMIT_ORDER], "2");
        assert_eq!(p.object["metadata"]["labels"][JOB_INDEX], "4");
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"metadata": {"labels": {SUBMIT_ORDER: "9"}}}}});
        let p = manifest(&job, 0, 1, &registry).unwrap();
        assert_eq!(
            p.object["spec"]["template"]["metadata"]["labels"][SUBMIT_ORDER], "9",
            "a manifest's own order is kept"
        );
    }

    #[test]
    fn names_are_valid_and_unique() {
        let jobs = vec![job("A!1"), job("a!1"), job("_")];
        assert_eq!(unique_names(&jobs), ["w0-a-1", "w0-a-1-1", "w0"]);
    }

    #[test]
    fn fitting_uses_allocatable() {
        let n = json!({"status": {"allocatable": {"cpu": "2", "memory": "1Gi"}}});
        let f = Fits::new(std::slice::from_ref(&n));
        assert_eq!(node_cpu_millis(&n), 2000);
        assert!(f.fits(&job("1")));
        let mut big = job("2");
        big.cpu_millis = 3000;
        assert!(!f.fits(&big));
        big.cpu_millis = 1000;
        big.memory_bytes = 2 << 30;
        assert!(!f.fits(&big));
    }
}
