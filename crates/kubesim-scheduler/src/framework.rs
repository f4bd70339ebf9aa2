//! The shapes of the scheduling framework: what a plugin sees (a pod, the
//! nodes of a cluster snapshot) and what it answers (a [`Status`] or a
//! score). The structure follows kube-scheduler's framework: PreFilter and
//! Filter decide feasibility, PreScore/Score/NormalizeScore rank feasible
//! nodes, PostFilter (preemption) runs when no node fits.
//!
//! One [`Plugin`] trait with default methods is the extension point: a
//! plugin implements the extension points it takes part in and declares
//! them in [`Plugin::points`].

use std::any::Any;
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use kubesim_runtime::ObjectKey;
use serde_json::Value;

use crate::view::PodView;

/// Highest score a plugin gives a node (upstream `MaxNodeScore`).
pub const MAX_NODE_SCORE: i64 = 100;

/// Amounts of schedulable resources. CPU in millicores, memory and storage
/// in bytes; extended resources (e.g. `nvidia.com/gpu`) by name in their
/// own integer units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    pub scalar: BTreeMap<String, i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Taint {
    pub key: String,
    pub value: String,
    /// NoSchedule, PreferNoSchedule or NoExecute.
    pub effect: String,
}

/// A host port in use on a node: (protocol, hostIP, port).
pub type HostPort = (String, String, i32);

/// A pod as the scheduler sees it: the object plus what is computed once.
#[derive(Debug)]
pub struct PodInfo {
    /// What else is kept of the pod: its cut spec and a few fields.
    pub pod: Arc<PodView>,
    pub key: ObjectKey,
    pub uid: String,
    pub labels: BTreeMap<String, String>,
    pub priority: i32,
    /// Effective requests: max(sum of containers, largest init container)
    /// plus pod overhead.
    pub requests: Resources,
    /// As `requests`, but containers without cpu/memory requests count as
    /// 100m / 200Mi, as upstream's scoring does.
    pub non_zero_requests: Resources,
    pub host_ports: Vec<HostPort>,
    /// `spec.nodeName`, or the node the scheduler assumed for it.
    pub node_name: String,
    /// What pod (anti-)affinity the pod declares, read once: the
    /// InterPodAffinity plugin asks it of every bound pod in every cycle.
    pub affinity: AffinityFlags,
    /// The volumes VolumeRestrictions compares, read before the scheduling
    /// view drops `spec.volumes`; `None` for the many pods with none.
    pub volumes: Option<Arc<PodVolumes>>,
    /// The uid of the controlling owner (the ownerReference with
    /// `controller: true`), read once: PodTopologySpread's default
    /// constraints compare it for every bound pod in every cycle.
    pub controller: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// The pod's part of its failure-replay key, made the first time a
    /// failed attempt asks for it ([`crate::failures::shape`]): the pod's
    /// retries share this value rather than cut and serialize its spec
    /// again. Not carried to another version of the pod.
    pub shape: std::sync::OnceLock<Option<Arc<str>>>,
}

/// A disk a pod names inline that the cluster lets only one node (or one
/// writer) use: VolumeRestrictions keeps two such pods apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disk {
    /// `gcePersistentDisk.pdName`.
    Gce { pd_name: String, read_only: bool },
    /// `awsElasticBlockStore.volumeID`: one pod per node whatever the mode.
    Ebs { volume_id: String },
    /// `rbd`: an image of a pool, reached through any of its monitors.
    Rbd {
        monitors: Vec<String>,
        pool: String,
        image: String,
        read_only: bool,
    },
    /// `iscsi.iqn`.
    Iscsi { iqn: String, read_only: bool },
}

/// What of a pod's volumes the scheduler keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodVolumes {
    pub disks: Vec<Disk>,
    /// `persistentVolumeClaim.claimName`s, in the pod's namespace.
    pub claims: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AffinityFlags {
    /// Any `podAffinity` or `podAntiAffinity`.
    pub any: bool,
    /// Required `podAntiAffinity` terms.
    pub required_anti: bool,
}

