//! Creates prepared before they are sent, on the helper thread.
//!
//! A simulation knows each job's pod and submit time long before it
//! creates the pod. What the server does with a create before the commit
//! (check, default, record the managedFields entry, admit, validate)
//! depends on the object, the request, the time, the random values drawn
//! (uid, suffixes) and, for admission, the namespaces and PriorityClasses
//! stored. A caller that says what it will create and when
//! ([`Api::create_ahead`]) fixes the random values then: the create draws
//! them from a generator of its own, seeded by one draw taken at once
//! from the server's, so they do not depend on when or where they are
//! drawn. With a helper thread the server prepares the create there;
//! without one, the create is prepared when it comes, from the same
//! seed, so the two give the same objects.
//!
//! The create, when it comes, takes the announcement for its name. It
//! uses it if the request is the one announced (body, options, manager,
//! time) and no namespace or PriorityClass was written since; anything
//! else is created as if never announced.
//!
//! [`Api::create_ahead`]: kubesim_runtime::Api::create_ahead

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kubesim_core::{meta, ApiError, ResourceInfo};
use kubesim_runtime::{Promise, Rng, WriteOptions};
use parking_lot::Mutex;
use serde_json::Value;

use super::admission::admits_updates_alone;
use super::bounded::Bounded;
use super::write::manager;
use super::{Caller, Encoded, Server};

/// Announcements kept at most; the oldest go first (creates that never
/// came, such as jobs rejected).
const KEPT: usize = 1024;

/// What a create made ahead gives: the object to commit, the warnings the
/// answer carries and, when made on the helper, its bytes; or the error
/// the create answers.
type CreateOutcome = Result<(Value, Vec<String>, Option<Encoded>), ApiError>;

/// The announced creates, and a count of the writes that may change what
/// admitting a create gives.
#[derive(Default)]
pub(crate) struct Announced {
    /// By storage resource, namespace and name.
    inner: Mutex<Bounded<(String, String, String), Announcement, KEPT>>,
    epoch: AtomicU64,
}

struct Announcement {
    /// Shared with the helper thread, which copies it there.
    body: Arc<Value>,
    opts: WriteOptions,
    manager: String,
    now: String,
    epoch: u64,
    draws: Rng,
    /// Made on the helper thread, when there is one.
    made: Option<OutcomeAhead>,
}

enum OutcomeAhead {
    Ahead(Promise<CreateOutcome>),
    /// Made already (tests make announced creates before changing what
    /// they read).
    #[cfg(test)]
    Ready(CreateOutcome),
}

fn key(resource: &ResourceInfo, ns: &str, name: &str) -> (String, String, String) {
    (resource.storage_key(), ns.to_string(), name.to_string())
}

/// Whether what creating an object of `resource` gives depends only on
/// the request, the time, the draws and the namespaces and PriorityClasses
/// stored (see `admission::admit`).
fn creates_alone(resource: &ResourceInfo) -> bool {
    resource.verbs.contains(&"create")
        && !resource.is_review()
        && !resource.is_custom()
        && admits_updates_alone(resource)
        && !(resource.group.is_empty() && resource.plural == "bindings")
        // DefaultStorageClass reads the StorageClasses stored.
        && !(resource.group.is_empty() && resource.plural == "persistentvolumeclaims")
        // A legacy token Secret reads its service account.
        && !(resource.group.is_empty() && resource.plural == "secrets")
}

impl Server {
    /// Notes that `body` will be created in `ns` at `now` (as objects
    /// show times) with `opts`, and prepares it on the helper thread if
    /// the server has one. Its random values are fixed now (see the
    /// module's documentation). Does nothing for an object without a name
    /// or of a resource whose admission reads more.
    pub fn create_ahead(
        self: &Arc<Self>,
        resource: &Arc<ResourceInfo>,
        ns: &str,
        body: &Value,
        opts: &WriteOptions,
        now: &str,
        caller: &Caller,
    ) {
        let name = meta::name(body);
        if name.is_empty() || opts.dry_run || !creates_alone(resource) {
            return;
        }
        if self.stored_as(resource).is_some() {
            return;
        }
        let draws = self.rng.fork();
        let manager = manager(opts, caller);
        let body = Arc::new(body.clone());
        let made = self.ahead().map(|ahead| {
            let (server, resource, ns) = (self.clone(), resource.clone(), ns.to_string());
            let (body, opts, manager, now) =
                (body.clone(), opts.clone(), manager.clone(), now.to_string());
            let draws = draws.clone();
            OutcomeAhead::Ahead(ahead.spawn(move || {
                let body = Value::clone(&body);
                let (mut obj, warnings) =
                    server.checked_create(&resource, &ns, body, &opts, &manager, &now, &draws)?;
                let encoded = Encoded::of(&mut obj, None);
                Ok((obj, warnings, encoded))
            }))
        });
        let announcement = Announcement {
            body,
            opts: opts.clone(),
            manager,
            now: now.to_string(),
            epoch: self.announced.epoch.load(Ordering::Acquire),
            draws,
            made,
        };
        let gone = self
            .announced
            .inner
            .lock()
            .insert(key(resource, ns, name), announcement);
        if let Some(ahead) = self.ahead() {
            ahead.drop_later(gone);
        }
    }

