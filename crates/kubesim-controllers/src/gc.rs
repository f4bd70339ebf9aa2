//! The garbage collector: deletes dependents whose owners are gone, and
//! carries out the `foregroundDeletion` and `orphan` finalizers the API
//! server adds for those propagation policies.
//!
//! It follows every deletable resource through metadata-only informers
//! (CRDs included, as they come), keeps an owner → dependents graph up to
//! date from their changes, and works through the objects those changes
//! concern. Every destructive step re-checks the live object first: an
//! owner missing from the graph is looked up on the server before its
//! dependents are collected.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_core::{meta, ApiError, Registry, ResourceInfo};
use kubesim_runtime::{
    run_workers, Api, Change, DeleteOptions, Informers, Requeue, ResourceRef, Shape, WorkQueue,
};
use parking_lot::Mutex;
use serde_json::Value;

use crate::{drop_finalizer, edit, manageable, resource_ref};

pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";

/// One entry of `metadata.ownerReferences`.
#[derive(Debug, Clone)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

/// What a pass knows of one object.
#[derive(Debug, Clone)]
struct Node {
    resource: Arc<ResourceInfo>,
    namespace: String,
    name: String,
    deleting: bool,
    finalizers: Vec<String>,
    owners: Vec<OwnerRef>,
}

fn owner_refs(obj: &Value) -> Vec<OwnerRef> {
    let Some(refs) = meta::path(obj, "metadata.ownerReferences").and_then(Value::as_array) else {
        return Vec::new();
    };
    refs.iter()
        .filter_map(|r| {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let uid = s("uid");
            // A reference without a uid cannot name an owner; ignore it
            // rather than treat the dependent as orphaned.
            (!uid.is_empty()).then(|| OwnerRef {
                api_version: s("apiVersion"),
                kind: s("kind"),
                name: s("name"),
                uid,
                block: r
                    .get("blockOwnerDeletion")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            })
        })
        .collect()
}

/// Whether [`Graph::insert`] would keep `obj` as a bare uid: no owner
/// reference with a uid, no finalizer, no deletion under way. Reads the
/// object in place rather than building its [`Node`].
fn is_bare(obj: &Value) -> bool {
    let Some(md) = meta::metadata(obj) else {
        return true;
    };
    let has_owner = md
        .get("ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r.get("uid")
                    .and_then(Value::as_str)
                    .is_some_and(|u| !u.is_empty())
            })
        });
    let has_finalizer = md
        .get("finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(Value::is_string));
    !has_owner && !has_finalizer && !meta::is_deleting(obj)
}

/// Objects by uid, and each owner uid's dependents. Objects are hashed:
/// each change looks its object up. The dependents, which decide the
/// order work is queued in, are ordered, so the collector acts in the
/// same order every time.
#[derive(Default)]
struct Graph {
    nodes: hashbrown::HashMap<String, Node>,
    /// Objects with no owners, no finalizers and no deletion under way:
    /// nothing to do about them but know they exist (as owners). Most
    /// objects are such, so they are kept as bare uids.
    bare: hashbrown::HashSet<String>,
    dependents: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn insert(&mut self, uid: &str, node: Node) {
        self.remove(uid);
        if node.owners.is_empty() && node.finalizers.is_empty() && !node.deleting {
            self.bare.insert(uid.to_string());
            return;
        }
        for o in &node.owners {
            self.dependents
                .entry(o.uid.clone())
                .or_default()
                .insert(uid.to_string());
        }
        self.nodes.insert(uid.to_string(), node);
    }

    /// Whether an object with `uid` is known to exist.
    fn contains(&self, uid: &str) -> bool {
        self.nodes.contains_key(uid) || self.bare.contains(uid)
    }

    fn remove(&mut self, uid: &str) -> Option<Node> {
        self.bare.remove(uid);
        let old = self.nodes.remove(uid)?;
        for o in &old.owners {
            if let Some(d) = self.dependents.get_mut(&o.uid) {
                d.remove(uid);
                if d.is_empty() {
                    self.dependents.remove(&o.uid);
                }
            }
        }
        Some(old)
    }

    /// The dependents of `uid` with what is known of them.
    fn dependents_of(&self, uid: &str) -> Vec<(String, Node)> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|d| Some((d.clone(), self.nodes.get(d)?.clone())))
            .collect()
    }
}

/// Upstream's collector ignores events: they are never owners and never
/// carry owner references, and they are the most written objects.
fn collectable(r: &ResourceInfo) -> bool {
    !(r.plural == "events" && (r.group.is_empty() || r.group == "events.k8s.io"))
}

