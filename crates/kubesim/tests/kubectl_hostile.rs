//! End-to-end: kubectl's writes of objects whose fields have the wrong
//! JSON type are refused with the API server's own words, on create,
//! apply (client- and server-side) and patch, and nothing is stored; a
//! custom resource is pruned, defaulted and checked against its schema;
//! claims get the default StorageClass.

mod common;

use common::kubectl::Cluster;

fn refused(c: &Cluster, args: &[&str], manifest: &str) -> String {
    let o = c.kubectl_in(args, Some(manifest));
    assert!(!o.status.success(), "kubectl {args:?} should fail");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const BAD_POD: &str = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
  "spec": {"containers": [{"name": "c", "image": "i", "env": [1]}]}}"#;

#[test]
fn wrong_types_read_as_the_real_servers_refusals() {
    let c = Cluster::start("kubectl-hostile-types");
    let err = refused(&c, &["create", "-f", "-"], BAD_POD);
    assert!(
        err.contains("Error from server (BadRequest)")
            && err.contains(
                "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field Container.spec.containers.env of type v1.EnvVar"
            ),
        "{err}"
    );
    let err = refused(&c, &["apply", "--server-side", "-f", "-"], BAD_POD);
    assert!(err.contains("cannot unmarshal number"), "{err}");
    assert!(c.kubectl(&["get", "pod", "bad"]).status.code() != Some(0));

    c.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=1",
    ]);
    let err = c.fails(&[
        "patch",
        "deployment",
        "web",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":"x"}}"#,
    ]);
    assert!(
        err.contains("is invalid: patch: Invalid value")
            && err.contains("cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
        "{err}"
    );
    let d = c.json(&["get", "deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 1);

    let err = refused(
        &c,
        &["create", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": 5}}"#,
    );
    assert!(err.contains("Error from server (BadRequest)"), "{err}");
    // The server still answers.
    c.ok(&["get", "services"]);
}

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            x-kubernetes-validations:
            - rule: "self.size <= self.limit"
              message: "size must not exceed limit"
            properties:
              size: {type: integer, minimum: 1}
              limit: {type: integer, default: 10}
              mode: {type: string, enum: [fast, slow]}
"#;

#[test]
fn custom_resources_follow_their_structural_schema() {
    let c = Cluster::start("kubectl-hostile-crd");
    c.apply(CRD);
    c.eventually(
        "the widgets resource",
        50,
        std::time::Duration::from_millis(100),
        || {
            c.kubectl(&["get", "widgets"])
                .status
                .success()
                .then_some(())
        },
    );
    let err = refused(
        &c,
        &["create", "-f", "-"],
        r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": "big", "mode": "medium"}}"#,
    );
    assert!(err.contains("The Widget \"w\" is invalid"), "{err}");
    assert!(
        err.contains("spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""),
        "{err}"
    );
    assert!(
        err.contains("spec.mode: Unsupported value: \"medium\""),
        "{err}"
    );
    let err = refused(
        &c,
        &["create", "-f", "-"],
        r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 20}}"#,
    );
    assert!(err.contains("size must not exceed limit"), "{err}");
    c.apply_stdin(
        &["create", "--validate=false", "-f", "-"],
        r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 2, "junk": 1}}"#,
    );
    let w = c.json(&["get", "widget", "w"]);
    assert_eq!(
        w["spec"],
        serde_json::json!({"size": 2, "limit": 10}),
        "pruned and defaulted"
    );
}

#[test]
fn claims_get_the_default_storage_class_even_later() {
    let c = Cluster::start("kubectl-hostile-pvc");
    let claim = |name: &str| {
        format!(
            r#"{{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {{"name": "{name}"}},
              "spec": {{"accessModes": ["ReadWriteOnce"], "resources": {{"requests": {{"storage": "1Gi"}}}}}}}}"#
        )
    };
    c.apply(&claim("early"));
    assert_eq!(
        c.json(&["get", "pvc", "early"])["spec"].get("storageClassName"),
        None
    );
    c.apply(
        r#"{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "x"}"#,
    );
    c.apply(&claim("late"));
    assert_eq!(
        c.json(&["get", "pvc", "late"])["spec"]["storageClassName"],
        "standard"
    );
    c.eventually(
        "the early claim's class",
        100,
        std::time::Duration::from_millis(100),
        || {
            (c.json(&["get", "pvc", "early"])["spec"]["storageClassName"] == "standard")
                .then_some(())
        },
    );
}

#[test]
fn duplicate_fields_follow_field_validation() {
    let c = Cluster::start("kubectl-hostile-dups");
    let file = c.dir.join("dup.json");
    std::fs::write(
        &file,
        r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "data": {"k": "a", "k": "b"}}"#,
    )
    .expect("write");
    let f = file.to_str().expect("path");
    let err = c.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        "-f",
        f,
    ]);
    assert!(
        err.contains(r#"strict decoding error: duplicate field \"data.k\""#)
            || err.contains(r#"strict decoding error: duplicate field "data.k""#),
        "{err}"
    );
    assert!(c.kubectl(&["get", "configmap", "dup"]).status.code() != Some(0));
    let o = c.kubectl(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps?fieldValidation=Warn",
        "-f",
        f,
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains(r#"duplicate field "data.k""#), "{stderr}");
    assert_eq!(c.json(&["get", "configmap", "dup"])["data"]["k"], "b");
}
