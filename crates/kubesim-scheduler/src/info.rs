//! Building [`PodInfo`] and [`NodeInfo`] from objects: the requests a pod
//! needs, what a node offers, and the bookkeeping when pods are placed on
//! or removed from a node.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_core::quantity::Quantity;
use kubesim_runtime::ObjectKey;
use serde_json::Value;

use crate::framework::{
    AffinityFlags, Disk, HostPort, NodeInfo, PodInfo, PodVolumes, Resources, Taint,
};
use crate::view::{cut_spec, PodView};

/// CPU counted for a container without a cpu request when scoring (upstream
/// `DefaultMilliCPURequest`).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory counted for a container without a memory request when scoring
/// (upstream `DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

impl Resources {
    fn add(&mut self, o: &Resources) {
        self.milli_cpu += o.milli_cpu;
        self.memory += o.memory;
        self.ephemeral_storage += o.ephemeral_storage;
        self.pods += o.pods;
        for (k, v) in &o.scalar {
            *self.scalar.entry(k.clone()).or_default() += v;
        }
    }

    fn sub(&mut self, o: &Resources) {
        self.milli_cpu -= o.milli_cpu;
        self.memory -= o.memory;
        self.ephemeral_storage -= o.ephemeral_storage;
        self.pods -= o.pods;
        for (k, v) in &o.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e -= v;
            if *e == 0 {
                self.scalar.remove(k);
            }
        }
    }

    /// Each amount raised to at least `o`'s.
    fn max_with(&mut self, o: &Resources) {
        self.milli_cpu = self.milli_cpu.max(o.milli_cpu);
        self.memory = self.memory.max(o.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(o.ephemeral_storage);
        self.pods = self.pods.max(o.pods);
        for (k, v) in &o.scalar {
            let e = self.scalar.entry(k.clone()).or_default();
            *e = (*e).max(*v);
        }
    }

    /// A resource list (`{"cpu": "2", "memory": "1Gi", ...}`). Quantities
    /// that do not parse count as zero: the API server validates them.
    pub fn from_list(list: Option<&Value>) -> Resources {
        let mut r = Resources::default();
        let Some(Value::Object(m)) = list else {
            return r;
        };
        for (name, v) in m {
            let q = match v {
                Value::String(s) => Quantity::parse(s).ok(),
                Value::Number(n) => n
                    .as_f64()
                    .map(|f| Quantity::from_milli((f * 1000.0) as i128)),
                _ => None,
            };
            let Some(q) = q else { continue };
            match name.as_str() {
                "cpu" => r.milli_cpu = q.milli_value(),
                "memory" => r.memory = q.value(),
                "ephemeral-storage" => r.ephemeral_storage = q.value(),
                "pods" => r.pods = q.value(),
                other if is_scalar(other) => {
                    r.scalar.insert(other.to_string(), q.value());
                }
                _ => {}
            }
        }
        r
    }

    /// The amount of a named resource.
    pub fn get(&self, name: &str) -> i64 {
        match name {
            "cpu" => self.milli_cpu,
            "memory" => self.memory,
            "ephemeral-storage" => self.ephemeral_storage,
            "pods" => self.pods,
            other => self.scalar.get(other).copied().unwrap_or(0),
        }
    }
}

/// Resources the scheduler counts beside cpu/memory/storage/pods:
/// extended resources (`example.com/foo`, outside `kubernetes.io`),
/// hugepages and attachable volumes, as upstream's scalar resources.
pub fn is_scalar(name: &str) -> bool {
    if name.starts_with("hugepages-") || name.starts_with("attachable-volumes-") {
        return true;
    }
    match name.split_once('/') {
        Some((domain, _)) => {
            !(domain == "kubernetes.io" || domain.ends_with(".kubernetes.io"))
                || domain == "requests.kubernetes.io"
        }
        None => false,
    }
}

fn container_requests(c: &Value) -> Resources {
    Resources::from_list(c.pointer("/resources/requests"))
}

