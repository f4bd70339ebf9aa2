//! Validation: names, metadata and per-kind specs; failures become 422 causes.
//!
//! Rules and messages follow upstream's `pkg/apis/*/validation` so that
//! clients see the errors they would see from a real cluster. Validation
//! runs after defaulting, so required-looking fields that have defaults
//! (restartPolicy, protocol, ...) are only missing when a client removed
//! them on purpose.

use serde_json::Value;

use crate::error::Cause;
use crate::resource::ResourceInfo;

pub mod cluster;
pub mod config;
pub mod control_plane;
pub mod crd;
pub mod fields;
pub mod metadata;
pub mod names;
pub mod pod;
pub mod policy;
pub(crate) mod qty;
pub mod selector;
pub mod service;
pub mod workloads;

pub use names::NameRule;

/// How objects of `resource` must be named.
pub fn name_rule(resource: &ResourceInfo) -> NameRule {
    if resource.is_custom() {
        return NameRule::Dns1123Subdomain;
    }
    match (resource.group.as_str(), resource.kind.as_str()) {
        ("", "Namespace") => NameRule::Dns1123Label,
        ("", "Service") => NameRule::Dns1035Label,
        // RBAC names carry `:` (system:controller:...), so only the URL
        // restrictions apply.
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        // An IPAddress is named by its address (IPv6 has `:`), checked
        // for canonical form by its own validation.
        ("networking.k8s.io", "IPAddress") => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

/// Validates `obj` (and, on update, its transition from `old`).
pub fn validate(resource: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    if !obj.is_object() {
        return vec![fields::required("metadata.name")];
    }
    let mut out = metadata::validate_object_meta(obj, name_rule(resource), !resource.is_custom());
    if resource.is_custom() {
        if let Some(schema) = resource.crd.as_ref().and_then(|c| c.schema.as_ref()) {
            out.extend(crate::structural::validate(schema, obj, old));
        }
        return out;
    }
    let group = resource.group.as_str();
    out.extend(match (group, resource.kind.as_str()) {
        ("", "Pod") => {
            let mut c = pod::validate_pod(obj);
            if let Some(old) = old {
                c.extend(pod::validate_pod_update(obj, old));
            }
            c
        }
        ("", "PodTemplate") => pod::validate_pod_template(obj.get("template"), "template"),
        ("", "Service") => service::validate_service(obj, old),
        ("", "Namespace") => cluster::validate_namespace(obj),
        ("", "Node") => cluster::validate_node(obj),
        ("", "ConfigMap") => config::validate_config_map(obj, old),
        ("", "Secret") => config::validate_secret(obj, old),
        ("", "Event") | ("events.k8s.io", "Event") => cluster::validate_event(obj, group),
        ("apps", "Deployment") => workloads::validate_deployment(obj, old),
        ("apps", "ReplicaSet") => workloads::validate_replica_set(obj, old),
        ("apps", "StatefulSet") => workloads::validate_stateful_set(obj, old),
        ("apps", "DaemonSet") => workloads::validate_daemon_set(obj, old),
        ("batch", "Job") => workloads::validate_job(obj, old),
        ("batch", "CronJob") => workloads::validate_cron_job(obj, old),
        ("coordination.k8s.io", "Lease") => cluster::validate_lease(obj),
        ("scheduling.k8s.io", "PriorityClass") => cluster::validate_priority_class(obj, old),
        ("policy", "PodDisruptionBudget") => policy::validate_pdb(obj),
        ("autoscaling", "HorizontalPodAutoscaler") => policy::validate_hpa(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd::validate_crd(obj, old),
        ("storage.k8s.io", "CSINode") => control_plane::validate_csi_node(obj),
        ("storage.k8s.io", "CSIDriver") => control_plane::validate_csi_driver(obj, old),
        ("storage.k8s.io", "CSIStorageCapacity") => {
            control_plane::validate_csi_storage_capacity(obj)
        }
        ("storage.k8s.io", "VolumeAttachment") => {
            control_plane::validate_volume_attachment(obj, old)
        }
        ("storage.k8s.io", "VolumeAttributesClass") => {
            control_plane::validate_volume_attributes_class(obj, old)
        }
        ("resource.k8s.io", "ResourceClaim") => control_plane::validate_resource_claim(obj, old),
        ("resource.k8s.io", "ResourceClaimTemplate") => {
            control_plane::validate_resource_claim_template(obj, old)
        }
        ("resource.k8s.io", "ResourceSlice") => control_plane::validate_resource_slice(obj, old),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            control_plane::validate_validating_admission_policy(obj)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            control_plane::validate_policy_binding(obj)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration")
        | ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            control_plane::validate_webhook_configuration(obj)
        }
        ("networking.k8s.io", "ServiceCIDR") => control_plane::validate_service_cidr(obj),
        ("networking.k8s.io", "IPAddress") => control_plane::validate_ip_address(obj, old),
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            control_plane::validate_csr(obj, old)
        }
        _ => Vec::new(),
    });
    out
}

/// [`validate`] for a write through the status subresource from `old`.
///
/// A status write keeps the pod's spec, and upstream's status update
/// validation does not look at the spec at all. The spec rules are
/// skipped when the spec is indeed the one stored (it passed them when it
/// was written); they are the bulk of validating a pod, and every kubelet
/// status write went through them.
pub fn validate_status_update(resource: &ResourceInfo, obj: &Value, old: &Value) -> Vec<Cause> {
    let pod = !resource.is_custom() && resource.group.is_empty() && resource.kind == "Pod";
    let spec_kept = match (obj.get("spec"), old.get("spec")) {
        (Some(n), Some(o)) => n.is_object() && crate::same::values(n, o),
        _ => false,
    };
    if !(pod && spec_kept) {
        return validate(resource, obj, Some(old));
    }
    // What `validate` gives for a pod whose spec passes its rules and is
    // unchanged: the metadata's causes only (`validate_pod_update` finds
    // nothing in an unchanged spec).
    metadata::validate_object_meta(obj, name_rule(resource), true)
}

#[cfg(test)]
mod tests;

/// (field, reason) of each cause: what validation tests compare.
#[cfg(test)]
pub(crate) fn field_reasons(c: &[Cause]) -> Vec<(&str, &str)> {
    c.iter()
        .map(|c| (c.field.as_str(), c.reason.as_str()))
        .collect()
}