pub struct GarbageCollector {
    api: Arc<dyn Api>,
    registry: Registry,
    informers: Arc<Informers>,
    graph: Arc<Mutex<Graph>>,
    queue: Arc<WorkQueue<String>>,
    /// Resources already followed.
    followed: Mutex<BTreeSet<String>>,
}

impl GarbageCollector {
    pub fn new(api: Arc<dyn Api>, registry: Registry, informers: Arc<Informers>) -> Arc<Self> {
        let queue = WorkQueue::new(informers.clock());
        Arc::new(GarbageCollector {
            api,
            registry,
            informers,
            graph: Arc::default(),
            queue,
            followed: Mutex::default(),
        })
    }

    /// Starts following every collectable resource not yet followed.
    fn follow_all(&self) {
        for res in manageable(&self.registry)
            .into_iter()
            .filter(|r| collectable(r))
        {
            if !self.followed.lock().insert(res.storage_key()) {
                continue;
            }
            let inf = self
                .informers
                .get_shaped(&resource_ref(&res), Shape::Ownership);
            let (graph, queue, res) = (self.graph.clone(), self.queue.clone(), res.clone());
            inf.on_change(move |c| on_change(&graph, &queue, &res, c));
        }
    }

    pub async fn run(self: Arc<Self>) {
        self.follow_all();
        // New CRDs bring new resources to follow.
        let crds = self.informers.get_metadata(&ResourceRef::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
        ));
        let me = Arc::downgrade(&self);
        crds.on_change(move |_| {
            if let Some(gc) = me.upgrade() {
                gc.follow_all();
            }
        });
        // Judge orphans only once every graph is whole, or each dependent
        // whose owner's kind is listed later would cost a server lookup.
        self.informers.wait_synced().await;
        let gc = self.clone();
        run_workers(
            self.queue.clone(),
            2,
            "garbage-collector",
            move |uid: String| {
                let gc = gc.clone();
                async move { gc.reconcile(&uid).await }
            },
        )
        .await;
    }

    async fn reconcile(&self, uid: &str) -> Result<Requeue, ApiError> {
        let Some(node) = self.graph.lock().nodes.get(uid).cloned() else {
            return Ok(None);
        };
        if node.deleting {
            // Orphaning first: when both are present the owner asked to
            // keep its dependents, and deleting them could not be undone.
            if node.finalizers.iter().any(|f| f == ORPHAN) {
                self.orphan(uid, &node).await?;
            } else if node.finalizers.iter().any(|f| f == FOREGROUND) {
                self.foreground(uid, &node).await?;
            }
            return Ok(None);
        }
        if node.owners.is_empty() {
            return Ok(None);
        }
        // An owner in the graph exists; only if none is do we ask the
        // server, since the owner's informer may not have caught up.
        let known = {
            let g = self.graph.lock();
            node.owners.iter().any(|o| g.contains(&o.uid))
        };
        if !known && self.all_owners_gone(&node).await? {
            self.delete(&node, uid, "Background").await?;
        }
        Ok(None)
    }

    /// Asks the server whether every owner of `node` is absent: not found,
    /// or replaced by a namesake with another uid. Owners of kinds the
    /// server does not serve are never declared absent, as upstream keeps
    /// such dependents rather than guess.
    async fn all_owners_gone(&self, node: &Node) -> Result<bool, ApiError> {
        for o in &node.owners {
            let Some(res) = self.registry.by_kind(&o.api_version, &o.kind) else {
                return Ok(false);
            };
            let ns = if res.namespaced() {
                node.namespace.as_str()
            } else {
                ""
            };
            match self.api.get(&resource_ref(&res), ns, &o.name).await {
                Ok(owner) if meta::uid(&owner) == o.uid => return Ok(false),
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Deletes the object with `uid`, never a namesake.
    async fn delete(&self, node: &Node, uid: &str, policy: &str) -> Result<(), ApiError> {
        let opts = DeleteOptions {
            propagation_policy: Some(policy.into()),
            precondition_uid: Some(uid.into()),
            status_only: true,
            ..Default::default()
        };
        match self
            .api
            .delete(
                &resource_ref(&node.resource),
                &node.namespace,
                &node.name,
                &opts,
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Foreground deletion: delete the dependents (in the foreground too, so
    /// the whole tree goes bottom-up) and release the owner once no
    /// dependent that blocks it remains.
    async fn foreground(&self, uid: &str, owner: &Node) -> Result<(), ApiError> {
        let mut blocked = false;
        let dependents = self.graph.lock().dependents_of(uid);
        for (dep_uid, dep) in &dependents {
            if dep.owners.iter().any(|o| o.uid == uid && o.block) {
                blocked = true;
            }
            if !dep.deleting {
                self.delete(dep, dep_uid, "Foreground").await?;
            }
        }
        if blocked {
            return Ok(());
        }
        self.edit_node(owner, uid, &|obj| drop_finalizer(obj, FOREGROUND))
            .await
    }

    /// Orphaning: strip the owner's references from its dependents, then
    /// release the owner.
    async fn orphan(&self, uid: &str, owner: &Node) -> Result<(), ApiError> {
        let dependents = self.graph.lock().dependents_of(uid);
        for (dep_uid, dep) in &dependents {
            let owner_uid = uid.to_string();
            self.edit_node(dep, dep_uid, &move |obj| remove_owner(obj, &owner_uid))
                .await?;
        }
        self.edit_node(owner, uid, &|obj| drop_finalizer(obj, ORPHAN))
            .await
    }

    /// Edits the object behind `node` (see [`edit`]).
    async fn edit_node(
        &self,
        node: &Node,
        uid: &str,
        change: &(dyn Fn(&mut Value) -> bool + Send + Sync),
    ) -> Result<(), ApiError> {
        edit(
            self.api.as_ref(),
            &resource_ref(&node.resource),
            &node.namespace,
            &node.name,
            uid,
            change,
        )
        .await
    }
}

/// Updates the graph with a change and queues the objects it concerns:
/// the object itself, its owners (a foreground deletion may be waiting on
/// it) and, when it is gone, its dependents (they may be orphans now).
fn on_change(graph: &Mutex<Graph>, queue: &WorkQueue<String>, res: &Arc<ResourceInfo>, c: &Change) {
    let obj = c.object();
    let uid = meta::uid(obj);
    if uid.is_empty() {
        return;
    }
    let mut g = graph.lock();
    // A bare object (most are) that was bare before changes nothing and
    // concerns no one: its other fields are not the collector's business.
    if !matches!(c, Change::Deleted(_)) && is_bare(obj) && g.bare.contains(uid) {
        return;
    }
    let uid = uid.to_string();
    let mut touched: Vec<String> = Vec::new();
    if let Some(old) = g.nodes.get(&uid) {
        touched.extend(old.owners.iter().map(|o| o.uid.clone()));
    }
    match c {
        Change::Deleted(_) => {
            g.remove(&uid);
            touched.extend(g.dependents.get(&uid).into_iter().flatten().cloned());
        }
        Change::Added(_) | Change::Modified { .. } => {
            let node = Node {
                resource: res.clone(),
                namespace: meta::namespace(obj).to_string(),
                name: meta::name(obj).to_string(),
                deleting: meta::is_deleting(obj),
                finalizers: meta::finalizers(obj),
                owners: owner_refs(obj),
            };
            touched.extend(node.owners.iter().map(|o| o.uid.clone()));
            let relevant = !node.owners.is_empty()
                || (node.deleting
                    && node
                        .finalizers
                        .iter()
                        .any(|f| f == ORPHAN || f == FOREGROUND));
            g.insert(&uid, node);
            if relevant {
                touched.push(uid);
            }
        }
    }
    drop(g);
    for u in touched {
        queue.add(u);
    }
}

/// Removes the references to `owner_uid`; false when there were none. An
/// emptied list is removed entirely, as upstream's patch leaves it.
fn remove_owner(obj: &mut Value, owner_uid: &str) -> bool {
    let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let Some(Value::Array(refs)) = m.get_mut("ownerReferences") else {
        return false;
    };
    let before = refs.len();
    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
    if refs.len() == before {
        return false;
    }
    if refs.is_empty() {
        m.remove("ownerReferences");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bare_exactly_when_the_graph_keeps_a_bare_uid() {
        let cases = [
            json!({"metadata": {"uid": "u"}}),
            json!({"metadata": {"uid": "u", "ownerReferences": [{"uid": "o"}]}}),
            json!({"metadata": {"uid": "u", "ownerReferences": [{"uid": ""}]}}),
            json!({"metadata": {"uid": "u", "finalizers": ["f"]}}),
            json!({"metadata": {"uid": "u", "finalizers": []}}),
            json!({"metadata": {"uid": "u", "deletionTimestamp": "2024-01-01T00:00:00Z"}}),
            json!({"metadata": {"uid": "u", "deletionTimestamp": null}}),
        ];
        for obj in cases {
            let node_bare = owner_refs(&obj).is_empty()
                && meta::finalizers(&obj).is_empty()
                && !meta::is_deleting(&obj);
            assert_eq!(is_bare(&obj), node_bare, "{obj}");
        }
    }
}
