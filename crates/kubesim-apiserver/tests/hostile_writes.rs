//! No bad write reaches the store: bodies whose fields have the wrong JSON
//! type are refused on every write path with upstream's status and words,
//! a refused write changes no stored byte, and every stored object of a
//! built-in kind decodes into its k8s-openapi type.

use std::sync::Arc;

use k8s_openapi::api::{apps::v1 as apps, batch::v1 as batch, core::v1 as core};
use kubesim_core::patch::PatchType;
use kubesim_core::ApiError;
use kubesim_runtime::{Api, ListOptions, ResourceRef, WriteOptions};
use proptest::prelude::*;
use serde_json::{json, Value};

mod support;

/// The kinds tried, each with a valid object of it.
fn seeds() -> Vec<(ResourceRef, &'static str, Value)> {
    vec![
        (
            ResourceRef::core("pods"),
            "default",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i",
                    "env": [{"name": "E", "value": "v"}],
                    "ports": [{"containerPort": 80}],
                    "resources": {"requests": {"cpu": "100m"}}}]}}),
        ),
        (
            ResourceRef::new("apps", "v1", "deployments"),
            "default",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}},
                        "spec": {"containers": [{"name": "c", "image": "i"}]}}}}),
        ),
        (
            ResourceRef::core("services"),
            "default",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "spec": {"type": "NodePort", "selector": {"a": "b"},
                    "ports": [{"port": 80, "targetPort": 8080}]}}),
        ),
        (
            ResourceRef::core("nodes"),
            "",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
                "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
                "status": {"capacity": {"cpu": "4", "pods": "110"}}}),
        ),
        (
            ResourceRef::core("namespaces"),
            "",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}),
        ),
        (
            ResourceRef::new("batch", "v1", "jobs"),
            "default",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"completions": 1, "template": {"spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "i"}]}}}}),
        ),
        (
            ResourceRef::core("configmaps"),
            "default",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"},
                "data": {"k": "v"}}),
        ),
    ]
}

