//! Informers shared by the measurements of one test. ClusterLoader2's
//! measurements each start their own informers, and the load test runs
//! several at once on the same objects (WaitForControlledPodsRunning
//! follows every pod of the namespace once per controller kind, four
//! kinds at a time), so each pod event was fetched, decoded and checked
//! four times over. Here measurements that watch the same objects share
//! one informer, as client-go's shared informer factory shares them: a
//! handler registered late is replayed the cached objects, so what each
//! measurement sees is what an informer of its own would have shown it.
//! The informer stops when the last measurement using it lets go.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use kubesim_runtime::{Change, Clock, HandlerId, Informer, ResourceRef};
use parking_lot::Mutex;

/// What an informer watches: resource, namespace, label and field
/// selectors.
type Key = (ResourceRef, String, Option<String>, Option<String>);

#[derive(Default)]
pub struct InformerPool {
    running: Mutex<HashMap<Key, Weak<Pooled>>>,
}

/// A running informer of the pool; dropping the last handle stops it.
pub struct Pooled {
    informer: Arc<Informer>,
    task: tokio::task::AbortHandle,
}

impl Drop for Pooled {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl InformerPool {
    /// The running [`checked`](Informer::checked) informer on these
    /// objects, started if none is.
    pub fn get(
        &self,
        api: Arc<dyn kubesim_runtime::Api>,
        resource: ResourceRef,
        namespace: &str,
        label_selector: Option<String>,
        field_selector: Option<String>,
        clock: Clock,
    ) -> Arc<Pooled> {
        let key = (
            resource.clone(),
            namespace.to_string(),
            label_selector.clone(),
            field_selector.clone(),
        );
        let mut running = self.running.lock();
        running.retain(|_, p| p.strong_count() > 0);
        if let Some(p) = running.get(&key).and_then(Weak::upgrade) {
            return p;
        }
        let informer = Informer::filtered(
            api,
            resource,
            namespace,
            label_selector,
            field_selector,
            clock,
        )
        .checked();
        let task = tokio::spawn(informer.clone().run()).abort_handle();
        let pooled = Arc::new(Pooled { informer, task });
        running.insert(key, Arc::downgrade(&pooled));
        pooled
    }
}

impl Pooled {
    pub fn informer(&self) -> &Arc<Informer> {
        &self.informer
    }

    /// Registers `handler` for as long as the returned subscription is
    /// kept; the informer runs at least that long.
    pub fn subscribe(
        self: &Arc<Self>,
        handler: impl Fn(&Change) + Send + Sync + 'static,
    ) -> Subscription {
        Subscription {
            id: self.informer.on_change(handler),
            pooled: self.clone(),
        }
    }
}

/// A handler registered on a pooled informer; dropping it unregisters
/// the handler.
pub struct Subscription {
    pooled: Arc<Pooled>,
    id: HandlerId,
}

impl Subscription {
    /// The informer the handler is registered on.
    pub fn informer(&self) -> &Arc<Informer> {
        self.pooled.informer()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.pooled.informer.remove_handler(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{ctx, pod, pods};
    use kubesim_runtime::{Change, ResourceRef, WriteOptions};
    use parking_lot::Mutex;
    use serde_json::json;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn measurements_on_the_same_objects_share_one_informer_until_the_last_lets_go() {
        let (ctx, api) = ctx().await;
        let get = |resource: ResourceRef, label: Option<&str>| {
            ctx.informer(resource, "", label.map(String::from), None)
        };
        // A pod created, and a second for its informers to hear of it.
        let create = |name: &'static str| {
            let (api, clock) = (api.clone(), ctx.clock.clone());
            async move {
                let p = pod(name, json!({}), None, json!({}));
                api.create(&pods(), "default", p, &WriteOptions::default())
                    .await
                    .unwrap();
                clock.sleep(std::time::Duration::from_secs(1)).await;
            }
        };
        let first = get(pods(), None);
        let seen = Arc::new(Mutex::new(Vec::<(u8, String)>::new()));
        let s = seen.clone();
        let a = first.subscribe(move |c| {
            if let Change::Added(o) = c {
                s.lock().push((1, kubesim_core::meta::name(o).to_string()));
            }
        });
        first.informer().wait_synced().await;
        create("p1").await;

        // The same objects: the running informer, and a late handler is
        // replayed what it holds. Other selectors get an informer of their own.
        let second = get(pods(), None);
        assert!(Arc::ptr_eq(&first, &second));
        assert!(!Arc::ptr_eq(&first, &get(pods(), Some("a=b"))));
        let s = seen.clone();
        let b = second.subscribe(move |c| {
            if let Change::Added(o) = c {
                s.lock().push((2, kubesim_core::meta::name(o).to_string()));
            }
        });
        assert_eq!(*seen.lock(), [(1, "p1".to_string()), (2, "p1".to_string())]);

        // A dropped subscription hears no more; the informer runs on for
        // the other, and stops when the last handle goes.
        drop(a);
        create("p2").await;
        assert_eq!(seen.lock().last(), Some(&(2, "p2".to_string())));
        assert_eq!(seen.lock().len(), 3);
        let weak = Arc::downgrade(&first);
        drop((first, second, b));
        assert!(weak.upgrade().is_none());
        let fresh = get(pods(), None);
        assert!(!fresh.informer().has_synced());
    }
}
