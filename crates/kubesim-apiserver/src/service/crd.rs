//! CustomResourceDefinitions: status on admission, and serving (or no
//! longer serving) the resources they define.

use kubesim_core::resource::{
    CrdInfo, PrinterColumn, ScalePaths, Subresource, ALL_VERBS, SUB_VERBS,
};
use kubesim_core::{meta, ResourceInfo, Scope};
use serde_json::{json, Value};

use super::Server;

/// Accepts a CRD at once: names accepted, Established, storage version recorded.
pub(crate) fn admit_crd(obj: &mut Value) {
    let names = obj
        .get("spec")
        .and_then(|s| s.get("names"))
        .cloned()
        .unwrap_or(json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none() {
        if let Some(k) = names.get("kind").and_then(Value::as_str) {
            accepted["singular"] = Value::String(k.to_lowercase());
        }
    }
    if accepted.get("listKind").is_none() {
        if let Some(k) = names.get("kind").and_then(Value::as_str) {
            accepted["listKind"] = Value::String(format!("{k}List"));
        }
    }
    let stored: Vec<Value> = obj
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let ts = obj
        .get("metadata")
        .and_then(|m| m.get("creationTimestamp"))
        .cloned()
        .unwrap_or(Value::Null);
    obj["status"] = json!({
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": ts},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": ts},
        ],
        "storedVersions": stored,
    });
}

fn strs(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The resources a CRD object defines, one per served version.
pub fn crd_resources(crd: &Value) -> Vec<ResourceInfo> {
    let spec = crd.get("spec").cloned().unwrap_or(json!({}));
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let names = spec.get("names").cloned().unwrap_or(json!({}));
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if group.is_empty() || kind.is_empty() || plural.is_empty() {
        return Vec::new();
    }
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let scope = if spec.get("scope").and_then(Value::as_str) == Some("Cluster") {
        Scope::Cluster
    } else {
        Scope::Namespaced
    };
    let mut out = Vec::new();
    for v in spec
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if v.get("served") == Some(&Value::Bool(false)) {
            continue;
        }
        let Some(version) = v.get("name").and_then(Value::as_str) else {
            continue;
        };
        let mut subresources = Vec::new();
        let subs = v.get("subresources");
        if subs.and_then(|s| s.get("status")).is_some() {
            subresources.push(Subresource {
                name: "status",
                group: "",
                version: "",
                kind: kind.clone(),
                verbs: SUB_VERBS,
            });
        }
        let scale = subs.and_then(|s| s.get("scale")).map(|s| ScalePaths {
            spec_replicas: s
                .get("specReplicasPath")
                .and_then(Value::as_str)
                .unwrap_or(".spec.replicas")
                .to_string(),
            status_replicas: s
                .get("statusReplicasPath")
                .and_then(Value::as_str)
                .unwrap_or(".status.replicas")
                .to_string(),
            label_selector: s
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .map(str::to_string),
        });
        if scale.is_some() {
            subresources.push(Subresource {
                name: "scale",
                group: "autoscaling",
                version: "v1",
                kind: "Scale".into(),
                verbs: SUB_VERBS,
            });
        }
        let printer_columns = v
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .map(|cols| {
                cols.iter()
                    .map(|c| PrinterColumn {
                        name: c
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        type_: c
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("string")
                            .to_string(),
                        format: c
                            .get("format")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        description: c
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                        json_path: c
                            .get("jsonPath")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(ResourceInfo {
            group: group.clone(),
            version: version.to_string(),
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            scope,
            short_names: strs(names.get("shortNames")),
            categories: strs(names.get("categories")),
            verbs: ALL_VERBS.to_vec(),
            subresources: subresources
                .into_iter()
                .map(|mut s| {
                    if s.name == "status" {
                        s.group = "";
                    }
                    s
                })
                .collect(),
            crd: Some(CrdInfo {
                printer_columns,
                schema: v
                    .get("schema")
                    .and_then(|s| s.get("openAPIV3Schema"))
                    .cloned(),
                scale,
            }),
        });
    }
    out
}

impl Server {
    pub(crate) fn register_crd(&self, crd: &Value) {
        let group = crd
            .get("spec")
            .and_then(|s| s.get("group"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let plural = crd
            .get("spec")
            .and_then(|s| s.get("names"))
            .and_then(|n| n.get("plural"))
            .and_then(Value::as_str)
            .unwrap_or("");
        self.registry.remove_custom(group, plural);
        if meta::is_deleting(crd) {
            return;
        }
        for r in crd_resources(crd) {
            self.registry.insert(r);
        }
    }

    pub(crate) fn unregister_crd(&self, crd: &Value) {
        for r in crd_resources(crd) {
            self.registry.remove_custom(&r.group, &r.plural);
        }
    }

    /// Serves the resources of every stored CRD (at start).
    pub(crate) fn load_custom_resources(&self) {
        let Some(crds) =
            self.registry
                .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        else {
            return;
        };
        if let Ok(snap) = self.store.snapshot(&crds.storage_key(), None) {
            for rec in snap.items.values() {
                if let Ok(v) = serde_json::from_slice::<Value>(&rec.bytes) {
                    self.register_crd(&v);
                }
            }
        }
    }
}
