//! Small builders for plugin tests: pods and nodes made directly from the
//! framework's public fields, and a profile-like runner of Filter/Score.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_runtime::ObjectKey;
use kubesim_scheduler::framework::{
    AffinityFlags, Code, CycleState, Filters, NodeInfo, Plugin, PodInfo, PodVolumes, Resources,
    Snapshot, Status,
};
use kubesim_scheduler::info::controller_uid;
use kubesim_scheduler::view::PodView;
use serde_json::{json, Value};

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A pod in `ns` with `labels` and the given `spec` (affinity, constraints,
/// ...). Extra top-level fields (metadata additions, status) come from `extra`.
pub fn pod(ns: &str, name: &str, l: &[(&str, &str)], spec: Value) -> PodInfo {
    pod_with(ns, name, l, spec, json!({}), 0, 0)
}

pub fn pod_with(
    ns: &str,
    name: &str,
    l: &[(&str, &str)],
    spec: Value,
    extra: Value,
    priority: i32,
    milli_cpu: i64,
) -> PodInfo {
    let mut obj = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{ns}-{name}"), "labels": labels(l)},
        "spec": spec,
    });
    if let (Some(o), Some(e)) = (obj.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            if k == "metadata" {
                if let (Some(m), Some(em)) = (o["metadata"].as_object_mut(), v.as_object()) {
                    for (mk, mv) in em {
                        m.insert(mk.clone(), mv.clone());
                    }
                }
            } else {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    let requests = Resources {
        milli_cpu,
        pods: 1,
        ..Default::default()
    };
    PodInfo {
        affinity: AffinityFlags::of(&obj),
        controller: controller_uid(&obj).map(str::to_string),
        deleting: obj.pointer("/metadata/deletionTimestamp").is_some(),
        volumes: PodVolumes::of(&obj).map(Arc::new),
        pod: Arc::new(PodView::of(&obj)),
        key: ObjectKey::new(ns, name),
        uid: format!("uid-{ns}-{name}"),
        labels: labels(l),
        priority,
        requests: requests.clone(),
        non_zero_requests: requests,
        host_ports: Vec::new(),
        node_name: String::new(),
        shape: Default::default(),
    }
}

/// A node with `labels` (plus its hostname label), `milli_cpu` allocatable
/// and the given pods, whose requests are summed into `requested`.
pub fn node(name: &str, l: &[(&str, &str)], milli_cpu: i64, pods: Vec<PodInfo>) -> Arc<NodeInfo> {
    let mut lab = labels(l);
    lab.insert("kubernetes.io/hostname".into(), name.into());
    node_exact(name, lab, milli_cpu, pods)
}

/// As [`node`], without adding the hostname label.
pub fn node_exact(
    name: &str,
    lab: BTreeMap<String, String>,
    milli_cpu: i64,
    pods: Vec<PodInfo>,
) -> Arc<NodeInfo> {
    let mut requested = Resources::default();
    let pods: Vec<Arc<PodInfo>> = pods
        .into_iter()
        .map(|mut p| {
            p.node_name = name.into();
            requested.milli_cpu += p.requests.milli_cpu;
            requested.pods += 1;
            Arc::new(p)
        })
        .collect();
    let mut info = NodeInfo {
        node: Arc::new(json!({"metadata": {"name": name, "labels": lab}})),
        name: name.into(),
        labels: lab.into(),
        taints: Default::default(),
        unschedulable: false,
        allocatable: Resources {
            milli_cpu,
            pods: 110,
            ..Default::default()
        },
        requested: requested.clone(),
        non_zero_requested: requested,
        pods,
        pods_with_affinity: 0,
        pods_with_required_anti: 0,
        pods_with_volumes: 0,
        lowest_priority: i32::MAX,
        used_ports: BTreeSet::new(),
        images: Default::default(),
        controlled: Vec::new(),
    };
    info.recount();
    Arc::new(info)
}

pub fn snapshot(nodes: Vec<Arc<NodeInfo>>) -> Snapshot {
    let index = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let mut s = Snapshot {
        nodes,
        index,
        ..Default::default()
    };
    s.recount();
    s
}

/// PreFilter then Filter on every node, as a cycle would: a PreFilter Skip
/// passes every node. Returns the PreFilter status and each node's verdict.
pub fn filter_all(p: &dyn Plugin, pod: &PodInfo, snap: &Snapshot) -> (Code, Vec<Status>) {
    let mut state = CycleState::default();
    let pre = p.pre_filter(&mut state, pod, snap);
    let verdicts = snap
        .nodes
        .iter()
        .map(|n| {
            if pre.code == Code::Skip {
                Status::success()
            } else {
                p.filter(&state, pod, n)
            }
        })
        .collect();
    (pre.code, verdicts)
}

/// PreScore, Score and NormalizeScore over all nodes of `snap` (all
/// feasible). `None` when PreScore skips.
pub fn scores(p: &dyn Plugin, pod: &PodInfo, snap: &Snapshot) -> Option<(Vec<i64>, Vec<i64>)> {
    let mut state = CycleState::default();
    let nodes: Vec<&NodeInfo> = snap.nodes.iter().map(|n| &**n).collect();
    let pre = p.pre_score(&mut state, pod, snap, &nodes);
    if pre.code == Code::Skip {
        return None;
    }
    assert!(pre.is_success(), "{pre:?}");
    let raw: Vec<i64> = snap.nodes.iter().map(|n| p.score(&state, pod, n)).collect();
    let mut norm = raw.clone();
    p.normalize(&state, pod, &mut norm);
    Some((raw, norm))
}

/// A profile's filters for preemption tests: a CPU fit check (what
/// NodeResourcesFit would say) followed by the given plugins.
pub struct TestFilters {
    pub plugins: Vec<Box<dyn Plugin>>,
}

impl Filters for TestFilters {
    fn pre_filter(&self, pod: &PodInfo, snap: &Snapshot) -> Result<CycleState, Status> {
        let mut state = CycleState::default();
        for p in &self.plugins {
            let s = p.pre_filter(&mut state, pod, snap);
            match s.code {
                Code::Success => {}
                Code::Skip => {
                    state.skip_filter.insert(p.name());
                }
                _ => return Err(s),
            }
        }
        Ok(state)
    }

    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if node.allocatable.milli_cpu - node.requested.milli_cpu < pod.requests.milli_cpu {
            return Status::unschedulable("Insufficient cpu");
        }
        for p in &self.plugins {
            if state.skip_filter.contains(p.name()) {
                continue;
            }
            let s = p.filter(state, pod, node);
            if !s.is_success() {
                return s;
            }
        }
        Status::success()
    }
}