/// Requests with the scoring defaults for absent cpu/memory.
fn non_zero(c: &Value, r: &Resources) -> Resources {
    let reqs = c.pointer("/resources/requests");
    let has = |k: &str| reqs.and_then(|m| m.get(k)).is_some();
    let mut out = r.clone();
    if !has("cpu") {
        out.milli_cpu = DEFAULT_MILLI_CPU_REQUEST;
    }
    if !has("memory") {
        out.memory = DEFAULT_MEMORY_REQUEST;
    }
    out
}

fn containers<'a>(pod: &'a Value, field: &str) -> &'a [Value] {
    pod.get("spec")
        .and_then(|s| s.get(field))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The effective requests of a pod, plain and with the scoring defaults.
///
/// The rule: regular containers run together, so their requests add up;
/// restartable init containers (sidecars, `restartPolicy: Always`) keep
/// running once started, so they add to everything after them; each
/// ordinary init container runs alone beside the sidecars started before
/// it. The pod needs the largest of these moments, plus `spec.overhead`.
pub fn pod_requests(pod: &Value) -> (Resources, Resources) {
    let mut sum = Resources::default();
    let mut sum_nz = Resources::default();
    for c in containers(pod, "containers") {
        let r = container_requests(c);
        sum_nz.add(&non_zero(c, &r));
        sum.add(&r);
    }
    let mut sidecars = Resources::default();
    let mut sidecars_nz = Resources::default();
    let mut init_peak = Resources::default();
    let mut init_peak_nz = Resources::default();
    for c in containers(pod, "initContainers") {
        let r = container_requests(c);
        let nz = non_zero(c, &r);
        let restartable = c.get("restartPolicy").and_then(Value::as_str) == Some("Always");
        let mut moment = r.clone();
        moment.add(&sidecars);
        let mut moment_nz = nz.clone();
        moment_nz.add(&sidecars_nz);
        init_peak.max_with(&moment);
        init_peak_nz.max_with(&moment_nz);
        if restartable {
            sidecars.add(&r);
            sidecars_nz.add(&nz);
        }
    }
    sum.add(&sidecars);
    sum_nz.add(&sidecars_nz);
    sum.max_with(&init_peak);
    sum_nz.max_with(&init_peak_nz);
    let overhead = Resources::from_list(pod.pointer("/spec/overhead"));
    sum.add(&overhead);
    sum_nz.add(&overhead);
    (sum, sum_nz)
}

/// The host ports a pod's containers ask for (port 0 means none).
pub fn pod_host_ports(pod: &Value) -> Vec<HostPort> {
    let mut out = Vec::new();
    for field in ["initContainers", "containers"] {
        for c in containers(pod, field) {
            for p in c
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let port = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) as i32;
                if port <= 0 {
                    continue;
                }
                let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                let ip = p.get("hostIP").and_then(Value::as_str).unwrap_or("0.0.0.0");
                let ip = if ip.is_empty() { "0.0.0.0" } else { ip };
                out.push((proto.to_string(), ip.to_string(), port));
            }
        }
    }
    out
}

