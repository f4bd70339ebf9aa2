//! A patch body handed over in process as a value must do exactly what
//! its JSON does when sent as bytes: same objects, same errors.

use std::sync::Arc;

use kubesim_core::patch::PatchType;
use kubesim_runtime::{Api, ResourceRef, WriteOptions};
use serde_json::{json, Value};

mod support;

use support::api;

/// A server holding the twin pods `a` and `b`. Its clock stands still (the
/// tests run with time paused): managedFields entries are ordered by their
/// time, so the twin pods' entries must carry the same one.
async fn twins() -> Arc<dyn Api> {
    let api = api().await;
    for name in ["a", "b"] {
        api.create(
            &ResourceRef::core("pods"),
            "default",
            pod(name),
            &Default::default(),
        )
        .await
        .unwrap();
    }
    api
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n1"}})
}

fn opts() -> WriteOptions {
    WriteOptions {
        field_manager: Some("m".into()),
        ..Default::default()
    }
}

/// The object with what differs between two pods written one after the
/// other (name, uid, revision, times, generated names) taken out.
fn normalized(mut v: Value) -> String {
    let m = v["metadata"].as_object_mut().unwrap();
    for k in ["name", "uid", "resourceVersion", "creationTimestamp"] {
        m.remove(k);
    }
    if let Some(Value::Array(entries)) = m.get_mut("managedFields") {
        for e in entries {
            e.as_object_mut().unwrap().remove("time");
        }
    }
    // The service account volume's name ends in a random suffix.
    let volume = v
        .pointer("/spec/volumes/0/name")
        .and_then(Value::as_str)
        .map(String::from);
    let text = v.to_string();
    match volume {
        Some(name) => text.replace(&name, "VOLUME"),
        None => text,
    }
}

/// Patches pod `a` with the body's bytes and pod `b` with the value, and
/// returns both answers.
async fn both(
    api: &Arc<dyn Api>,
    kind: PatchType,
    body: Value,
    sub: Option<&str>,
) -> (Result<Value, String>, Result<Value, String>) {
    let r = ResourceRef::core("pods");
    let bytes = body.to_string().into_bytes();
    let a = api
        .patch(&r, "default", "a", kind, bytes, sub, &opts())
        .await;
    let b = api
        .patch_value(&r, "default", "b", kind, body, sub, &opts())
        .await;
    // Errors name their object; the names are all that may differ.
    let show = |name: &str, e: kubesim_core::ApiError| {
        format!("{} {} {}", e.code, e.reason, e.message).replace(&format!("\"{name}\""), "NAME")
    };
    (a.map_err(|e| show("a", e)), b.map_err(|e| show("b", e)))
}

#[tokio::test(start_paused = true)]
async fn values_and_bytes_patch_alike() {
    let api = twins().await;
    let r = ResourceRef::core("pods");
    let bodies = [
        (
            PatchType::Strategic,
            json!({"status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "c", "image": "busybox", "ready": true,
                    "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]}}),
            Some("status"),
        ),
        (
            PatchType::Merge,
            json!({"metadata": {"finalizers": ["x/y"], "labels": {"app": null, "b": "2"}}}),
            None,
        ),
        (
            PatchType::Json,
            json!([{"op": "add", "path": "/metadata/annotations", "value": {"k": "v"}}]),
            None,
        ),
        // Floating-point numbers go as bytes, as their values might not
        // survive serializing; the answer (here a refusal: pod specs take
        // no such field change) is the same.
        (
            PatchType::Merge,
            json!({"metadata": {"annotations": {"f": "1"}}, "spec": {"x": 1.1}}),
            None,
        ),
    ];
    for (kind, body, sub) in bodies {
        let (a, b) = both(&api, kind, body.clone(), sub).await;
        assert_eq!(a.map(normalized), b.map(normalized), "{kind:?} {body}");
    }
    // Both pods went through the same writes.
    let a = api.get(&r, "default", "a").await.unwrap();
    let b = api.get(&r, "default", "b").await.unwrap();
    assert_eq!(normalized(a), normalized(b));
}

#[tokio::test(start_paused = true)]
async fn values_and_bytes_fail_alike() {
    let api = twins().await;
    let r = ResourceRef::core("pods");
    let bodies = [
        // A failing test operation.
        (
            PatchType::Json,
            json!([{"op": "test", "path": "/metadata/name", "value": "zzz"}]),
        ),
        // Not a list of operations.
        (PatchType::Json, json!({"op": "add"})),
        // A change validation refuses.
        (
            PatchType::Merge,
            json!({"spec": {"containers": [{"name": "c", "image": ""}]}}),
        ),
        (
            PatchType::Strategic,
            json!({"metadata": {"labels": {"bad key!": "v"}}}),
        ),
    ];
    for (kind, body) in bodies {
        let (a, b) = both(&api, kind, body.clone(), None).await;
        assert!(a.is_err(), "{kind:?} {body}");
        assert_eq!(a, b, "{kind:?} {body}");
    }
    // A missing object.
    let missing = api
        .patch_value(
            &r,
            "default",
            "nope",
            PatchType::Merge,
            json!({"metadata": {"labels": {"a": "b"}}}),
            None,
            &opts(),
        )
        .await
        .unwrap_err();
    assert_eq!(missing.code, 404);
}

#[tokio::test(start_paused = true)]
async fn apply_bodies_given_as_values_apply_as_bytes_do() {
    let api = api().await;
    let r = ResourceRef::core("pods");
    let body = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"tier": "web"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n1"}})
    };
    let a = api
        .patch(
            &r,
            "default",
            "a",
            PatchType::Apply,
            body("a").to_string().into_bytes(),
            None,
            &opts(),
        )
        .await
        .unwrap();
    let b = api
        .patch_value(
            &r,
            "default",
            "b",
            PatchType::Apply,
            body("b"),
            None,
            &opts(),
        )
        .await
        .unwrap();
    assert_eq!(a["metadata"]["labels"]["tier"], "web");
    assert_eq!(normalized(a), normalized(b));
}