/// Whether `obj` decodes into its kind's k8s-openapi type.
fn decodes(plural: &str, obj: &Value) -> Result<(), String> {
    fn into<T: serde::de::DeserializeOwned>(v: &Value) -> Result<(), String> {
        serde_json::from_value::<T>(v.clone())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
    match plural {
        "pods" => into::<core::Pod>(obj),
        "deployments" => into::<apps::Deployment>(obj),
        "services" => into::<core::Service>(obj),
        "nodes" => into::<core::Node>(obj),
        "namespaces" => into::<core::Namespace>(obj),
        "jobs" => into::<batch::Job>(obj),
        "configmaps" => into::<core::ConfigMap>(obj),
        "leases" => into::<k8s_openapi::api::coordination::v1::Lease>(obj),
        other => Err(format!("no type for {other}")),
    }
}

fn name_of(obj: &Value) -> String {
    obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn seeded() -> Arc<dyn Api> {
    let api = support::api().await;
    for (r, ns, obj) in seeds() {
        api.create(&r, ns, obj, &WriteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("seed {}: {}", r.plural, e.message));
    }
    api
}

/// The stored objects of `r`, as listed.
async fn stored(api: &dyn Api, r: &ResourceRef) -> Vec<Value> {
    let list = api.list(r, "", &ListOptions::default()).await.unwrap();
    list["items"].as_array().cloned().unwrap_or_default()
}

fn apply_opts() -> WriteOptions {
    WriteOptions {
        field_manager: Some("hostile".into()),
        force: true,
        ..Default::default()
    }
}

/// The write paths a body can take to an existing object.
#[derive(Debug, Clone, Copy)]
enum Path {
    Create,
    Update,
    Merge,
    Strategic,
    Json,
    Apply,
    Status,
}

/// Sends `bad` (a whole object) through `path` on `api`.
async fn send(
    api: &dyn Api,
    r: &ResourceRef,
    ns: &str,
    path: Path,
    bad: &Value,
) -> Result<Value, ApiError> {
    let name = name_of(bad);
    let current = api.get(r, ns, &name).await.ok();
    let mut with_rv = bad.clone();
    if let Some(cur) = &current {
        with_rv["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"].clone();
    }
    match path {
        Path::Create => {
            let mut fresh = bad.clone();
            fresh["metadata"]["name"] = json!(format!("{name}-new"));
            api.create(r, ns, fresh, &WriteOptions::default()).await
        }
        Path::Update => {
            api.update(r, ns, with_rv, None, &WriteOptions::default())
                .await
        }
        Path::Status => {
            api.update(r, ns, with_rv, Some("status"), &WriteOptions::default())
                .await
        }
        Path::Merge | Path::Strategic => {
            let kind = if matches!(path, Path::Merge) {
                PatchType::Merge
            } else {
                PatchType::Strategic
            };
            let mut body = bad.clone();
            if let Some(m) = body.as_object_mut() {
                m.remove("metadata");
            }
            api.patch(
                r,
                ns,
                &name,
                kind,
                body.to_string().into_bytes(),
                None,
                &WriteOptions::default(),
            )
            .await
        }
        Path::Json => {
            // One `add` (which replaces) per top-level field but metadata.
            let ops: Vec<Value> = bad
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| k.as_str() != "metadata")
                .map(|(k, v)| json!({"op": "add", "path": format!("/{k}"), "value": v}))
                .collect();
            api.patch(
                r,
                ns,
                &name,
                PatchType::Json,
                Value::from(ops).to_string().into_bytes(),
                None,
                &WriteOptions::default(),
            )
            .await
        }
        Path::Apply => {
            api.patch(
                r,
                ns,
                &name,
                PatchType::Apply,
                bad.to_string().into_bytes(),
                None,
                &apply_opts(),
            )
            .await
        }
    }
}

#[tokio::test(start_paused = true)]
async fn wrong_types_are_refused_with_upstreams_words() {
    let api = seeded().await;
    let pods = ResourceRef::core("pods");
    let mut bad = seeds()[0].2.clone();
    bad["spec"]["containers"][0]["env"] = json!([1]);
    let before = stored(&*api, &pods).await;

    let e = send(&*api, &pods, "default", Path::Create, &bad)
        .await
        .unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        e.message,
        "Pod in version \"v1\" cannot be handled as a Pod: json: cannot unmarshal number into Go struct field Container.spec.containers.env of type v1.EnvVar"
    );
    let e = send(&*api, &pods, "default", Path::Update, &bad)
        .await
        .unwrap_err();
    assert_eq!((e.code, e.reason.as_str()), (400, "BadRequest"));
    for path in [Path::Merge, Path::Strategic, Path::Json] {
        let e = send(&*api, &pods, "default", path, &bad).await.unwrap_err();
        assert_eq!(
            (e.code, e.reason.as_str()),
            (422, "Invalid"),
            "{path:?}: {}",
            e.message
        );
        assert!(
            e.message
                .starts_with(" \"\" is invalid: patch: Invalid value: "),
            "{}",
            e.message
        );
        assert!(e.message.ends_with("of type v1.EnvVar"), "{}", e.message);
    }
    let e = send(&*api, &pods, "default", Path::Apply, &bad)
        .await
        .unwrap_err();
    assert_eq!(e.code, 400, "{}", e.message);
    let e = send(&*api, &pods, "default", Path::Status, &bad)
        .await
        .unwrap_err();
    assert_eq!(e.code, 400, "{}", e.message);
    assert_eq!(
        stored(&*api, &pods).await,
        before,
        "a refused write changed the store"
    );

    // The NodePort Service whose ports is a number once crashed a handler.
    let svcs = ResourceRef::core("services");
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
        "spec": {"type": "NodePort", "ports": 5}});
    let e = api
        .create(&svcs, "default", svc, &WriteOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.code, 400, "{}", e.message);

    // A Deployment whose replicas is a string is refused, and so is its scale.
    let deploys = ResourceRef::new("apps", "v1", "deployments");
    let mut d = seeds()[1].2.clone();
    d["metadata"]["name"] = json!("d2");
    d["spec"]["replicas"] = json!("x");
    let e = api
        .create(&deploys, "default", d, &WriteOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    let scale = json!({"spec": {"replicas": "x"}});
    let e = api
        .patch(
            &deploys,
            "default",
            "d",
            PatchType::Merge,
            scale.to_string().into_bytes(),
            Some("scale"),
            &WriteOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, 400, "{}", e.message);
    assert_eq!(
        api.get(&deploys, "default", "d").await.unwrap()["spec"]["replicas"],
        json!(1)
    );
}

