//! The CustomResourceDefinitions of Apate's two kinds, created at startup
//! so that Apate's files apply unchanged.

use std::sync::Arc;

use kubesim_runtime::{Api, ResourceRef, WriteOptions};
use serde_json::{json, Value};

pub const GROUP: &str = "apate.opendc.org";

pub fn node_configurations() -> ResourceRef {
    ResourceRef::new(GROUP, "v1", "nodeconfigurations")
}

pub fn pod_configurations() -> ResourceRef {
    ResourceRef::new(GROUP, "v1", "podconfigurations")
}

fn crd(kind: &str, plural: &str, short: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_ascii_lowercase(),
                "listKind": format!("{kind}List"), "shortNames": [short]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                }}},
            }],
        },
    })
}

/// Creates both definitions unless they exist.
pub async fn ensure(api: &Arc<dyn Api>) {
    let crds = ResourceRef::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    for body in [
        crd("NodeConfiguration", "nodeconfigurations", "nc"),
        crd("PodConfiguration", "podconfigurations", "pc"),
    ] {
        match api.create(&crds, "", body, &WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => tracing::error!(error = %e.message, "cannot define Apate's kinds"),
        }
    }
}
