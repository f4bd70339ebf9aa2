//! The remote `Api` against `kubesim up`: every verb and option as the
//! Kubernetes API expects them, failures as the Status the server sent,
//! watches, discovery, many concurrent writers, and HTTPS with the CA and
//! bearer token of `--tls`.

mod common;

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::Kubesim;
use futures::StreamExt;
use kubesim_core::patch::PatchType;
use kubesim_core::ApiError;
use kubesim_runtime::{
    Api, Clock, DeleteOptions, FieldValidation, ListOptions, RemoteApi, ResourceRef, WatchEvent,
    WriteOptions,
};
use serde_json::{json, Value};

/// Upper bound for any single wait in these tests.
const WAIT: Duration = Duration::from_secs(30);

async fn connect(server: &Kubesim) -> RemoteApi {
    RemoteApi::from_kubeconfig(Some(&server.kubeconfig()))
        .await
        .expect("a RemoteApi from the server's kubeconfig")
}

fn configmaps() -> ResourceRef {
    ResourceRef::core("configmaps")
}

fn configmap(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}, "data": {"k": name}})
}

async fn create_namespace(api: &RemoteApi, name: &str) {
    api.create(
        &ResourceRef::core("namespaces"),
        "",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        &WriteOptions::default(),
    )
    .await
    .expect("create namespace");
}

/// What client-go's metadata client (the informers of
/// kube-controller-manager's garbage collector and quota controller) asks
/// for: lists, objects and watch events, bookmarks included, as
/// PartialObjectMetadata, which its watch decoder insists on.
#[test]
fn metadata_only_lists_gets_and_watches() {
    let server = Kubesim::start_ephemeral("metadata-only");
    let cm = configmap("m1", json!({"app": "x"}));
    server.json(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&cm),
        201,
    );
    let accept = |what: &str| {
        format!(
            "application/vnd.kubernetes.protobuf;as={what};g=meta.k8s.io;v=v1,\
             application/json;as={what};g=meta.k8s.io;v=v1,application/json"
        )
    };
    let get = |path: &str, what: &str| -> Value {
        let (code, body) =
            common::http_request_accepting(server.port(), "GET", path, &accept(what), None)
                .unwrap();
        assert_eq!(code, 200, "{path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"))
    };
    let partial = |o: &Value| {
        assert_eq!(o["kind"], "PartialObjectMetadata", "{o}");
        assert_eq!(o["apiVersion"], "meta.k8s.io/v1", "{o}");
        assert!(o.get("data").is_none(), "{o}");
    };

    let list = get(
        "/api/v1/namespaces/default/configmaps",
        "PartialObjectMetadataList",
    );
    assert_eq!(list["kind"], "PartialObjectMetadataList", "{list}");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1", "{list}");
    assert!(!rv(&list).is_empty(), "{list}");
    assert_eq!(names(&list), ["m1"]);
    partial(&list["items"][0]);
    assert_eq!(list["items"][0]["metadata"]["labels"]["app"], "x");

    let one = get(
        "/api/v1/namespaces/default/configmaps/m1",
        "PartialObjectMetadata",
    );
    partial(&one);
    assert_eq!(one["metadata"]["name"], "m1");

    let (code, body) = common::http_request_accepting(
        server.port(),
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true\
         &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1",
        &accept("PartialObjectMetadata"),
        None,
    )
    .unwrap();
    assert_eq!(code, 200, "{body}");
    let events: Vec<Value> = body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        events.iter().any(|e| e["type"] == "ADDED"),
        "no ADDED event: {body}"
    );
    assert!(
        events.iter().any(|e| e["type"] == "BOOKMARK"),
        "no BOOKMARK: {body}"
    );
    for e in &events {
        partial(&e["object"]);
    }
}