/// A node and the pods on it (bound or assumed), at one instant.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    pub node: Arc<Value>,
    pub name: String,
    /// Shared between the copies a snapshot forces when a pod lands on or
    /// leaves the node: they change only with the node object, which is
    /// rare next to pod changes.
    pub labels: Arc<BTreeMap<String, String>>,
    pub taints: Arc<Vec<Taint>>,
    pub unschedulable: bool,
    pub allocatable: Resources,
    pub requested: Resources,
    pub non_zero_requested: Resources,
    pub pods: Vec<Arc<PodInfo>>,
    /// How many of `pods` declare pod affinity or anti-affinity, and how
    /// many required anti-affinity: InterPodAffinity visits only nodes
    /// with such pods, as upstream keeps lists of them per node.
    pub pods_with_affinity: usize,
    pub pods_with_required_anti: usize,
    /// How many of `pods` have [`PodVolumes`]: VolumeRestrictions looks
    /// only at nodes with some.
    pub pods_with_volumes: usize,
    /// The lowest priority of `pods` (`i32::MAX` when there are none):
    /// preemption looks for victims only where some pod is below the
    /// preemptor, without visiting every pod of every node.
    pub lowest_priority: i32,
    pub used_ports: BTreeSet<HostPort>,
    /// Image name (every name in `status.images[].names`) to size in bytes.
    pub images: Arc<BTreeMap<String, i64>>,
    /// Pods of `pods` not being deleted, by their controlling owner's uid
    /// (few entries per node): PodTopologySpread's default constraints
    /// count them on every node in every cycle.
    pub controlled: Vec<(String, u32)>,
}

/// The cluster as one scheduling cycle sees it; nodes in name order.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub nodes: Vec<Arc<NodeInfo>>,
    /// Node name to position in `nodes`.
    pub index: BTreeMap<String, usize>,
    /// Labels of every namespace, for affinity `namespaceSelector`s.
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// PodDisruptionBudgets, for preemption's victim choice.
    pub pdbs: Vec<Arc<Value>>,
    /// How many nodes report each image name (ImageLocality).
    pub image_nodes: Arc<BTreeMap<String, usize>>,
    /// Pods on all nodes that declare pod affinity of any kind, and
    /// required pod anti-affinity: upper bounds (preemption's what-if
    /// copies only remove pods), so zero means there are none and
    /// InterPodAffinity can skip its walk over the nodes.
    pub pods_with_affinity: usize,
    pub pods_with_required_anti: usize,
    /// Pods on all nodes with [`PodVolumes`], kept the same way.
    pub pods_with_volumes: usize,
    /// The PersistentVolumeClaims whose access modes include
    /// ReadWriteOncePod (VolumeRestrictions); other claims are not kept.
    pub rwop_claims: Arc<BTreeSet<ObjectKey>>,
    /// Which node positions changed, for whoever keeps a verdict per node.
    pub changes: Changes,
}

/// The node positions a snapshot's changes touched, oldest first, so that
/// a caller that remembers a verdict per node (see
/// [`crate::failures`]) looks again at those nodes alone. The log is
/// bounded; a caller further behind than its oldest entry, or behind a
/// rebuild of the node list, must look at every node.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// Counts every change.
    version: u64,
    /// The log holds every change after this version.
    floor: u64,
    /// (version, node position). Shared by a snapshot's working copies
    /// until one of them changes a node.
    log: Arc<VecDeque<(u64, usize)>>,
}

impl Changes {
    /// Entries kept: at 1,000 nodes, the changes of several minutes of a
    /// busy simulated cluster.
    const KEPT: usize = 8192;

    pub fn version(&self) -> u64 {
        self.version
    }

    fn node(&mut self, i: usize) {
        self.version += 1;
        let log = Arc::make_mut(&mut self.log);
        log.push_back((self.version, i));
        if log.len() > Self::KEPT {
            if let Some((v, _)) = log.pop_front() {
                self.floor = v;
            }
        }
    }

    fn all(&mut self) {
        self.version += 1;
        self.floor = self.version;
        self.log = Arc::default();
    }

    /// The positions changed after `version` (with repeats), or None when
    /// the log does not reach back that far.
    pub fn since(&self, version: u64) -> Option<impl Iterator<Item = usize> + '_> {
        if version < self.floor || version > self.version {
            return None;
        }
        let start = self.log.partition_point(|(v, _)| *v <= version);
        Some(self.log.range(start..).map(|(_, i)| *i))
    }
}

