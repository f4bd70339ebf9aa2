//! VolumeRestrictions: volumes that only one pod (or only readers) may use.
//!
//! Two checks, as kube-scheduler's plugin makes them:
//! - an inline disk (GCE PD, AWS EBS, Ceph RBD, iSCSI) keeps a pod off a
//!   node where a placed pod already uses the same disk, unless both mount
//!   it read-only (EBS: not even then);
//! - a PersistentVolumeClaim with the ReadWriteOncePod access mode used by
//!   any placed pod, on any node, keeps every other pod using it pending.
//!
//! Both are `Unschedulable`: evicting the other pod cures them, so
//! preemption may help. Upstream's PreFilter also rejects a pod whose claim
//! does not exist; kubesim does not, because nothing here provisions or
//! binds volumes (the StatefulSet controller creates its pods' claims
//! first, but they stay Pending), so claims are no condition for
//! scheduling. A claim not (yet) known is read as not ReadWriteOncePod.
//!
//! Almost no pod has such volumes: PreFilter returns Skip for those, and
//! nodes without pods with volumes are passed without looking at their
//! pods.

use std::sync::Arc;

use kubesim_runtime::ObjectKey;

use crate::framework::{
    CycleState, Disk, NodeInfo, Plugin, PodInfo, PodVolumes, Points, Snapshot, Status,
};

pub const NAME: &str = "VolumeRestrictions";
/// Filter reasons, worded as kube-scheduler words them.
pub const REASON_DISK: &str = "node(s) had no available disk";
pub const REASON_RWOP: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

const PRE_FILTER_KEY: &str = "PreFilterVolumeRestrictions";

pub struct VolumeRestrictions;

/// What PreFilter found for the pod.
struct PreFilterState {
    /// The pod's claims that are ReadWriteOncePod.
    rwop: Vec<String>,
    /// Whether a placed pod already uses one of them.
    in_use: bool,
}

/// Whether two pods using disks `a` and `b` may not share a node.
fn disks_conflict(a: &Disk, b: &Disk) -> bool {
    match (a, b) {
        (
            Disk::Gce {
                pd_name: x,
                read_only: rx,
            },
            Disk::Gce {
                pd_name: y,
                read_only: ry,
            },
        ) => x == y && !(*rx && *ry),
        (Disk::Ebs { volume_id: x }, Disk::Ebs { volume_id: y }) => x == y,
        (
            Disk::Rbd {
                monitors: mx,
                pool: px,
                image: ix,
                read_only: rx,
            },
            Disk::Rbd {
                monitors: my,
                pool: py,
                image: iy,
                read_only: ry,
            },
        ) => px == py && ix == iy && !(*rx && *ry) && mx.iter().any(|m| my.contains(m)),
        (
            Disk::Iscsi {
                iqn: x,
                read_only: rx,
            },
            Disk::Iscsi {
                iqn: y,
                read_only: ry,
            },
        ) => x == y && !(*rx && *ry),
        _ => false,
    }
}

fn shares_disk(want: &PodVolumes, placed: &PodInfo) -> bool {
    let Some(theirs) = &placed.volumes else {
        return false;
    };
    want.disks
        .iter()
        .any(|d| theirs.disks.iter().any(|e| disks_conflict(d, e)))
}

/// Whether `placed` uses one of the claims `names` of namespace `ns`.
fn uses_claim(placed: &PodInfo, ns: &str, names: &[String]) -> bool {
    placed.namespace() == ns
        && placed
            .volumes
            .as_ref()
            .is_some_and(|v| v.claims.iter().any(|c| names.contains(c)))
}

