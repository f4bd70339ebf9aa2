//! The controllers against a real (in-memory) API server.

use std::sync::Arc;
use std::time::Duration;

use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_core::meta;
use kubesim_runtime::{Api, Clock, DeleteOptions, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};

/// Polls at most this many times, `STEP` apart.
const TRIES: usize = 400;
const STEP: Duration = Duration::from_millis(25);

struct Env {
    api: Arc<dyn Api>,
    clock: Clock,
    controllers: tokio::task::JoinHandle<()>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.controllers.abort();
    }
}

async fn start() -> Env {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let server = Server::new(store, Clock::wall(), Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let clock = server.clock.clone();
    let registry = server.registry.clone();
    let api: Arc<dyn Api> = Arc::new(InProcess::new(server, "kube-controller-manager"));
    let controllers = tokio::spawn(kubesim_controllers::run_all(
        api.clone(),
        registry,
        clock.clone(),
        Some("test-ca".into()),
    ));
    Env {
        api,
        clock,
        controllers,
    }
}

fn cm() -> ResourceRef {
    ResourceRef::core("configmaps")
}

async fn create(env: &Env, r: &ResourceRef, ns: &str, obj: Value) -> Value {
    env.api
        .create(r, ns, obj, &WriteOptions::default())
        .await
        .expect("create")
}

async fn get(env: &Env, r: &ResourceRef, ns: &str, name: &str) -> Option<Value> {
    match env.api.get(r, ns, name).await {
        Ok(o) => Some(o),
        Err(e) if e.code == 404 => None,
        Err(e) => panic!("get {name}: {}", e.message),
    }
}

/// Polls until `cond` holds; fails the test after `TRIES` polls.
async fn eventually<F, Fut>(env: &Env, what: &str, cond: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..TRIES {
        if cond().await {
            return;
        }
        env.clock.sleep(STEP).await;
    }
    panic!("gave up waiting: {what}");
}

async fn delete(env: &Env, r: &ResourceRef, ns: &str, name: &str, policy: &str) {
    env.api
        .delete(
            r,
            ns,
            name,
            &DeleteOptions {
                propagation_policy: Some(policy.into()),
                ..Default::default()
            },
        )
        .await
        .expect("delete");
}

async fn owner_and_dependent(env: &Env, tag: &str, dep_finalizers: &[&str]) -> (String, String) {
    let owner = create(
        env,
        &cm(),
        "default",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("owner-{tag}")}}),
    )
    .await;
    let dep_name = format!("dep-{tag}");
    create(
        env,
        &cm(),
        "default",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": dep_name,
            "finalizers": dep_finalizers,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": meta::name(&owner),
                "uid": meta::uid(&owner), "blockOwnerDeletion": true,
            }],
        }}),
    )
    .await;
    (meta::name(&owner).to_string(), dep_name)
}

#[tokio::test]
async fn namespace_deletion_removes_content_then_namespace() {
    let env = start().await;
    let nsr = ResourceRef::core("namespaces");
    create(
        &env,
        &nsr,
        "",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}),
    )
    .await;
    create(
        &env,
        &cm(),
        "doomed",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}}),
    )
    .await;
    let pods = ResourceRef::core("pods");
    create(
        &env,
        &pods,
        "doomed",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .await;
    delete(&env, &nsr, "", "doomed", "Background").await;
    eventually(&env, "namespace gone", || async {
        get(&env, &nsr, "", "doomed").await.is_none()
    })
    .await;
    assert!(get(&env, &cm(), "doomed", "c").await.is_none());
    assert!(get(&env, &pods, "doomed", "p").await.is_none());
    // Other namespaces are untouched.
    assert!(get(&env, &nsr, "", "default").await.is_some());
}

#[tokio::test]
async fn background_deletion_collects_dependents() {
    let env = start().await;
    let (owner, dep) = owner_and_dependent(&env, "bg", &[]).await;
    delete(&env, &cm(), "default", &owner, "Background").await;
    eventually(&env, "dependent collected", || async {
        get(&env, &cm(), "default", &dep).await.is_none()
    })
    .await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_dependents() {
    let env = start().await;
    // The dependent's own finalizer holds it, so the owner must wait.
    let (owner, dep) = owner_and_dependent(&env, "fg", &["example.com/hold"]).await;
    delete(&env, &cm(), "default", &owner, "Foreground").await;
    eventually(&env, "dependent being deleted", || async {
        get(&env, &cm(), "default", &dep)
            .await
            .is_some_and(|d| meta::is_deleting(&d))
    })
    .await;
    // The owner is still there, held by foregroundDeletion, for several passes.
    for _ in 0..3 {
        let o = get(&env, &cm(), "default", &owner)
            .await
            .expect("owner stays while a blocking dependent exists");
        assert!(meta::finalizers(&o)
            .iter()
            .any(|f| f == "foregroundDeletion"));
        env.clock.sleep(Duration::from_millis(600)).await;
    }
    // Releasing the dependent lets both go.
    let mut d = get(&env, &cm(), "default", &dep).await.expect("dependent");
    d["metadata"]["finalizers"] = json!([]);
    env.api
        .update(&cm(), "default", d, None, &WriteOptions::default())
        .await
        .expect("release dependent");
    eventually(&env, "owner gone", || async {
        get(&env, &cm(), "default", &owner).await.is_none()
    })
    .await;
    assert!(get(&env, &cm(), "default", &dep).await.is_none());
}

#[tokio::test]
async fn orphan_deletion_keeps_dependents() {
    let env = start().await;
    let (owner, dep) = owner_and_dependent(&env, "or", &[]).await;
    delete(&env, &cm(), "default", &owner, "Orphan").await;
    eventually(&env, "owner gone", || async {
        get(&env, &cm(), "default", &owner).await.is_none()
    })
    .await;
    let d = get(&env, &cm(), "default", &dep)
        .await
        .expect("dependent survives");
    assert!(meta::path(&d, "metadata.ownerReferences").is_none());
    // Still there after further passes.
    env.clock.sleep(Duration::from_millis(1500)).await;
    assert!(get(&env, &cm(), "default", &dep).await.is_some());
}

#[tokio::test]
async fn namespaces_get_their_default_service_account_and_root_ca() {
    let env = start().await;
    let nsr = ResourceRef::core("namespaces");
    create(
        &env,
        &nsr,
        "",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}),
    )
    .await;
    let sa = ResourceRef::core("serviceaccounts");
    eventually(&env, "default service account", || async {
        get(&env, &sa, "fresh", "default").await.is_some()
    })
    .await;
    eventually(&env, "root CA config map", || async {
        get(&env, &cm(), "fresh", "kube-root-ca.crt")
            .await
            .is_some_and(|c| c["data"]["ca.crt"] == "test-ca")
    })
    .await;
    // The system namespaces made before the controllers started get them too.
    eventually(&env, "default service account in kube-system", || async {
        get(&env, &sa, "kube-system", "default").await.is_some()
    })
    .await;
}
