//! The PodGroup controller of kubernetes-sigs' scheduler-plugins: keeps a
//! PodGroup's `status` (phase, `running`, `succeeded`, `failed`,
//! `occupiedBy`) in step with its pods, those of its namespace labelled
//! `scheduling.x-k8s.io/pod-group: <name>`.
//!
//! Upstream runs it in scheduler-plugins' own controller manager, not in
//! kube-controller-manager; here it runs with the other loops, as the
//! ServiceAccount `scheduler-plugins-controller` with upstream's rights,
//! and only once the PodGroup CRD exists (it waits for the definition, so
//! that no informer polls a kind that is not served).
//!
//! The rules ([`status::next`]) are upstream's. Upstream takes one step
//! per reconcile and its own status write triggers the next one; kubesim
//! takes the steps until nothing changes and writes once, so a client
//! sees the state upstream settles on without the intermediate writes
//! (for example `Pending`, then `Scheduling`, a watch event apart).

pub mod status;

use status::Member;

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{run_workers, Change, ObjectKey, Requeue, ResourceRef, WorkQueue};
use parking_lot::Mutex;
use serde_json::Value;

use crate::Context;

/// Its name in `--controllers` (kubesim's: upstream's controller manager
/// has no flag that names its loops).
pub const CONTROLLER: &str = "podgroup-controller";

/// The ServiceAccount upstream's manifests run the controller as.
pub const ACCOUNT: &str = "scheduler-plugins-controller";

pub const GROUP: &str = "scheduling.x-k8s.io";
pub const VERSION: &str = "v1alpha1";
/// The pod label naming its group.
pub const LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// The CustomResourceDefinition that must exist before anything is watched.
pub const CRD: &str = "podgroups.scheduling.x-k8s.io";

pub fn podgroups_ref() -> ResourceRef {
    ResourceRef::new(GROUP, VERSION, "podgroups")
}

fn crds_ref() -> ResourceRef {
    ResourceRef::new("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

/// The group a pod names, if any (read without building its label map:
/// this runs on every pod event).
fn group_of(pod: &Value) -> Option<ObjectKey> {
    pod.pointer("/metadata/labels")
        .and_then(|l| l.get(LABEL))
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty())
        .map(|g| ObjectKey::new(meta::namespace(pod), g))
}

/// Each group's pods by name, with what the rules read of each (a
/// reconcile then parses none).
type Members = BTreeMap<ObjectKey, BTreeMap<String, Member>>;

pub struct PodGroupController {
    ctx: Arc<Context>,
    queue: Arc<WorkQueue<ObjectKey>>,
    /// Each group's pods, kept from pod events, so a reconcile reads its
    /// own pods rather than its whole namespace.
    members: Mutex<Members>,
}

impl PodGroupController {
    pub fn new(ctx: Arc<Context>) -> Arc<Self> {
        Arc::new(PodGroupController {
            queue: WorkQueue::new(ctx.clock.clone()),
            ctx,
            members: Mutex::new(Members::default()),
        })
    }

    /// Waits until the PodGroup kind is defined, woken by the definitions'
    /// events rather than by polling.
    async fn wait_for_crd(&self) {
        let crds = self.ctx.informers.get(&crds_ref());
        let defined = Arc::new(tokio::sync::Notify::new());
        let d = defined.clone();
        crds.on_change(move |c| {
            if !matches!(c, Change::Deleted(_)) && meta::name(c.object()) == CRD {
                d.notify_one();
            }
        });
        crds.wait_synced().await;
        if crds.cache().get("", CRD).is_none() {
            defined.notified().await;
        }
    }

    pub async fn run(self: Arc<Self>) {
        self.wait_for_crd().await;
        let groups = self.ctx.informers.get(&podgroups_ref());
        let pods = self.ctx.informers.get(&ResourceRef::core("pods"));
        let q = self.queue.clone();
        groups.on_change(move |c| {
            if !matches!(c, Change::Deleted(_)) {
                q.add(ObjectKey::of(c.object()))
            }
        });
        let me = self.clone();
        pods.on_change(move |c| me.pod_changed(c));
        groups.wait_synced().await;
        pods.wait_synced().await;
        let me = self.clone();
        run_workers(self.queue.clone(), 1, "podgroup", move |key| {
            let me = me.clone();
            async move { me.reconcile(key).await }
        })
        .await;
    }

    /// Files the pod under its group (and out of the one it left, which
    /// the pod's previous state names) and queues the groups it touches.
    fn pod_changed(&self, c: &Change) {
        let pod = c.object();
        let (before, now) = match c {
            Change::Added(_) => (None, group_of(pod)),
            Change::Modified { old, .. } => {
                let before = old
                    .label(LABEL)
                    .filter(|g| !g.is_empty())
                    .map(|g| ObjectKey::new(meta::namespace(pod), g));
                (before, group_of(pod))
            }
            Change::Deleted(_) => (group_of(pod), None),
        };
        if before.is_none() && now.is_none() {
            return;
        }
        let name = meta::name(pod);
        let mut members = self.members.lock();
        if let Some(b) = before.filter(|b| Some(b) != now.as_ref()) {
            if let Some(pods) = members.get_mut(&b) {
                pods.remove(name);
                if pods.is_empty() {
                    members.remove(&b);
                }
            }
            self.queue.add(b);
        }
        if let Some(n) = now {
            members
                .entry(n.clone())
                .or_default()
                .insert(name.to_string(), Member::of(pod));
            self.queue.add(n);
        }
    }

    async fn reconcile(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let Some(group) = self
            .ctx
            .informers
            .get(&podgroups_ref())
            .cache()
            .get(&key.namespace, &key.name)
        else {
            return Ok(None);
        };
        let old = group.get("status").cloned().unwrap_or(Value::Null);
        if status::is_final(&old) {
            return Ok(None);
        }
        // In name order: upstream's first pod (whose owners fill
        // occupiedBy) is whichever its cache lists first; here it is the
        // first by name, the same every run.
        let pods: Vec<Member> = self
            .members
            .lock()
            .get(&key)
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default();
        let min_member = group
            .pointer("/spec/minMember")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let new = status::settle(&old, min_member, &pods);
        if crate::status_write::same(old.as_object().map(|_| &old), &new) {
            return Ok(None);
        }
        let mut obj = (*group).clone();
        obj["status"] =
            crate::status_write::overlay(old.as_object().map(|_| &old), new, status::OWNED);
        crate::status_write::write_unless_gone(
            &*self.ctx.api,
            &podgroups_ref(),
            &key.namespace,
            obj,
        )
        .await
        .map(|()| None)
    }
}
