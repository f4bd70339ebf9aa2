//! All-or-nothing placement of a pod group on one snapshot: each member is
//! scheduled as a lone pod would be, then counted on its node before the
//! next member is tried, on a copy of the snapshot so that a group that
//! does not fit leaves nothing behind.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::algorithm::{Algorithm, ScheduleError};
use crate::framework::{PodInfo, Snapshot};
use crate::profile::Profile;
use crate::queue::Nominated;

/// A member and the node found for it.
pub struct Fitted {
    pub pod: Arc<PodInfo>,
    pub node: String,
}

/// A member no node could take, and why.
pub struct Unfit {
    pub pod: Arc<PodInfo>,
    /// kube-scheduler's `0/N nodes are available: ...` summary.
    pub message: String,
    /// The plugins that rejected it (which cluster events may help).
    pub plugins: BTreeSet<&'static str>,
}

pub struct Outcome {
    pub fitted: Vec<Fitted>,
    pub unfit: Vec<Unfit>,
}

/// Places `members` in order on a copy of `snapshot`. The caller binds
/// `fitted` only if there are enough of them; `snapshot` is not changed.
pub fn place(
    algo: &mut Algorithm,
    profile: &Profile,
    members: &[Arc<PodInfo>],
    snapshot: &Snapshot,
    nominated: &Nominated,
) -> Outcome {
    let mut snap = snapshot.clone();
    let mut out = Outcome {
        fitted: Vec::new(),
        unfit: Vec::new(),
    };
    for pod in members {
        match algo.schedule(profile, pod, &snap, nominated) {
            Ok(p) => {
                if let Some(&i) = snap.index.get(&p.node) {
                    let mut node = (*snap.nodes[i]).clone();
                    node.add_pod(Arc::new(pod.placed_on(&p.node)));
                    snap.set_node(i, Arc::new(node));
                }
                out.fitted.push(Fitted {
                    pod: pod.clone(),
                    node: p.node,
                });
            }
            Err(ScheduleError::Unschedulable(fit)) => out.unfit.push(Unfit {
                pod: pod.clone(),
                message: fit.message(""),
                plugins: fit.plugins(),
            }),
            Err(ScheduleError::Internal(e)) => out.unfit.push(Unfit {
                pod: pod.clone(),
                message: e,
                plugins: BTreeSet::new(),
            }),
        }
    }
    out
}

/// What every member of a rejected group is told: why the first member
/// that did not fit failed, and how many fitted.
pub fn rejected_message(group: &str, out: &Outcome, placed: usize, min_member: usize) -> String {
    let first = out.unfit.first();
    let why = first.map(|u| u.message.as_str()).unwrap_or_default();
    let who = first.map(|u| u.pod.name()).unwrap_or_default();
    format!(
        "{why} PodGroup {group} gets rejected due to Pod {who} is unschedulable: {placed} of minMember {min_member} pods fit."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ProfileConfig, DEFAULT_SCHEDULER_NAME};
    use crate::framework::NodeInfo;
    use kubesim_runtime::Rng;
    use serde_json::json;

    fn node(name: &str, cpu: &str) -> Arc<NodeInfo> {
        Arc::new(NodeInfo::from_node(Arc::new(json!({
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
        }))))
    }

    fn snapshot(nodes: &[(&str, &str)]) -> Snapshot {
        let mut s = Snapshot::default();
        for (i, (n, cpu)) in nodes.iter().enumerate() {
            s.nodes.push(node(n, cpu));
            s.index.insert(n.to_string(), i);
        }
        s.recount();
        s
    }

    fn pod(name: &str, cpu: &str) -> Arc<PodInfo> {
        Arc::new(PodInfo::from_pod(Arc::new(json!({
            "metadata": {"name": name, "namespace": "d", "uid": name,
                "labels": {super::super::LABEL: "g"}},
            "spec": {"containers": [{"name": "c",
                "resources": {"requests": {"cpu": cpu}}}]},
        }))))
    }

    fn run(nodes: &[(&str, &str)], pods: &[Arc<PodInfo>]) -> (Outcome, Snapshot) {
        let profile =
            Profile::build(&ProfileConfig::default_named(DEFAULT_SCHEDULER_NAME)).unwrap();
        let mut algo = Algorithm::new(Rng::seeded(1), None);
        let snap = snapshot(nodes);
        let out = place(&mut algo, &profile, pods, &snap, &Nominated::new());
        (out, snap)
    }

    #[test]
    fn each_placement_counts_before_the_next() {
        // Three pods of 3 cpu on three 4-cpu nodes: each node can hold
        // one, so they must land on three different nodes.
        let pods = [pod("a", "3"), pod("b", "3"), pod("c", "3")];
        let (out, snap) = run(&[("n1", "4"), ("n2", "4"), ("n3", "4")], &pods);
        assert!(out.unfit.is_empty());
        let nodes: BTreeSet<&str> = out.fitted.iter().map(|f| f.node.as_str()).collect();
        assert_eq!(nodes.len(), 3);
        // The caller's snapshot is untouched.
        assert!(snap.nodes.iter().all(|n| n.pods.is_empty()));
    }

    #[test]
    fn a_member_that_does_not_fit_is_reported_with_its_reasons() {
        let pods = [pod("a", "3"), pod("b", "3"), pod("c", "3")];
        let (out, _) = run(&[("n1", "4"), ("n2", "4")], &pods);
        assert_eq!(out.fitted.len(), 2);
        assert_eq!(out.unfit.len(), 1);
        assert_eq!(out.unfit[0].pod.name(), "c");
        assert_eq!(
            out.unfit[0].message,
            "0/2 nodes are available: 2 Insufficient cpu."
        );
        assert!(out.unfit[0].plugins.contains("NodeResourcesFit"));
        assert_eq!(
            rejected_message("d/g", &out, 2, 3),
            "0/2 nodes are available: 2 Insufficient cpu. PodGroup d/g gets rejected due to Pod c is unschedulable: 2 of minMember 3 pods fit."
        );
    }
}
