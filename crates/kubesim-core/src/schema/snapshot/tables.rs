//! Which `k8s-openapi` type describes each served built-in kind.

use k8s_openapi::schemars::generate::SchemaGenerator;
use k8s_openapi::schemars::JsonSchema;

/// Adds `T`'s schema (and everything it references) to the generator and
/// returns its definition name.
pub(super) fn add<T: JsonSchema>(gen: &mut SchemaGenerator) -> Option<String> {
    let schema = gen.subschema_for::<T>();
    let reference = schema.get("$ref")?.as_str()?;
    // schemars builds the ref from the configured definitions path; only the
    // name after the last path segment matters to us.
    Some(reference.rsplit('/').next()?.to_string())
}

/// Maps a built-in (group, version, kind) to its `k8s-openapi` type. Kinds the
/// crate does not know (or that we do not serve) yield `None`.
pub(super) fn add_kind(
    gen: &mut SchemaGenerator,
    group: &str,
    version: &str,
    kind: &str,
) -> Option<String> {
    use k8s_openapi::api::{
        apps::v1 as apps, authentication::v1 as authentication, authorization::v1 as authorization,
        autoscaling::v1 as autoscaling1, autoscaling::v2 as autoscaling2, batch::v1 as batch,
        coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery,
        events::v1 as events, networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    match (group, version, kind) {
        ("", "v1", "Binding") => add::<core::Binding>(gen),
        ("", "v1", "ConfigMap") => add::<core::ConfigMap>(gen),
        ("", "v1", "Endpoints") => add::<core::Endpoints>(gen),
        ("", "v1", "Event") => add::<core::Event>(gen),
        ("", "v1", "LimitRange") => add::<core::LimitRange>(gen),
        ("", "v1", "Namespace") => add::<core::Namespace>(gen),
        ("", "v1", "Node") => add::<core::Node>(gen),
        ("", "v1", "PersistentVolumeClaim") => add::<core::PersistentVolumeClaim>(gen),
        ("", "v1", "PersistentVolume") => add::<core::PersistentVolume>(gen),
        ("", "v1", "Pod") => add::<core::Pod>(gen),
        ("", "v1", "PodTemplate") => add::<core::PodTemplate>(gen),
        ("", "v1", "ReplicationController") => add::<core::ReplicationController>(gen),
        ("", "v1", "ResourceQuota") => add::<core::ResourceQuota>(gen),
        ("", "v1", "Secret") => add::<core::Secret>(gen),
        ("", "v1", "ServiceAccount") => add::<core::ServiceAccount>(gen),
        ("", "v1", "Service") => add::<core::Service>(gen),
        ("apps", "v1", "ControllerRevision") => add::<apps::ControllerRevision>(gen),
        ("apps", "v1", "DaemonSet") => add::<apps::DaemonSet>(gen),
        ("apps", "v1", "Deployment") => add::<apps::Deployment>(gen),
        ("apps", "v1", "ReplicaSet") => add::<apps::ReplicaSet>(gen),
        ("apps", "v1", "StatefulSet") => add::<apps::StatefulSet>(gen),
        ("authentication.k8s.io", "v1", "SelfSubjectReview") => {
            add::<authentication::SelfSubjectReview>(gen)
        }
        ("authentication.k8s.io", "v1", "TokenRequest") => add::<authentication::TokenRequest>(gen),
        ("authorization.k8s.io", "v1", "SelfSubjectAccessReview") => {
            add::<authorization::SelfSubjectAccessReview>(gen)
        }
        ("authorization.k8s.io", "v1", "SelfSubjectRulesReview") => {
            add::<authorization::SelfSubjectRulesReview>(gen)
        }
        ("autoscaling", "v1", "Scale") => add::<autoscaling1::Scale>(gen),
        ("autoscaling", "v1", "HorizontalPodAutoscaler") => {
            add::<autoscaling1::HorizontalPodAutoscaler>(gen)
        }
        ("autoscaling", "v2", "HorizontalPodAutoscaler") => {
            add::<autoscaling2::HorizontalPodAutoscaler>(gen)
        }
        ("batch", "v1", "CronJob") => add::<batch::CronJob>(gen),
        ("batch", "v1", "Job") => add::<batch::Job>(gen),
        ("coordination.k8s.io", "v1", "Lease") => add::<coordination::Lease>(gen),
        ("discovery.k8s.io", "v1", "EndpointSlice") => add::<discovery::EndpointSlice>(gen),
        ("events.k8s.io", "v1", "Event") => add::<events::Event>(gen),
        ("networking.k8s.io", "v1", "Ingress") => add::<networking::Ingress>(gen),
        ("networking.k8s.io", "v1", "IngressClass") => add::<networking::IngressClass>(gen),
        ("networking.k8s.io", "v1", "NetworkPolicy") => add::<networking::NetworkPolicy>(gen),
        ("policy", "v1", "Eviction") => add::<policy::Eviction>(gen),
        ("policy", "v1", "PodDisruptionBudget") => add::<policy::PodDisruptionBudget>(gen),
        ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => {
            add::<rbac::ClusterRoleBinding>(gen)
        }
        ("rbac.authorization.k8s.io", "v1", "ClusterRole") => add::<rbac::ClusterRole>(gen),
        ("rbac.authorization.k8s.io", "v1", "RoleBinding") => add::<rbac::RoleBinding>(gen),
        ("rbac.authorization.k8s.io", "v1", "Role") => add::<rbac::Role>(gen),
        ("scheduling.k8s.io", "v1", "PriorityClass") => add::<scheduling::PriorityClass>(gen),
        ("storage.k8s.io", "v1", "StorageClass") => add::<storage::StorageClass>(gen),
        ("apiextensions.k8s.io", "v1", "CustomResourceDefinition") => {
            add::<apiextensions::CustomResourceDefinition>(gen)
        }
        _ => super::control_plane_kinds::add_kind(gen, group, version, kind),
    }
}
