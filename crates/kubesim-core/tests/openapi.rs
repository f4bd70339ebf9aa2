//! OpenAPI v3 documents and strict field checks, as kubectl relies on them.

use kubesim_core::resource::{CrdInfo, ResourceInfo, Scope, ALL_VERBS};
use kubesim_core::schema::{
    gv_document, openapi_group_version, openapi_index, unknown_fields, REF_PREFIX,
};
use kubesim_core::Registry;
use serde_json::{json, Value};

fn crd(group: &str, kind: &str, plural: &str, schema: Option<Value>) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        scope: Scope::Namespaced,
        short_names: vec![],
        categories: vec![],
        verbs: ALL_VERBS.to_vec(),
        subresources: vec![],
        crd: Some(CrdInfo {
            printer_columns: vec![],
            schema,
            scale: None,
        }),
    }
}

fn crontab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string"},
                    "replicas": {"type": "integer"},
                    "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "items": {"type": "array", "items": {
                        "type": "object", "properties": {"name": {"type": "string"}}
                    }},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "empty": {"type": "object"},
                    "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {
                        "spec": {"type": "object", "properties": {"a": {"type": "string"}}}
                    }},
                    "port": {"x-kubernetes-int-or-string": true}
                }
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    })
}

fn registry_with_crds() -> Registry {
    let r = Registry::new();
    r.insert(crd(
        "stable.example.com",
        "CronTab",
        "crontabs",
        Some(crontab_schema()),
    ));
    r.insert(crd(
        "open.example.com",
        "Blob",
        "blobs",
        Some(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
    ));
    r
}

fn url_hash(index: &Value, path: &str) -> String {
    let url = index["paths"][path]["serverRelativeURL"]
        .as_str()
        .unwrap_or_default();
    let prefix = format!("/openapi/v3/{path}?hash=");
    assert!(url.starts_with(&prefix), "{path}: {url}");
    url[prefix.len()..].to_string()
}

#[test]
fn index_lists_group_versions_with_stable_hashes() {
    let r = registry_with_crds();
    let index = openapi_index(&r);
    for path in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/stable.example.com/v1",
    ] {
        let hash = url_hash(&index, path);
        assert_eq!(hash.len(), 32);
        assert!(hash
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        let doc = gv_document(&r, path).expect(path);
        assert_eq!(doc.hash, hash);
    }
    assert!(index["paths"].get("api").is_none());
    // Deterministic across calls and registries.
    assert_eq!(openapi_index(&registry_with_crds()), index);
    assert_ne!(url_hash(&index, "api/v1"), url_hash(&index, "apis/apps/v1"));
}

#[test]
fn unknown_group_version_is_none() {
    let r = Registry::new();
    assert!(openapi_group_version(&r, "apis/nope.example.com/v1").is_none());
    assert!(openapi_group_version(&r, "api/v2").is_none());
    assert!(openapi_group_version(&r, "garbage").is_none());
}

#[test]
fn pod_patch_declares_field_validation_and_gvk() {
    let r = Registry::new();
    let doc = openapi_group_version(&r, "api/v1").expect("v1");
    assert_eq!(doc["openapi"], "3.0.0");
    assert_eq!(doc["info"]["title"], "Kubernetes");
    let patch = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "Pod", "version": "v1"})
    );
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
    let params = patch["parameters"].as_array().expect("params");
    for name in ["fieldValidation", "dryRun", "fieldManager", "force"] {
        assert!(
            params
                .iter()
                .any(|p| p["name"] == name && p["in"] == "query"),
            "{name}"
        );
    }
    // Cluster-scoped objects have no namespace segment.
    let node = &doc["paths"]["/api/v1/nodes/{name}"];
    assert_eq!(node["get"]["x-kubernetes-action"], "get");
    assert_eq!(
        doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"]["x-kubernetes-action"],
        "list"
    );
    assert_eq!(
        doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["post"]["x-kubernetes-action"],
        "post"
    );
}

