//! Schemas of the kinds served for the benefit of a real kube-scheduler and
//! kube-controller-manager (storage, dynamic resource allocation, admission
//! policies, service CIDRs, certificate requests): kept apart from
//! `tables.rs` so that the two lists can grow independently.

use k8s_openapi::schemars::generate::SchemaGenerator;

use super::tables::add;

/// The definition name of a kind of these groups, `None` for any other.
pub(super) fn add_kind(
    gen: &mut SchemaGenerator,
    group: &str,
    version: &str,
    kind: &str,
) -> Option<String> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admission, authorization::v1 as authorization,
        certificates::v1 as certificates, networking::v1 as networking, resource::v1 as resource,
        storage::v1 as storage,
    };
    match (group, version, kind) {
        ("storage.k8s.io", "v1", "CSIDriver") => add::<storage::CSIDriver>(gen),
        ("storage.k8s.io", "v1", "CSINode") => add::<storage::CSINode>(gen),
        ("storage.k8s.io", "v1", "CSIStorageCapacity") => add::<storage::CSIStorageCapacity>(gen),
        ("storage.k8s.io", "v1", "VolumeAttachment") => add::<storage::VolumeAttachment>(gen),
        ("storage.k8s.io", "v1", "VolumeAttributesClass") => {
            add::<storage::VolumeAttributesClass>(gen)
        }
        ("resource.k8s.io", "v1", "DeviceClass") => add::<resource::DeviceClass>(gen),
        ("resource.k8s.io", "v1", "ResourceClaim") => add::<resource::ResourceClaim>(gen),
        ("resource.k8s.io", "v1", "ResourceClaimTemplate") => {
            add::<resource::ResourceClaimTemplate>(gen)
        }
        ("resource.k8s.io", "v1", "ResourceSlice") => add::<resource::ResourceSlice>(gen),
        ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration") => {
            add::<admission::MutatingWebhookConfiguration>(gen)
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy") => {
            add::<admission::ValidatingAdmissionPolicy>(gen)
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding") => {
            add::<admission::ValidatingAdmissionPolicyBinding>(gen)
        }
        ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration") => {
            add::<admission::ValidatingWebhookConfiguration>(gen)
        }
        ("networking.k8s.io", "v1", "IPAddress") => add::<networking::IPAddress>(gen),
        ("networking.k8s.io", "v1", "ServiceCIDR") => add::<networking::ServiceCIDR>(gen),
        ("authorization.k8s.io", "v1", "SubjectAccessReview") => {
            add::<authorization::SubjectAccessReview>(gen)
        }
        ("authorization.k8s.io", "v1", "LocalSubjectAccessReview") => {
            add::<authorization::LocalSubjectAccessReview>(gen)
        }
        ("certificates.k8s.io", "v1", "CertificateSigningRequest") => {
            add::<certificates::CertificateSigningRequest>(gen)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::schema::generate::builtin;

    #[test]
    fn control_plane_kinds_have_schemas_and_lists() {
        let b = builtin();
        for (group, kind) in [
            ("storage.k8s.io", "CSINode"),
            ("storage.k8s.io", "CSIDriver"),
            ("storage.k8s.io", "CSIStorageCapacity"),
            ("storage.k8s.io", "VolumeAttachment"),
            ("storage.k8s.io", "VolumeAttributesClass"),
            ("resource.k8s.io", "ResourceClaim"),
            ("resource.k8s.io", "ResourceClaimTemplate"),
            ("resource.k8s.io", "ResourceSlice"),
            ("resource.k8s.io", "DeviceClass"),
            ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
            (
                "admissionregistration.k8s.io",
                "ValidatingAdmissionPolicyBinding",
            ),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
            ),
            ("networking.k8s.io", "ServiceCIDR"),
            ("networking.k8s.io", "IPAddress"),
            ("networking.k8s.io", "IngressClass"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
        ] {
            let name = b
                .name_of(group, "v1", kind)
                .unwrap_or_else(|| panic!("{kind}"));
            let def = b.get(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(
                def["x-kubernetes-group-version-kind"][0]["kind"], kind,
                "{name}"
            );
            assert!(
                b.name_of(group, "v1", &format!("{kind}List")).is_some(),
                "{kind}List"
            );
        }
        let claim = b
            .get("io.k8s.api.resource.v1.ResourceClaim")
            .expect("claim");
        assert!(claim["properties"]["status"].is_object());
    }
}