#[tokio::test(start_paused = true)]
async fn quantities_sent_as_numbers_are_stored_as_strings() {
    let api = support::api().await;
    let pods = ResourceRef::core("pods");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": 2, "memory": 0.5}}}]}});
    let made = api
        .create(&pods, "default", pod, &WriteOptions::default())
        .await
        .unwrap();
    assert_eq!(
        made["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "2", "memory": "500m"})
    );
    decodes("pods", &made).unwrap();
}

/// A JSON value of any type, small.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[a-z0-9 ]{0,6}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            prop::collection::btree_map("[a-z]{1,4}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every JSON pointer inside `v` (objects and arrays), root excluded.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let p = format!("{at}/{k}");
                out.push(p.clone());
                pointers(c, p, out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(c, p, out);
            }
        }
        _ => {}
    }
}

/// `obj` with the value at its `pick`-th pointer (metadata's identity
/// left alone) replaced by `with`.
fn mutated(obj: &Value, pick: usize, with: Value) -> Value {
    let mut ptrs = Vec::new();
    pointers(obj, String::new(), &mut ptrs);
    ptrs.retain(|p| {
        !matches!(
            p.as_str(),
            "/metadata" | "/metadata/name" | "/apiVersion" | "/kind"
        )
    });
    let mut out = obj.clone();
    if let Some(p) = ptrs.get(pick % ptrs.len().max(1)) {
        if let Some(slot) = out.pointer_mut(p) {
            *slot = with;
        }
    }
    out
}

/// Any write path.
fn any_path() -> impl Strategy<Value = Path> {
    prop_oneof![
        Just(Path::Create),
        Just(Path::Update),
        Just(Path::Merge),
        Just(Path::Strategic),
        Just(Path::Json),
        Just(Path::Apply),
        Just(Path::Status)
    ]
}

/// A current-thread runtime on paused time, for one proptest case.
fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// Sends `bad` through `path` as `sender`, reading the store as `reader`:
/// no 5xx, a refused write leaves the store as it was, and every stored
/// object of `r` still decodes into its type.
async fn sent_safely(
    reader: &dyn Api,
    sender: &dyn Api,
    r: &ResourceRef,
    ns: &str,
    path: Path,
    bad: &Value,
) -> Result<(), TestCaseError> {
    let before = stored(reader, r).await;
    let answer = send(sender, r, ns, path, bad).await;
    let after = stored(reader, r).await;
    if let Err(e) = &answer {
        prop_assert!(e.code < 500, "{path:?} answered {}: {}", e.code, e.message);
        prop_assert_eq!(&after, &before, "a refused {:?} changed the store", path);
    }
    for obj in &after {
        if let Err(e) = decodes(&r.plural, obj) {
            prop_assert!(
                false,
                "{path:?} stored a {} typed clients cannot read ({e}): {obj}",
                r.plural
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Random type confusions through random write paths: whatever is
    /// answered, every stored object still decodes into its type, and a
    /// refused write leaves the store as it was.
    #[test]
    fn no_write_stores_what_typed_clients_cannot_read(
        kind in 0usize..7,
        pick in any::<usize>(),
        with in any_json(),
        path in any_path(),
    ) {
        paused_runtime().block_on(async {
            let api = seeded().await;
            let (r, ns, seed) = seeds().swap_remove(kind);
            let bad = mutated(&seed, pick, with);
            sent_safely(&*api, &*api, &r, ns, path, &bad).await
        })?;
    }
}

/// What a kubelet (`system:node:n`) may reach, each as the admin seeds it:
/// its Node, a pod bound to it, a pod bound to another node, its Lease.
fn kubelet_seeds() -> Vec<(ResourceRef, &'static str, Value)> {
    vec![
        (
            ResourceRef::core("nodes"),
            "",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n",
                    "labels": {"kubernetes.io/hostname": "n", "node-restriction.kubernetes.io/pool": "a"}},
                "status": {"capacity": {"cpu": "4", "pods": "110"}}}),
        ),
        (
            ResourceRef::core("pods"),
            "default",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
                "status": {"phase": "Pending"}}),
        ),
        (
            ResourceRef::core("pods"),
            "default",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
                "spec": {"nodeName": "m", "containers": [{"name": "c", "image": "i"}]}}),
        ),
        (
            ResourceRef::new("coordination.k8s.io", "v1", "leases"),
            "kube-node-lease",
            json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "n"},
                "spec": {"holderIdentity": "n", "leaseDurationSeconds": 40}}),
        ),
    ]
}

