//! Writes that read a stored object without its managedFields (bindings,
//! status patches, deletions) keep the stored list exactly, record their
//! own entry as before, and answer with the whole object.

use futures::StreamExt;
use kubesim_core::patch::PatchType;
use kubesim_runtime::WriteOptions;
use kubesim_runtime::{DeleteOptions, ListOptions, ResourceRef, WatchEvent};
use serde_json::{json, Value};

mod support;

use support::api;

fn as_manager(name: &str) -> WriteOptions {
    WriteOptions {
        field_manager: Some(name.into()),
        ..Default::default()
    }
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .map(|e| {
            let sub = e["subresource"].as_str().unwrap_or("");
            (e["manager"].as_str().unwrap().to_string(), sub.to_string())
        })
        .collect()
}

fn pods() -> ResourceRef {
    ResourceRef::core("pods")
}

#[tokio::test(start_paused = true)]
async fn binding_status_and_deletion_keep_the_list() {
    let api = api().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let created = api
        .create(&pods(), "default", pod, &as_manager("creator"))
        .await
        .unwrap();
    let at_create = created["metadata"]["managedFields"].clone();
    assert_eq!(managers(&created), [("creator".into(), String::new())]);
    let mut watch = api
        .watch(&pods(), "default", &ListOptions::default())
        .await
        .unwrap();

    // A binding writes no entry: the list is the stored one, byte for byte.
    support::bind(api.as_ref(), "p", "n1").await;
    let bound = api.get(&pods(), "default", "p").await.unwrap();
    assert_eq!(bound["spec"]["nodeName"], "n1");
    assert_eq!(
        bound["metadata"]["managedFields"].to_string(),
        at_create.to_string()
    );

    // A status patch adds the kubelet's entry beside the creator's, and its
    // answer carries both.
    let answer = api
        .patch_value(
            &pods(),
            "default",
            "p",
            PatchType::Merge,
            json!({"status": {"phase": "Running"}}),
            Some("status"),
            &as_manager("kubelet"),
        )
        .await
        .unwrap();
    let expected = [
        ("creator".to_string(), String::new()),
        ("kubelet".to_string(), "status".to_string()),
    ];
    assert_eq!(managers(&answer), expected);
    let running = api.get(&pods(), "default", "p").await.unwrap();
    assert_eq!(running.to_string(), answer.to_string());
    assert!(running["metadata"]["managedFields"][1]["fieldsV1"]["f:status"]["f:phase"].is_object());

    // A JSON Patch may read the list: its test op sees the stored entries.
    let test_op = json!([
        {"op": "test", "path": "/metadata/managedFields/0/manager", "value": "creator"},
        {"op": "add", "path": "/metadata/labels/b", "value": "c"}
    ]);
    let patched = api
        .patch_value(
            &pods(),
            "default",
            "p",
            PatchType::Json,
            test_op,
            None,
            &as_manager("labeller"),
        )
        .await
        .unwrap();
    assert_eq!(patched["metadata"]["labels"]["b"], "c");
    assert_eq!(managers(&patched).len(), 3);

    // Replacing the pod with itself as read, its list included (as a
    // client that reads, edits nothing and writes back does), writes
    // nothing; changing the label takes it from the labeller, whose entry
    // then holds nothing and goes.
    let unchanged = api
        .update(
            &pods(),
            "default",
            patched.clone(),
            None,
            &as_manager("echo"),
        )
        .await
        .unwrap();
    assert_eq!(
        unchanged["metadata"]["resourceVersion"],
        patched["metadata"]["resourceVersion"]
    );
    assert_eq!(unchanged.to_string(), patched.to_string());
    let mut relabelled = patched.clone();
    relabelled["metadata"]["labels"]["b"] = json!("d");
    let relabelled = api
        .update(&pods(), "default", relabelled, None, &as_manager("echo"))
        .await
        .unwrap();
    let expected = [
        ("creator".to_string(), String::new()),
        ("echo".to_string(), String::new()),
        ("kubelet".to_string(), "status".to_string()),
    ];
    assert_eq!(managers(&relabelled), expected);
    let patched = relabelled;

    // A graceful deletion answers with the whole object, and the final
    // deletion's event carries the list as stored.
    let deleting = api
        .delete(
            &pods(),
            "default",
            "p",
            &DeleteOptions {
                grace_period_seconds: Some(30),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(managers(&deleting), managers(&patched));
    let last = api.get(&pods(), "default", "p").await.unwrap();
    api.delete(&pods(), "default", "p", &DeleteOptions::now_status_only())
        .await
        .unwrap();
    let mut deleted = None;
    while let Some(ev) = watch.next().await {
        if let WatchEvent::Deleted(obj) = ev {
            deleted = Some(obj);
            break;
        }
    }
    let deleted = deleted.expect("a deletion event");
    assert_eq!(
        deleted["metadata"]["managedFields"].to_string(),
        last["metadata"]["managedFields"].to_string()
    );
}
