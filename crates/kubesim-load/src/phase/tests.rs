//! Phases against an in-process API server: what each reconciliation
//! leaves in the cluster.

use std::sync::Arc;

use kubesim_runtime::{Api, ListOptions, ResourceRef, Rng, WriteOptions};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

use super::PhaseCtx;
use crate::cluster::testing::cluster;
use crate::config::{Load, NamespaceRange, ObjectSpec, Phase};
use crate::template::Renderer;
use crate::tuning::TuningSet;

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{.Name}}\n  labels:\n    set: s\ndata:\n  value: \"{{.Value}}-{{.Index}}\"\n";

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kubesim-load-phase-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("cm.yaml"), CM).unwrap();
    d
}

fn phase(replicas: i64, value: &str, unknown: Option<Value>) -> Phase {
    let mut fill = Map::new();
    fill.insert("Value".into(), json!(value));
    Phase {
        namespace_range: Some(NamespaceRange {
            min: 1,
            max: 2,
            basename: None,
        }),
        namespace_list: Vec::new(),
        replicas_per_namespace: replicas,
        tuning_set: "t".into(),
        object_bundle: vec![ObjectSpec {
            basename: "cm".into(),
            object_template_path: "cm.yaml".into(),
            template_fill_map: fill,
            list_unknown_selector: unknown,
            path: Vec::new(),
        }],
        path: Vec::new(),
    }
}

async fn values(api: &Arc<dyn Api>, ns: &str) -> Vec<String> {
    let list = api
        .list(
            &ResourceRef::core("configmaps"),
            ns,
            &ListOptions::default(),
        )
        .await
        .unwrap();
    let mut v: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["metadata"]["labels"]["set"] == "s")
        .map(|o| {
            format!(
                "{}={}",
                o["metadata"]["name"].as_str().unwrap(),
                o["data"]["value"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

#[tokio::test(start_paused = true)]
async fn create_patch_and_delete_reconcile_every_namespace() {
    let (c, clock) = cluster().await;
    let api = crate::Cluster::api(&*c);
    for ns in ["p-1", "p-2", "q-1"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        api.create(
            &ResourceRef::core("namespaces"),
            "",
            obj,
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    }
    let d = dir();
    let ctx = Arc::new(PhaseCtx {
        cluster: c.clone(),
        clock,
        rng: Rng::seeded(1),
        renderer: Arc::new(Renderer::new(Rng::seeded(1), &d)),
        mapping: Map::new(),
        dir: d.clone(),
        prefix: "p".into(),
        state: Mutex::new(Default::default()),
    });
    let set = TuningSet::new(Load::Qps { qps: 100.0 });
    let none = |_: usize, _: usize| {};
    assert!(ctx.run(&phase(3, "a", None), &set, &none).await.is_empty());
    for ns in ["p-1", "p-2"] {
        assert_eq!(values(&api, ns).await, ["cm-0=a-0", "cm-1=a-1", "cm-2=a-2"]);
    }
    // The same count with another template: every replica is patched.
    assert!(ctx.run(&phase(3, "b", None), &set, &none).await.is_empty());
    assert_eq!(
        values(&api, "p-2").await,
        ["cm-0=b-0", "cm-1=b-1", "cm-2=b-2"]
    );
    // Fewer: the highest indices go.
    assert!(ctx.run(&phase(1, "b", None), &set, &none).await.is_empty());
    assert_eq!(values(&api, "p-1").await, ["cm-0=b-0"]);
    // Objects made outside the test count as replicas when asked.
    let other = Arc::new(PhaseCtx {
        prefix: "q".into(),
        state: Mutex::new(Default::default()),
        cluster: ctx.cluster.clone(),
        clock: ctx.clock.clone(),
        rng: ctx.rng.clone(),
        renderer: ctx.renderer.clone(),
        mapping: Map::new(),
        dir: d.clone(),
    });
    let mut one_ns = phase(2, "c", Some(json!({"matchLabels": {"set": "s"}})));
    one_ns.namespace_range = Some(NamespaceRange {
        min: 1,
        max: 1,
        basename: None,
    });
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm-0", "labels": {"set": "s"}}, "data": {"value": "old"}});
    api.create(
        &ResourceRef::core("configmaps"),
        "q-1",
        cm,
        &WriteOptions::default(),
    )
    .await
    .unwrap();
    assert!(other.run(&one_ns, &set, &none).await.is_empty());
    // cm-0 was counted, so only cm-1 was created.
    assert_eq!(values(&api, "q-1").await, ["cm-0=old", "cm-1=c-1"]);
    std::fs::remove_dir_all(&d).ok();
}

#[tokio::test(start_paused = true)]
async fn one_basename_for_two_kinds_counts_each_kind_apart() {
    // access-tokens names both ServiceAccounts and Deployments `account`:
    // the Secrets made second must be created, not patched as if the
    // ConfigMaps of the same basename were theirs.
    let (c, clock) = cluster().await;
    let api = crate::Cluster::api(&*c);
    for ns in ["p-1", "p-2"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        api.create(
            &ResourceRef::core("namespaces"),
            "",
            obj,
            &WriteOptions::default(),
        )
        .await
        .unwrap();
    }
    let d = std::env::temp_dir().join(format!("kubesim-load-kinds-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("cm.yaml"), CM).unwrap();
    std::fs::write(
        d.join("secret.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{.Name}}\n",
    )
    .unwrap();
    let ctx = Arc::new(PhaseCtx {
        cluster: c.clone(),
        clock,
        rng: Rng::seeded(1),
        renderer: Arc::new(Renderer::new(Rng::seeded(1), &d)),
        mapping: Map::new(),
        dir: d.clone(),
        prefix: "p".into(),
        state: Mutex::new(Default::default()),
    });
    let set = TuningSet::new(Load::Qps { qps: 100.0 });
    let none = |_: usize, _: usize| {};
    assert!(ctx.run(&phase(2, "a", None), &set, &none).await.is_empty());
    let mut secrets = phase(2, "a", None);
    secrets.object_bundle[0].object_template_path = "secret.yaml".into();
    let errors = ctx.run(&secrets, &set, &none).await;
    assert!(errors.is_empty(), "{errors:?}");
    let list = api
        .list(
            &ResourceRef::core("secrets"),
            "p-2",
            &ListOptions::default(),
        )
        .await
        .unwrap();
    let mut names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["metadata"]["name"].as_str())
        .filter(|n| n.starts_with("cm-"))
        .collect();
    names.sort();
    assert_eq!(names, ["cm-0", "cm-1"]);
    std::fs::remove_dir_all(&d).ok();
}
