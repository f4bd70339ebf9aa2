//! Defaulting applied on create and update, as the real API server does.
//!
//! What a real cluster adds to an object comes from two places upstream:
//! versioned defaulting (`pkg/apis/*/v1/defaults.go`, applied to every
//! object including pod templates) and admission plus create strategies
//! (ServiceAccount, Priority, DefaultTolerationSeconds, Job selectors),
//! applied to the object itself. Both are folded in here so that
//! `kubectl get -o yaml` shows what it shows against a real cluster.
//!
//! Every rule only fills what is absent (`null` counts as absent, as it
//! does for Go pointers), so applying twice equals applying once, and any
//! unexpected shape is left alone rather than replaced.

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;

mod cluster;
mod control_plane;
pub mod pod;
mod service;
pub mod storage;
mod workloads;

#[cfg(test)]
mod tests;

pub use pod::{qos_class, resolve_priority};

/// What defaulting may need from the server.
pub struct Context<'a> {
    /// A random 5-character DNS-safe suffix, from the server's seeded RNG.
    pub random_suffix: &'a mut dyn FnMut() -> String,
}

/// Fills in defaults for `obj` of `resource`.
pub fn apply(resource: &ResourceInfo, obj: &mut Value, ctx: &mut Context<'_>) {
    apply_scheme(resource, obj);
    admit(resource, obj, ctx);
}

/// What admission adds after the field manager has run (see
/// [`pod::admit_pod`]); only pods have such fields.
pub fn admit(resource: &ResourceInfo, obj: &mut Value, ctx: &mut Context<'_>) {
    if obj.is_object()
        && !resource.is_custom()
        && resource.group.is_empty()
        && resource.kind == "Pod"
    {
        pod::admit_pod(obj, ctx);
    }
}

/// The scheme defaults alone, as decoding applies them.
pub fn apply_scheme(resource: &ResourceInfo, obj: &mut Value) {
    if !obj.is_object() {
        return;
    }
    if resource.is_custom() {
        // Upstream prunes unknown fields as it decodes a custom resource,
        // then defaults it from its schema.
        if let Some(schema) = resource.crd.as_ref().and_then(|c| c.schema.as_ref()) {
            crate::structural::prune(schema, obj);
            crate::structural::apply_defaults(schema, obj);
        }
        return;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Pod") => pod::default_pod(obj),
        ("", "PodTemplate") => {
            if let Some(t) = obj.get_mut("template") {
                pod::default_template(t);
            }
        }
        ("", "ReplicationController") => workloads::default_replication_controller(obj),
        ("", "Service") => service::default_service(obj),
        ("", "Endpoints") => service::default_endpoints(obj),
        ("", "Namespace") => cluster::default_namespace(obj),
        ("", "Secret") => cluster::default_secret(obj),
        ("", "PersistentVolumeClaim") => cluster::default_pvc(obj),
        ("", "PersistentVolume") => cluster::default_pv(obj),
        ("apps", "Deployment") => workloads::default_deployment(obj),
        ("apps", "ReplicaSet") => workloads::default_replica_set(obj),
        ("apps", "StatefulSet") => workloads::default_stateful_set(obj),
        ("apps", "DaemonSet") => workloads::default_daemon_set(obj),
        ("batch", "Job") => workloads::default_job(obj),
        ("batch", "CronJob") => workloads::default_cron_job(obj),
        ("autoscaling", "HorizontalPodAutoscaler") => cluster::default_hpa(obj),
        ("scheduling.k8s.io", "PriorityClass") => cluster::default_priority_class(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => cluster::default_crd(obj),
        ("storage.k8s.io", "CSIDriver") => control_plane::default_csi_driver(obj),
        ("resource.k8s.io", "ResourceClaim") => control_plane::default_resource_claim(obj),
        ("resource.k8s.io", "ResourceClaimTemplate") => {
            control_plane::default_resource_claim_template(obj)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            control_plane::default_validating_admission_policy(obj)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            control_plane::default_policy_binding(obj)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            control_plane::default_webhook_configuration(obj, false)
        }
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            control_plane::default_webhook_configuration(obj, true)
        }
        _ => {}
    }
}

/// True when `m[k]` is missing or `null`.
pub(crate) fn absent(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).is_none_or(Value::is_null)
}

/// Sets `m[k] = v` when absent; returns whether it did.
pub(crate) fn set_default(m: &mut Map<String, Value>, k: &str, v: impl Into<Value>) -> bool {
    if absent(m, k) {
        m.insert(k.to_string(), v.into());
        true
    } else {
        false
    }
}

/// The object at `m[k]`, created empty when absent. `None` when the field
/// holds something else: odd input is validated, not overwritten.
pub(crate) fn child_obj<'a>(
    m: &'a mut Map<String, Value>,
    k: &str,
) -> Option<&'a mut Map<String, Value>> {
    if absent(m, k) {
        m.insert(k.to_string(), Value::Object(Map::new()));
    }
    m.get_mut(k).and_then(Value::as_object_mut)
}

/// The object at `m[k]` only if it already exists.
pub(crate) fn existing_obj<'a>(
    m: &'a mut Map<String, Value>,
    k: &str,
) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(k).and_then(Value::as_object_mut)
}

/// Each object element of the array at `m[k]`; other shapes yield nothing.
pub(crate) fn each_obj<'a>(
    m: &'a mut Map<String, Value>,
    k: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(k)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}
