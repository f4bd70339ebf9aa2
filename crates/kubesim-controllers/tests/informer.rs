//! Informers and the event recorder against a real (in-memory) API server,
//! in simulated time.

use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{
    Api, Change, Clock, DeleteOptions, EventRecorder, EventStyle, EventType, Informers,
    ListOptions, ResourceRef, Shape, WriteOptions,
};
use parking_lot::Mutex;
use serde_json::{json, Value};

mod support;

async fn api() -> (Arc<dyn Api>, Clock) {
    let (api, clock, _) = support::server().await;
    (api, clock)
}

fn cm(name: &str, v: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": v}})
}

fn describe(c: &Change) -> String {
    let o = c.object();
    let v = o.pointer("/data/v").and_then(Value::as_str).unwrap_or("");
    match c {
        Change::Added(_) => format!("added {} {v}", meta::name(o)),
        Change::Modified { old, .. } => format!(
            "modified {} {}->{v}",
            meta::name(o),
            old.pointer("/data/v").and_then(Value::as_str).unwrap_or("")
        ),
        Change::Deleted(_) => format!("deleted {}", meta::name(o)),
    }
}

#[tokio::test(start_paused = true)]
async fn informer_lists_then_follows_changes() {
    let (api, clock) = api().await;
    let r = ResourceRef::core("configmaps");
    let w = WriteOptions::default();
    for i in 0..3 {
        api.create(&r, "default", cm(&format!("c{i}"), "1"), &w)
            .await
            .unwrap();
    }
    let informers = Informers::new(api.clone(), clock.clone());
    let inf = informers.get(&r);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let deleted_at = Arc::new(Mutex::new(Vec::new()));
    let d = deleted_at.clone();
    inf.on_change(move |c| {
        if meta::namespace(c.object()) == "default" {
            s.lock().push(describe(c));
            if let Change::Deleted(o) = c {
                d.lock().push(meta::resource_version(o).to_string());
            }
        }
    });
    let running = tokio::spawn({
        let informers = informers.clone();
        async move { informers.run().await }
    });
    informers.wait_synced().await;
    assert_eq!(inf.cache().list_namespace("default").len(), 3);

    let mut c1 = api.get(&r, "default", "c1").await.unwrap();
    c1["data"]["v"] = json!("2");
    api.update(&r, "default", c1, None, &w).await.unwrap();
    let c2 = api.get(&r, "default", "c2").await.unwrap();
    api.delete(&r, "default", "c2", &DeleteOptions::default())
        .await
        .unwrap();
    let c3 = api.create(&r, "default", cm("c3", "1"), &w).await.unwrap();
    clock.sleep(Duration::from_millis(100)).await;
    // A deletion is reported with the final state its event carries, at
    // the deletion's revision (the write just before c3's), as client-go
    // reports it, not with the state last cached.
    let rv = |o: &Value| meta::resource_version(o).parse::<u64>().unwrap();
    assert!(rv(&c2) < rv(&c3) - 1);
    assert_eq!(*deleted_at.lock(), [(rv(&c3) - 1).to_string()]);

    assert_eq!(
        *seen.lock(),
        vec![
            "added c0 1",
            "added c1 1",
            "added c2 1",
            "modified c1 1->2",
            "deleted c2",
            "added c3 1"
        ]
    );
    let names: Vec<String> = inf
        .cache()
        .list_namespace("default")
        .iter()
        .map(|o| meta::name(o).to_string())
        .collect();
    assert_eq!(names, ["c0", "c1", "c3"]);
    // A handler registered late is told of what is already there.
    let late = Arc::new(Mutex::new(0));
    let l = late.clone();
    inf.on_change(move |c| {
        if meta::namespace(c.object()) == "default" {
            *l.lock() += 1
        }
    });
    assert_eq!(*late.lock(), 3);
    running.abort();
}

