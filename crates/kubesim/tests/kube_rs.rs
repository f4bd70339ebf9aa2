//! End-to-end: kube-rs against `kubesim up`, and durability across `kill -9`
//! (through kube-rs and through plain HTTP requests).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use common::Kubesim;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client, Config, ResourceExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Upper bound for any single wait in these tests.
const WAIT: Duration = Duration::from_secs(30);

async fn client(server: &Kubesim) -> Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("read kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config from kubeconfig");
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        server.url()
    );
    Client::try_from(config).expect("client")
}

async fn create_namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

fn configmap(name: &str, labels: serde_json::Value, data: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "data": data,
    }))
    .unwrap()
}

fn api_status(err: kube::Error) -> u16 {
    match err {
        kube::Error::Api(s) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn data(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default()
}

#[tokio::test]
async fn configmap_crud_and_patches() {
    let server = Kubesim::start_ephemeral("kube-crud");
    let client = client(&server).await;
    create_namespace(&client, "crud").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "crud");

    // create / get
    let created = api
        .create(
            &PostParams::default(),
            &configmap("one", json!({"app": "demo"}), json!({"a": "1"})),
        )
        .await
        .unwrap();
    assert_eq!(created.name_any(), "one");
    assert_eq!(created.namespace().as_deref(), Some("crud"));
    let rv1 = created.resource_version().expect("resourceVersion");
    assert!(created.uid().is_some());
    let got = api.get("one").await.unwrap();
    assert_eq!(got.resource_version().as_deref(), Some(rv1.as_str()));
    assert_eq!(data(&got), BTreeMap::from([("a".into(), "1".into())]));
    assert_eq!(
        api_status(
            api.create(
                &PostParams::default(),
                &configmap("one", json!({}), json!({}))
            )
            .await
            .unwrap_err()
        ),
        409
    );

    // list with and without a selector
    api.create(
        &PostParams::default(),
        &configmap("two", json!({"app": "other"}), json!({})),
    )
    .await
    .unwrap();
    let all = api.list(&ListParams::default()).await.unwrap();
    let mut names: Vec<_> = all.items.iter().map(|c| c.name_any()).collect();
    names.sort();
    assert_eq!(names, ["one", "two"]);
    assert!(all.metadata.resource_version.is_some());

    // JSON merge patch: adds a key, removes one with null
    let merged = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"b": "2"}, "metadata": {"labels": {"merged": "yes"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        data(&merged),
        BTreeMap::from([("a".into(), "1".into()), ("b".into(), "2".into())])
    );
    assert_eq!(
        merged.labels().get("merged").map(String::as_str),
        Some("yes")
    );
    assert_ne!(merged.resource_version(), Some(rv1.clone()));
    let merged = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"a": null}})),
        )
        .await
        .unwrap();
    assert_eq!(data(&merged), BTreeMap::from([("b".into(), "2".into())]));

    // server-side apply with a field manager
    let applied = api
        .patch(
            "one",
            &PatchParams::apply("kubesim-e2e"),
            &Patch::Apply(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "one", "labels": {"applied": "true"}},
                "data": {"c": "3"},
            })),
        )
        .await
        .unwrap();
    let d = data(&applied);
    assert_eq!(d.get("c").map(String::as_str), Some("3"));
    assert_eq!(
        d.get("b").map(String::as_str),
        Some("2"),
        "apply keeps fields owned by other managers"
    );
    assert_eq!(
        applied.labels().get("applied").map(String::as_str),
        Some("true")
    );

    // apply creates when the object does not exist
    let fresh = api
        .patch(
            "three",
            &PatchParams::apply("kubesim-e2e"),
            &Patch::Apply(json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "three"},
                "data": {"x": "y"},
            })),
        )
        .await
        .unwrap();
    assert_eq!(data(&fresh), BTreeMap::from([("x".into(), "y".into())]));

    // strategic merge patch
    let strategic = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"d": "4"}, "metadata": {"labels": {"app": null}}})),
        )
        .await
        .unwrap();
    let d = data(&strategic);
    assert_eq!(d.get("d").map(String::as_str), Some("4"));
    assert_eq!(d.get("c").map(String::as_str), Some("3"));
    assert!(!strategic.labels().contains_key("app"));
    let got = api.get("one").await.unwrap();
    assert_eq!(got.resource_version(), strategic.resource_version());
    assert_eq!(data(&got), d);

    // delete
    api.delete("one", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_status(api.get("one").await.unwrap_err()), 404);
    assert_eq!(
        api_status(
            api.delete("one", &DeleteParams::default())
                .await
                .unwrap_err()
        ),
        404
    );
    let mut left: Vec<_> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    left.sort();
    assert_eq!(left, ["three", "two"]);
}

