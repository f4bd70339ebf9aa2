//! Per-kind admission that needs the server's state: pod priorities from
//! PriorityClasses, service cluster IPs, CRD status; and the in-use
//! protection finalizers of claims and volumes.

use kubesim_core::defaults::storage;
use kubesim_core::{meta, ApiError, ResourceInfo};
use serde_json::{json, Value};

use super::Server;

/// Hands out service cluster IPs from 10.96.0.0/12, skipping .0 and the
/// first address (the `kubernetes` service's, as upstream reserves it).
#[derive(Default)]
pub struct IpAllocator {
    next: u32,
}

impl IpAllocator {
    fn allocate(&mut self) -> String {
        self.next += 1;
        let n = self.next + 1;
        let base: u32 = (10 << 24) | (96 << 16);
        let ip = base + (n % (1 << 20));
        format!(
            "{}.{}.{}.{}",
            ip >> 24,
            (ip >> 16) & 255,
            (ip >> 8) & 255,
            ip & 255
        )
    }
}

fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let md = meta::metadata_mut(obj);
    let fins = md.entry("finalizers").or_insert_with(|| json!([]));
    match fins.as_array_mut() {
        Some(a) if a.iter().any(|f| f == finalizer) => {}
        Some(a) => a.push(json!(finalizer)),
        None => *fins = json!([finalizer]),
    }
}

impl Server {
    /// Admission for `obj` (create when `old` is None).
    pub(crate) fn admit(
        &self,
        resource: &ResourceInfo,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        match (resource.group.as_str(), resource.plural.as_str()) {
            (crate::auth::rbac::GROUP, _) => self.check_escalation(resource, obj),
            ("", "pods") if old.is_none() => self.admit_pod_priority(obj),
            ("", "secrets") if old.is_none() => {
                self.admit_legacy_token(obj);
                Ok(())
            }
            ("", "services") => {
                self.admit_service(obj, old);
                Ok(())
            }
            // StorageObjectInUseProtection: claims and volumes are kept
            // until the controllers see nothing uses them.
            ("", "persistentvolumeclaims") if old.is_none() => {
                add_finalizer(obj, "kubernetes.io/pvc-protection");
                self.admit_default_storage_class(obj);
                Ok(())
            }
            ("", "persistentvolumes") if old.is_none() => {
                add_finalizer(obj, "kubernetes.io/pv-protection");
                Ok(())
            }
            ("apiextensions.k8s.io", "customresourcedefinitions") => {
                super::crd::admit_crd(obj);
                Ok(())
            }
            ("certificates.k8s.io", "certificatesigningrequests") if old.is_none() => {
                super::approval::admit_csr(obj);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// DefaultStorageClass: a claim that names no class gets the default
    /// one, if a class is marked so.
    fn admit_default_storage_class(&self, obj: &mut Value) {
        if !storage::claim_wants_default_class(obj) {
            return;
        }
        let Ok(classes) = self.resource("storage.k8s.io", "v1", "storageclasses") else {
            return;
        };
        let Ok(snapshot) = self.store.snapshot(&classes.storage_key(), None) else {
            return;
        };
        let parsed: Vec<Value> = snapshot
            .items
            .values()
            .filter_map(|r| serde_json::from_slice(&r.bytes).ok())
            .collect();
        if let (Some(name), Some(spec)) = (
            storage::default_class_name(&parsed),
            obj.get_mut("spec").and_then(Value::as_object_mut),
        ) {
            spec.insert("storageClassName".into(), Value::String(name));
        }
    }

    fn admit_pod_priority(&self, obj: &mut Value) -> Result<(), ApiError> {
        let class = obj
            .get("spec")
            .and_then(|s| s.get("priorityClassName"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let pcs = self.resource("scheduling.k8s.io", "v1", "priorityclasses")?;
        let found = if class.is_empty() {
            // The global default class, if any.
            self.store
                .snapshot(&pcs.storage_key(), None)
                .ok()
                .and_then(|s| {
                    s.items.values().find_map(|r| {
                        if super::facts_from_bytes::is_global_default(&r.bytes) == Some(false) {
                            return None;
                        }
                        let v: Value = serde_json::from_slice(&r.bytes).ok()?;
                        (v.get("globalDefault") == Some(&Value::Bool(true))).then_some(v)
                    })
                })
        } else if class == "system-node-critical" || class == "system-cluster-critical" {
            let value = if class == "system-node-critical" {
                2_000_001_000
            } else {
                2_000_000_000
            };
            Some(json!({"metadata": {"name": class}, "value": value}))
        } else {
            match self.store.get(&pcs.storage_key(), &class) {
                Some(r) => serde_json::from_slice(&r.bytes).ok(),
                None => {
                    return Err(ApiError::forbidden(
                        "pods",
                        "",
                        meta::name(obj),
                        &format!("no PriorityClass with name {class} was found"),
                    ))
                }
            }
        };
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return Ok(());
        };
        if let Some(pc) = found {
            let value = pc.get("value").and_then(Value::as_i64).unwrap_or(0);
            if let Some(p) = spec.get("priority").and_then(Value::as_i64) {
                if p != value {
                    return Err(ApiError::forbidden(
                        "pods",
                        "",
                        "",
                        "the integer value of priority must not be provided in pod spec; priority admission controller computed the value from the given PriorityClass name",
                    ));
                }
            }
            spec.insert(
                "priorityClassName".into(),
                Value::String(meta::name(&pc).to_string()),
            );
            spec.insert("priority".into(), json!(value));
            if let Some(pp) = pc.get("preemptionPolicy") {
                spec.insert("preemptionPolicy".into(), pp.clone());
            }
        } else {
            spec.entry("priority").or_insert(json!(0));
        }
        Ok(())
    }

    fn admit_service(&self, obj: &mut Value, old: Option<&Value>) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        let ty = spec
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_string();
        if ty == "ExternalName" {
            return;
        }
        let old_ip = old
            .and_then(|o| o.get("spec"))
            .and_then(|s| s.get("clusterIP"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let want = spec
            .get("clusterIP")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let ip = match (want.as_str(), old_ip) {
            ("None", _) => "None".to_string(),
            ("", Some(o)) => o,
            ("", None) => self.ips.lock().allocate(),
            (w, _) => w.to_string(),
        };
        spec.insert("clusterIP".into(), Value::String(ip.clone()));
        spec.insert("clusterIPs".into(), json!([ip]));
        if matches!(ty.as_str(), "NodePort" | "LoadBalancer") {
            let mut next = 30000 + (self.rng.below(2768) as i64);
            if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
                // Only ports that are objects get one; decoding refuses the
                // others before admission runs, and `IndexMut` would panic.
                for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                    if !p.contains_key("nodePort") {
                        p.insert("nodePort".into(), json!(next));
                        next = 30000 + ((next - 30000 + 1) % 2768);
                    }
                }
            }
        }
    }

    /// Whether [`after_commit`](Self::after_commit) reads the objects
    /// written to `resource`.
    pub(crate) fn reads_committed(resource: &ResourceInfo) -> bool {
        resource.group == "apiextensions.k8s.io" && resource.plural == "customresourcedefinitions"
    }

    /// Work after a committed write: CRDs (un)register their resources.
    pub(crate) fn after_commit(&self, resource: &ResourceInfo, obj: Option<&Value>) {
        if Self::reads_committed(resource) {
            if let Some(o) = obj {
                self.register_crd(o);
            }
        }
    }
}
