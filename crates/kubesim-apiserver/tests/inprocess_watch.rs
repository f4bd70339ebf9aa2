//! In-process watchers get objects built from the committed values rather
//! than decoded from the stored bytes; they must be the very values that
//! decoding gives, key order included, for every shape and kind of write.

use std::sync::Arc;

use futures::StreamExt;
use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::service::{WatchFrame, WatchRequest};
use kubesim_apiserver::Server;
use kubesim_core::patch::PatchType;
use kubesim_runtime::decode::Decode;
use kubesim_runtime::{
    Api, Clock, DeleteOptions, ListOptions, ResourceRef, Rng, WatchEvent, WriteOptions,
};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};
use tokio::sync::mpsc;

async fn server() -> (Arc<Server>, Arc<dyn Api>) {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let server = Server::new(store, Clock::wall(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    (server, api)
}

fn from_now(server: &Server) -> ListOptions {
    ListOptions {
        resource_version: Some(server.store.current_rev().to_string()),
        ..Default::default()
    }
}

/// Lets the watch tasks start (and open their inboxes) before the writes.
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

fn raw_watch(
    server: &Arc<Server>,
    r: &ResourceRef,
    shape: Option<Decode>,
) -> mpsc::Receiver<WatchFrame> {
    server
        .watch(WatchRequest {
            resource: server.resource(&r.group, &r.version, &r.plural).unwrap(),
            namespace: String::new(),
            opts: from_now(server),
            values: shape,
        })
        .unwrap()
}

/// Takes `n` event frames; returns whether each carried a value and
/// checks that value against decoding the frame's bytes.
async fn frames(rx: &mut mpsc::Receiver<WatchFrame>, shape: Decode, n: usize) -> Vec<bool> {
    let mut carried = Vec::new();
    while carried.len() < n {
        match rx.recv().await.expect("frame") {
            WatchFrame::Event { object, value, .. } => {
                if let Some(v) = &value {
                    let decoded = shape.bytes(&object).unwrap();
                    assert_eq!(**v, decoded);
                    assert_eq!(v.to_string(), decoded.to_string(), "key order");
                }
                carried.push(value.is_some());
            }
            WatchFrame::Bookmark { .. } => {}
            WatchFrame::Error(e) => panic!("{e:?}"),
        }
    }
    carried
}

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "a"}, "annotations": {"x": "1.5"}},
        "spec": {"containers": [{"name": "c", "image": "busybox",
            "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}})
}

#[tokio::test]
async fn watchers_see_what_decoding_the_stored_bytes_gives() {
    watchers_see_what_decoding_gives(false).await;
}

/// Writers that want only the resourceVersion back get just that, and
/// their objects reach the watchers moved instead of copied: the same
/// values all the same.
#[tokio::test]
async fn answers_of_version_only_writes_change_nothing_watchers_see() {
    watchers_see_what_decoding_gives(true).await;
}

async fn watchers_see_what_decoding_gives(version_only: bool) {
    let (server, api) = server().await;
    let pods = ResourceRef::new("", "v1", "pods");
    let opts = from_now(&server);
    let mut streams = Vec::new();
    for shape in [
        Decode::WithoutManagedFields,
        Decode::MetadataOnly,
        Decode::Full,
    ] {
        let s = api.watch_decoded(&pods, "", &opts, shape).await.unwrap();
        streams.push((shape, s));
    }
    let mut raw: Vec<(Decode, mpsc::Receiver<WatchFrame>)> =
        [Decode::WithoutManagedFields, Decode::MetadataOnly]
            .into_iter()
            .map(|d| (d, raw_watch(&server, &pods, Some(d))))
            .collect();
    let mut bytes_only = raw_watch(&server, &pods, None);
    settle().await;

    let w = WriteOptions {
        version_only,
        ..Default::default()
    };
    let answer = api.create(&pods, "default", pod("p"), &w).await.unwrap();
    let stored = api.get(&pods, "default", "p").await.unwrap();
    if version_only {
        let rv = &stored["metadata"]["resourceVersion"];
        assert_eq!(answer, json!({"metadata": {"resourceVersion": rv}}));
    } else {
        assert_eq!(answer, stored);
    }
    api.create(&pods, "default", pod("q"), &w).await.unwrap();
    api.create(
        &ResourceRef::new("", "v1", "bindings"),
        "default",
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
            "target": {"kind": "Node", "name": "n1"}}),
        &w,
    )
    .await
    .unwrap();
    let status = json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
        "podIP": "10.0.0.1", "startTime": "2026-01-01T00:00:00Z"}});
    api.patch(
        &pods,
        "default",
        "p",
        PatchType::Merge,
        serde_json::to_vec(&status).unwrap(),
        Some("status"),
        &w,
    )
    .await
    .unwrap();
    let apply = WriteOptions {
        field_manager: Some("tester".into()),
        version_only,
        ..Default::default()
    };
    let applied =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"b": "c"}}});
    api.patch(
        &pods,
        "default",
        "p",
        PatchType::Apply,
        serde_json::to_vec(&applied).unwrap(),
        None,
        &apply,
    )
    .await
    .unwrap();
    let mut q = api.get(&pods, "default", "q").await.unwrap();
    q["metadata"]["labels"]["app"] = json!("z");
    api.update(&pods, "default", q, None, &w).await.unwrap();
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    // A pod's delete answers with the pod at the deletion's revision,
    // unless the caller reads nothing of the answer: then a Status. The
    // watchers get the final state either way (checked below).
    let p = api.delete(&pods, "default", "p", &now).await.unwrap();
    assert_eq!(
        (p["kind"].as_str(), kubesim_core::meta::name(&p)),
        (Some("Pod"), "p")
    );
    assert_eq!(
        p["metadata"]["resourceVersion"],
        json!(server.store.current_rev().to_string())
    );
    let q = api
        .delete(&pods, "default", "q", &DeleteOptions::now_status_only())
        .await
        .unwrap();
    assert_eq!(
        (
            q["kind"].as_str(),
            q["status"].as_str(),
            &q["details"]["name"]
        ),
        (Some("Status"), Some("Success"), &json!("q"))
    );
    const EVENTS: usize = 8;

    for (shape, s) in &mut streams {
        let mut kinds = Vec::new();
        for _ in 0..EVENTS {
            let (ev, bytes) = s.next().await.expect("event");
            let bytes = bytes.expect("in-process events carry the bytes");
            let obj = match &ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o,
                other => panic!("{other:?}"),
            };
            let decoded = shape.bytes(&bytes).unwrap();
            assert_eq!(*obj, decoded, "{shape:?}");
            assert_eq!(obj.to_string(), decoded.to_string(), "{shape:?}: key order");
            kinds.push(match ev {
                WatchEvent::Added(_) => "ADDED",
                WatchEvent::Modified(_) => "MODIFIED",
                _ => "DELETED",
            });
        }
        assert_eq!(
            kinds,
            [
                "ADDED", "ADDED", "MODIFIED", "MODIFIED", "MODIFIED", "MODIFIED", "DELETED",
                "DELETED"
            ]
        );
    }
    // The values were built from the commits, not decoded.
    for (shape, rx) in &mut raw {
        assert_eq!(
            frames(rx, *shape, EVENTS).await,
            [true; EVENTS],
            "{shape:?}"
        );
    }
    assert_eq!(
        frames(&mut bytes_only, Decode::Full, EVENTS).await,
        [false; EVENTS]
    );
}

#[tokio::test]
async fn converted_versions_are_decoded_from_their_bytes() {
    let (server, api) = server().await;
    let v1 = ResourceRef::new("autoscaling", "v1", "horizontalpodautoscalers");
    let v2 = ResourceRef::new("autoscaling", "v2", "horizontalpodautoscalers");
    let mut through_v1 = raw_watch(&server, &v1, Some(Decode::WithoutManagedFields));
    let mut stored = raw_watch(&server, &v2, Some(Decode::WithoutManagedFields));
    settle().await;
    let hpa = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "h"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50}});
    api.create(&v1, "default", hpa, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(
        frames(&mut through_v1, Decode::WithoutManagedFields, 1).await,
        [false]
    );
    assert_eq!(
        frames(&mut stored, Decode::WithoutManagedFields, 1).await,
        [true]
    );
}
