//! CustomResourceDefinitions the emulator serves its users' files through
//! (Apate's configurations, kwok's Stages): schemaless, so their files
//! apply unchanged and the emulator does the validating.

use std::sync::Arc;

use kubesim_runtime::{Api, ResourceRef, WriteOptions};
use serde_json::{json, Value};

/// One kind in one version, with a status subresource.
pub struct Definition<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    pub plural: &'a str,
    /// Empty for none, as kwok gives its usage and metric kinds none.
    pub short: &'a str,
    pub namespaced: bool,
}

impl Definition<'_> {
    pub fn resource(&self) -> ResourceRef {
        ResourceRef::new(self.group, self.version, self.plural)
    }

    fn object(&self) -> Value {
        let shorts: Vec<&str> = [self.short].into_iter().filter(|s| !s.is_empty()).collect();
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{}.{}", self.plural, self.group)},
            "spec": {
                "group": self.group,
                "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
                "names": {"kind": self.kind, "plural": self.plural,
                    "singular": self.kind.to_ascii_lowercase(),
                    "listKind": format!("{}List", self.kind), "shortNames": shorts},
                "versions": [{
                    "name": self.version, "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": open, "status": open,
                    }}},
                }],
            },
        })
    }
}

/// Creates the definitions that do not exist yet.
pub async fn ensure(api: &Arc<dyn Api>, defs: &[Definition<'_>]) {
    let crds = ResourceRef::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    for d in defs {
        match api
            .create(&crds, "", d.object(), &WriteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => tracing::error!(kind = d.kind, error = %e.message, "cannot define a kind"),
        }
    }
}
