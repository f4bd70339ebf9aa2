use serde_json::{json, Value};

use super::decode_error;
use crate::resource::Registry;

fn err(group: &str, version: &str, plural: &str, obj: Value) -> Option<String> {
    let r = Registry::new();
    let res = r.get(group, version, plural).expect("resource");
    decode_error(&res, &obj)
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

#[test]
fn valid_objects_decode() {
    let p = pod(json!({"containers": [{
        "name": "c", "image": "i",
        "env": [{"name": "A", "value": "1"}],
        "ports": [{"containerPort": 80}],
        "resources": {"requests": {"cpu": "100m", "memory": 1024}},
        "livenessProbe": {"httpGet": {"port": "http"}}
    }], "terminationGracePeriodSeconds": null}));
    assert_eq!(err("", "v1", "pods", p), None);
    let secret = json!({"metadata": {"name": "s"}, "data": {"k": "YWJj"}});
    assert_eq!(err("", "v1", "secrets", secret), None);
    let ev = json!({"metadata": {"name": "e"}, "eventTime": "2024-01-01T00:00:00.000001Z",
        "firstTimestamp": "2024-01-01T00:00:00Z"});
    assert_eq!(err("", "v1", "events", ev), None);
}

#[test]
fn type_errors_read_as_gos() {
    let cases = [
        (
            pod(json!({"containers": [{"name": "c", "env": [1]}]})),
            "json: cannot unmarshal number into Go struct field Container.spec.containers.env of type v1.EnvVar",
        ),
        (
            pod(json!({"containers": [{"name": "c", "env": 5}]})),
            "json: cannot unmarshal number into Go struct field Container.spec.containers.env of type []v1.EnvVar",
        ),
        (
            pod(json!({"containers": 3})),
            "json: cannot unmarshal number into Go struct field PodSpec.spec.containers of type []v1.Container",
        ),
        (
            pod(json!("x")),
            "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec",
        ),
        (
            json!({"metadata": {"name": "p", "labels": {"a": 1}}}),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            json!({"metadata": {"name": "p", "labels": ["a"]}}),
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            pod(json!({"containers": [], "activeDeadlineSeconds": 1.5})),
            "json: cannot unmarshal number 1.5 into Go struct field PodSpec.spec.activeDeadlineSeconds of type int64",
        ),
        (
            pod(json!({"containers": [], "hostNetwork": "yes"})),
            "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool",
        ),
        (
            pod(json!({"containers": [{"name": "c", "resources": {"limits": {"cpu": "lots"}}}]})),
            super::QUANTITY_MESSAGE,
        ),
        (
            pod(json!({"containers": [{"name": "c", "ports": [{"containerPort": 4294967296i64}]}]})),
            "json: cannot unmarshal number 4294967296 into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32",
        ),
    ];
    for (obj, want) in cases {
        assert_eq!(
            err("", "v1", "pods", obj.clone()).as_deref(),
            Some(want),
            "{obj}"
        );
    }
}

#[test]
fn other_kinds() {
    assert_eq!(
        err("apps", "v1", "deployments", json!({"spec": {"replicas": "x"}})).as_deref(),
        Some("json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32")
    );
    assert_eq!(
        err("", "v1", "services", json!({"spec": {"type": "NodePort", "ports": 5}})).as_deref(),
        Some("json: cannot unmarshal number into Go struct field ServiceSpec.spec.ports of type []v1.ServicePort")
    );
    assert_eq!(
        err(
            "",
            "v1",
            "services",
            json!({"spec": {"ports": [{"port": 80, "targetPort": {"a": 1}}]}})
        )
        .as_deref(),
        Some("json: cannot unmarshal object into Go value of type int32")
    );
    assert_eq!(
        err("", "v1", "configmaps", json!({"data": {"k": 1}})).as_deref(),
        Some("json: cannot unmarshal number into Go struct field ConfigMap.data of type string")
    );
    assert_eq!(
        err("", "v1", "secrets", json!({"data": {"k": "not base64!"}})).as_deref(),
        Some("illegal base64 data at input byte 3")
    );
    assert_eq!(
        err("", "v1", "nodes", json!({"spec": {"unschedulable": 1}})).as_deref(),
        Some("json: cannot unmarshal number into Go struct field NodeSpec.spec.unschedulable of type bool")
    );
    assert_eq!(
        err("", "v1", "namespaces", json!({"spec": {"finalizers": "kubernetes"}})).as_deref(),
        // Upstream names the element type v1.FinalizerName: the schema
        // keeps only that it is a string.
        Some("json: cannot unmarshal string into Go struct field NamespaceSpec.spec.finalizers of type []string")
    );
    assert_eq!(
        err("batch", "v1", "jobs", json!({"spec": {"completions": true}})).as_deref(),
        Some("json: cannot unmarshal bool into Go struct field JobSpec.spec.completions of type int32")
    );
    assert_eq!(
        err("", "v1", "events", json!({"lastTimestamp": 5})).as_deref(),
        Some("json: cannot unmarshal number into Go value of type string")
    );
}

#[test]
fn open_content_takes_anything() {
    let cr = json!({"metadata": {"name": "x", "managedFields": [{"fieldsV1": {"f:spec": {}}}]},
                    "data": {"anything": [1, {"goes": true}]}, "revision": 1});
    assert_eq!(err("apps", "v1", "controllerrevisions", cr), None);
}

#[test]
fn quantities_given_as_numbers_are_stored_as_strings() {
    let r = Registry::new();
    let pods = r.get("", "v1", "pods").expect("pods");
    let mut p = pod(json!({"containers": [{"name": "c", "image": "i",
        "resources": {"requests": {"cpu": 1.5, "memory": 1024}, "limits": {"cpu": "2"}}}]}));
    super::decode_object(&pods, &mut p).expect("decodes");
    assert_eq!(
        p.pointer("/spec/containers/0/resources"),
        Some(&json!({"requests": {"cpu": "1500m", "memory": "1024"}, "limits": {"cpu": "2"}}))
    );
    let mut bad =
        pod(json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": true}}}]}));
    assert_eq!(
        super::decode_object(&pods, &mut bad),
        Err(super::QUANTITY_MESSAGE.to_string())
    );
}