/// The ConfigMap that kube-apiserver writes at start, which
/// kube-controller-manager's legacy token cleaner reads.
#[test]
fn kube_system_records_since_when_legacy_tokens_are_tracked() {
    let server = Kubesim::start_ephemeral("legacy-token-tracking");
    let cm = server.json(
        "GET",
        "/api/v1/namespaces/kube-system/configmaps/kube-apiserver-legacy-service-account-token-tracking",
        None,
        200,
    );
    let since = cm["data"]["since"].as_str().unwrap_or("");
    // A date: 2006-01-02.
    let b = since.as_bytes();
    assert!(
        b.len() == 10
            && b[4] == b'-'
            && b[7] == b'-'
            && since.replace('-', "").bytes().all(|c| c.is_ascii_digit()),
        "{cm}"
    );
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("a list has items")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string()
}

fn expect_err(r: Result<Value, ApiError>, code: u16, reason: &str) -> ApiError {
    let e = r.expect_err("the request should fail");
    assert_eq!((e.code, e.reason.as_str()), (code, reason), "{e:?}");
    e
}

/// Polls `check` until it returns Some, WAIT at most.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let clock = Clock::wall();
    for _ in 0..300 {
        if let Some(v) = check().await {
            return v;
        }
        clock.sleep(WAIT / 300).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn crud_paging_and_errors() {
    let server = Kubesim::start_ephemeral("remote-crud");
    let api = connect(&server).await;
    let cm = configmaps();
    let ns = "remote";
    create_namespace(&api, ns).await;
    let none = WriteOptions::default();

    for i in 0..5 {
        let tier = if i % 2 == 0 { "a" } else { "b" };
        let created = api
            .create(
                &cm,
                ns,
                configmap(&format!("c{i}"), json!({"tier": tier})),
                &none,
            )
            .await
            .expect("create");
        assert!(created["metadata"]["uid"].is_string(), "{created}");
    }
    let got = api.get(&cm, ns, "c1").await.expect("get");
    assert_eq!(got["data"]["k"], "c1");
    assert_eq!(got["metadata"]["labels"]["tier"], "b");

    let list = |opts: ListOptions| {
        let (api, cm) = (&api, &cm);
        async move { api.list(cm, ns, &opts).await.expect("list") }
    };
    let a = list(ListOptions {
        label_selector: Some("tier=a".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(names(&a), ["c0", "c2", "c4"]);
    let one = list(ListOptions {
        field_selector: Some("metadata.name=c3".into()),
        ..Default::default()
    })
    .await;
    assert_eq!(names(&one), ["c3"]);

    // Pages of two, followed through their continue tokens.
    let mut seen = Vec::new();
    let mut token = None;
    let mut pages = 0;
    loop {
        let page = list(ListOptions {
            label_selector: Some("tier in (a,b)".into()),
            limit: Some(2),
            continue_token: token.clone(),
            ..Default::default()
        })
        .await;
        pages += 1;
        assert!(names(&page).len() <= 2, "{page}");
        seen.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => token = Some(t.to_string()),
            _ => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ["c0", "c1", "c2", "c3", "c4"]);

    // Update, then again from the stale copy.
    let mut fresh = got.clone();
    fresh["data"]["k"] = json!("updated");
    let updated = api
        .update(&cm, ns, fresh, None, &none)
        .await
        .expect("update");
    assert_eq!(updated["data"]["k"], "updated");
    assert_ne!(rv(&updated), rv(&got));
    let mut stale = got.clone();
    stale["data"]["k"] = json!("stale");
    let e = expect_err(
        api.update(&cm, ns, stale, None, &none).await,
        409,
        "Conflict",
    );
    assert!(e.message.contains("the object has been modified"), "{e:?}");

    // A dry run answers with the object but stores nothing.
    let dry = WriteOptions {
        dry_run: true,
        ..Default::default()
    };
    let would = api
        .create(&cm, ns, configmap("dry", json!({})), &dry)
        .await
        .expect("dry-run create");
    assert_eq!(would["metadata"]["name"], "dry");
    let e = expect_err(api.get(&cm, ns, "dry").await, 404, "NotFound");
    assert_eq!(e.message, "configmaps \"dry\" not found");
    let d = e.details.expect("details");
    assert_eq!((d.name.as_str(), d.kind.as_str()), ("dry", "configmaps"));
    expect_err(
        api.create(&cm, ns, configmap("c1", json!({})), &none).await,
        409,
        "AlreadyExists",
    );

    // 422 with its causes.
    let e = expect_err(
        api.create(&cm, ns, configmap("Not_Valid", json!({})), &none)
            .await,
        422,
        "Invalid",
    );
    let d = e.details.expect("details");
    assert_eq!(d.kind, "ConfigMap");
    assert!(d.causes.iter().any(|c| c.field == "metadata.name"), "{d:?}");

    // fieldValidation reaches the server.
    let mut extra = configmap("extra", json!({}));
    extra["bogus"] = json!(1);
    let strict = WriteOptions {
        field_validation: Some(FieldValidation::Strict),
        ..Default::default()
    };
    let e = expect_err(
        api.create(&cm, ns, extra.clone(), &strict).await,
        400,
        "BadRequest",
    );
    assert!(e.message.contains("unknown field \"bogus\""), "{e:?}");
    let ignore = WriteOptions {
        field_validation: Some(FieldValidation::Ignore),
        ..Default::default()
    };
    api.create(&cm, ns, extra, &ignore)
        .await
        .expect("unknown fields ignored");

    // A namespaced kind asked for cluster-wide by name has no path.
    expect_err(api.get(&cm, "", "c1").await, 404, "NotFound");
    expect_err(
        api.get(&ResourceRef::core("nosuchthings"), ns, "x").await,
        404,
        "NotFound",
    );
}

#[tokio::test]
async fn patches_and_deletes() {
    let server = Kubesim::start_ephemeral("remote-patch");
    let api = connect(&server).await;
    let cm = configmaps();
    let ns = "patches";
    create_namespace(&api, ns).await;
    let none = WriteOptions::default();
    api.create(&cm, ns, configmap("p", json!({"a": "1"})), &none)
        .await
        .expect("create");

    let merged = api
        .patch(
            &cm,
            ns,
            "p",
            PatchType::Merge,
            br#"{"metadata":{"labels":{"a":null,"b":"2"}}}"#.to_vec(),
            None,
            &none,
        )
        .await
        .expect("merge patch");
    assert_eq!(merged["metadata"]["labels"], json!({"b": "2"}));
    let patched = api
        .patch(
            &cm,
            ns,
            "p",
            PatchType::Json,
            br#"[{"op":"add","path":"/data/j","value":"x"}]"#.to_vec(),
            None,
            &none,
        )
        .await
        .expect("json patch");
    assert_eq!(patched["data"], json!({"k": "p", "j": "x"}));

    // Strategic merge joins containers by name, where a merge patch replaces.
    let deploys = ResourceRef::new("apps", "v1", "deployments");
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "a", "image": "nginx"}]}}}});
    api.create(&deploys, ns, deploy, &none)
        .await
        .expect("create deployment");
    let containers = |d: &Value| -> Vec<String> {
        d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let body = br#"{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"busybox"}]}}}}"#;
    let strategic = api
        .patch(
            &deploys,
            ns,
            "web",
            PatchType::Strategic,
            body.to_vec(),
            None,
            &none,
        )
        .await
        .expect("strategic patch");
    assert_eq!(containers(&strategic), ["a", "b"]);
    let merge = api
        .patch(
            &deploys,
            ns,
            "web",
            PatchType::Merge,
            body.to_vec(),
            None,
            &none,
        )
        .await
        .expect("merge patch");
    assert_eq!(containers(&merge), ["b"]);
    // The status subresource takes a patch of its own.
    let status = api
        .patch(
            &deploys,
            ns,
            "web",
            PatchType::Merge,
            br#"{"status":{"observedGeneration":1}}"#.to_vec(),
            Some("status"),
            &none,
        )
        .await
        .expect("status patch");
    assert_eq!(status["status"]["observedGeneration"], 1);

    // Server-side apply: managers, conflicts, force.
    let manifest = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: {value}\n"
        )
        .into_bytes()
    };
    let as_manager = |m: &str, force: bool| WriteOptions {
        field_manager: Some(m.into()),
        force,
        ..Default::default()
    };
    let applied = api
        .patch(
            &cm,
            ns,
            "applied",
            PatchType::Apply,
            manifest("v1"),
            None,
            &as_manager("alice", false),
        )
        .await
        .expect("apply creates");
    assert_eq!(applied["data"]["k"], "v1");
    let managers: Vec<&str> = applied["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["alice"]);
    let e = expect_err(
        api.patch(
            &cm,
            ns,
            "applied",
            PatchType::Apply,
            manifest("v2"),
            None,
            &as_manager("bob", false),
        )
        .await,
        409,
        "Conflict",
    );
    assert!(
        e.details
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "FieldManagerConflict")),
        "conflict causes"
    );
    let forced = api
        .patch(
            &cm,
            ns,
            "applied",
            PatchType::Apply,
            manifest("v2"),
            None,
            &as_manager("bob", true),
        )
        .await
        .expect("forced apply");
    assert_eq!(forced["data"]["k"], "v2");

    // Deletes: preconditions, dry run, then the propagation policies.
    let owner = |name: &str| {
        let api = &api;
        let cm = &cm;
        let name = name.to_string();
        async move {
            let o = api
                .create(
                    cm,
                    ns,
                    configmap(&name, json!({})),
                    &WriteOptions::default(),
                )
                .await
                .expect("owner");
            let mut dep = configmap(&format!("{name}-dep"), json!({}));
            dep["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
                "name": name, "uid": o["metadata"]["uid"]}]);
            api.create(cm, ns, dep, &WriteOptions::default())
                .await
                .expect("dependent");
            o
        }
    };
    let fg = owner("fg").await;
    let e = expect_err(
        api.delete(
            &cm,
            ns,
            "fg",
            &DeleteOptions {
                precondition_uid: Some("not-the-uid".into()),
                ..Default::default()
            },
        )
        .await,
        409,
        "Conflict",
    );
    assert!(e.message.contains("Precondition failed"), "{e:?}");
    api.delete(
        &cm,
        ns,
        "fg",
        &DeleteOptions {
            dry_run: true,
            ..Default::default()
        },
    )
    .await
    .expect("dry-run delete");
    api.get(&cm, ns, "fg").await.expect("still there");
    let deleting = api
        .delete(
            &cm,
            ns,
            "fg",
            &DeleteOptions {
                propagation_policy: Some("Foreground".into()),
                precondition_uid: fg["metadata"]["uid"].as_str().map(String::from),
                precondition_resource_version: Some(rv(&fg)),
                ..Default::default()
            },
        )
        .await
        .expect("foreground delete");
    assert!(
        deleting["metadata"]["deletionTimestamp"].is_string(),
        "{deleting}"
    );
    assert_eq!(
        deleting["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    eventually("the foreground deletion to finish", || async {
        let owner = api.get(&cm, ns, "fg").await;
        let dep = api.get(&cm, ns, "fg-dep").await;
        (matches!(owner, Err(ref e) if e.code == 404) && matches!(dep, Err(ref e) if e.code == 404))
            .then_some(())
    })
    .await;

    owner("orphaner").await;
    api.delete(
        &cm,
        ns,
        "orphaner",
        &DeleteOptions {
            propagation_policy: Some("Orphan".into()),
            grace_period_seconds: Some(0),
            ..Default::default()
        },
    )
    .await
    .expect("orphan delete");
    let dep = eventually("the owner to go and its dependent to stay", || async {
        let gone = matches!(api.get(&cm, ns, "orphaner").await, Err(ref e) if e.code == 404);
        let dep = api.get(&cm, ns, "orphaner-dep").await.ok()?;
        gone.then_some(dep)
    })
    .await;
    assert!(
        dep["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(|r| r.is_empty()),
        "{dep}"
    );
}

