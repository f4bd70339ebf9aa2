//! The PodGroup kind, served as a CustomResourceDefinition.
//!
//! Upstream, PodGroup is a CRD that scheduler-plugins' manifests install
//! next to the scheduler; it is not part of Kubernetes. Serving it the same
//! way (rather than as a built-in kind of `kubesim-core`'s registry) keeps
//! it out of every cluster that does not ask for gang scheduling, lets a
//! user apply upstream's own CRD file unchanged (creating it again answers
//! 409, which is fine), and needs no new code in the API server. The
//! binary creates it when a profile enables [`super::NAME`], before the
//! scheduler starts to watch PodGroups.

use std::sync::Arc;

use kubesim_runtime::{Api, ResourceRef, WriteOptions};
use serde_json::{json, Value};

pub const GROUP: &str = "scheduling.x-k8s.io";
pub const VERSION: &str = "v1alpha1";
pub const PLURAL: &str = "podgroups";

/// The PodGroup resource.
pub fn resource() -> ResourceRef {
    ResourceRef::new(GROUP, VERSION, PLURAL)
}

/// The definition, with the fields of upstream's v1alpha1 schema.
pub fn definition() -> Value {
    let int32 = json!({"type": "integer", "format": "int32"});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": "PodGroup", "listKind": "PodGroupList", "plural": PLURAL,
                "singular": "podgroup", "shortNames": ["pg", "pgs"]},
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"type": "object"},
                    "spec": {"type": "object", "properties": {
                        "minMember": int32,
                        "minResources": {"type": "object",
                            "additionalProperties": {"x-kubernetes-int-or-string": true}},
                        "scheduleTimeoutSeconds": int32,
                    }},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string"},
                        "occupiedBy": {"type": "string"},
                        "scheduled": int32,
                        "running": int32,
                        "succeeded": int32,
                        "failed": int32,
                        "scheduleStartTime": {"type": "string", "format": "date-time"},
                    }},
                }}},
            }],
        },
    })
}

/// Creates the definition unless it exists. Errors other than "already
/// exists" are returned for the caller to report.
pub async fn ensure(api: &Arc<dyn Api>) -> Result<(), String> {
    let crds = ResourceRef::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    match api
        .create(&crds, "", definition(), &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(format!("cannot define PodGroup: {}", e.message)),
    }
}