/// `spec.nodeName`, empty when unset.
fn node_of(pod: &Value) -> &str {
    meta::pointer(pod, "/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The uid of the ownerReference with `controller: true`.
pub fn controller_uid(pod: &Value) -> Option<&str> {
    pod.get("metadata")?
        .get("ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}

impl PodInfo {
    /// Everything the scheduler computes once per pod version; of the pod
    /// itself only its [`PodView`] is kept.
    pub fn from_pod(pod: Arc<Value>) -> PodInfo {
        let (requests, non_zero_requests) = pod_requests(&pod);
        PodInfo {
            key: ObjectKey::of(&pod),
            uid: meta::uid(&pod).to_string(),
            labels: meta::labels(&pod),
            priority: pod
                .pointer("/spec/priority")
                .and_then(Value::as_i64)
                .unwrap_or(0) as i32,
            requests,
            non_zero_requests,
            host_ports: pod_host_ports(&pod),
            node_name: node_of(&pod).to_string(),
            affinity: AffinityFlags::of(&pod),
            volumes: PodVolumes::of(&pod).map(Arc::new),
            controller: controller_uid(&pod).map(str::to_string),
            deleting: meta::is_deleting(&pod),
            shape: Default::default(),
            pod: Arc::new(PodView::of(&pod)),
        }
    }

    /// The same pod counted on `node` (assumed there before its binding).
    pub fn placed_on(&self, node: &str) -> PodInfo {
        PodInfo {
            pod: self.pod.clone(),
            key: self.key.clone(),
            uid: self.uid.clone(),
            labels: self.labels.clone(),
            priority: self.priority,
            requests: self.requests.clone(),
            non_zero_requests: self.non_zero_requests.clone(),
            host_ports: self.host_ports.clone(),
            node_name: node.to_string(),
            affinity: self.affinity,
            volumes: self.volumes.clone(),
            controller: self.controller.clone(),
            deleting: self.deleting,
            shape: self.shape.clone(),
        }
    }

    /// A newer version of the same bound pod. When nothing the derived
    /// fields come from changed (its spec, labels, owners, deletion and
    /// volumes: a kubelet's status write), they are taken from `self`
    /// rather than computed again; only the view is new. `None` otherwise.
    pub fn status_update(&self, pod: &Value) -> Option<PodInfo> {
        let same_meta = meta::uid(pod) == self.uid
            && meta::is_deleting(pod) == self.deleting
            && controller_uid(pod) == self.controller.as_deref()
            && meta::has_labels(pod, &self.labels);
        if !same_meta {
            return None;
        }
        // The cut specs must be equal; the view leaves `nodeName` out (an
        // assumed pod keeps the spec it was scheduled with, before the
        // binding set its node, and the node is checked apart).
        if cut_spec(pod) != *self.pod.spec {
            return None;
        }
        // The view leaves volumes out: compare them on their own.
        let volumes = PodVolumes::of(pod).map(Arc::new);
        if volumes != self.volumes {
            return None;
        }
        Some(PodInfo {
            pod: Arc::new(PodView::with_spec(pod, self.pod.spec.clone())),
            key: self.key.clone(),
            uid: self.uid.clone(),
            labels: self.labels.clone(),
            priority: self.priority,
            requests: self.requests.clone(),
            non_zero_requests: self.non_zero_requests.clone(),
            host_ports: self.host_ports.clone(),
            node_name: node_of(pod).to_string(),
            affinity: self.affinity,
            volumes,
            controller: self.controller.clone(),
            deleting: self.deleting,
            shape: Default::default(),
        })
    }

    pub fn namespace(&self) -> &str {
        &self.key.namespace
    }

    pub fn name(&self) -> &str {
        &self.key.name
    }

    /// `spec.schedulerName`, defaulted.
    pub fn scheduler_name(&self) -> &str {
        self.pod
            .spec("schedulerName")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or("default-scheduler")
    }

    /// `status.nominatedNodeName`, empty when there is none.
    pub fn nominated_node(&self) -> &str {
        &self.pod.nominated_node
    }
}

/// A node's taints.
pub fn node_taints(node: &Value) -> Vec<Taint> {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| Taint {
            key: str_of(t, "key"),
            value: str_of(t, "value"),
            effect: str_of(t, "effect"),
        })
        .collect()
}

fn str_of(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// Image name (every name the node reports) to size in bytes.
pub fn node_images(node: &Value) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for img in node
        .pointer("/status/images")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let size = img.get("sizeBytes").and_then(Value::as_i64).unwrap_or(0);
        for n in img
            .get("names")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            out.insert(n.to_string(), size);
        }
    }
    out
}

impl AffinityFlags {
    pub fn of(pod: &Value) -> AffinityFlags {
        let affinity = pod.get("spec").and_then(|s| s.get("affinity"));
        let present = |k: &str| affinity.and_then(|a| a.get(k)).filter(|v| !v.is_null());
        AffinityFlags {
            any: present("podAffinity").is_some() || present("podAntiAffinity").is_some(),
            required_anti: present("podAntiAffinity")
                .and_then(|a| a.get("requiredDuringSchedulingIgnoredDuringExecution"))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
        }
    }
}

impl PodVolumes {
    /// The inline disks and claims of `pod`'s volumes; `None` when it has
    /// neither (most pods).
    pub fn of(pod: &Value) -> Option<PodVolumes> {
        let volumes = pod.pointer("/spec/volumes")?.as_array()?;
        let mut out = PodVolumes::default();
        for v in volumes {
            if let Some(claim) = v.pointer("/persistentVolumeClaim/claimName") {
                out.claims.push(claim.as_str().unwrap_or("").to_string());
            } else if let Some(d) = Disk::of(v) {
                out.disks.push(d);
            }
        }
        (!out.disks.is_empty() || !out.claims.is_empty()).then_some(out)
    }
}

impl Disk {
    /// The disk a volume names inline, if it is of a kind VolumeRestrictions
    /// compares.
    fn of(volume: &Value) -> Option<Disk> {
        let read_only = |src: &Value| src.get("readOnly").and_then(Value::as_bool) == Some(true);
        if let Some(src) = volume.get("gcePersistentDisk") {
            return Some(Disk::Gce {
                pd_name: str_of(src, "pdName"),
                read_only: read_only(src),
            });
        }
        if let Some(src) = volume.get("awsElasticBlockStore") {
            return Some(Disk::Ebs {
                volume_id: str_of(src, "volumeID"),
            });
        }
        if let Some(src) = volume.get("rbd") {
            let pool = str_of(src, "pool");
            return Some(Disk::Rbd {
                monitors: src
                    .get("monitors")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                // The API server defaults the pool to "rbd"; kubesim's does
                // not, so an unset pool is read as that default here.
                pool: if pool.is_empty() { "rbd".into() } else { pool },
                image: str_of(src, "image"),
                read_only: read_only(src),
            });
        }
        if let Some(src) = volume.get("iscsi") {
            return Some(Disk::Iscsi {
                iqn: str_of(src, "iqn"),
                read_only: read_only(src),
            });
        }
        None
    }
}

impl NodeInfo {
    /// A node without pods.
    pub fn from_node(node: Arc<Value>) -> NodeInfo {
        let mut n = NodeInfo {
            node: node.clone(),
            name: String::new(),
            labels: Arc::default(),
            taints: Arc::default(),
            unschedulable: false,
            allocatable: Resources::default(),
            requested: Resources::default(),
            non_zero_requested: Resources::default(),
            pods: Vec::new(),
            pods_with_affinity: 0,
            pods_with_required_anti: 0,
            pods_with_volumes: 0,
            lowest_priority: i32::MAX,
            used_ports: Default::default(),
            images: Arc::default(),
            controlled: Vec::new(),
        };
        n.set_node(node);
        n
    }

    /// Replaces the node object, keeping the pods.
    pub fn set_node(&mut self, node: Arc<Value>) {
        self.name = meta::name(&node).to_string();
        self.labels = Arc::new(meta::labels(&node));
        self.taints = Arc::new(node_taints(&node));
        self.unschedulable = node
            .pointer("/spec/unschedulable")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let alloc = node
            .pointer("/status/allocatable")
            .or_else(|| node.pointer("/status/capacity"));
        self.allocatable = Resources::from_list(alloc);
        self.images = Arc::new(node_images(&node));
        self.node = node;
    }

    /// Counts `pod` on this node.
    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.add(&pod.non_zero_requests);
        for p in &pod.host_ports {
            self.used_ports.insert(p.clone());
        }
        self.pods_with_affinity += usize::from(pod.affinity.any);
        self.pods_with_required_anti += usize::from(pod.affinity.required_anti);
        self.pods_with_volumes += usize::from(pod.volumes.is_some());
        self.count_controlled(&pod, true);
        self.lowest_priority = self.lowest_priority.min(pod.priority);
        self.pods.push(pod);
    }

    /// Adds `pod` to (or takes it from) [`controlled`](Self::controlled).
    fn count_controlled(&mut self, pod: &PodInfo, add: bool) {
        let Some(uid) = pod.controller.as_deref().filter(|_| !pod.deleting) else {
            return;
        };
        match self.controlled.iter().position(|(u, _)| u == uid) {
            Some(i) if add => self.controlled[i].1 += 1,
            Some(i) => {
                self.controlled[i].1 -= 1;
                if self.controlled[i].1 == 0 {
                    self.controlled.swap_remove(i);
                }
            }
            None if add => self.controlled.push((uid.to_string(), 1)),
            None => {}
        }
    }

    fn lowest(&self) -> i32 {
        self.pods
            .iter()
            .map(|p| p.priority)
            .min()
            .unwrap_or(i32::MAX)
    }

    /// Non-deleting pods here whose controlling owner has `uid`.
    pub fn controlled_by(&self, uid: &str) -> u32 {
        self.controlled
            .iter()
            .find(|(u, _)| u == uid)
            .map_or(0, |(_, n)| *n)
    }

    /// Counts again the pods that declare pod (anti-)affinity or have
    /// volumes, after `pods` was rebuilt.
    pub fn recount(&mut self) {
        self.pods_with_affinity = self.pods.iter().filter(|p| p.affinity.any).count();
        self.pods_with_required_anti = self
            .pods
            .iter()
            .filter(|p| p.affinity.required_anti)
            .count();
        self.pods_with_volumes = self.pods.iter().filter(|p| p.volumes.is_some()).count();
        self.lowest_priority = self.lowest();
        self.controlled.clear();
        for p in std::mem::take(&mut self.pods) {
            self.count_controlled(&p, true);
            self.pods.push(p);
        }
    }

    /// Puts `pod` in place of the pod with its uid, moved last as a
    /// removal and an addition would, without recounting: the caller
    /// vouches that everything counted is the same. False when absent.
    pub fn replace_pod(&mut self, pod: Arc<PodInfo>) -> bool {
        let Some(i) = self.pods.iter().position(|p| p.uid == pod.uid) else {
            return false;
        };
        self.pods.remove(i);
        self.pods.push(pod);
        true
    }

    /// Stops counting the pod with `uid`; false when it was not here.
    pub fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(i) = self.pods.iter().position(|p| p.uid == uid) else {
            return false;
        };
        let pod = self.pods.remove(i);
        self.pods_with_affinity -= usize::from(pod.affinity.any);
        self.pods_with_required_anti -= usize::from(pod.affinity.required_anti);
        self.pods_with_volumes -= usize::from(pod.volumes.is_some());
        self.count_controlled(&pod, false);
        if pod.priority == self.lowest_priority {
            self.lowest_priority = self.lowest();
        }
        self.requested.sub(&pod.requests);
        self.non_zero_requested.sub(&pod.non_zero_requests);
        // Ports are recomputed: two pods may share a port on distinct IPs.
        self.used_ports = self
            .pods
            .iter()
            .flat_map(|p| p.host_ports.iter().cloned())
            .collect();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(spec: Value) -> PodInfo {
        PodInfo::from_pod(Arc::new(
            json!({"metadata": {"name": "p", "namespace": "d", "uid": "u"}, "spec": spec}),
        ))
    }

    #[test]
    fn nodes_count_the_pods_that_declare_affinity() {
        let mut n = NodeInfo::from_node(Arc::new(json!({"metadata": {"name": "n"}})));
        let with_uid = |uid: &str, spec: Value| {
            let mut p = pod(spec);
            p.uid = uid.into();
            Arc::new(p)
        };
        n.add_pod(with_uid("a", json!({})));
        n.add_pod(with_uid("b", json!({"affinity": {"podAffinity": {}}})));
        let anti = json!({"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]}}});
        n.add_pod(with_uid("c", anti));
        assert_eq!((n.pods_with_affinity, n.pods_with_required_anti), (2, 1));
        assert!(n.remove_pod("c"));
        assert_eq!((n.pods_with_affinity, n.pods_with_required_anti), (1, 0));
        n.pods.clear();
        n.recount();
        assert_eq!((n.pods_with_affinity, n.pods_with_required_anti), (0, 0));
    }

    #[test]
    fn nodes_know_their_least_important_pod() {
        let mut n = NodeInfo::from_node(Arc::new(json!({"metadata": {"name": "n"}})));
        assert_eq!(n.lowest_priority, i32::MAX);
        let with = |uid: &str, priority: i32| {
            let mut p = pod(json!({"priority": priority}));
            p.uid = uid.into();
            Arc::new(p)
        };
        n.add_pod(with("a", 5));
        n.add_pod(with("b", -3));
        n.add_pod(with("c", -3));
        assert_eq!(n.lowest_priority, -3);
        n.remove_pod("b");
        assert_eq!(n.lowest_priority, -3);
        n.remove_pod("c");
        assert_eq!(n.lowest_priority, 5);
        n.remove_pod("a");
        assert_eq!(n.lowest_priority, i32::MAX);
    }

    #[test]
    fn nodes_count_pods_by_controller_except_those_being_deleted() {
        let mut n = NodeInfo::from_node(Arc::new(json!({"metadata": {"name": "n"}})));
        let owned = |uid: &str, owner: &str, deleting: bool| {
            let mut md = json!({"name": uid, "namespace": "d", "uid": uid,
                "ownerReferences": [{"uid": "other"}, {"uid": owner, "controller": true}]});
            if deleting {
                md["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            Arc::new(PodInfo::from_pod(Arc::new(json!({"metadata": md}))))
        };
        n.add_pod(owned("a", "rs1", false));
        n.add_pod(owned("b", "rs1", false));
        n.add_pod(owned("c", "rs2", false));
        n.add_pod(owned("d", "rs1", true));
        n.add_pod(Arc::new(pod(json!({}))));
        assert_eq!((n.controlled_by("rs1"), n.controlled_by("rs2")), (2, 1));
        assert_eq!(n.controlled_by("other"), 0, "only the controller counts");
        assert!(n.remove_pod("a") && n.remove_pod("c") && n.remove_pod("d"));
        assert_eq!((n.controlled_by("rs1"), n.controlled_by("rs2")), (1, 0));
        assert_eq!(n.controlled, vec![("rs1".to_string(), 1)]);
        n.controlled.clear();
        n.recount();
        assert_eq!(n.controlled_by("rs1"), 1);
    }
    #[test]
    fn a_status_update_derives_what_a_fresh_read_would() {
        let pending = json!({
            "metadata": {"name": "p", "namespace": "d", "uid": "u", "resourceVersion": "1",
                "labels": {"app": "web"},
                "ownerReferences": [{"uid": "rs", "controller": true}]},
            "spec": {"priority": 5,
                "affinity": {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k"}]}},
                "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}],
                "containers": [{"name": "a", "ports": [{"hostPort": 80}],
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]},
            "status": {"phase": "Pending"}
        });
        let before = PodInfo::from_pod(Arc::new(pending.clone()));
        let mut bound = pending.clone();
        bound["spec"]["nodeName"] = json!("n");
        bound["metadata"]["resourceVersion"] = json!("3");
        bound["status"] = json!({"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
            "podIP": "10.0.0.1"});
        let fast = before
            .status_update(&bound)
            .expect("only the status changed");
        let full = PodInfo::from_pod(Arc::new(bound.clone()));
        assert_eq!(fast.pod, full.pod);
        // One copy of the cut spec for every version of the pod.
        assert!(Arc::ptr_eq(&fast.pod.spec, &before.pod.spec));
        assert!(Arc::ptr_eq(&full.pod.spec, &before.pod.spec));
        assert_eq!(&*fast.pod.start_time, "2026-01-01T00:00:00Z");
        assert_eq!(&*fast.pod.resource_version, "3");
        assert_eq!(fast.key, full.key);
        assert_eq!(
            (&fast.uid, &fast.labels, fast.priority, &fast.node_name),
            (&full.uid, &full.labels, full.priority, &full.node_name)
        );
        assert_eq!(fast.requests, full.requests);
        assert_eq!(fast.non_zero_requests, full.non_zero_requests);
        assert_eq!(fast.host_ports, full.host_ports);
        assert_eq!(fast.affinity, full.affinity);
        assert_eq!(fast.volumes, full.volumes);
        assert_eq!(
            (&fast.controller, fast.deleting),
            (&full.controller, full.deleting)
        );
        // Anything a derived field reads sends the caller to a full read.
        let mut relabelled = bound.clone();
        relabelled["metadata"]["labels"]["app"] = json!("db");
        assert!(before.status_update(&relabelled).is_none());
        let mut resized = bound.clone();
        resized["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("2");
        assert!(before.status_update(&resized).is_none());
        let mut deleting = bound.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(before.status_update(&deleting).is_none());
        let mut adopted = bound.clone();
        adopted["metadata"]["ownerReferences"] = json!([{"uid": "other", "controller": true}]);
        assert!(before.status_update(&adopted).is_none());
        let mut other_claim = bound;
        other_claim["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] = json!("e");
        assert!(before.status_update(&other_claim).is_none());
    }

    #[test]
    fn containers_add_up_and_init_containers_take_the_max() {
        let p = pod(json!({
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                {"name": "b", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "2"}}},
            ],
            "overhead": {"cpu": "100m"},
        }));
        // max(0.5 + 1, 3) + 0.1 overhead
        assert_eq!(p.requests.milli_cpu, 3100);
        assert_eq!(p.requests.memory, 1 << 30);
        assert_eq!(p.requests.scalar["nvidia.com/gpu"], 2);
        // Container b has no memory request: 200Mi for scoring, 1Gi + 200Mi
        // beats the init container's 1Gi.
        assert_eq!(
            p.non_zero_requests.memory,
            (1 << 30) + DEFAULT_MEMORY_REQUEST
        );
    }

    #[test]
    fn sidecars_add_to_later_init_containers_and_to_the_containers() {
        let p = pod(json!({
            "initContainers": [
                {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}},
                {"name": "i", "resources": {"requests": {"cpu": "2"}}},
            ],
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1500m"}}}],
        }));
        // moments: s alone 1; i beside s 3; containers beside s 2.5 -> 3
        assert_eq!(p.requests.milli_cpu, 3000);
    }

    #[test]
    fn best_effort_pod_counts_defaults_for_scoring_only() {
        let p = pod(json!({"containers": [{"name": "a"}, {"name": "b"}]}));
        assert_eq!(p.requests, Resources::default());
        assert_eq!(p.non_zero_requests.milli_cpu, 200);
        assert_eq!(p.non_zero_requests.memory, 2 * DEFAULT_MEMORY_REQUEST);
    }

    #[test]
    fn node_allocatable_taints_images_and_pod_accounting() {
        let node = json!({
            "metadata": {"name": "n1", "labels": {"zone": "a"}},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", "ephemeral-storage": "10Gi", "example.com/foo": "3"},
                "images": [{"names": ["nginx:1", "docker.io/nginx:1"], "sizeBytes": 1000}],
            },
        });
        let mut n = NodeInfo::from_node(Arc::new(node));
        assert_eq!(n.allocatable.milli_cpu, 4000);
        assert_eq!(n.allocatable.pods, 110);
        assert_eq!(n.allocatable.scalar["example.com/foo"], 3);
        assert!(n.unschedulable);
        assert_eq!(n.taints[0].effect, "NoSchedule");
        assert_eq!(n.images.len(), 2);
        let p = Arc::new(pod(json!({"containers": [{"name": "a",
            "ports": [{"containerPort": 80, "hostPort": 8080}],
            "resources": {"requests": {"cpu": "1"}}}]})));
        n.add_pod(p);
        assert_eq!(n.requested.milli_cpu, 1000);
        assert!(n
            .used_ports
            .contains(&("TCP".into(), "0.0.0.0".into(), 8080)));
        assert!(n.remove_pod("u"));
        assert_eq!(n.requested.milli_cpu, 0);
        assert!(n.used_ports.is_empty());
    }
}
