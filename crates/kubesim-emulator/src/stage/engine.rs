//! The Stage engine: Stages live in the API as `kwok.x-k8s.io/v1alpha1`
//! objects (the built-in set or a `--stages` file is created at startup,
//! and users may add, edit or delete Stages at run time); every kind some
//! Stage names gets a lifecycle that watches its objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{Api, Change, EventType, Informers, ResourceRef, WriteOptions};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use super::lifecycle::{Lifecycle, Shared};
use super::resolve::resolve;
use super::spec::Stage;
use crate::crd::{self, Definition};

const STAGE: Definition = Definition {
    group: "kwok.x-k8s.io",
    version: "v1alpha1",
    kind: "Stage",
    plural: "stages",
    short: "stg",
    namespaced: false,
};

/// The Stages kubesim starts with when given none: kwok's default set
/// (node initialisation, heartbeat with leases, pod ready, complete and
/// delete), with completion in two Stages: `pod-complete` for any pod with
/// a `kubesim.io/run-duration` annotation, and `job-pod-complete` for the
/// other Job pods, which finish when their program would (a `pause` Job
/// pod runs until deleted). Kept apart so the many annotated pods of a
/// simulation are matched by plain paths, never by the jq program that
/// reads a Job pod's image.
pub const DEFAULT_STAGES: &[&str] = &[
    include_str!("../../stages/node-initialize.yaml"),
    include_str!("../../stages/node-heartbeat-with-lease.yaml"),
    include_str!("../../stages/pod-ready.yaml"),
    include_str!("../../stages/pod-complete.yaml"),
    include_str!("../../stages/job-pod-complete.yaml"),
    include_str!("../../stages/pod-delete.yaml"),
];

pub fn stages_resource() -> ResourceRef {
    STAGE.resource()
}

/// The default Stages as objects.
pub fn default_stage_objects() -> Vec<Value> {
    DEFAULT_STAGES
        .iter()
        .filter_map(|y| serde_saphyr::from_str::<Value>(y).ok())
        .collect()
}

/// Every Stage object in a multi-document YAML text, checked: one that
/// does not compile is an error naming it.
pub fn stage_objects_from_yaml(text: &str) -> Result<Vec<Value>, String> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| format!("cannot parse stages: {e}"))?;
    let stages: Vec<Value> = docs
        .into_iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Stage"))
        .collect();
    for s in &stages {
        Stage::from_object(s)?;
    }
    if stages.is_empty() {
        return Err("no Stage objects found".into());
    }
    Ok(stages)
}

/// Runs the engine until dropped: defines the Stage kind, creates
/// `initial` Stages that do not exist yet, then follows every Stage.
pub async fn run(shared: Arc<Shared>, informers: Arc<Informers>, initial: Vec<Value>) {
    let api = shared.api.clone();
    crd::ensure(&api, &[STAGE]).await;
    create_missing(&api, initial).await;

    let changed = Arc::new(Notify::new());
    let stage_inf = informers.get(&STAGE.resource());
    let crd_inf = informers.get(&ResourceRef::new(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
    ));
    let nodes = informers.get(&ResourceRef::core("nodes"));
    for inf in [&stage_inf, &crd_inf] {
        let n = changed.clone();
        inf.on_change(move |_| n.notify_one());
    }
    stage_inf.wait_synced().await;
    crd_inf.wait_synced().await;
    nodes.wait_synced().await;

    let lifecycles: Arc<Mutex<BTreeMap<ResourceRef, Arc<Lifecycle>>>> = Arc::default();
    // Pods that reached the cache before their node are looked at again
    // when the node arrives.
    let l = lifecycles.clone();
    nodes.on_change(move |c| {
        if let Change::Added(n) = c {
            if let Some(pods) = l.lock().get(&ResourceRef::core("pods")) {
                pods.node_added(meta::name(n));
            }
        }
    });
    let mut tasks = JoinSet::new();
    if let Some(shards) = shared.selector.shards.clone() {
        let l = lifecycles.clone();
        tasks.spawn(async move {
            let mut changes = shards.changes();
            while changes.changed().await.is_ok() {
                let current: Vec<_> = l.lock().values().cloned().collect();
                for lc in current {
                    lc.reconsider();
                }
            }
        });
    }
    loop {
        let by_kind = compile(&shared, &stage_inf.cache().list());
        let mut current = lifecycles.lock().clone();
        let mut wanted: BTreeMap<ResourceRef, Vec<Arc<Stage>>> = BTreeMap::new();
        for ((api_version, kind), stages) in by_kind {
            let Some(target) = resolve(&shared.registry, &crd_inf.cache(), &api_version, &kind)
            else {
                tracing::warn!(%api_version, %kind, "stages name a kind the cluster does not serve");
                continue;
            };
            let r = target.resource.clone();
            if !current.contains_key(&r) {
                let inf = informers.get(&r);
                let lc = Lifecycle::new(shared.clone(), target, inf.cache());
                let h = lc.clone();
                inf.on_change(move |c| h.on_change(c));
                tasks.spawn(lc.clone().run());
                current.insert(r.clone(), lc);
            }
            wanted.entry(r).or_default().extend(stages);
        }
        for (r, lc) in &current {
            lc.set_stages(wanted.remove(r).unwrap_or_default());
        }
        *lifecycles.lock() = current;
        changed.notified().await;
    }
}

/// The compiled Stages by (apiVersion, kind), in name order. A Stage that
/// does not compile is reported on itself and skipped.
fn compile(shared: &Shared, objects: &[Arc<Value>]) -> BTreeMap<(String, String), Vec<Arc<Stage>>> {
    let mut by_kind: BTreeMap<(String, String), Vec<Arc<Stage>>> = BTreeMap::new();
    for obj in objects {
        match Stage::from_object(obj) {
            Ok(s) => by_kind
                .entry((s.api_version.clone(), s.kind.clone()))
                .or_default()
                .push(Arc::new(s)),
            Err(e) => {
                tracing::warn!(error = %e, "stage ignored");
                shared
                    .recorder
                    .record(obj, EventType::Warning, "InvalidStage", e);
            }
        }
    }
    by_kind
}

async fn create_missing(api: &Arc<dyn Api>, stages: Vec<Value>) {
    for s in stages {
        match api
            .create(&STAGE.resource(), "", s, &WriteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => tracing::error!(error = %e.message, "cannot create a stage"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_stages_compile() {
        let objs = default_stage_objects();
        assert_eq!(objs.len(), DEFAULT_STAGES.len());
        let names: Vec<String> = objs
            .iter()
            .map(|o| Stage::from_object(o).unwrap().name)
            .collect();
        assert_eq!(
            names,
            [
                "node-initialize",
                "node-heartbeat-with-lease",
                "pod-ready",
                "pod-complete",
                "job-pod-complete",
                "pod-delete"
            ]
        );
        assert!(stage_objects_from_yaml("kind: ConfigMap").is_err());
        assert!(stage_objects_from_yaml("kind: Stage\nmetadata: {name: x}\nspec: {}").is_err());
    }
}