/// The placed pods that may matter: those on nodes with pods with volumes.
fn pods_with_volumes(node: &NodeInfo) -> &[Arc<PodInfo>] {
    if node.pods_with_volumes == 0 {
        &[]
    } else {
        &node.pods
    }
}

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }
    fn points(&self) -> Points {
        Points {
            pre_filter: true,
            filter: true,
            ..Points::default()
        }
    }
    fn pre_filter(&self, state: &mut CycleState, pod: &PodInfo, snap: &Snapshot) -> Status {
        let Some(vols) = &pod.volumes else {
            return Status::skip();
        };
        let ns = pod.namespace();
        let rwop: Vec<String> = if snap.rwop_claims.is_empty() {
            Vec::new()
        } else {
            vols.claims
                .iter()
                .filter(|c| snap.rwop_claims.contains(&ObjectKey::new(ns, c)))
                .cloned()
                .collect()
        };
        if vols.disks.is_empty() && rwop.is_empty() {
            return Status::skip();
        }
        let in_use = !rwop.is_empty()
            && snap.pods_with_volumes > 0
            && snap
                .nodes
                .iter()
                .flat_map(|n| pods_with_volumes(n))
                .any(|p| uses_claim(p, ns, &rwop));
        state.write(PRE_FILTER_KEY, PreFilterState { rwop, in_use });
        Status::success()
    }
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(vols) = &pod.volumes else {
            return Status::success();
        };
        let placed = pods_with_volumes(node);
        if !vols.disks.is_empty() && placed.iter().any(|p| shares_disk(vols, p)) {
            return Status::unschedulable(REASON_DISK);
        }
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_KEY) else {
            return Status::error(format!("cannot read {PRE_FILTER_KEY:?} from cycleState"));
        };
        // Pods nominated to this node are added to it for Filter only, so a
        // user of the claim among them is found here rather than in
        // PreFilter's count (upstream updates the count as they are added).
        let rwop_taken = s.in_use
            || (!s.rwop.is_empty()
                && placed
                    .iter()
                    .any(|p| uses_claim(p, pod.namespace(), &s.rwop)));
        if rwop_taken {
            Status::unschedulable(REASON_RWOP)
        } else {
            Status::success()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::{named_pod, node};
    use serde_json::{json, Value};
    use std::collections::BTreeSet;

    fn with_volumes(name: &str, volumes: Value) -> PodInfo {
        named_pod(name, json!({"containers": [], "volumes": volumes}))
    }

    fn claim_user(name: &str, ns: &str, claim: &str) -> PodInfo {
        let mut p = with_volumes(
            name,
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": claim}}]),
        );
        p.key.namespace = ns.into();
        p
    }

    fn snapshot(nodes: Vec<NodeInfo>, rwop: &[(&str, &str)]) -> Snapshot {
        let mut s = Snapshot::default();
        for (i, n) in nodes.into_iter().enumerate() {
            s.index.insert(n.name.clone(), i);
            s.nodes.push(Arc::new(n));
        }
        s.recount();
        s.rwop_claims = Arc::new(
            rwop.iter()
                .map(|(ns, n)| ObjectKey::new(ns, n))
                .collect::<BTreeSet<_>>(),
        );
        s
    }

    /// PreFilter's code, then each node's verdict (Filter is not run after
    /// a Skip).
    fn run(pod: &PodInfo, snap: &Snapshot) -> (Code, Vec<Status>) {
        let mut state = CycleState::default();
        let pre = VolumeRestrictions.pre_filter(&mut state, pod, snap);
        if pre.code == Code::Skip {
            return (pre.code, Vec::new());
        }
        let verdicts = snap
            .nodes
            .iter()
            .map(|n| VolumeRestrictions.filter(&state, pod, n))
            .collect();
        (pre.code, verdicts)
    }

    #[test]
    fn inline_disks_conflict_by_kind() {
        let gce = |pd: &str, ro: bool| json!({"gcePersistentDisk": {"pdName": pd, "readOnly": ro}});
        let ebs =
            |id: &str, ro: bool| json!({"awsElasticBlockStore": {"volumeID": id, "readOnly": ro}});
        let rbd = |mons: &[&str], pool: Option<&str>, image: &str, ro: bool| {
            let mut v = json!({"rbd": {"monitors": mons, "image": image, "readOnly": ro}});
            if let Some(p) = pool {
                v["rbd"]["pool"] = json!(p);
            }
            v
        };
        let iscsi = |iqn: &str, ro: bool| json!({"iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": ro}});
        // (volume of the placed pod, volume of the incoming pod, conflict)
        let table = [
            (gce("pd", false), gce("pd", false), true),
            (gce("pd", true), gce("pd", false), true),
            (gce("pd", true), gce("pd", true), false),
            (gce("pd", false), gce("other", false), false),
            // EBS: read-only on both sides still conflicts.
            (ebs("vol-1", true), ebs("vol-1", true), true),
            (ebs("vol-1", false), ebs("vol-2", false), false),
            // RBD: same pool and image behind one shared monitor.
            (
                rbd(&["m1", "m2"], Some("p"), "img", false),
                rbd(&["m2", "m3"], Some("p"), "img", false),
                true,
            ),
            (
                rbd(&["m1"], Some("p"), "img", false),
                rbd(&["m3"], Some("p"), "img", false),
                false,
            ),
            (
                rbd(&["m1"], Some("p"), "img", false),
                rbd(&["m1"], Some("q"), "img", false),
                false,
            ),
            (
                rbd(&["m1"], Some("p"), "img", false),
                rbd(&["m1"], Some("p"), "other", false),
                false,
            ),
            (
                rbd(&["m1"], Some("p"), "img", true),
                rbd(&["m1"], Some("p"), "img", true),
                false,
            ),
            // An unset pool is the API's default, "rbd".
            (
                rbd(&["m1"], None, "img", false),
                rbd(&["m1"], Some("rbd"), "img", false),
                true,
            ),
            (iscsi("iqn.a", false), iscsi("iqn.a", true), true),
            (iscsi("iqn.a", true), iscsi("iqn.a", true), false),
            (iscsi("iqn.a", false), iscsi("iqn.b", false), false),
            // Different kinds never conflict, whatever the names.
            (gce("x", false), ebs("x", false), false),
        ];
        for (placed, incoming, conflict) in table {
            let mut placed_v = placed.clone();
            placed_v["name"] = json!("v");
            let mut incoming_v = incoming.clone();
            incoming_v["name"] = json!("v");
            let mut n = node("n", json!({}));
            n.add_pod(Arc::new(with_volumes("a", json!([placed_v]))));
            let snap = snapshot(vec![n], &[]);
            let (code, verdicts) = run(&with_volumes("p", json!([incoming_v])), &snap);
            assert_eq!(code, Code::Success);
            let want = if conflict {
                Status::unschedulable(REASON_DISK)
            } else {
                Status::success()
            };
            assert_eq!(verdicts, [want], "{placed} then {incoming}");
        }
    }

    #[test]
    fn only_the_node_with_the_disk_is_ruled_out() {
        let disk = json!([{"name": "v", "gcePersistentDisk": {"pdName": "pd"}}]);
        let mut n1 = node("n1", json!({}));
        n1.add_pod(Arc::new(with_volumes("a", disk.clone())));
        // n2 has a pod with volumes, but another disk.
        let mut n2 = node("n2", json!({}));
        n2.add_pod(Arc::new(with_volumes(
            "b",
            json!([{"name": "v", "gcePersistentDisk": {"pdName": "other"}}]),
        )));
        let n3 = node("n3", json!({}));
        let snap = snapshot(vec![n1, n2, n3], &[]);
        let (_, verdicts) = run(&with_volumes("p", disk), &snap);
        let ok: Vec<bool> = verdicts.iter().map(Status::is_success).collect();
        assert_eq!(ok, [false, true, true]);
        assert_eq!(verdicts[0].code, Code::Unschedulable);
    }

    #[test]
    fn pods_without_restricted_volumes_skip() {
        let mut n = node("n", json!({}));
        n.add_pod(Arc::new(claim_user("a", "default", "plain")));
        let snap = snapshot(vec![n], &[("default", "exclusive")]);
        // No volumes; volumes of other kinds; a claim that is not
        // ReadWriteOncePod (or unknown): nothing to check.
        for volumes in [
            Value::Null,
            json!([{"name": "e", "emptyDir": {}}, {"name": "c", "configMap": {"name": "x"}}]),
            json!([{"name": "d", "persistentVolumeClaim": {"claimName": "plain"}}]),
        ] {
            let p = with_volumes("p", volumes.clone());
            assert_eq!(run(&p, &snap).0, Code::Skip, "{volumes}");
        }
    }

    #[test]
    fn a_read_write_once_pod_claim_has_one_user_in_the_cluster() {
        // n1 runs a pod using default/exclusive; n2 is empty.
        let cluster = |rwop: &[(&str, &str)]| {
            let mut n1 = node("n1", json!({}));
            n1.add_pod(Arc::new(claim_user("a", "default", "exclusive")));
            snapshot(vec![n1, node("n2", json!({}))], rwop)
        };
        // Every node refuses, not only the one with the user.
        let snap = cluster(&[("default", "exclusive")]);
        let (code, verdicts) = run(&claim_user("p", "default", "exclusive"), &snap);
        assert_eq!(code, Code::Success);
        assert_eq!(verdicts, vec![Status::unschedulable(REASON_RWOP); 2]);
        // The same claim name in another namespace is another claim.
        let snap = cluster(&[("default", "exclusive"), ("team", "exclusive")]);
        let (code, verdicts) = run(&claim_user("p", "team", "exclusive"), &snap);
        assert_eq!(code, Code::Success);
        assert!(verdicts.iter().all(Status::is_success));
        // No user yet: the first pod may go anywhere.
        let empty = snapshot(
            vec![node("n1", json!({})), node("n2", json!({}))],
            &[("default", "exclusive")],
        );
        let (_, verdicts) = run(&claim_user("p", "default", "exclusive"), &empty);
        assert!(verdicts.iter().all(Status::is_success));
    }

    #[test]
    fn a_nominated_user_of_the_claim_counts_on_its_node() {
        let snap = snapshot(
            vec![node("n1", json!({})), node("n2", json!({}))],
            &[("default", "exclusive")],
        );
        let pod = claim_user("p", "default", "exclusive");
        let mut state = CycleState::default();
        assert!(VolumeRestrictions
            .pre_filter(&mut state, &pod, &snap)
            .is_success());
        // The scheduler adds pods nominated to a node to its copy for Filter.
        let mut with_nominated = (*snap.nodes[0]).clone();
        with_nominated.add_pod(Arc::new(claim_user("n", "default", "exclusive")));
        assert_eq!(
            VolumeRestrictions.filter(&state, &pod, &with_nominated),
            Status::unschedulable(REASON_RWOP)
        );
        assert!(VolumeRestrictions
            .filter(&state, &pod, &snap.nodes[1])
            .is_success());
    }

    #[test]
    fn volumes_are_kept_though_the_view_drops_them() {
        let p = PodInfo::from_pod(Arc::new(json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "p"},
            "spec": {"containers": [], "volumes": [
                {"name": "a", "gcePersistentDisk": {"pdName": "pd", "readOnly": true}},
                {"name": "b", "persistentVolumeClaim": {"claimName": "c"}},
                {"name": "c", "rbd": {"monitors": ["m"], "image": "i"}},
                {"name": "d", "emptyDir": {}},
            ]},
        })));
        assert!(p.pod.spec("volumes").is_none());
        let v = p.volumes.as_deref().expect("volumes");
        assert_eq!(
            v.disks,
            [
                Disk::Gce {
                    pd_name: "pd".into(),
                    read_only: true
                },
                Disk::Rbd {
                    monitors: vec!["m".into()],
                    pool: "rbd".into(),
                    image: "i".into(),
                    read_only: false
                },
            ]
        );
        assert_eq!(v.claims, ["c"]);
        let plain = named_pod("q", json!({"volumes": [{"name": "d", "emptyDir": {}}]}));
        assert!(plain.volumes.is_none());
    }
}