impl Snapshot {
    /// Sets the totals of pods with affinity or volumes from the nodes.
    /// Every node counts as changed.
    pub fn recount(&mut self) {
        self.changes.all();
        self.pods_with_affinity = self.nodes.iter().map(|n| n.pods_with_affinity).sum();
        self.pods_with_required_anti = self.nodes.iter().map(|n| n.pods_with_required_anti).sum();
        self.pods_with_volumes = self.nodes.iter().map(|n| n.pods_with_volumes).sum();
    }

    /// Puts `node` at position `i`, keeping the totals.
    pub fn set_node(&mut self, i: usize, node: Arc<NodeInfo>) {
        let old = &self.nodes[i];
        self.pods_with_affinity =
            self.pods_with_affinity - old.pods_with_affinity + node.pods_with_affinity;
        self.pods_with_required_anti = self.pods_with_required_anti - old.pods_with_required_anti
            + node.pods_with_required_anti;
        self.pods_with_volumes =
            self.pods_with_volumes - old.pods_with_volumes + node.pods_with_volumes;
        self.nodes[i] = node;
        self.changes.node(i);
    }

    pub fn node(&self, name: &str) -> Option<&Arc<NodeInfo>> {
        self.index.get(name).map(|&i| &self.nodes[i])
    }

    /// Every pod on every node, in node then pod order.
    pub fn pods(&self) -> impl Iterator<Item = (&Arc<NodeInfo>, &Arc<PodInfo>)> {
        self.nodes
            .iter()
            .flat_map(|n| n.pods.iter().map(move |p| (n, p)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    Success,
    /// Might fit after other pods are removed (preemption may help).
    Unschedulable,
    /// Cannot fit on this node whatever is removed.
    UnschedulableAndUnresolvable,
    /// The plugin does not apply to this pod (PreFilter/PreScore only);
    /// its Filter/Score is skipped for this cycle.
    Skip,
    Error,
}

/// A plugin's verdict. `reasons` are the phrases kube-scheduler prints in
/// `0/5 nodes are available: 3 Insufficient cpu, ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    pub code: Code,
    /// Most are fixed texts, borrowed: a pod that fits nowhere gets one
    /// status per node of the cluster.
    pub reasons: Vec<Cow<'static, str>>,
    /// The plugin that failed, for diagnosis.
    pub plugin: &'static str,
}

impl Status {
    pub fn success() -> Self {
        Status {
            code: Code::Success,
            reasons: Vec::new(),
            plugin: "",
        }
    }
    pub fn skip() -> Self {
        Status {
            code: Code::Skip,
            ..Self::success()
        }
    }
    pub fn unschedulable(reason: impl Into<Cow<'static, str>>) -> Self {
        Status {
            code: Code::Unschedulable,
            reasons: vec![reason.into()],
            plugin: "",
        }
    }
    pub fn unresolvable(reason: impl Into<Cow<'static, str>>) -> Self {
        Status {
            code: Code::UnschedulableAndUnresolvable,
            reasons: vec![reason.into()],
            plugin: "",
        }
    }
    pub fn error(reason: impl Into<Cow<'static, str>>) -> Self {
        Status {
            code: Code::Error,
            reasons: vec![reason.into()],
            plugin: "",
        }
    }
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }
}

/// Per-cycle scratch space, where a plugin's PreFilter/PreScore leaves
/// what its Filter/Score reads. Keyed by the plugin's static name and kept
/// in a short list: a cycle writes a handful of entries, and every attempt
/// (hundreds of thousands a simulated hour under a backlog) builds one.
#[derive(Default)]
pub struct CycleState {
    data: Vec<(&'static str, Arc<dyn Any + Send + Sync>)>,
    /// Plugins whose PreFilter/PreScore returned Skip this cycle.
    pub skip_filter: Names,
    pub skip_score: Names,
}

/// A few plugin names, each once.
#[derive(Default, Clone, Debug)]
pub struct Names(Vec<&'static str>);

impl Names {
    pub fn insert(&mut self, name: &'static str) {
        if !self.contains(name) {
            self.0.push(name);
        }
    }
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(&name)
    }
}

impl CycleState {
    pub fn write<T: Any + Send + Sync>(&mut self, key: &'static str, value: T) {
        let value: Arc<dyn Any + Send + Sync> = Arc::new(value);
        match self.data.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => self.data.push((key, value)),
        }
    }
    pub fn read<T: Any + Send + Sync>(&self, key: &str) -> Option<&T> {
        let (_, v) = self.data.iter().find(|(k, _)| *k == key)?;
        v.downcast_ref::<T>()
    }
    /// A copy sharing the stored values (preemption evaluates candidates on
    /// copies).
    pub fn fork(&self) -> Self {
        CycleState {
            data: self.data.clone(),
            skip_filter: self.skip_filter.clone(),
            skip_score: self.skip_score.clone(),
        }
    }
}

/// The extension points a plugin takes part in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Points {
    pub pre_filter: bool,
    pub filter: bool,
    pub pre_score: bool,
    pub score: bool,
}

