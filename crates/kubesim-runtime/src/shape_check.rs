//! Whether an object has the shape of its kind, for consumers that read
//! objects as client-go's typed clients would (the load runner's
//! measurements). No write through the API stores an object of the wrong
//! shape, but a store written before the API checked types may hold some;
//! those are logged and skipped rather than counted.

use std::collections::BTreeSet;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_core::resource::ResourceInfo;
use parking_lot::Mutex;
use serde_json::Value;

use crate::ResourceRef;

/// Objects whose skipping one check remembers having logged; past this it
/// forgets them all and may log each once more.
const REMEMBERED: usize = 4096;

/// Checks objects of one resource against its built-in kind (custom
/// resources and unknown kinds pass: there is nothing to check them by).
pub struct ShapeCheck {
    plural: String,
    info: Option<Arc<ResourceInfo>>,
    /// `namespace/name@resourceVersion` of the skipped objects already
    /// logged, so that a poll meeting the same object again stays quiet.
    logged: Mutex<BTreeSet<String>>,
}

impl ShapeCheck {
    pub fn new(resource: &ResourceRef) -> Self {
        let r = resource;
        ShapeCheck {
            plural: r.plural.clone(),
            info: kubesim_core::Registry::new().get(&r.group, &r.version, &r.plural),
            logged: Mutex::default(),
        }
    }

    /// Whether `obj` decodes as its kind, as upstream's decoder would
    /// ([`kubesim_core::schema::decode_error`]); logs once why not.
    pub fn admits(&self, obj: &Value) -> bool {
        let Some(info) = &self.info else {
            return true;
        };
        let Some(error) = kubesim_core::schema::decode_error(info, obj) else {
            return true;
        };
        let key = format!(
            "{}/{}@{}",
            meta::namespace(obj),
            meta::name(obj),
            meta::resource_version(obj)
        );
        let mut logged = self.logged.lock();
        if logged.len() >= REMEMBERED {
            logged.clear();
        }
        if logged.insert(key) {
            tracing::warn!(
                resource = %self.plural,
                namespace = %meta::namespace(obj),
                name = %meta::name(obj),
                %error,
                "an object of the wrong shape is skipped"
            );
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_kinds_are_checked_and_custom_ones_pass() {
        let pods = ShapeCheck::new(&ResourceRef::core("pods"));
        let good = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i"}]}});
        assert!(pods.admits(&good));
        for bad in [
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": 5}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": []}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "status": {"phase": 5}}),
        ] {
            assert!(!pods.admits(&bad), "{bad}");
            // Met again (a poll): still skipped.
            assert!(!pods.admits(&bad), "{bad}");
        }
        let custom = ShapeCheck::new(&ResourceRef::new("kwok.x-k8s.io", "v1alpha1", "stages"));
        assert!(custom.admits(&json!({"metadata": {"name": "s"}, "spec": 5})));
    }
}