/// Events until the stream ends, WAIT at most.
async fn drain(stream: futures::stream::BoxStream<'static, WatchEvent>) -> Vec<WatchEvent> {
    Clock::wall()
        .timeout(WAIT, stream.collect::<Vec<_>>())
        .await
        .expect("the server ends the watch at its timeout")
}

#[tokio::test]
async fn watch_sees_changes_and_bookmarks() {
    let server = Kubesim::start_ephemeral("remote-watch");
    let api = connect(&server).await;
    let cm = configmaps();
    let ns = "watched";
    create_namespace(&api, ns).await;
    let none = WriteOptions::default();
    api.create(&cm, ns, configmap("before", json!({})), &none)
        .await
        .expect("create");
    let list = api
        .list(&cm, ns, &ListOptions::default())
        .await
        .expect("list");

    let stream = api
        .watch(
            &cm,
            ns,
            &ListOptions {
                resource_version: Some(rv(&list)),
                allow_bookmarks: true,
                timeout_seconds: Some(3),
                ..Default::default()
            },
        )
        .await
        .expect("watch");
    api.create(&cm, ns, configmap("w", json!({})), &none)
        .await
        .expect("create");
    api.patch(
        &cm,
        ns,
        "w",
        PatchType::Merge,
        br#"{"data":{"k":"changed"}}"#.to_vec(),
        None,
        &none,
    )
    .await
    .expect("patch");
    api.delete(&cm, ns, "w", &DeleteOptions::default())
        .await
        .expect("delete");
    let events = drain(stream).await;
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e {
            WatchEvent::Added(o) => format!("ADDED {}", o["metadata"]["name"].as_str().unwrap()),
            WatchEvent::Modified(o) => format!(
                "MODIFIED {} {}",
                o["metadata"]["name"].as_str().unwrap(),
                o["data"]["k"].as_str().unwrap()
            ),
            WatchEvent::Deleted(o) => {
                format!("DELETED {}", o["metadata"]["name"].as_str().unwrap())
            }
            WatchEvent::Bookmark(_) => "BOOKMARK".into(),
            WatchEvent::Error(e) => format!("ERROR {e}"),
        })
        .collect();
    assert_eq!(
        kinds,
        ["ADDED w", "MODIFIED w changed", "DELETED w", "BOOKMARK"],
        "{events:?}"
    );
    // The bookmark a watch ends with is at least the last change.
    let (Some(WatchEvent::Bookmark(at)), Some(WatchEvent::Deleted(last))) =
        (events.last(), events.get(2))
    else {
        unreachable!()
    };
    assert!(at.parse::<u64>().unwrap() >= rv(last).parse::<u64>().unwrap());

    // Streaming lists: the existing objects, then the bookmark that ends them.
    let initial = ListOptions {
        send_initial_events: Some(true),
        resource_version_match: Some("NotOlderThan".into()),
        allow_bookmarks: true,
        timeout_seconds: Some(1),
        ..Default::default()
    };
    let events = drain(api.watch(&cm, ns, &initial).await.expect("watch")).await;
    assert!(
        matches!(&events[0], WatchEvent::Added(o) if o["metadata"]["name"] == "before"),
        "{events:?}"
    );
    assert!(matches!(events[1], WatchEvent::Bookmark(_)), "{events:?}");

    // A watch the server refuses fails before any stream.
    let refused = api
        .watch(
            &cm,
            ns,
            &ListOptions {
                allow_bookmarks: false,
                ..initial
            },
        )
        .await;
    let e = refused.err().expect("refused");
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
}