/// A scheduling plugin. Implement the methods of the points declared in
/// [`points`](Plugin::points); the others are never called.
pub trait Plugin: Send + Sync {
    /// The name used in KubeSchedulerConfiguration (e.g. `NodeResourcesFit`).
    fn name(&self) -> &'static str;

    fn points(&self) -> Points;

    /// Once per cycle before Filter; may precompute into `state`, reject the
    /// pod outright, or return Skip to have Filter skipped.
    fn pre_filter(&self, _state: &mut CycleState, _pod: &PodInfo, _snap: &Snapshot) -> Status {
        Status::success()
    }

    /// Whether `pod` fits on `node`.
    fn filter(&self, _state: &CycleState, _pod: &PodInfo, _node: &NodeInfo) -> Status {
        Status::success()
    }

    /// Once per cycle before Score, with the feasible nodes.
    fn pre_score(
        &self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _snap: &Snapshot,
        _feasible: &[&NodeInfo],
    ) -> Status {
        Status::success()
    }

    /// A raw score for `node`; [`normalize`](Plugin::normalize) maps raw
    /// scores of all feasible nodes into 0..=MAX_NODE_SCORE.
    fn score(&self, _state: &CycleState, _pod: &PodInfo, _node: &NodeInfo) -> i64 {
        0
    }

    /// Normalizes the scores of the feasible nodes (same order as given to
    /// PreScore). The default leaves raw scores as they are.
    fn normalize(&self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [i64]) {}
}

/// What preemption proposes: evict `victims` so the pod fits on `node`.
#[derive(Debug, Clone)]
pub struct Nomination {
    pub node: String,
    pub victims: Vec<Arc<PodInfo>>,
}

/// Runs the filters of a profile; given to PostFilter plugins so they can
/// ask "would the pod fit on this node if these pods were gone?".
pub trait Filters: Send + Sync {
    /// PreFilter on `snap`, into a fresh state; Err when PreFilter rejects.
    fn pre_filter(&self, pod: &PodInfo, snap: &Snapshot) -> Result<CycleState, Status>;
    /// Every Filter plugin on `node`, stopping at the first failure.
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status;
}

/// A PostFilter plugin (DefaultPreemption), run when no node fits.
pub trait PostFilter: Send + Sync {
    fn name(&self) -> &'static str;
    /// `statuses` holds each node's Filter verdict for this pod.
    fn post_filter(
        &self,
        filters: &dyn Filters,
        pod: &PodInfo,
        snap: &Snapshot,
        statuses: &BTreeMap<String, Status>,
    ) -> Option<Nomination>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_change_log_names_the_nodes_changed_since_a_version() {
        let mut c = Changes::default();
        let v0 = c.version();
        c.node(3);
        c.node(1);
        let v2 = c.version();
        c.node(3);
        assert_eq!(c.since(v0).unwrap().collect::<Vec<_>>(), [3, 1, 3]);
        assert_eq!(c.since(v2).unwrap().collect::<Vec<_>>(), [3]);
        assert_eq!(c.since(c.version()).unwrap().count(), 0);
        // A version from the future, or from before a rebuild: unknown.
        assert!(c.since(c.version() + 1).is_none());
        c.all();
        assert!(c.since(v2).is_none());
        // Past its bound the log forgets the oldest changes.
        let v = c.version();
        for i in 0..=Changes::KEPT {
            c.node(i);
        }
        assert!(c.since(v).is_none());
        assert_eq!(c.since(v + 1).unwrap().count(), Changes::KEPT);
    }
}