/// kubectl stops at the first PATCH operation carrying the kind's GVK, in
/// map order; every one of them must declare `fieldValidation`.
#[test]
fn every_patch_operation_declares_field_validation() {
    let r = registry_with_crds();
    let index = openapi_index(&r);
    for path in index["paths"].as_object().expect("paths").keys() {
        let doc = openapi_group_version(&r, path).expect(path);
        for (p, item) in doc["paths"].as_object().expect("paths") {
            for (verb, op) in item.as_object().expect("item") {
                if verb == "parameters" {
                    continue;
                }
                assert!(
                    op["x-kubernetes-group-version-kind"].is_object(),
                    "{p} {verb}"
                );
                assert!(op["operationId"].is_string(), "{p} {verb}");
                if verb == "patch" {
                    let params = op["parameters"].as_array().expect("params");
                    assert!(params.iter().any(|x| x["name"] == "fieldValidation"), "{p}");
                }
            }
        }
    }
}

fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let reference = schema
        .get("$ref")
        .or_else(|| schema.get("allOf")?.get(0)?.get("$ref"))?
        .as_str()?;
    doc["components"]["schemas"].get(reference.strip_prefix(REF_PREFIX)?)
}

#[test]
fn pod_schema_resolves_to_pod_spec() {
    let r = Registry::new();
    let doc = openapi_group_version(&r, "api/v1").expect("v1");
    let pod = &doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"];
    assert!(pod["properties"]["status"].is_object());
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    let spec = resolve(&doc, &pod["properties"]["spec"]).expect("PodSpec");
    assert!(spec["properties"]["containers"].is_object());
    let containers = &spec["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    let container = resolve(&doc, &containers["items"]).expect("Container");
    assert!(container["properties"]["image"].is_object());
    let list = &doc["components"]["schemas"]["io.k8s.api.core.v1.PodList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "PodList"
    );
}

fn collect_refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                match (k.as_str(), c) {
                    ("$ref", Value::String(s)) => out.push(s),
                    _ => collect_refs(c, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

#[test]
fn no_dangling_refs_in_any_document() {
    let r = registry_with_crds();
    let index = openapi_index(&r);
    let paths = index["paths"].as_object().expect("paths");
    assert!(paths.len() >= 10);
    for path in paths.keys() {
        let doc = openapi_group_version(&r, path).expect(path);
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        let mut refs = Vec::new();
        collect_refs(&doc, &mut refs);
        assert!(!refs.is_empty(), "{path}");
        for reference in refs {
            let name = reference.strip_prefix(REF_PREFIX).expect(reference);
            assert!(schemas.contains_key(name), "{path}: dangling {reference}");
        }
        let text = serde_json::to_string(&doc).unwrap_or_default();
        assert!(!text.contains("\"$schema\""), "{path}");
        assert!(!text.contains("\"$defs\""), "{path}");
    }
}

#[test]
fn crd_document_wraps_the_schema() {
    let r = registry_with_crds();
    let doc = openapi_group_version(&r, "apis/stable.example.com/v1").expect("crd doc");
    let schemas = &doc["components"]["schemas"];
    let ct = &schemas["com.example.stable.v1.CronTab"];
    assert_eq!(
        ct["x-kubernetes-group-version-kind"],
        json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
    );
    assert!(resolve(&doc, &ct["properties"]["metadata"]).is_some());
    assert!(ct["properties"]["spec"]["properties"]["cronSpec"].is_object());
    let patch = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
        ["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "CronTab");
    assert!(patch["requestBody"]["content"]
        .get("application/strategic-merge-patch+json")
        .is_none());
}

#[test]
fn pod_unknown_fields_are_reported_in_strict_decoding_form() {
    let r = Registry::new();
    let pods = r.get("", "v1", "pods").expect("pods");
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "foo": "bar",
            "containers": [{"name": "c", "image": "nginx", "bogus": 1}]
        }
    });
    assert_eq!(
        unknown_fields(&pods, &pod),
        vec![
            "spec.foo".to_string(),
            "spec.containers[0].bogus".to_string()
        ]
    );
}

#[test]
fn full_deployment_has_no_unknown_fields() {
    let r = Registry::new();
    let deploy = r.get("apps", "v1", "deployments").expect("deployments");
    let obj = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "generation": 2,
            "labels": {"app": "web"}, "annotations": {"a": "b"},
            "finalizers": ["x/y"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u", "controller": true}],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}],
            "creationTimestamp": null
        },
        "spec": {
            "replicas": 3,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"},
                         "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"k": "v"}},
                "spec": {
                    "serviceAccountName": "default",
                    "terminationGracePeriodSeconds": 30,
                    "nodeSelector": {"disk": "ssd"},
                    "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                    "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "web"}}}}]}},
                    "securityContext": {"runAsNonRoot": true, "fsGroup": 2000},
                    "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
                    "containers": [{
                        "name": "web",
                        "image": "nginx:1.27",
                        "imagePullPolicy": "IfNotPresent",
                        "args": ["--port=8080"],
                        "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                        "env": [
                            {"name": "A", "value": "1"},
                            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                            {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
                        ],
                        "envFrom": [{"configMapRef": {"name": "cm"}}],
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": 0.1}},
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10},
                        "readinessProbe": {"tcpSocket": {"port": 8080}},
                        "volumeMounts": [{"name": "config", "mountPath": "/etc/config", "readOnly": true}],
                        "securityContext": {"allowPrivilegeEscalation": false,
                                            "capabilities": {"drop": ["ALL"]}},
                        "lifecycle": {"preStop": {"exec": {"command": ["sleep", "5"]}}}
                    }],
                    "volumes": [
                        {"name": "config", "configMap": {"name": "cm", "items": [{"key": "a", "path": "a"}]}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}
                    ]
                }
            }
        },
        "status": {
            "observedGeneration": 2, "replicas": 3, "readyReplicas": 3,
            "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                            "lastTransitionTime": "2024-01-01T00:00:00Z"}]
        }
    });
    assert_eq!(unknown_fields(&deploy, &obj), Vec::<String>::new());
}

