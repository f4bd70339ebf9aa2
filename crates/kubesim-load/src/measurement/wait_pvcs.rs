//! WaitForBoundPVCs: a single call that waits until exactly
//! `desiredPVCCount` of the selected PersistentVolumeClaims are Bound and
//! the rest are at most Pending (none Lost), checking every 5 s, failing
//! after `timeout` (default 60 s) as ClusterLoader2 does.

use std::time::Duration;

use kubesim_gocompat::duration::format_std;
use kubesim_runtime::ResourceRef;
use serde_json::Value;
use tokio::task::JoinSet;

use crate::params::{self, Params};
use crate::report::Summary;

use super::wait_pods::PodSelector;
use super::{Ctx, Measurement, MeasurementError};

const METHOD: &str = "WaitForBoundPVCs";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
const INTERVAL: Duration = Duration::from_secs(5);

pub struct WaitForBoundPVCs;

/// Claims by phase: (created, bound, pending).
fn count(pvcs: &[std::sync::Arc<Value>]) -> (usize, usize, usize) {
    let phase = |p: &Value| {
        p.pointer("/status/phase")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let bound = pvcs
        .iter()
        .filter(|p| phase(p).as_deref() == Some("Bound"))
        .count();
    // A claim with no phase yet is Pending, as the API defaults it.
    let pending = pvcs
        .iter()
        .filter(|p| matches!(phase(p).as_deref(), None | Some("Pending")))
        .count();
    (pvcs.len(), bound, pending)
}

#[async_trait::async_trait]
impl Measurement for WaitForBoundPVCs {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        _identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let desired = params::int(p, "desiredPVCCount")?.ok_or_else(|| {
            MeasurementError::failed(format!(
                "{METHOD}: parameter \"desiredPVCCount\" is required"
            ))
        })?;
        let desired = usize::try_from(desired).map_err(|_| {
            MeasurementError::failed(format!("{METHOD}: desiredPVCCount must be >= 0"))
        })?;
        let sel = PodSelector::parse(p)?;
        let timeout = params::duration_or(p, "timeout", DEFAULT_TIMEOUT)?;
        let informer = kubesim_runtime::Informer::filtered(
            ctx.cluster.api(),
            ResourceRef::core("persistentvolumeclaims"),
            &sel.namespace,
            sel.label_selector.clone(),
            sel.field_selector.clone(),
            ctx.clock.clone(),
        )
        .checked();
        let mut tasks = JoinSet::new();
        tasks.spawn(informer.clone().run());
        let deadline = ctx.clock.instant() + timeout;
        let mut bound = 0;
        loop {
            let next = ctx.clock.instant() + INTERVAL;
            if next > deadline {
                ctx.clock.sleep_until(deadline).await;
                break;
            }
            ctx.clock.sleep_until(next).await;
            if !informer.has_synced() {
                continue;
            }
            let (created, b, pending) = count(&informer.cache().list());
            bound = b;
            if created == b + pending && b == desired {
                return Ok(Vec::new());
            }
        }
        Err(MeasurementError::failed(format!(
            "{METHOD}: timeout after {} while waiting for {desired} PVCs to be bound in namespace '{}' \
             with labels '{}' and fields '{}' - only {bound} found bound",
            format_std(timeout),
            sel.namespace,
            sel.label_selector.as_deref().unwrap_or(""),
            sel.field_selector.as_deref().unwrap_or(""),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::*;
    use serde_json::json;

    fn params(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    fn pvcs() -> ResourceRef {
        ResourceRef::core("persistentvolumeclaims")
    }

    #[tokio::test(start_paused = true)]
    async fn counts_bound_claims_and_times_out_with_the_count() {
        let (ctx, api) = ctx().await;
        for n in ["a", "b"] {
            let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": n, "labels": {"group": "load"}},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}});
            create(&api, &pvcs(), "default", claim).await;
        }
        patch_status_of(&api, &pvcs(), "default", "a", json!({"phase": "Bound"})).await;
        let p = params(
            json!({"desiredPVCCount": 1, "labelSelector": "group = load", "timeout": "20s"}),
        );
        WaitForBoundPVCs.execute(&ctx, "x", &p).await.unwrap();
        let p = params(
            json!({"desiredPVCCount": 2, "labelSelector": "group = load", "timeout": "20s"}),
        );
        let e = WaitForBoundPVCs.execute(&ctx, "x", &p).await.unwrap_err();
        assert!(e.message.ends_with("only 1 found bound"), "{}", e.message);
        let p = params(json!({"desiredPVCCount": -1}));
        assert!(WaitForBoundPVCs.execute(&ctx, "x", &p).await.is_err());
    }
}
