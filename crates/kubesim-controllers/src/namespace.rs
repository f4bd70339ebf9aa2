//! The namespace controller: empties a terminating namespace, then removes
//! the `kubernetes` finalizer from its spec so the API server drops it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kubesim_core::{meta, ApiError, Registry};
use kubesim_runtime::{
    Api, Clock, DeleteOptions, ListOptions, ResourceRef, WatchEvent, WriteOptions,
};
use serde_json::{json, Value};

use crate::{items, manageable, resource_ref};

/// The finalizer the API server puts in every namespace's spec.
const FINALIZER: &str = "kubernetes";
/// First retry delay for a namespace whose content is still going away;
/// doubled on every attempt up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// Delay before re-watching after the watch failed to start.
const REWATCH: Duration = Duration::from_secs(1);

/// Where a namespace is after one attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Nothing left to do: the namespace is gone, not terminating, or finalized.
    Done,
    /// Objects remain (being deleted, or held by finalizers): retry later.
    Waiting(usize),
}

struct Retry {
    attempt: u32,
    due: tokio::time::Instant,
}

pub struct NamespaceController {
    api: Arc<dyn Api>,
    registry: Registry,
    clock: Clock,
}

impl NamespaceController {
    pub fn new(api: Arc<dyn Api>, registry: Registry, clock: Clock) -> Self {
        NamespaceController {
            api,
            registry,
            clock,
        }
    }

    /// Watches namespaces forever, working on each terminating one until it
    /// is finalized.
    pub async fn run(self) {
        let nsr = ResourceRef::core("namespaces");
        let mut queue: BTreeMap<String, Retry> = BTreeMap::new();
        let mut watch = None;
        loop {
            if watch.is_none() {
                // (Re)start from a list so no terminating namespace is missed
                // while the watch was down.
                match self.api.list(&nsr, "", &ListOptions::default()).await {
                    Ok(list) => {
                        let rv = meta::resource_version(&list).to_string();
                        for ns in items(list) {
                            if meta::is_deleting(&ns) {
                                self.enqueue(&mut queue, meta::name(&ns));
                            }
                        }
                        let opts = ListOptions {
                            resource_version: Some(rv),
                            ..Default::default()
                        };
                        match self.api.watch(&nsr, "", &opts).await {
                            Ok(s) => watch = Some(s),
                            Err(e) => tracing::warn!(error = %e.message, "namespace watch failed"),
                        }
                    }
                    Err(e) => tracing::warn!(error = %e.message, "namespace list failed"),
                }
            }

            let now = self.clock.instant();
            let due: Vec<String> = queue
                .iter()
                .filter(|(_, r)| r.due <= now)
                .map(|(n, _)| n.clone())
                .collect();
            for name in due {
                let progress = match self.sync(&name).await {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!(namespace = %name, error = %e.message, "namespace deletion failed");
                        Progress::Waiting(0)
                    }
                };
                match progress {
                    Progress::Done => {
                        queue.remove(&name);
                    }
                    Progress::Waiting(_) => {
                        if let Some(r) = queue.get_mut(&name) {
                            let delay = FIRST_BACKOFF
                                .saturating_mul(1u32 << r.attempt.min(16))
                                .min(MAX_BACKOFF);
                            r.attempt += 1;
                            r.due = self.clock.instant() + delay;
                        }
                    }
                }
            }

            // Nothing queued: nothing to wake for but the watch (a periodic
            // wake-up would cost simulated months millions of them).
            let wake = queue.values().map(|r| r.due).min();
            match watch.as_mut() {
                Some(stream) => {
                    tokio::select! {
                        // A fixed polling order: the same inputs give the same run.
                        biased;
                        ev = stream.next() => match ev {
                            Some(WatchEvent::Added(ns)) | Some(WatchEvent::Modified(ns)) => {
                                if meta::is_deleting(&ns) {
                                    self.enqueue(&mut queue, meta::name(&ns));
                                }
                            }
                            Some(WatchEvent::Deleted(ns)) => {
                                queue.remove(meta::name(&ns));
                            }
                            Some(WatchEvent::Bookmark(_)) => {}
                            Some(WatchEvent::Error(_)) | None => watch = None,
                        },
                        _ = async {
                            match wake {
                                Some(at) => self.clock.sleep_until(at).await,
                                None => std::future::pending().await,
                            }
                        } => {}
                    }
                }
                None => self.clock.sleep(REWATCH).await,
            }
        }
    }

    /// Schedules a namespace now unless it is already scheduled (keeping its
    /// backoff, so a stream of updates cannot make it spin).
    fn enqueue(&self, queue: &mut BTreeMap<String, Retry>, name: &str) {
        if name.is_empty() {
            return;
        }
        queue.entry(name.to_string()).or_insert(Retry {
            attempt: 0,
            due: self.clock.instant(),
        });
    }

    /// One attempt at deleting a namespace: deletes what is in it and, once
    /// nothing is left, finalizes it.
    pub async fn sync(&self, name: &str) -> Result<Progress, ApiError> {
        let nsr = ResourceRef::core("namespaces");
        let ns = match self.api.get(&nsr, "", name).await {
            Ok(ns) => ns,
            Err(e) if e.code == 404 => return Ok(Progress::Done),
            Err(e) => return Err(e),
        };
        if !meta::is_deleting(&ns) {
            return Ok(Progress::Done);
        }
        let remaining = self.delete_content(name).await?;
        if remaining > 0 {
            return Ok(Progress::Waiting(remaining));
        }
        let fins: Vec<Value> = ns
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if fins.iter().any(|f| f.as_str() == Some(FINALIZER)) {
            let kept: Vec<Value> = fins
                .into_iter()
                .filter(|f| f.as_str() != Some(FINALIZER))
                .collect();
            let body = json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name},
                "spec": {"finalizers": kept},
            });
            match self
                .api
                .update(&nsr, "", body, Some("finalize"), &WriteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Progress::Done)
    }

    /// Deletes every object in the namespace; answers how many remain
    /// (including those just asked to go that are held by finalizers or a
    /// grace period).
    async fn delete_content(&self, ns: &str) -> Result<usize, ApiError> {
        let mut remaining = 0;
        for res in manageable(&self.registry)
            .into_iter()
            .filter(|r| r.namespaced())
        {
            let r = resource_ref(&res);
            let list = match self.api.list(&r, ns, &ListOptions::default()).await {
                Ok(l) => l,
                // A custom resource removed meanwhile has nothing left to delete.
                Err(e) if e.code == 404 => continue,
                Err(e) => return Err(e),
            };
            for obj in items(list) {
                remaining += 1;
                if meta::is_deleting(&obj) {
                    continue;
                }
                let opts = DeleteOptions {
                    propagation_policy: Some("Background".into()),
                    precondition_uid: Some(meta::uid(&obj).to_string()),
                    ..Default::default()
                };
                match self.api.delete(&r, ns, meta::name(&obj), &opts).await {
                    Ok(_) => {}
                    // Gone already, or replaced by a namesake that the next
                    // attempt will see.
                    Err(e) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(remaining)
    }
}