    /// The create of `obj` as announced, if it was, by the same manager
    /// at `now` with the same options and body, and no namespace or
    /// PriorityClass was written since: made ahead, or made now with the
    /// announced draws. `obj` back when it is to be made as if not
    /// announced.
    pub(crate) fn take_announced(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
        manager: &str,
        now: &str,
    ) -> Result<CreateOutcome, Value> {
        let Some(a) = self.announced.take(resource, ns, meta::name(&obj)) else {
            return Err(obj);
        };
        let fits = a.manager == manager
            && a.now == now
            && a.opts == *opts
            && a.epoch == self.announced.epoch.load(Ordering::Acquire)
            && *a.body == obj;
        let ahead = self.ahead();
        if !fits {
            if let Some(ahead) = ahead {
                ahead.drop_later(a);
            }
            return Err(obj);
        }
        let made = match a.made {
            Some(OutcomeAhead::Ahead(made)) => made.get(),
            #[cfg(test)]
            Some(OutcomeAhead::Ready(made)) => made,
            None => {
                let made = self.checked_create(resource, ns, obj, opts, manager, now, &a.draws);
                return Ok(made.map(|(obj, warnings)| (obj, warnings, None)));
            }
        };
        // The request's copies are freed on the helper thread.
        if let Some(ahead) = ahead {
            ahead.drop_later((obj, a.body));
        }
        Ok(made)
    }

