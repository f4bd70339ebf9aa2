//! Dispatch-level tests: the right rules run for each resource.

use serde_json::json;

use super::*;
use crate::resource::Registry;

fn info(group: &str, plural: &str) -> ResourceInfo {
    let version = match group {
        "autoscaling" => "v2",
        _ => "v1",
    };
    Registry::new()
        .get(group, version, plural)
        .map(|r| (*r).clone())
        .unwrap_or_else(|| panic!("no {plural}.{group}"))
}

fn fields_of(c: &[Cause]) -> Vec<&str> {
    c.iter().map(|c| c.field.as_str()).collect()
}

#[test]
fn namespace_names_are_labels() {
    let ns = info("", "namespaces");
    let c = validate(&ns, &json!({"metadata": {"name": "a.b"}}), None);
    assert_eq!(fields_of(&c), vec!["metadata.name"]);
    assert!(c[0].message.contains("RFC 1123 label"));
    assert!(validate(&ns, &json!({"metadata": {"name": "team-a"}}), None).is_empty());
}

#[test]
fn service_names_are_dns1035() {
    let svc = info("", "services");
    let o = json!({"metadata": {"name": "1web"}, "spec": {"type": "ClusterIP", "sessionAffinity": "None",
        "ports": [{"port": 80, "protocol": "TCP"}]}});
    let c = validate(&svc, &o, None);
    assert_eq!(fields_of(&c), vec!["metadata.name"]);
    assert!(c[0].message.contains("DNS-1035 label"));
}

#[test]
fn rbac_names_allow_colons() {
    let cr = info("rbac.authorization.k8s.io", "clusterroles");
    assert!(validate(
        &cr,
        &json!({"metadata": {"name": "system:controller:x"}}),
        None
    )
    .is_empty());
    let c = validate(&cr, &json!({"metadata": {"name": "a/b"}}), None);
    assert_eq!(c[0].message, "Invalid value: \"a/b\": may not contain '/'");
}

#[test]
fn custom_resources_use_subdomain_names() {
    let mut cr = info("", "configmaps");
    cr.crd = Some(crate::resource::CrdInfo {
        printer_columns: vec![],
        schema: None,
        scale: None,
    });
    let c = validate(
        &cr,
        &json!({"metadata": {"name": "My_Widget"}, "data": {"bad/key": 1}}),
        None,
    );
    // Only metadata is checked: a custom resource's body is its own.
    assert_eq!(fields_of(&c), vec!["metadata.name"]);
}

#[test]
fn pod_dispatch_checks_spec_and_update() {
    let pods = info("", "pods");
    let c = validate(
        &pods,
        &json!({"metadata": {"name": "p"}, "spec": {"containers": []}}),
        None,
    );
    assert_eq!(
        fields_of(&c),
        vec!["spec.containers", "spec.restartPolicy", "spec.dnsPolicy"]
    );
}

#[test]
fn status_updates_of_a_kept_valid_spec_answer_as_full_validation() {
    let pods = info("", "pods");
    let spec = json!({"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
            "terminationMessagePolicy": "File"}]});
    let old = json!({"metadata": {"name": "p"}, "spec": spec, "status": {}});
    let kept = [
        json!({"metadata": {"name": "p"}, "spec": spec, "status": {"phase": "Running"}}),
        json!({"metadata": {"name": "p", "labels": {"-bad": "x"}}, "spec": spec}),
        json!({"metadata": {"name": "P"}, "spec": spec}),
    ];
    for new in &kept {
        assert_eq!(
            validate_status_update(&pods, new, &old),
            validate(&pods, new, Some(&old)),
            "{new}"
        );
    }
    assert_eq!(
        fields_of(&validate_status_update(&pods, &kept[1], &old)),
        vec!["metadata.labels"]
    );
    // A changed or missing spec, and other kinds, are validated in full.
    let changed = json!({"metadata": {"name": "p"}, "spec": {"containers": []}});
    assert_eq!(
        fields_of(&validate_status_update(&pods, &changed, &old)),
        fields_of(&validate(&pods, &changed, Some(&old)))
    );
    assert!(!validate_status_update(&pods, &changed, &old).is_empty());
    let none = json!({"metadata": {"name": "p"}});
    assert_eq!(
        fields_of(&validate_status_update(&pods, &none, &none)),
        vec!["spec.containers"]
    );
    let ns = info("", "namespaces");
    let bad = json!({"metadata": {"name": "a.b"}, "spec": {}});
    assert_eq!(
        fields_of(&validate_status_update(&ns, &bad, &bad)),
        vec!["metadata.name"]
    );
}

#[test]
fn not_an_object() {
    let pods = info("", "pods");
    assert_eq!(
        fields_of(&validate(&pods, &json!([1]), None)),
        vec!["metadata.name"]
    );
}

#[test]
fn invalid_error_message_renders_like_kubectl() {
    let deploy = info("apps", "deployments");
    let o = json!({"metadata": {"name": "web"}, "spec": {
        "replicas": 1, "selector": {"matchLabels": {"app": "web"}},
        "strategy": {"type": "RollingUpdate"},
        "template": {"metadata": {"labels": {"app": "api"}}, "spec": {
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}]}}}});
    let c = validate(&deploy, &o, None);
    let e = crate::error::ApiError::invalid("Deployment", "apps", "web", c);
    assert_eq!(
        e.message,
        "Deployment.apps \"web\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"api\"}: `selector` does not match template `labels`"
    );
}

#[test]
fn daemon_sets_surge_or_leave_nodes_unavailable_not_both() {
    let ds = info("apps", "daemonsets");
    let with = |ru: serde_json::Value| {
        json!({"metadata": {"name": "agent"}, "spec": {
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": ru},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
                "containers": [{"name": "c", "image": "a", "imagePullPolicy": "Always",
                    "terminationMessagePolicy": "File"}]}}}})
    };
    let ok = |ru| validate(&ds, &with(ru), None);
    assert!(ok(json!({"maxSurge": 1, "maxUnavailable": 0})).is_empty());
    assert!(ok(json!({"maxSurge": "10%", "maxUnavailable": "0%"})).is_empty());
    assert!(ok(json!({"maxSurge": 0, "maxUnavailable": 2})).is_empty());
    let both = ok(json!({"maxSurge": 1, "maxUnavailable": 1}));
    assert_eq!(
        fields_of(&both),
        ["spec.updateStrategy.rollingUpdate.maxSurge"]
    );
    assert_eq!(
        both[0].message,
        "Invalid value: 1: may not be set when maxUnavailable is non-zero"
    );
    let neither = ok(json!({"maxSurge": "0%", "maxUnavailable": 0}));
    assert_eq!(
        fields_of(&neither),
        ["spec.updateStrategy.rollingUpdate.maxUnavailable"]
    );
    assert_eq!(
        neither[0].message,
        "Required value: cannot be 0 when maxSurge is 0"
    );
    let over = ok(json!({"maxSurge": "150%", "maxUnavailable": 0}));
    assert_eq!(
        fields_of(&over),
        ["spec.updateStrategy.rollingUpdate.maxSurge"]
    );
}
