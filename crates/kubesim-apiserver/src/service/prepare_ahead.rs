//! Updates prepared before they are sent, on the helper thread.
//!
//! In a simulation, an emulated kubelet knows long before it acts what
//! it will send when a running pod finishes: the status patch, rendered
//! ahead, due when the pod's run time is over. Everything the server does
//! with that patch before the commit (apply it, default, validate, record
//! its managedFields entry) depends only on the object as stored, the
//! patch, the request's options and the time, so it can be done as soon
//! as the caller says what it will send ([`Api::patch_ahead`]). The result
//! is kept in the stored revision's decode slot (`predecode`), and the
//! patch, when it comes, commits it if the object is still that revision
//! and the request is the one announced, at the time announced. Anything
//! else (the object written meanwhile, another patch, a random draw
//! needed, a failure) leaves the patch to be done when it comes, so what a
//! run computes does not depend on it.
//!
//! [`Api::patch_ahead`]: kubesim_runtime::Api::patch_ahead

use std::cell::Cell;

use kubesim_core::patch::{self, PatchBody, PatchType};
use kubesim_core::{meta, ResourceInfo};
use kubesim_runtime::WriteOptions;
use serde_json::Value;

use super::admission::admits_updates_alone;
use super::managed_fields_text::Managed;
use super::write::{manager, patch_reads_managed, same_object, Part};
use super::{Caller, Encoded, Server};

/// A patch a caller says it will send, and when.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnouncedPatch {
    pub kind: PatchType,
    pub body: Value,
    pub subresource: Option<String>,
    pub opts: WriteOptions,
    /// The time the request will be made at, as objects show times.
    pub now: String,
}

/// An update prepared for a stored revision.
pub(crate) struct Prepared {
    ask: AnnouncedPatch,
    manager: String,
    /// The object to commit, without its managedFields when the revision
    /// was decoded apart (`managed` then holds the list as text).
    pub(super) new: Value,
    pub(super) managed: Managed,
    pub(super) warnings: Vec<String>,
    /// `new` serialized, its resourceVersion left to stamp.
    pub(super) encoded: Option<Encoded>,
}

impl Server {
    /// Prepares the update `ask` will make of the object as stored now,
    /// on the calling thread, and keeps it for the request; does nothing
    /// unless the server decodes ahead, or if the update cannot be
    /// prepared (see the module's documentation).
    pub fn patch_ahead(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        ask: AnnouncedPatch,
        caller: &Caller,
    ) {
        let Some(slots) = self.predecode.get() else {
            return;
        };
        if ask.kind == PatchType::Apply
            || ask.opts.force
            || ask.opts.dry_run
            || self.stored_as(resource).is_some()
            || !admits_updates_alone(resource)
            || patch_reads_managed(ask.kind, &PatchBody::Value(&ask.body))
        {
            return;
        }
        let Ok(part) = Part::of(resource, ask.subresource.as_deref()) else {
            return;
        };
        let Ok(rec) = self.get_record(resource, ns, name) else {
            return;
        };
        let Ok((cur, managed, entries)) = self.decode_for_update(&rec) else {
            return;
        };
        let manager = manager(&ask.opts, caller);
        // As `patch` and `update_with` do it.
        let prepare = || -> Option<(Value, Vec<String>)> {
            let body = PatchBody::Value(&ask.body);
            let (proposed, warnings) = self
                .patched(ask.kind, resource, &cur, body, &ask.opts)
                .ok()?;
            let rv = meta::resource_version(&proposed);
            if (managed.is_some() && patch::managed_fields::raw(&proposed).is_some())
                || (!rv.is_empty() && rv != rec.rev.to_string())
            {
                return None;
            }
            let drew = Cell::new(false);
            let new = self
                .prepare_update(
                    resource,
                    ns,
                    name,
                    &cur,
                    managed.as_deref(),
                    entries,
                    proposed,
                    part,
                    Some(&manager),
                    &ask.now,
                    &mut || {
                        drew.set(true);
                        String::new()
                    },
                )
                .ok()?;
            (!drew.get() && !same_object(&new, &cur)).then_some((new, warnings))
        };
        if let Some((mut new, warnings)) = prepare() {
            let encoded = Encoded::of(&mut new, managed.as_deref());
            slots.keep(
                rec,
                Prepared {
                    ask,
                    manager,
                    new,
                    managed,
                    warnings,
                    encoded,
                },
            );
        }
    }
}

