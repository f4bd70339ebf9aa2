//! The controller's writes for stable storage: a pod's claims are created
//! before the pod, and every claim's owner references are kept as the
//! retention policy asks (see `retention`). Claims are read from the
//! shared informer; nothing here ever deletes one.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{EventType, WriteOptions};
use serde_json::Value;

use super::claims::{self, claims_ref};
use super::retention::{self, Owner, Policy};
use super::StatefulSetController;
use crate::pods;

impl StatefulSetController {
    /// Readies the claims of pod `pod_name` (ordinal `i`, about to be
    /// created): creates the missing ones. False when an existing claim is
    /// being deleted or, under `whenScaled: Delete`, still belongs to an
    /// earlier pod of that name and is about to be collected; the pod then
    /// waits for it to go (its deletion queues the set again), as upstream
    /// never starts a pod on storage that is going away.
    pub(super) async fn prepare_claims(
        &self,
        set: &Value,
        i: i64,
        pod_name: &str,
    ) -> Result<bool, ApiError> {
        let templates = claims::templates(set);
        if templates.is_empty() {
            return Ok(true);
        }
        let policy = Policy::of(set);
        let cache = self.claims.cache();
        let ns = meta::namespace(set);
        let names: Vec<String> = templates
            .iter()
            .map(|t| claims::claim_name(t, meta::name(set), i))
            .collect();
        for name in &names {
            if let Some(c) = cache.get(ns, name) {
                if meta::is_deleting(&c) || retention::blocks_new_pod(&c, pod_name, policy) {
                    return Ok(false);
                }
            }
        }
        let pod = Owner::pod(pod_name, "");
        for (t, name) in templates.iter().zip(&names) {
            if !cache.contains(ns, name) {
                self.create_claim(set, t, i, &pod, policy).await?;
            }
        }
        Ok(true)
    }

    /// Creates the claim of ordinal `i` from template `t`, with the owner
    /// references the policy gives a claim of a wanted ordinal.
    async fn create_claim(
        &self,
        set: &Value,
        t: &Value,
        i: i64,
        pod: &Owner<'_>,
        policy: Policy,
    ) -> Result<(), ApiError> {
        let mut claim = claims::new_claim(set, t, i);
        retention::set_owners(&mut claim, &Owner::set(set), pod, policy, false);
        let name = meta::name(&claim).to_string();
        let r = self
            .ctx
            .api
            .create(
                &claims_ref(),
                meta::namespace(set),
                claim,
                &WriteOptions::default(),
            )
            .await;
        match r {
            Ok(_) => {
                self.ctx.recorder.record(
                    set,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!(
                        "create Claim {name} Pod {} in StatefulSet {} success",
                        pod.name,
                        meta::name(set)
                    ),
                );
                Ok(())
            }
            // Made by an earlier pass the cache has not shown yet, or by
            // the user: either way the pod can use it.
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => {
                self.ctx.recorder.record(
                    set,
                    EventType::Warning,
                    "FailedCreate",
                    format!(
                        "create Claim {name} for Pod {} in StatefulSet {} failed error: {}",
                        pod.name,
                        meta::name(set),
                        e.message
                    ),
                );
                Err(e)
            }
        }
    }

    /// Brings the claims of every pod of the set in line with the
    /// retention policy (`replicas` tells which ordinals are scaled down),
    /// and recreates the missing claims of pods still Pending, which could
    /// not start without them.
    pub(super) async fn reconcile_claims(
        &self,
        set: &Value,
        by_ordinal: &BTreeMap<i64, Arc<Value>>,
        replicas: i64,
    ) -> Result<(), ApiError> {
        let templates = claims::templates(set);
        if templates.is_empty() {
            return Ok(());
        }
        let policy = Policy::of(set);
        let cache = self.claims.cache();
        let ns = meta::namespace(set);
        let so = Owner::set(set);
        for (&i, pod) in by_ordinal {
            let scaled_down = i >= replicas;
            let po = Owner::pod(meta::name(pod), meta::uid(pod));
            for t in templates {
                let name = claims::claim_name(t, meta::name(set), i);
                let Some(claim) = cache.get(ns, &name) else {
                    let pending = matches!(pods::phase(pod), "" | "Pending");
                    if !scaled_down && pending && !meta::is_deleting(pod) {
                        self.create_claim(set, t, i, &po, policy).await?;
                    }
                    continue;
                };
                if retention::up_to_date(&claim, &so, &po, policy, scaled_down) {
                    continue;
                }
                let change = |c: &mut Value| {
                    if retention::up_to_date(c, &so, &po, policy, scaled_down) {
                        return false;
                    }
                    retention::set_owners(c, &so, &po, policy, scaled_down);
                    true
                };
                crate::edit(
                    &*self.ctx.api,
                    &claims_ref(),
                    ns,
                    &name,
                    meta::uid(&claim),
                    &change,
                )
                .await?;
            }
        }
        Ok(())
    }
}
