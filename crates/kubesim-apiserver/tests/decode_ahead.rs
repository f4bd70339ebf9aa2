//! A server that decodes committed objects ahead on a thread of its own,
//! and prepares the patches it is told of, answers and stores exactly
//! what one that does neither does, through every kind of write that
//! reads a stored object.

use kubesim_core::patch::PatchType;
use kubesim_runtime::{Ahead, Api, DeleteOptions, ListOptions, ResourceRef, WriteOptions};
use serde_json::{json, Value};

mod support;

fn as_manager(name: &str) -> WriteOptions {
    WriteOptions {
        field_manager: Some(name.into()),
        ..Default::default()
    }
}

/// Writes pods through their lives on `api`, and returns every answer and
/// then every pod left, serialized.
async fn lives(api: &dyn Api) -> Vec<String> {
    let pods = ResourceRef::core("pods");
    let mut out = Vec::new();
    let mut keep = |v: Value| out.push(v.to_string());
    for i in 0..40 {
        let name = format!("p{i}");
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        let created = api
            .create(&pods, "default", pod, &as_manager("creator"))
            .await
            .unwrap();
        // The clock stands still: every request is made at this time.
        let now = created["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .to_string();
        keep(created);
        keep(support::bind(api, &name, &format!("n{}", i % 3)).await);
        let running = json!({"status": {"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}]}});
        keep(
            api.patch_value(
                &pods,
                "default",
                &name,
                PatchType::Strategic,
                running,
                Some("status"),
                &as_manager("kubelet"),
            )
            .await
            .unwrap(),
        );
        // Its end announced, as an emulated kubelet does: truly for most
        // (half of which are written again before), with another body or
        // at another time for some.
        let done = json!({"status": {"phase": "Succeeded"}});
        let (body, at) = match i % 5 {
            3 => (json!({"status": {"phase": "Failed"}}), now.clone()),
            4 => (done, "2030-01-01T00:00:00Z".to_string()),
            _ => (done, now.clone()),
        };
        let kubelet = as_manager("kubelet");
        let status = Some("status");
        api.patch_ahead(
            &pods,
            "default",
            &name,
            PatchType::Merge,
            &body,
            status,
            &kubelet,
            &at,
        );
        // Every other pod: its labels changed by a JSON Patch that reads
        // the managedFields, and a graceful deletion.
        if i % 2 == 0 {
            let ops = json!([
                {"op": "test", "path": "/metadata/managedFields/0/manager", "value": "creator"},
                {"op": "add", "path": "/metadata/labels/b", "value": "c"}
            ]);
            keep(
                api.patch_value(
                    &pods,
                    "default",
                    &name,
                    PatchType::Json,
                    ops,
                    None,
                    &as_manager("labeller"),
                )
                .await
                .unwrap(),
            );
            let graceful = DeleteOptions {
                grace_period_seconds: Some(30),
                ..Default::default()
            };
            keep(
                api.delete(&pods, "default", &name, &graceful)
                    .await
                    .unwrap(),
            );
        }
    }
    // The pods finish in the reverse order, and a third of them go.
    for i in (0..40).rev() {
        let name = format!("p{i}");
        let done = json!({"status": {"phase": "Succeeded"}});
        keep(
            api.patch_value(
                &pods,
                "default",
                &name,
                PatchType::Merge,
                done,
                Some("status"),
                &as_manager("kubelet"),
            )
            .await
            .unwrap(),
        );
        if i % 3 == 0 {
            keep(
                api.delete(&pods, "default", &name, &DeleteOptions::now_status_only())
                    .await
                    .unwrap(),
            );
        }
    }
    let left = api
        .list(&pods, "default", &ListOptions::default())
        .await
        .unwrap();
    keep(left);
    out
}

#[tokio::test(start_paused = true)]
async fn decoding_and_preparing_ahead_change_no_answer_and_no_stored_byte() {
    let on_demand = lives(support::api_with(None).await.as_ref()).await;
    let ahead = Ahead::start();
    let ahead = lives(support::api_with(Some(&ahead)).await.as_ref()).await;
    assert_eq!(on_demand.len(), ahead.len());
    for (a, b) in on_demand.iter().zip(&ahead) {
        assert_eq!(a, b);
    }
    // The run did what it says: pods are left, finished and labelled.
    let left: Value = serde_json::from_str(ahead.last().unwrap()).unwrap();
    let items = left["items"].as_array().unwrap();
    assert_eq!(items.len(), 40 - 14);
    assert!(items.iter().all(|p| p["status"]["phase"] == "Succeeded"));
}