impl Prepared {
    /// Whether this is the update a patch makes now: announced with that
    /// body, subresource, options and manager, for this time.
    pub(super) fn answers(
        &self,
        kind: PatchType,
        body: &PatchBody<'_>,
        sub: Option<&str>,
        opts: &WriteOptions,
        manager: &str,
        now: &str,
    ) -> bool {
        let PatchBody::Value(body) = body else {
            return false;
        };
        self.ask.kind == kind
            && self.ask.subresource.as_deref() == sub
            && self.ask.opts == *opts
            && self.manager == manager
            && self.ask.now == now
            && self.ask.body == **body
    }
}

#[cfg(test)]
impl Prepared {
    /// An update of nothing, for tests of where prepared updates are kept.
    pub(super) fn nothing() -> Prepared {
        Prepared {
            ask: AnnouncedPatch {
                kind: PatchType::Merge,
                body: Value::Null,
                subresource: None,
                opts: WriteOptions::default(),
                now: String::new(),
            },
            manager: String::new(),
            new: Value::Null,
            managed: None,
            warnings: Vec::new(),
            encoded: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use kubesim_runtime::{Ahead, Api, Clock, ResourceRef, Rng};
    use kubesim_store::{MemStore, Store};
    use serde_json::json;

    use super::*;
    use crate::inprocess::InProcess;

    #[tokio::test(start_paused = true)]
    async fn an_announced_patch_is_committed_as_prepared_if_made_as_announced() {
        let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
        let clock = Clock::simulated(jiff::Timestamp::constant(1_767_225_600, 0));
        let server = Server::new(store, clock.clone(), Rng::seeded(1));
        server.decode_ahead(&Ahead::start());
        server.bootstrap().await.unwrap();
        let api = InProcess::new(server.clone(), "test");
        let pods = ResourceRef::core("pods");
        let info = server.resource("", "v1", "pods").unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        api.create(&pods, "default", pod, &Default::default())
            .await
            .unwrap();
        let kubelet = WriteOptions {
            field_manager: Some("kubelet".into()),
            ..Default::default()
        };
        let status = |phase: &str| json!({"status": {"phase": phase}});
        let prepared = || {
            let rec = server.get_record(&info, "default", "p").unwrap();
            server.predecode.get().unwrap().holds_prepared(&rec)
        };
        let patch = |body: Value| {
            api.patch_value(
                &pods,
                "default",
                "p",
                PatchType::Merge,
                body,
                Some("status"),
                &kubelet,
            )
        };
        let now = meta::format_time(clock.now());
        let announce = |body: &Value, now: &str| {
            api.patch_ahead(
                &pods,
                "default",
                "p",
                PatchType::Merge,
                body,
                Some("status"),
                &kubelet,
                now,
            )
        };

        announce(&status("Running"), &now);
        assert!(prepared());
        let running = patch(status("Running")).await.unwrap();
        assert_eq!(running["status"]["phase"], "Running");
        assert!(!prepared());

        // Another body, or another time, than announced: made anew.
        announce(&status("Succeeded"), &now);
        assert!(prepared());
        let failed = patch(status("Failed")).await.unwrap();
        assert_eq!(failed["status"]["phase"], "Failed");
        assert!(!prepared());
        announce(&status("Succeeded"), &now);
        clock.sleep(Duration::from_secs(5)).await;
        let later = meta::format_time(clock.now());
        assert_ne!(later, now);
        let done = patch(status("Succeeded")).await.unwrap();
        let entry = done["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["manager"] == "kubelet")
            .unwrap();
        assert_eq!(entry["time"], later.as_str());

        // Nothing is prepared that needs the object's managedFields.
        let reads = json!({"metadata": {"managedFields": []}, "status": {"phase": "Failed"}});
        announce(&reads, &later);
        assert!(!prepared());
    }
}