    /// After a commit to `resource`: a write of a namespace or a
    /// PriorityClass outdates what creates made ahead admitted.
    pub(crate) fn after_write_announced(&self, resource: &ResourceInfo) {
        let admission_reads = match resource.group.as_str() {
            "" => resource.plural == "namespaces",
            "scheduling.k8s.io" => resource.plural == "priorityclasses",
            _ => false,
        };
        if admission_reads {
            self.announced.epoch.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Announced {
    /// Makes every announced create being made ahead now.
    #[cfg(test)]
    fn make_all(&self) {
        for a in self.inner.lock().values_mut() {
            if let Some(OutcomeAhead::Ahead(p)) = a.made.take() {
                a.made = Some(OutcomeAhead::Ready(p.get()));
            }
        }
    }

    /// The announcement of a create, taken; its key is built only when
    /// some create is announced (every create asks).
    fn take(&self, resource: &ResourceInfo, ns: &str, name: &str) -> Option<Announcement> {
        let mut st = self.inner.lock();
        if st.is_empty() {
            return None;
        }
        st.remove(&key(resource, ns, name))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kubesim_runtime::{Ahead, Api, Clock, ResourceRef};
    use kubesim_store::{MemStore, Store};
    use serde_json::json;

    use super::*;
    use crate::inprocess::InProcess;

    async fn server(helper: bool) -> (Arc<Server>, InProcess, Clock) {
        let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
        let clock = Clock::simulated(jiff::Timestamp::constant(1_767_225_600, 0));
        let server = Server::new(store, clock.clone(), Rng::seeded(1));
        if helper {
            server.decode_ahead(&Ahead::start());
        }
        server.bootstrap().await.unwrap();
        let api = InProcess::new(server.clone(), "test");
        (server, api, clock)
    }

    fn pod(name: &str, ns: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    }

    /// Runs the same requests on a server with a helper thread and on one
    /// without; returns every answer of each, then the pods' stored bytes.
    async fn both(
        run: impl Fn(InProcess, Clock) -> futures::future::BoxFuture<'static, Vec<Value>>,
    ) -> (Vec<Value>, Vec<Value>) {
        let mut out = Vec::new();
        for helper in [true, false] {
            let (server, api, clock) = server(helper).await;
            let mut answers = run(api, clock).await;
            let pods = server.resource("", "v1", "pods").unwrap().storage_key();
            let stored = server.store.snapshot(&pods, None).unwrap();
            answers.extend(
                stored
                    .items
                    .values()
                    .map(|r| Value::String(String::from_utf8(r.bytes.to_vec()).unwrap())),
            );
            out.push(answers);
        }
        let without = out.pop().unwrap();
        (out.pop().unwrap(), without)
    }

    #[tokio::test(start_paused = true)]
    async fn announced_creates_are_the_same_with_or_without_the_helper() {
        let (with, without) = both(|api, clock| {
            Box::pin(async move {
                let pods = ResourceRef::core("pods");
                let now = meta::format_time(clock.now());
                let opts = WriteOptions::default();
                let mut out = Vec::new();
                for i in 0..6 {
                    api.create_ahead(
                        &pods,
                        "default",
                        &pod(&format!("p{i}"), "default"),
                        &opts,
                        &now,
                    );
                }
                // Made as announced; then in another order; one never
                // announced in between.
                for i in [0, 2, 1] {
                    out.push(
                        api.create(&pods, "default", pod(&format!("p{i}"), "default"), &opts)
                            .await
                            .unwrap(),
                    );
                }
                out.push(
                    api.create(&pods, "default", pod("q", "default"), &opts)
                        .await
                        .unwrap(),
                );
                // Another body than announced.
                let mut other = pod("p3", "default");
                other["metadata"]["labels"] = json!({"a": "b"});
                out.push(api.create(&pods, "default", other, &opts).await.unwrap());
                // Later than announced.
                clock.sleep(Duration::from_secs(5)).await;
                out.push(
                    api.create(&pods, "default", pod("p4", "default"), &opts)
                        .await
                        .unwrap(),
                );
                out
            })
        })
        .await;
        assert_eq!(with, without);
        let (answers, stored) = with.split_at(6);
        assert_eq!(stored.len(), 6);
        let uids: std::collections::BTreeSet<&str> = answers.iter().map(meta::uid).collect();
        assert_eq!(uids.len(), answers.len());
        assert_eq!(with[4]["metadata"]["labels"]["a"], "b");
        assert_ne!(
            with[5]["metadata"]["creationTimestamp"],
            with[0]["metadata"]["creationTimestamp"]
        );
        // The token volume's suffix is drawn too, and differs.
        let volume = |p: &Value| {
            p["spec"]["volumes"][0]["name"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert!(volume(&with[0]).starts_with("kube-api-access-"));
        assert_ne!(volume(&with[0]), volume(&with[1]));
    }

    #[tokio::test(start_paused = true)]
    async fn namespaces_and_priority_classes_written_since_are_admitted_anew() {
        let (server, api, clock) = server(true).await;
        let now = meta::format_time(clock.now());
        let opts = WriteOptions::default();
        let (pods, namespaces) = (ResourceRef::core("pods"), ResourceRef::core("namespaces"));
        let classes = ResourceRef::new("scheduling.k8s.io", "v1", "priorityclasses");
        api.create(
            &namespaces,
            "",
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "doomed"}}),
            &opts,
        )
        .await
        .unwrap();
        api.create_ahead(&pods, "doomed", &pod("p", "doomed"), &opts, &now);
        api.create_ahead(&pods, "default", &pod("p", "default"), &opts, &now);
        // Both made before the state they read changes.
        server.announced.make_all();
        api.delete(&namespaces, "", "doomed", &Default::default())
            .await
            .unwrap();
        let refused = api
            .create(&pods, "doomed", pod("p", "doomed"), &opts)
            .await
            .unwrap_err();
        assert_eq!(refused.code, 403, "{}", refused.message);
        api.create(
            &classes,
            "",
            json!({"apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000,
            "globalDefault": true}),
            &opts,
        )
        .await
        .unwrap();
        let p = api
            .create(&pods, "default", pod("p", "default"), &opts)
            .await
            .unwrap();
        assert_eq!(p["spec"]["priority"], 1000);
        assert_eq!(p["spec"]["priorityClassName"], "high");
    }
}