#[tokio::test]
async fn text_paths_and_discovery() {
    let server = Kubesim::start_ephemeral("remote-discovery");
    let api = connect(&server).await;

    let metrics = api.get_text("/metrics").await.expect("metrics");
    assert!(metrics.contains("apiserver_request_total"), "{metrics}");
    let version: Value =
        serde_json::from_str(&api.get_text("/version").await.expect("version")).expect("JSON");
    assert!(version["gitVersion"].is_string(), "{version}");
    let e = api.get_text("/no/such/path").await.expect_err("404");
    assert_eq!(e.code, 404);

    let (r, namespaced) = api.resolve("apps/v1", "Deployment").await.expect("resolve");
    assert_eq!(r, ResourceRef::new("apps", "v1", "deployments"));
    assert!(namespaced);
    let (r, namespaced) = api.resolve("v1", "Node").await.expect("resolve");
    assert_eq!(r, ResourceRef::core("nodes"));
    assert!(!namespaced);
    for (version, kind) in [
        ("v1", "Nonsense"),
        ("example.com/v1", "Widget"),
        ("apps/v1", "Scale"),
    ] {
        let e = api.resolve(version, kind).await.expect_err("not served");
        assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"), "{e:?}");
        assert!(e.message.contains(kind), "{e:?}");
    }
    assert_eq!(api.resolve("a/b/c", "X").await.unwrap_err().code, 400);

    // Kinds served after the first look, in a new and then a known group-version.
    let crds = ResourceRef::new("apiextensions.k8s.io", "v1", "customresourcedefinitions");
    let crd = |plural: &str, kind: &str, scope: &str| {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "scope": scope,
                "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind,
                    "listKind": format!("{kind}List")},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}})
    };
    let none = WriteOptions::default();
    api.create(&crds, "", crd("widgets", "Widget", "Namespaced"), &none)
        .await
        .expect("create CRD");
    let (r, namespaced) = eventually("Widget to be served", || async {
        api.resolve("example.com/v1", "Widget").await.ok()
    })
    .await;
    assert_eq!(r, ResourceRef::new("example.com", "v1", "widgets"));
    assert!(namespaced);
    api.create(&crds, "", crd("gadgets", "Gadget", "Cluster"), &none)
        .await
        .expect("create CRD");
    let (r, namespaced) = eventually("Gadget to be served", || async {
        api.resolve("example.com/v1", "Gadget").await.ok()
    })
    .await;
    assert_eq!(r, ResourceRef::new("example.com", "v1", "gadgets"));
    assert!(!namespaced);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_writers_share_one_client() {
    let server = Kubesim::start_ephemeral("remote-load");
    let api = connect(&server).await;
    let ns = "load";
    create_namespace(&api, ns).await;
    const N: usize = 400;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..N {
        let api = api.clone();
        tasks.spawn(async move {
            api.create(
                &configmaps(),
                ns,
                configmap(&format!("load-{i}"), json!({"batch": "1"})),
                &WriteOptions::default(),
            )
            .await
        });
    }
    let mut created = BTreeSet::new();
    while let Some(r) = tasks.join_next().await {
        let obj = r.expect("task").expect("create");
        created.insert(obj["metadata"]["name"].as_str().unwrap().to_string());
    }
    assert_eq!(created.len(), N);
    let list = api
        .list(
            &configmaps(),
            ns,
            &ListOptions {
                label_selector: Some("batch=1".into()),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(names(&list).len(), N);
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("port")
        .port()
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubesim-remote-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[tokio::test]
async fn unreachable_server_is_503() {
    let dir = scratch_dir("unreachable");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n\
             users:\n- name: u\n  user: {{}}\n",
            free_port()
        ),
    )
    .expect("write kubeconfig");
    let api = RemoteApi::from_kubeconfig(Some(&kubeconfig))
        .await
        .expect("a client needs no connection yet");
    let e = api
        .get(&configmaps(), "default", "x")
        .await
        .expect_err("nothing listens");
    assert_eq!((e.code, e.reason.as_str()), (503, "ServiceUnavailable"));
    assert!(
        e.message
            .contains("/api/v1/namespaces/default/configmaps/x"),
        "{e:?}"
    );
    let e = api.get_text("/version").await.expect_err("nothing listens");
    assert_eq!(e.code, 503);

    let missing = RemoteApi::from_kubeconfig(Some(&dir.join("none"))).await;
    assert!(missing.is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `kubesim up --tls --ephemeral`, killed and cleaned up on drop; the
/// shared harness speaks plain HTTP only.
struct TlsServer {
    child: Child,
    dir: PathBuf,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn start_tls() -> (TlsServer, RemoteApi) {
    let dir = scratch_dir("tls");
    let log = std::fs::File::create(dir.join("server.log")).expect("log");
    let child = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args(["up", "--tls", "--ephemeral", "--listen"])
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--data-dir")
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("run kubesim");
    let mut server = TlsServer { child, dir };
    let kubeconfig = server.dir.join("kubeconfig");
    let clock = Clock::wall();
    for _ in 0..300 {
        if let Some(status) = server.child.try_wait().expect("child") {
            let log = std::fs::read_to_string(server.dir.join("server.log")).unwrap_or_default();
            panic!("kubesim exited with {status}:\n{log}");
        }
        if kubeconfig.exists() {
            if let Ok(api) = RemoteApi::from_kubeconfig(Some(&kubeconfig)).await {
                if api.get_text("/readyz").await.is_ok() {
                    return (server, api);
                }
            }
        }
        clock.sleep(Duration::from_millis(100)).await;
    }
    panic!("kubesim --tls not ready in time");
}

/// A copy of the server's kubeconfig with `edit` applied to its text.
fn variant(server: &TlsServer, name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(server.dir.join("kubeconfig")).expect("kubeconfig");
    let path = server.dir.join(name);
    std::fs::write(&path, edit(&text)).expect("write kubeconfig");
    path
}

#[tokio::test]
async fn https_with_ca_and_bearer_token() {
    let (server, api) = start_tls().await;
    let text = std::fs::read_to_string(server.dir.join("kubeconfig")).expect("kubeconfig");
    assert!(text.contains("server: https://127.0.0.1:"), "{text}");
    let list = api
        .list(
            &ResourceRef::core("namespaces"),
            "",
            &ListOptions::default(),
        )
        .await
        .expect("list over https");
    assert!(names(&list).contains(&"default".to_string()), "{list}");
    let created = api
        .create(
            &configmaps(),
            "default",
            configmap("secure", json!({})),
            &WriteOptions::default(),
        )
        .await
        .expect("create over https");
    assert_eq!(created["metadata"]["name"], "secure");

    // The token is what lets requests in.
    let token = std::fs::read_to_string(server.dir.join("pki").join("token")).expect("token");
    let bad = variant(&server, "kubeconfig-bad-token", |t| {
        t.replace(token.trim(), "not-the-token")
    });
    let bad = RemoteApi::from_kubeconfig(Some(&bad))
        .await
        .expect("client");
    let e = bad
        .list(
            &ResourceRef::core("namespaces"),
            "",
            &ListOptions::default(),
        )
        .await
        .expect_err("a wrong token is refused");
    assert_eq!((e.code, e.reason.as_str()), (401, "Unauthorized"), "{e:?}");

    // And the CA is what makes the server trusted.
    let no_ca = variant(&server, "kubeconfig-no-ca", |t| {
        t.lines()
            .filter(|l| !l.contains("certificate-authority-data"))
            .collect::<Vec<_>>()
            .join("\n")
    });
    let untrusting = RemoteApi::from_kubeconfig(Some(&no_ca))
        .await
        .expect("client");
    let e = untrusting
        .get_text("/version")
        .await
        .expect_err("the server's certificate is not trusted");
    assert_eq!(e.code, 503, "{e:?}");
    assert!(e.message.contains("certificate"), "{e:?}");
}