#[tokio::test(start_paused = true)]
async fn recorder_aggregates_repeated_events() {
    let (api, clock) = api().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1"}});
    let (rec, writer) = EventRecorder::new(api.clone(), clock.clone(), "default-scheduler");
    let writer = tokio::spawn(writer);
    rec.record(
        &pod,
        EventType::Warning,
        "FailedScheduling",
        "0/1 nodes are available",
    );
    clock.sleep(Duration::from_secs(5)).await;
    rec.record(
        &pod,
        EventType::Warning,
        "FailedScheduling",
        "0/1 nodes are available",
    );
    rec.record(
        &pod,
        EventType::Normal,
        "Scheduled",
        "Successfully assigned default/p to n1",
    );
    clock.sleep(Duration::from_millis(100)).await;
    let list = events(&api).await;
    let mut got: Vec<(String, i64, String, String)> = list
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap().to_string(),
                e["count"].as_i64().unwrap(),
                e["involvedObject"]["name"].as_str().unwrap().to_string(),
                e["source"]["component"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            (
                "FailedScheduling".into(),
                2,
                "p".into(),
                "default-scheduler".into()
            ),
            (
                "Scheduled".into(),
                1,
                "p".into(),
                "default-scheduler".into()
            ),
        ]
    );
    let failed = list
        .iter()
        .find(|e| e["reason"] == "FailedScheduling")
        .unwrap();
    assert_eq!(failed["firstTimestamp"], "2026-01-01T00:00:00Z");
    assert_eq!(failed["lastTimestamp"], "2026-01-01T00:00:05Z");
    writer.abort();
}

/// Every stored event of the default namespace.
async fn events(api: &Arc<dyn Api>) -> Vec<Value> {
    let list = api
        .list(
            &ResourceRef::core("events"),
            "default",
            &ListOptions::default(),
        )
        .await
        .unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

/// (reason, count, series count) of every stored event, sorted.
async fn stored_events(api: &Arc<dyn Api>) -> Vec<(String, i64, i64)> {
    let mut got: Vec<(String, i64, i64)> = events(api)
        .await
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap().to_string(),
                e["count"].as_i64().unwrap_or(0),
                e["series"]["count"].as_i64().unwrap_or(0),
            )
        })
        .collect();
    got.sort();
    got
}

/// The events.k8s.io recorder kube-scheduler uses, its writer running.
fn scheduler_recorder(
    api: &Arc<dyn Api>,
    clock: &Clock,
) -> (EventRecorder, tokio::task::JoinHandle<()>) {
    let (rec, writer) = EventRecorder::with_style(
        api.clone(),
        clock.clone(),
        "default-scheduler",
        EventStyle::Series,
    );
    (rec, tokio::spawn(writer))
}

#[tokio::test(start_paused = true)]
async fn series_recorder_writes_repeats_in_batches() {
    let (api, clock) = api().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1"}});
    let (rec, writer) = scheduler_recorder(&api, &clock);
    let fail = || {
        rec.record(
            &pod,
            EventType::Warning,
            "FailedScheduling",
            "0/1 nodes are available",
        )
    };
    // Ten attempts a minute apart: the event is created, updated once for
    // the first repeat, and the other eight are only counted.
    for _ in 0..10 {
        fail();
        clock.sleep(Duration::from_secs(60)).await;
    }
    assert_eq!(
        stored_events(&api).await,
        vec![("FailedScheduling".into(), 2, 2)]
    );
    // Quiet for six minutes: the series is written a last time.
    clock.sleep(Duration::from_secs(6 * 60)).await;
    assert_eq!(
        stored_events(&api).await,
        vec![("FailedScheduling".into(), 10, 10)]
    );
    // A series observed without a break is written every 30 minutes.
    let other = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "q", "namespace": "default", "uid": "u2"}});
    for _ in 0..33 {
        rec.record(&other, EventType::Warning, "Unhealthy", "probe failed");
        clock.sleep(Duration::from_secs(60)).await;
    }
    let events = stored_events(&api).await;
    let (_, count, series) = events.iter().find(|e| e.0 == "Unhealthy").unwrap();
    assert!((30..=33).contains(count) && count == series, "{events:?}");
    // A later repeat of the finished series starts a new event.
    fail();
    clock.sleep(Duration::from_millis(100)).await;
    assert_eq!(
        stored_events(&api).await,
        vec![
            ("FailedScheduling".into(), 1, 0),
            ("FailedScheduling".into(), 10, 10),
            ("Unhealthy".into(), *count, *series),
        ]
    );
    writer.abort();
}

/// A pod named `p{i}`.
fn numbered_pod(i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p{i}"), "namespace": "default", "uid": format!("u{i}")}})
}

