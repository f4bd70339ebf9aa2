//! From a Stage's `apiGroup` (group/version) and `kind` to the resource to
//! watch: built-in kinds from the registry, custom ones from the
//! CustomResourceDefinitions the cluster serves.

use kubesim_core::resource::split_api_version;
use kubesim_core::{meta, Registry};
use kubesim_runtime::{Cache, ResourceRef};
use serde_json::Value;

/// A resolved kind.
#[derive(Clone)]
pub struct Target {
    pub resource: ResourceRef,
}

pub fn resolve(registry: &Registry, crds: &Cache, api_version: &str, kind: &str) -> Option<Target> {
    if let Some(info) = registry.by_kind(api_version, kind) {
        return Some(Target {
            resource: ResourceRef::new(&info.group, &info.version, &info.plural),
        });
    }
    let (group, version) = split_api_version(api_version);
    crds.list()
        .into_iter()
        .find_map(|crd| from_crd(&crd, group, version, kind))
}

fn from_crd(crd: &Value, group: &str, version: &str, kind: &str) -> Option<Target> {
    let spec = crd.get("spec")?;
    if spec.get("group").and_then(Value::as_str) != Some(group)
        || meta::path(spec, "names.kind").and_then(Value::as_str) != Some(kind)
    {
        return None;
    }
    let served = spec
        .get("versions")
        .and_then(Value::as_array)?
        .iter()
        .any(|v| {
            v.get("name").and_then(Value::as_str) == Some(version)
                && v.get("served").and_then(Value::as_bool).unwrap_or(true)
        });
    if !served {
        return None;
    }
    let plural = meta::path(spec, "names.plural").and_then(Value::as_str)?;
    Some(Target {
        resource: ResourceRef::new(group, version, plural),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtins_and_crds() {
        let reg = Registry::new();
        let crds = Cache::default();
        let pod = resolve(&reg, &crds, "v1", "Pod").unwrap();
        assert_eq!(pod.resource, ResourceRef::core("pods"));
        assert!(resolve(&reg, &crds, "example.com/v1", "Widget").is_none());
        crds.upsert(json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Cluster",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true}]}}));
        let w = resolve(&reg, &crds, "example.com/v1", "Widget").unwrap();
        assert_eq!(w.resource, ResourceRef::new("example.com", "v1", "widgets"));
        assert!(resolve(&reg, &crds, "example.com/v2", "Widget").is_none());
    }
}