#[test]
fn crd_unknown_fields_follow_the_structural_schema() {
    let r = registry_with_crds();
    let ct = r
        .get("stable.example.com", "v1", "crontabs")
        .expect("crontabs");
    let ok = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "c", "labels": {"a": "b"}},
        "spec": {"cronSpec": "* * * * *", "replicas": 1, "template": {"any": {"thing": 1}},
                 "items": [{"name": "x"}], "labels": {"x": "y"}, "port": "http",
                 "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "e"}, "spec": {"a": "b"}}},
        "status": {"whatever": true}
    });
    assert!(unknown_fields(&ct, &ok).is_empty());
    let bad = json!({
        "metadata": {"name": "c", "nope": 1},
        "spec": {"foo": 1, "items": [{"name": "x", "extra": 2}], "empty": {"gone": 1},
                 "embedded": {"kind": "Pod", "metadata": {"bad": 1}, "spec": {"c": 1}}},
        "top": 1
    });
    assert_eq!(
        unknown_fields(&ct, &bad),
        vec![
            "metadata.nope",
            "spec.foo",
            "spec.items[0].extra",
            "spec.empty.gone",
            "spec.embedded.metadata.bad",
            "spec.embedded.spec.c",
            "top"
        ]
    );
}

#[test]
fn crd_preserving_unknown_fields_accepts_anything() {
    let r = registry_with_crds();
    let blobs = r.get("open.example.com", "v1", "blobs").expect("blobs");
    let obj = json!({"apiVersion": "open.example.com/v1", "kind": "Blob",
                     "metadata": {"name": "b"}, "spec": {"anything": [1, {"x": 2}]}, "extra": true});
    assert!(unknown_fields(&blobs, &obj).is_empty());
    // No schema at all: nothing is unknown either.
    let r2 = Registry::new();
    r2.insert(crd("none.example.com", "Thing", "things", None));
    let things = r2.get("none.example.com", "v1", "things").expect("things");
    assert!(unknown_fields(&things, &json!({"spec": {"a": 1}})).is_empty());
}

#[test]
fn unknown_fields_never_panics_on_odd_input() {
    let r = Registry::new();
    for res in r.all() {
        for obj in [
            json!(null),
            json!(42),
            json!([1, 2]),
            json!({"spec": null, "metadata": "x", "status": [1]}),
        ] {
            let _ = unknown_fields(&res, &obj);
        }
    }
}
