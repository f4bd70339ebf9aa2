//! The CustomResourceDefinitions of Apate's two kinds, created at startup
//! so that Apate's files apply unchanged.

use std::sync::Arc;

use kubesim_runtime::{Api, ResourceRef};

use crate::crd::{self, Definition};

pub const GROUP: &str = "apate.opendc.org";

const NODE_CONFIGURATION: Definition = Definition {
    group: GROUP,
    version: "v1",
    kind: "NodeConfiguration",
    plural: "nodeconfigurations",
    short: "nc",
    namespaced: true,
};

const POD_CONFIGURATION: Definition = Definition {
    group: GROUP,
    version: "v1",
    kind: "PodConfiguration",
    plural: "podconfigurations",
    short: "pc",
    namespaced: true,
};

pub fn node_configurations() -> ResourceRef {
    NODE_CONFIGURATION.resource()
}

pub fn pod_configurations() -> ResourceRef {
    POD_CONFIGURATION.resource()
}

/// Creates both definitions unless they exist.
pub async fn ensure(api: &Arc<dyn Api>) {
    crd::ensure(api, &[NODE_CONFIGURATION, POD_CONFIGURATION]).await;
}
