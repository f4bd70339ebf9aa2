//! The garbage collector: deletes dependents whose owners are gone, and
//! carries out the `foregroundDeletion` and `orphan` finalizers the API
//! server adds for those propagation policies.
//!
//! Each pass relists every resource and rebuilds the owner index from
//! scratch. That costs more than watching, but it cannot drift from the
//! store, and every destructive step re-checks the live object first.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, ApiError, Registry, ResourceInfo};
use kubesim_runtime::{Api, Clock, DeleteOptions, ListOptions};
use serde_json::Value;

use crate::{drop_finalizer, edit, items, manageable, resource_ref};

pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";

/// Objects read per list request.
const PAGE: i64 = 500;
/// Time between passes.
const PERIOD: Duration = Duration::from_secs(1);

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

/// Objects by uid, and each owner uid's dependents (both ordered, so a
/// pass acts in the same order every time).
#[derive(Default)]
struct Graph {
    nodes: BTreeMap<String, Node>,
    dependents: BTreeMap<String, Vec<String>>,
}

pub struct GarbageCollector {
    api: Arc<dyn Api>,
    registry: Registry,
    clock: Clock,
    period: Duration,
}

impl GarbageCollector {
    pub fn new(api: Arc<dyn Api>, registry: Registry, clock: Clock) -> Self {
        GarbageCollector {
            api,
            registry,
            clock,
            period: PERIOD,
        }
    }

    /// Sets the time between passes.
    pub fn with_period(mut self, period: Duration) -> Self {
        self.period = period;
        self
    }

    pub async fn run(self) {
        let mut seen = String::new();
        loop {
            // A pass re-reads every object, so it runs only when something
            // was written since the last one, and waits nine times as long
            // as it took: the collector stays under a tenth of a core
            // however large the cluster grows.
            let rev = self.revision().await.unwrap_or_default();
            let started = self.clock.instant();
            if rev.is_empty() || rev != seen {
                if let Err(e) = self.pass().await {
                    tracing::warn!(error = %e.message, "garbage collection pass failed");
                } else {
                    seen = rev;
                }
            }
            let busy = started.elapsed();
            self.clock.sleep(self.period.max(busy * 9)).await;
        }
    }

    /// The store's current revision, read cheaply through a one-item list.
    async fn revision(&self) -> Result<String, ApiError> {
        let opts = ListOptions {
            limit: Some(1),
            ..ListOptions::default()
        };
        let list = self
            .api
            .list(&kubesim_runtime::ResourceRef::core("namespaces"), "", &opts)
            .await?;
        Ok(list
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string())
    }

    /// One full pass: rebuild the graph, then act on it.
    pub async fn pass(&self) -> Result<(), ApiError> {
        let g = self.graph().await?;
        for (uid, node) in &g.nodes {
            if !node.deleting {
                continue;
            }
            // Orphaning first: when both are present the owner asked to keep
            // its dependents, and deleting them could not be undone.
            if node.finalizers.iter().any(|f| f == ORPHAN) {
                self.orphan(&g, uid, node).await?;
            } else if node.finalizers.iter().any(|f| f == FOREGROUND) {
                self.foreground(&g, uid, node).await?;
            }
        }
        for (uid, node) in &g.nodes {
            if node.owners.is_empty() || node.deleting {
                continue;
            }
            // Any owner still indexed exists; only if none is do we ask the
            // server, since an owner created after its resource was listed
            // is missing from this pass's graph.
            if node.owners.iter().any(|o| g.nodes.contains_key(&o.uid)) {
                continue;
            }
            if self.all_owners_gone(node).await? {
                self.delete(node, uid, "Background").await?;
            }
        }
        Ok(())
    }

    async fn graph(&self) -> Result<Graph, ApiError> {
        let mut g = Graph::default();
        for res in manageable(&self.registry) {
            // Paged, so a pass holds one page of parsed objects at a time.
            let mut page = ListOptions {
                limit: Some(PAGE),
                ..ListOptions::default()
            };
            loop {
                let list = match self.api.list(&resource_ref(&res), "", &page).await {
                    Ok(l) => l,
                    Err(e) if e.code == 404 => break,
                    Err(e) => return Err(e),
                };
                page.continue_token = list
                    .get("metadata")
                    .and_then(|m| m.get("continue"))
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string);
                for obj in items(list) {
                    let uid = meta::uid(&obj).to_string();
                    if uid.is_empty() {
                        continue;
                    }
                    let node = Node {
                        resource: res.clone(),
                        namespace: meta::namespace(&obj).to_string(),
                        name: meta::name(&obj).to_string(),
                        deleting: meta::is_deleting(&obj),
                        finalizers: meta::finalizers(&obj),
                        owners: owner_refs(&obj),
                    };
                    for o in &node.owners {
                        g.dependents
                            .entry(o.uid.clone())
                            .or_default()
                            .push(uid.clone());
                    }
                    g.nodes.insert(uid, node);
                }
                if page.continue_token.is_none() {
                    break;
                }
            }
        }
        Ok(g)
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
    async fn foreground(&self, g: &Graph, uid: &str, owner: &Node) -> Result<(), ApiError> {
        let mut blocked = false;
        for dep_uid in g.dependents.get(uid).into_iter().flatten() {
            let Some(dep) = g.nodes.get(dep_uid) else {
                continue;
            };
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
    async fn orphan(&self, g: &Graph, uid: &str, owner: &Node) -> Result<(), ApiError> {
        for dep_uid in g.dependents.get(uid).into_iter().flatten() {
            let Some(dep) = g.nodes.get(dep_uid) else {
                continue;
            };
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
