//! Declarative phases: "`replicasPerNamespace` copies of each bundle
//! object in each namespace", reconciled against what earlier phases made
//! by deleting surplus replicas, merge-patching every replica when the
//! count is unchanged (how update phases work), and creating the missing
//! ones; the actions are paced by the phase's tuning set.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::FutureExt;
use kubesim_core::patch::PatchType;
use kubesim_core::ApiError;
use kubesim_runtime::{Clock, DeleteOptions, ListOptions, ResourceRef, Rng, WriteOptions};
use parking_lot::Mutex;
use serde_json::{Map, Value};

use crate::config::{ObjectSpec, Phase};
use crate::objects;
use crate::template::Renderer;
use crate::tuning::{Action, TuningSet};
use crate::Cluster;

/// Replicas made so far, by (namespace, basename, resource). The resource
/// is part of the key as ClusterLoader2's instance identifier holds the
/// kind and API group: objects of different kinds may share a basename
/// (access-tokens names ServiceAccounts and Deployments `account`).
pub type State = BTreeMap<(String, String, String), i64>;

/// The state key of one bundle object in one namespace.
fn state_key(ns: &str, o: &ObjectSpec, kinds: &[Kind]) -> (String, String, String) {
    let resources: Vec<String> = kinds
        .iter()
        .map(|k| format!("{}/{}", k.resource.group, k.resource.plural))
        .collect();
    (ns.to_string(), o.basename.clone(), resources.join(","))
}

/// What phases share for the whole test.
pub struct PhaseCtx {
    pub cluster: Arc<dyn Cluster>,
    pub clock: Clock,
    pub rng: Rng,
    pub renderer: Arc<Renderer>,
    pub mapping: Map<String, Value>,
    pub dir: PathBuf,
    /// Prefix of the automanaged namespaces.
    pub prefix: String,
    pub state: Mutex<State>,
}

/// One kind of a bundle object's template, resolved on the cluster.
#[derive(Clone)]
struct Kind {
    resource: ResourceRef,
    namespaced: bool,
}

/// A phase's bundle objects with their resolved kinds.
type Bundle = Arc<Vec<(ObjectSpec, Vec<Kind>)>>;

/// Errors of a phase; the first few are kept word for word.
#[derive(Default)]
struct Errors {
    messages: Mutex<Vec<String>>,
    count: AtomicUsize,
}

const KEPT_ERRORS: usize = 10;

impl Errors {
    fn push(&self, m: String) {
        if self.count.fetch_add(1, Ordering::Relaxed) < KEPT_ERRORS {
            self.messages.lock().push(m);
        }
    }
    fn into_vec(self) -> Vec<String> {
        let mut v = self.messages.into_inner();
        let n = self.count.load(Ordering::Relaxed);
        if n > v.len() {
            v.push(format!("... and {} more errors", n - v.len()));
        }
        v
    }
}

impl PhaseCtx {
    fn namespaces(&self, p: &Phase) -> Vec<String> {
        if !p.namespace_list.is_empty() {
            return p.namespace_list.clone();
        }
        match &p.namespace_range {
            Some(r) => {
                let base = r.basename.as_deref().unwrap_or(&self.prefix);
                (r.min..=r.max).map(|i| format!("{base}-{i}")).collect()
            }
            // No range: cluster-scoped objects.
            None => vec![String::new()],
        }
    }

    async fn kinds(&self, o: &ObjectSpec) -> Result<Vec<Kind>, String> {
        // As Go's path.Join, a leading slash does not make the path absolute.
        let path = self
            .dir
            .join(o.object_template_path.trim_start_matches('/'));
        let mut out = Vec::new();
        for (api_version, kind) in objects::template_kinds(&path)? {
            let (resource, namespaced) = self
                .cluster
                .resolve(&api_version, &kind)
                .await
                .map_err(|e| format!("{}: {kind} {api_version}: {}", o.basename, e.message))?;
            out.push(Kind {
                resource,
                namespaced,
            });
        }
        Ok(out)
    }

    /// Existing objects matching `listUnknownObjectOptions`, counted as
    /// replicas the first time a phase sees this object set.
    async fn unknown_count(&self, o: &ObjectSpec, kind: &Kind, ns: &str) -> Result<i64, String> {
        let Some(sel) = &o.list_unknown_selector else {
            return Ok(0);
        };
        // matchLabels and matchExpressions, in the string form a list takes.
        let selector = kubesim_core::selector::LabelSelector::from_json(sel)
            .map_err(|e| format!("{}: listUnknownObjectOptions: {}", o.basename, e.message))?
            .to_string();
        let opts = ListOptions {
            label_selector: Some(selector).filter(|s| !s.is_empty()),
            ..Default::default()
        };
        let list = self
            .cluster
            .api()
            .list(&kind.resource, ns, &opts)
            .await
            .map_err(|e| e.message)?;
        Ok(list
            .get("items")
            .and_then(Value::as_array)
            .map_or(0, |a| a.len() as i64))
    }

