//! The two kinds that keep N copies of a pod template, apps/v1 ReplicaSets
//! and the legacy core/v1 ReplicationControllers, differ only in where they
//! live and how they write their selector; one controller serves both, as
//! upstream's ReplicationManager is the ReplicaSet controller underneath.

use kubesim_runtime::ResourceRef;

use crate::ownership::SelectorForm;

#[derive(Debug)]
pub struct ReplicaKind {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    /// The `kind` of the owner references on the pods, which the pod
    /// handler matches to tell this controller's pods from others'.
    pub kind: &'static str,
    pub selector: SelectorForm,
    /// Names the work queue in logs, as upstream names its controllers.
    pub controller: &'static str,
}

pub const REPLICA_SET: ReplicaKind = ReplicaKind {
    group: "apps",
    version: "v1",
    plural: "replicasets",
    kind: "ReplicaSet",
    selector: SelectorForm::LabelSelector,
    controller: "replicaset",
};

pub const REPLICATION_CONTROLLER: ReplicaKind = ReplicaKind {
    group: "",
    version: "v1",
    plural: "replicationcontrollers",
    kind: "ReplicationController",
    selector: SelectorForm::LabelMap,
    controller: "replicationmanager",
};

impl ReplicaKind {
    pub fn resource(&self) -> ResourceRef {
        ResourceRef::new(self.group, self.version, self.plural)
    }
}
