//! Gang scheduling as the Coscheduling plugin of kubernetes-sigs'
//! scheduler-plugins does it: pods labelled with the name of a PodGroup
//! (`scheduling.x-k8s.io/v1alpha1`) are placed all together, at least
//! `spec.minMember` of them, or not at all.
//!
//! Upstream reaches all-or-nothing through the Permit point: each member
//! is assumed on a node and waits there until `minMember` members are
//! waiting, or until `scheduleTimeoutSeconds` rejects them all. kubesim's
//! framework has no Permit point, so the loop does the same in one cycle
//! instead ([`place`]): once `minMember` members are pending, it takes
//! them all from the queue and places them one after another on one
//! snapshot, each placement counted before the next; it binds them only
//! if enough fit. Nothing is ever held on a node waiting, so the timeout
//! upstream spends in Permit never runs out here, and a group that cannot
//! fit takes no room from other pods while it waits.
//!
//! Taking the whole group when any member is popped also gives what
//! upstream's QueueSort is for (members scheduled back to back, not
//! interleaved with other pods).

pub mod crd;
pub mod place;

use std::collections::BTreeMap;

use kubesim_runtime::ObjectKey;
use serde_json::Value;

use crate::framework::PodInfo;

/// The plugin's name in a KubeSchedulerConfiguration.
pub const NAME: &str = "Coscheduling";

/// The pod label naming the pod's PodGroup (scheduler-plugins v0.24 on).
pub const LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// The label older releases used; still read.
pub const LEGACY_LABEL: &str = "pod-group.scheduling.sigs.k8s.io";

/// The name of the PodGroup `pod` belongs to, if any.
pub fn group_of(pod: &PodInfo) -> Option<&str> {
    pod.labels
        .get(LABEL)
        .or_else(|| pod.labels.get(LEGACY_LABEL))
        .map(String::as_str)
        .filter(|g| !g.is_empty())
}

/// The key of `pod`'s PodGroup (its namespace and the group's name).
pub fn group_key(pod: &PodInfo) -> Option<ObjectKey> {
    group_of(pod).map(|g| ObjectKey::new(pod.namespace(), g))
}

/// What the scheduler reads of a PodGroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodGroup {
    /// `spec.minMember`; a group of 0 or 1 asks nothing of its pods.
    pub min_member: usize,
    /// `spec.scheduleTimeoutSeconds`, kept for reporting; see the module
    /// documentation for why nothing waits on it.
    pub schedule_timeout_seconds: Option<i64>,
}

impl PodGroup {
    pub fn from_object(obj: &Value) -> PodGroup {
        PodGroup {
            min_member: obj
                .pointer("/spec/minMember")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                .max(0) as usize,
            schedule_timeout_seconds: obj
                .pointer("/spec/scheduleTimeoutSeconds")
                .and_then(Value::as_i64),
        }
    }
}

/// The PodGroups the scheduler knows, by namespace and name.
pub type Groups = BTreeMap<ObjectKey, PodGroup>;

/// Upstream's PreFilter message when too few members exist.
pub fn too_few_message(pod: &PodInfo, members: usize, min_member: usize) -> String {
    format!(
        "pre-filter pod {} cannot find enough sibling pods, current pods number: {members}, minMember of group: {min_member}",
        pod.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn pod(labels: Value) -> PodInfo {
        PodInfo::from_pod(Arc::new(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "p", "labels": labels},
            "spec": {"containers": []},
        })))
    }

    #[test]
    fn both_labels_name_the_group_and_the_current_one_wins() {
        assert_eq!(group_of(&pod(json!({LABEL: "a"}))), Some("a"));
        assert_eq!(group_of(&pod(json!({LEGACY_LABEL: "b"}))), Some("b"));
        assert_eq!(
            group_of(&pod(json!({LABEL: "a", LEGACY_LABEL: "b"}))),
            Some("a")
        );
        assert_eq!(group_of(&pod(json!({"app": "x"}))), None);
        assert_eq!(
            group_key(&pod(json!({LABEL: "a"}))),
            Some(ObjectKey::new("ns", "a"))
        );
    }

    #[test]
    fn pod_group_fields() {
        let g = PodGroup::from_object(&json!({
            "spec": {"minMember": 3, "scheduleTimeoutSeconds": 10}
        }));
        assert_eq!(g.min_member, 3);
        assert_eq!(g.schedule_timeout_seconds, Some(10));
        assert_eq!(PodGroup::from_object(&json!({})).min_member, 0);
    }
}