    /// Runs a phase to the end; returns its errors.
    pub async fn run(
        self: &Arc<Self>,
        p: &Phase,
        set: &TuningSet,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Vec<String> {
        let mut objects = Vec::new();
        for o in &p.object_bundle {
            match self.kinds(o).await {
                Ok(k) => objects.push((o.clone(), k)),
                Err(e) => return vec![e],
            }
        }
        // Shared by every action of the phase, not copied into each.
        let bundle: Bundle = Arc::new(objects);
        let Some(first) = bundle.first() else {
            return Vec::new();
        };
        let desired = p.replicas_per_namespace;
        let errors = Arc::new(Errors::default());
        let mut actions: Vec<Action> = Vec::new();
        let mut updates = Vec::new();
        for ns in self.namespaces(p) {
            let key = state_key(&ns, &first.0, &first.1);
            let known = self.state.lock().get(&key).copied();
            let current = match known {
                Some(c) => c,
                None => match self.unknown_count(&first.0, &first.1[0], &ns).await {
                    Ok(c) => c,
                    Err(e) => return vec![e],
                },
            };
            for (o, k) in &bundle[1..] {
                let other = self
                    .state
                    .lock()
                    .get(&state_key(&ns, o, k))
                    .copied()
                    .unwrap_or(0);
                if other != current {
                    return vec![format!(
                        "bundle error: {} has {other} replicas in {ns:?} but {} has {current}",
                        o.basename, first.0.basename
                    )];
                }
            }
            for i in desired..current {
                actions.push(self.clone().delete_action(&bundle, &ns, i, &errors));
            }
            if current == desired {
                for i in 0..desired {
                    actions.push(self.clone().write_action(&bundle, &ns, i, true, &errors));
                }
            }
            for i in current..desired {
                actions.push(self.clone().write_action(&bundle, &ns, i, false, &errors));
            }
            updates.push(ns);
        }
        let total = actions.len();
        let done = AtomicUsize::new(0);
        set.execute(actions, &self.clock, &self.rng, &|| {
            progress(done.fetch_add(1, Ordering::Relaxed) + 1, total)
        })
        .await;
        let mut st = self.state.lock();
        for ns in updates {
            for (o, k) in bundle.iter() {
                st.insert(state_key(&ns, o, k), desired);
            }
        }
        drop(st);
        Arc::try_unwrap(errors)
            .map(Errors::into_vec)
            .unwrap_or_else(|e| e.messages.lock().clone())
    }

    fn delete_action(
        self: Arc<Self>,
        bundle: &Bundle,
        ns: &str,
        index: i64,
        errors: &Arc<Errors>,
    ) -> Action {
        let bundle = bundle.clone();
        let (ns, errors) = (ns.to_string(), errors.clone());
        async move {
            let api = self.cluster.api();
            // Nothing of the answer is read.
            let opts = DeleteOptions {
                propagation_policy: Some("Background".into()),
                status_only: true,
                ..Default::default()
            };
            // Later objects may depend on earlier ones: delete in reverse.
            for (o, kinds) in bundle.iter().rev() {
                let name = format!("{}-{index}", o.basename);
                for k in kinds.iter().rev() {
                    let obj_ns = if k.namespaced { ns.as_str() } else { "" };
                    match api.delete(&k.resource, obj_ns, &name, &opts).await {
                        Ok(_) => {}
                        Err(e) if e.code == 404 => {}
                        Err(e) => errors.push(describe("delete", &k.resource, &ns, &name, &e)),
                    }
                }
            }
        }
        .boxed()
    }

    /// Creates replica `index` (or, with `patch`, merge-patches it with the
    /// template rendered again).
    fn write_action(
        self: Arc<Self>,
        bundle: &Bundle,
        ns: &str,
        index: i64,
        patch: bool,
        errors: &Arc<Errors>,
    ) -> Action {
        let bundle = bundle.clone();
        let (ns, errors) = (ns.to_string(), errors.clone());
        async move {
            for (o, kinds) in bundle.iter() {
                if let Err(e) = self.write_one(o, kinds, &ns, index, patch).await {
                    errors.push(e);
                    // Later objects of the bundle may need this one.
                    return;
                }
            }
        }
        .boxed()
    }

    async fn write_one(
        &self,
        o: &ObjectSpec,
        kinds: &[Kind],
        ns: &str,
        index: i64,
        patch: bool,
    ) -> Result<(), String> {
        let name = format!("{}-{index}", o.basename);
        let mapping = crate::config::object_mapping(&self.mapping, o, index, ns);
        // As Go's path.Join, a leading slash does not make the path absolute.
        let path = self
            .dir
            .join(o.object_template_path.trim_start_matches('/'));
        let objs = objects::render_objects(&self.renderer, &path, mapping)?;
        let api = self.cluster.api();
        for (mut obj, k) in objs.into_iter().zip(kinds) {
            let obj_ns = if k.namespaced { ns } else { "" };
            if let Some(md) = obj
                .as_object_mut()
                .map(|m| {
                    m.entry("metadata")
                        .or_insert_with(|| Value::Object(Map::new()))
                })
                .and_then(Value::as_object_mut)
            {
                // The name is always `<basename>-<index>`, whatever the
                // template says (generateName included).
                md.insert("name".into(), Value::String(name.clone()));
                md.remove("generateName");
                if k.namespaced {
                    md.insert("namespace".into(), Value::String(ns.to_string()));
                }
            }
            // Nothing of the answer is read but whether it succeeded.
            let opts = WriteOptions::answer_version_only();
            let res = if patch {
                let body = serde_json::to_vec(&obj).map_err(|e| e.to_string())?;
                api.patch(
                    &k.resource,
                    obj_ns,
                    &name,
                    PatchType::Merge,
                    body,
                    None,
                    &opts,
                )
                .await
            } else {
                api.create(&k.resource, obj_ns, obj, &opts).await
            };
            match res {
                Ok(_) => {}
                Err(e) if !patch && e.code == 409 && e.reason == "AlreadyExists" => {}
                Err(e) => {
                    let verb = if patch { "patch" } else { "create" };
                    return Err(describe(verb, &k.resource, ns, &name, &e));
                }
            }
        }
        Ok(())
    }
}

fn describe(verb: &str, r: &ResourceRef, ns: &str, name: &str, e: &ApiError) -> String {
    let at = if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    };
    format!("{verb} {} {at}: {} ({})", r.plural, e.message, e.code)
}

#[cfg(test)]
mod tests;