#[tokio::test]
async fn configmap_list_with_label_selector() {
    let server = Kubesim::start_ephemeral("kube-labels");
    let client = client(&server).await;
    create_namespace(&client, "labels").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "labels");
    for (name, app) in [("one", "demo"), ("two", "other"), ("three", "demo")] {
        api.create(
            &PostParams::default(),
            &configmap(name, json!({"app": app}), json!({})),
        )
        .await
        .unwrap();
    }
    let names = |list: kube::core::ObjectList<ConfigMap>| {
        let mut n: Vec<_> = list.items.iter().map(|c| c.name_any()).collect();
        n.sort();
        n
    };
    let demo = api
        .list(&ListParams::default().labels("app=demo"))
        .await
        .unwrap();
    assert_eq!(names(demo), ["one", "three"]);
    let not_demo = api
        .list(&ListParams::default().labels("app!=demo"))
        .await
        .unwrap();
    assert_eq!(names(not_demo), ["two"]);
    let by_field = api
        .list(&ListParams::default().fields("metadata.name=two"))
        .await
        .unwrap();
    assert_eq!(names(by_field), ["two"]);
}

#[tokio::test]
async fn server_side_apply_records_field_manager() {
    let server = Kubesim::start_ephemeral("kube-ssa");
    let client = client(&server).await;
    create_namespace(&client, "ssa").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "ssa");
    let apply = |data: serde_json::Value| {
        Patch::Apply(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "cfg"},
            "data": data,
        }))
    };
    let params = PatchParams::apply("kubesim-e2e");
    // First apply creates the object, the second one updates it.
    for data in [json!({"a": "1"}), json!({"a": "1", "b": "2"})] {
        let applied = api.patch("cfg", &params, &apply(data)).await.unwrap();
        let mine: Vec<_> = applied
            .managed_fields()
            .iter()
            .filter(|m| m.manager.as_deref() == Some("kubesim-e2e"))
            .collect();
        assert_eq!(
            mine.len(),
            1,
            "managedFields: {:?}",
            applied.managed_fields()
        );
        assert_eq!(
            mine[0].operation.as_deref(),
            Some("Apply"),
            "managedFields: {:?}",
            applied.managed_fields()
        );
    }
}

/// Keeps the watcher's view of the world: name -> resourceVersion.
#[derive(Default)]
struct View {
    objects: HashMap<String, String>,
    relisting: Option<HashMap<String, String>>,
    log: Vec<String>,
}