/// A server enforcing `Node,RBAC` with the kubelet seeds stored: the
/// admin's client and kubelet n's.
async fn kubelet_server() -> (Arc<dyn Api>, Arc<dyn Api>) {
    use kubesim_apiserver::auth::UserInfo;
    use kubesim_apiserver::inprocess::InProcess;
    let store: Arc<dyn kubesim_store::Store> =
        Arc::new(kubesim_store::MemStore::ephemeral(Default::default()));
    let epoch = jiff::Timestamp::constant(1_767_225_600, 0);
    let server = kubesim_apiserver::Server::new(
        store,
        kubesim_runtime::Clock::simulated(epoch),
        kubesim_runtime::Rng::seeded(1),
    );
    server.bootstrap().await.expect("bootstrap");
    server.enable_rbac(true);
    server.enable_node_authorizer(true);
    let admin: Arc<dyn Api> = Arc::new(InProcess::new(server.clone(), "test"));
    for (r, ns, obj) in kubelet_seeds() {
        admin
            .create(&r, ns, obj, &WriteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("seed {}: {}", r.plural, e.message));
    }
    let kubelet = UserInfo::authenticated("system:node:n", vec!["system:nodes".into()]);
    let as_kubelet: Arc<dyn Api> = Arc::new(InProcess::as_user(server, "kubelet", kubelet));
    (admin, as_kubelet)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// Random type confusions from a kubelet, through random write paths,
    /// under the Node authorizer and NodeRestriction: whatever is
    /// answered, no 5xx, a refused write changes nothing, every stored
    /// object decodes, and nothing outside the kubelet's reach changes:
    /// another node's pod, or a label in `node-restriction.kubernetes.io`.
    #[test]
    fn no_kubelet_write_stores_what_it_may_not(
        kind in 0usize..4,
        pick in any::<usize>(),
        with in any_json(),
        path in any_path(),
    ) {
        paused_runtime().block_on(async {
            let (admin, kubelet) = kubelet_server().await;
            let (r, ns, seed) = kubelet_seeds().swap_remove(kind);
            let bad = mutated(&seed, pick, with);
            let pods = ResourceRef::core("pods");
            let other_pod = admin.get(&pods, "default", "q").await.unwrap();
            sent_safely(&*admin, &*kubelet, &r, ns, path, &bad).await?;
            prop_assert_eq!(admin.get(&pods, "default", "q").await.unwrap(), other_pod,
                "kubelet n changed a pod of node m through {:?}", path);
            let node = admin.get(&ResourceRef::core("nodes"), "", "n").await.unwrap();
            prop_assert_eq!(&node["metadata"]["labels"]["node-restriction.kubernetes.io/pool"], "a",
                "kubelet n changed a restricted label through {:?}: {}", path, node);
            Ok(())
        })?;
    }
}
