//! The plugins, and the registry that builds them by the names used in a
//! KubeSchedulerConfiguration.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::framework::{Plugin, PostFilter};

pub mod balanced_allocation;
pub mod helpers;
pub mod image_locality;
pub mod interpod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod round_robin;
pub mod taint_toleration;
pub mod topology_spread;
pub mod volume_restrictions;

#[cfg(test)]
pub(crate) mod testutil;

/// Builds a plugin from its `pluginConfig` args (`{}` when none are given).
pub type Factory = fn(&Value) -> Result<Arc<dyn Plugin>, String>;
pub type PostFilterFactory = fn(&Value) -> Result<Arc<dyn PostFilter>, String>;

/// Every Filter/Score plugin by name. A name in a configuration that is not
/// here is skipped (upstream plugins kubesim does not model, such as the
/// volume plugins that need storage provisioning, are in the default
/// profile).
pub fn registry() -> BTreeMap<&'static str, Factory> {
    let mut r: BTreeMap<&'static str, Factory> = BTreeMap::new();
    r.insert(node_name::NAME, |_| Ok(Arc::new(node_name::NodeName)));
    r.insert(node_unschedulable::NAME, |_| {
        Ok(Arc::new(node_unschedulable::NodeUnschedulable))
    });
    r.insert(node_ports::NAME, |_| Ok(Arc::new(node_ports::NodePorts)));
    r.insert(node_resources_fit::NAME, |a| {
        Ok(Arc::new(node_resources_fit::NodeResourcesFit::new(a)?))
    });
    r.insert(balanced_allocation::NAME, |a| {
        Ok(Arc::new(balanced_allocation::BalancedAllocation::new(a)?))
    });
    r.insert(node_affinity::NAME, |a| {
        Ok(Arc::new(node_affinity::NodeAffinity::new(a)?))
    });
    r.insert(taint_toleration::NAME, |a| {
        Ok(Arc::new(taint_toleration::TaintToleration::new(a)?))
    });
    r.insert(image_locality::NAME, |_| {
        Ok(Arc::new(image_locality::ImageLocality))
    });
    r.insert(round_robin::NAME, |a| {
        Ok(Arc::new(round_robin::RoundRobin::new(a)?))
    });
    r.insert(interpod_affinity::NAME, |a| {
        Ok(Arc::new(interpod_affinity::InterPodAffinity::new(a)?))
    });
    r.insert(topology_spread::NAME, |a| {
        Ok(Arc::new(topology_spread::PodTopologySpread::new(a)?))
    });
    r.insert(volume_restrictions::NAME, |_| {
        Ok(Arc::new(volume_restrictions::VolumeRestrictions))
    });
    r
}

/// PostFilter plugins by name.
pub fn post_filter_registry() -> BTreeMap<&'static str, PostFilterFactory> {
    let mut r: BTreeMap<&'static str, PostFilterFactory> = BTreeMap::new();
    r.insert("DefaultPreemption", |a| {
        Ok(Arc::new(crate::preemption::DefaultPreemption::new(a)?))
    });
    r
}