impl View {
    fn apply(&mut self, ev: &Result<Event<ConfigMap>, watcher::Error>) {
        match ev {
            Err(e) => self.log.push(format!("error: {e}")),
            Ok(Event::Init) => {
                self.log.push("Init".into());
                self.relisting = Some(HashMap::new());
            }
            Ok(Event::InitApply(o)) => {
                self.log.push(format!(
                    "InitApply {} {:?}",
                    o.name_any(),
                    o.resource_version()
                ));
                if let Some(r) = self.relisting.as_mut() {
                    r.insert(o.name_any(), o.resource_version().unwrap_or_default());
                }
            }
            Ok(Event::InitDone) => {
                self.log.push("InitDone".into());
                if let Some(r) = self.relisting.take() {
                    self.objects = r;
                }
            }
            Ok(Event::Apply(o)) => {
                self.log
                    .push(format!("Apply {} {:?}", o.name_any(), o.resource_version()));
                self.objects
                    .insert(o.name_any(), o.resource_version().unwrap_or_default());
            }
            Ok(Event::Delete(o)) => {
                self.log.push(format!("Delete {}", o.name_any()));
                self.objects.remove(&o.name_any());
            }
        }
    }

    /// Consumes events until `done` holds for the view.
    async fn wait_until(
        &mut self,
        rx: &mut mpsc::UnboundedReceiver<Result<Event<ConfigMap>, watcher::Error>>,
        what: &str,
        done: impl Fn(&View) -> bool,
    ) {
        let deadline = tokio::time::Instant::now() + WAIT;
        while !done(self) {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(ev)) => self.apply(&ev),
                Ok(None) => panic!("watcher ended while waiting for {what}: {:#?}", self.log),
                Err(_) => panic!("timed out waiting for {what}: {:#?}", self.log),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_survives_kill_and_restart() {
    let mut server = Kubesim::start("kube-watch");
    let client = client(&server).await;
    create_namespace(&client, "watched").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "watched");

    let (tx, mut rx) = mpsc::unbounded_channel();
    let stream = watcher::watcher(api.clone(), watcher::Config::default()).default_backoff();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if tx.send(ev).is_err() {
                break;
            }
        }
    });

    let mut view = View::default();
    view.wait_until(&mut rx, "the initial list", |v| {
        v.log.iter().any(|l| l == "InitDone")
    })
    .await;
    assert!(view.objects.is_empty(), "{:?}", view.objects);

    let first = api
        .create(
            &PostParams::default(),
            &configmap("first", json!({}), json!({"n": "1"})),
        )
        .await
        .unwrap();
    let first_rv = first.resource_version().unwrap();
    view.wait_until(&mut rx, "first", |v| v.objects.contains_key("first"))
        .await;
    assert_eq!(view.objects["first"], first_rv);

    tokio::task::block_in_place(|| server.restart());

    // The first request after the restart may meet a pooled connection the
    // kill closed; only transport errors are retried.
    let mut attempt = 0;
    let second = loop {
        attempt += 1;
        match api
            .create(
                &PostParams::default(),
                &configmap("second", json!({}), json!({"n": "2"})),
            )
            .await
        {
            Ok(cm) => break cm,
            Err(kube::Error::Api(s)) => panic!("create after restart: {s:?}"),
            Err(e) if attempt < 5 => {
                eprintln!("retrying create after restart: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("create after restart: {e}"),
        }
    };
    let second_rv = second.resource_version().unwrap();
    assert_ne!(second_rv, first_rv);
    view.wait_until(&mut rx, "second after the restart", |v| {
        v.objects.get("second") == Some(&second_rv)
    })
    .await;
    assert_eq!(
        view.objects.get("first"),
        Some(&first_rv),
        "first kept its resourceVersion across kill -9: {:#?}",
        view.log
    );
    assert_eq!(view.objects.len(), 2, "{:?}", view.objects);

    let again = api.get("first").await.unwrap();
    assert_eq!(again.resource_version().as_deref(), Some(first_rv.as_str()));
    assert_eq!(again.uid(), first.uid());
    assert_eq!(data(&again), data(&first));

    task.abort();
}

/// Durability without any client library: plain HTTP requests, `kill -9`
/// right after the last acknowledged write, start again, compare.
#[test]
fn restart_keeps_objects_and_resource_versions() {
    let mut server = Kubesim::start("raw-restart");
    server.json(
        "POST",
        "/api/v1/namespaces",
        Some(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "keep"}})),
        201,
    );
    let mut paths = vec!["/api/v1/namespaces/keep".to_string()];
    for i in 0..5 {
        server.json(
            "POST",
            "/api/v1/namespaces/keep/configmaps",
            Some(&json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}"), "labels": {"i": i.to_string()}},
                "data": {"value": format!("v{i}")},
            })),
            201,
        );
        paths.push(format!("/api/v1/namespaces/keep/configmaps/cm-{i}"));
    }
    server.json(
        "POST",
        "/api/v1/namespaces/keep/secrets",
        Some(&json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s"}, "stringData": {"token": "abc"},
        })),
        201,
    );
    paths.push("/api/v1/namespaces/keep/secrets/s".into());
    server.json(
        "POST",
        "/api/v1/namespaces/keep/pods",
        Some(&json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            // No scheduler serves this name, so no one writes the pod after
            // its creation (the default scheduler would record that it is
            // unschedulable at some moment racing the snapshot below).
            "spec": {"schedulerName": "unserved", "containers": [{"name": "c", "image": "busybox"}]},
        })),
        201,
    );
    paths.push("/api/v1/namespaces/keep/pods/p".into());
    // An update and a delete must survive too.
    server.json(
        "PUT",
        "/api/v1/namespaces/keep/configmaps/cm-0",
        Some(&json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm-0", "labels": {"i": "0"}},
            "data": {"value": "updated"},
        })),
        200,
    );
    server.json(
        "DELETE",
        "/api/v1/namespaces/keep/configmaps/cm-4",
        None,
        200,
    );
    paths.retain(|p| !p.ends_with("/cm-4"));

    let lists = [
        "/api/v1/namespaces/keep/configmaps",
        "/api/v1/namespaces/keep/secrets",
        "/api/v1/namespaces/keep/pods",
    ];
    let before_objects: Vec<_> = paths
        .iter()
        .map(|p| server.json("GET", p, None, 200))
        .collect();
    let before_lists: Vec<_> = lists
        .iter()
        .map(|p| server.json("GET", p, None, 200))
        .collect();

    server.restart();

    for (path, before) in paths.iter().zip(&before_objects) {
        let after = server.json("GET", path, None, 200);
        assert_eq!(
            after["metadata"]["resourceVersion"], before["metadata"]["resourceVersion"],
            "{path}"
        );
        assert_eq!(&after, before, "{path} changed across kill -9");
    }
    assert_eq!(
        server.json("GET", "/api/v1/namespaces/keep/configmaps/cm-0", None, 200)["data"]["value"],
        "updated"
    );
    let (status, body) = server.request("GET", "/api/v1/namespaces/keep/configmaps/cm-4", None);
    assert_eq!(status, 404, "deleted object came back: {body}");
    let mut last_rv = String::new();
    for (path, before) in lists.iter().zip(&before_lists) {
        let after = server.json("GET", path, None, 200);
        // A list's resourceVersion is the store's revision, which the
        // control plane may advance after the restart (the scheduler
        // retrying the pending pod); it must never go back.
        let rv = |l: &Value| -> u64 {
            l["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(
            rv(&after) >= rv(before),
            "list resourceVersion of {path} went back"
        );
        assert_eq!(after["items"], before["items"], "{path}");
        last_rv = after["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
    }

    // A write after the restart gets a new resourceVersion, never a reused one.
    let created = server.json(
        "POST",
        "/api/v1/namespaces/keep/configmaps",
        Some(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}})),
        201,
    );
    let new_rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let old_rvs: Vec<_> = before_objects
        .iter()
        .map(|o| {
            o["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(
        !old_rvs.contains(&new_rv) && new_rv != last_rv,
        "{new_rv} reused"
    );
    if let (Ok(n), Ok(l)) = (new_rv.parse::<u64>(), last_rv.parse::<u64>()) {
        assert!(n > l, "revision went backwards: {n} after {l}");
    }
}