#[tokio::test(start_paused = true)]
async fn series_recorder_remembers_every_pod_that_keeps_failing() {
    // More pods than the core/v1 recorder's 4096 remembered events fail
    // in turn, a minute apart: each keeps one event, created at its first
    // failure, updated at its second and counted after, as upstream's
    // events.k8s.io recorder keeps every series until it is quiet.
    let (api, clock) = api().await;
    let (rec, writer) = scheduler_recorder(&api, &clock);
    let pods: Vec<Value> = (0..4200).map(numbered_pod).collect();
    for _ in 0..3 {
        for pod in &pods {
            rec.record(
                pod,
                EventType::Warning,
                "FailedScheduling",
                "0/1 nodes are available",
            );
        }
        clock.sleep(Duration::from_secs(60)).await;
    }
    let got = stored_events(&api).await;
    assert_eq!(got.len(), 4200, "one event per pod");
    assert!(got.iter().all(|e| e.1 == 2 && e.2 == 2), "{:?}", &got[..3]);
    // Quiet for six minutes: every series is written a last time and
    // forgotten, so a later failure starts a new event.
    clock.sleep(Duration::from_secs(6 * 60)).await;
    let got = stored_events(&api).await;
    assert!(got.iter().all(|e| e.1 == 3 && e.2 == 3), "{:?}", &got[..3]);
    rec.record(
        &pods[0],
        EventType::Warning,
        "FailedScheduling",
        "0/1 nodes are available",
    );
    clock.sleep(Duration::from_millis(100)).await;
    assert_eq!(stored_events(&api).await.len(), 4201);
    writer.abort();
}

#[tokio::test(start_paused = true)]
async fn legacy_recorder_forgets_the_least_recently_seen() {
    // Pod 0's event repeats while 4096 other pods get one each: it is the
    // most recently seen, not the oldest, so its third repeat still
    // raises its count; pod 1's, seen once and long ago, was forgotten.
    let (api, clock) = api().await;
    let (rec, writer) = EventRecorder::new(api.clone(), clock.clone(), "kubelet");
    let writer = tokio::spawn(writer);
    let backoff = |pod: &Value| rec.record(pod, EventType::Warning, "BackOff", "Back-off");
    let first = numbered_pod(0);
    backoff(&first);
    backoff(&numbered_pod(1));
    clock.sleep(Duration::from_millis(100)).await;
    for i in 2..4098 {
        if i == 2000 {
            backoff(&first);
        }
        backoff(&numbered_pod(i));
    }
    clock.sleep(Duration::from_millis(100)).await;
    backoff(&first);
    backoff(&numbered_pod(1));
    clock.sleep(Duration::from_millis(100)).await;
    let got = stored_events(&api).await;
    assert_eq!(got.len(), 4099, "pod 1 got a second event, pod 0 none");
    assert_eq!(got.iter().filter(|e| e.1 == 3).count(), 1);
    writer.abort();
}

#[tokio::test(start_paused = true)]
async fn legacy_recorder_drops_spam() {
    let (api, clock) = api().await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u1"}});
    let (rec, writer) = EventRecorder::new(api.clone(), clock.clone(), "kubelet");
    let writer = tokio::spawn(writer);
    // Forty repeats at once: the object's budget of 25 is written, the
    // rest dropped; five minutes later there is room for one more.
    for _ in 0..40 {
        rec.record(&pod, EventType::Warning, "BackOff", "Back-off restarting");
    }
    clock.sleep(Duration::from_millis(100)).await;
    assert_eq!(stored_events(&api).await, vec![("BackOff".into(), 25, 0)]);
    clock.sleep(Duration::from_secs(300)).await;
    rec.record(&pod, EventType::Warning, "BackOff", "Back-off restarting");
    clock.sleep(Duration::from_millis(100)).await;
    assert_eq!(stored_events(&api).await, vec![("BackOff".into(), 26, 0)]);
    writer.abort();
}

#[tokio::test(start_paused = true)]
async fn a_running_full_informer_serves_narrower_shapes() {
    let (api, clock) = api().await;
    let cms = ResourceRef::core("configmaps");
    let secrets = ResourceRef::core("secrets");
    let informers = Informers::new(api.clone(), clock.clone());
    let full = informers.get(&cms);
    // The same informer, holding whole objects, for a narrower request.
    let narrow = informers.get_shaped(&cms, Shape::Ownership);
    assert!(Arc::ptr_eq(&full, &narrow));
    assert!(Arc::ptr_eq(&full, &informers.get_metadata(&cms)));
    // Without a full one, a narrow request gets its own narrow informer,
    // and a later full request cannot be served by it.
    let meta_only = informers.get_metadata(&secrets);
    let whole = informers.get(&secrets);
    assert!(!Arc::ptr_eq(&meta_only, &whole));
    api.create(&cms, "default", cm("c", "1"), &WriteOptions::default())
        .await
        .unwrap();
    let running = tokio::spawn({
        let informers = informers.clone();
        async move { informers.run().await }
    });
    informers.wait_synced().await;
    let cached = narrow.cache().get("default", "c").expect("cached");
    assert_eq!(cached.pointer("/data/v"), Some(&json!("1")));
    running.abort();
}
