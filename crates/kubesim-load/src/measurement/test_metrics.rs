//! TestMetrics: ClusterLoader2's bundle of cluster-component metrics,
//! started once at the beginning of a test and gathered at its end.
//!
//! Of its parts, kubesim measures ResourceUsageSummary (its own process)
//! and MetricsForE2E (the API server's `/metrics`). The others observe
//! components kubesim does not have as separate processes on control-plane
//! hosts (etcd, the scheduler's and controller-manager's metrics ports,
//! profiling endpoints, system pods, kernel OOM kills on nodes); they are
//! named in the call's note as skipped, and no figure is made up for them.

use crate::params::{self, Params};
use crate::report::Summary;

use super::resource_usage::ResourceUsage;
use super::{metrics_for_e2e, Ctx, Measurement, MeasurementError, NOT_APPLICABLE};

const METHOD: &str = "TestMetrics";

/// The bundle's parts kubesim cannot measure.
pub const SKIPPED_PARTS: &[&str] = &[
    "EtcdMetrics",
    "SchedulingMetrics",
    "CPUProfile",
    "MemoryProfile",
    "BlockProfile",
    "SystemPodMetrics",
    "ClusterOOMsTracker",
];

#[derive(Default)]
pub struct TestMetrics {
    resource_usage: ResourceUsage,
}

fn note(measured: &str) -> String {
    format!(
        "measured {measured}; skipped {}: {NOT_APPLICABLE}",
        SKIPPED_PARTS.join(", ")
    )
}

/// The parameters of a forwarded call: the caller's, with `action` set.
fn with_action(p: &Params, action: &str) -> Params {
    let mut q = p.clone();
    q.insert("action".into(), action.into());
    q
}

#[async_trait::async_trait]
impl Measurement for TestMetrics {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::required_string(p, "action")?.as_str() {
            "start" => {
                self.resource_usage
                    .execute(ctx, identifier, &with_action(p, "start"))
                    .await?;
                Err(MeasurementError::partial(
                    note("ResourceUsageSummary"),
                    Vec::new(),
                ))
            }
            "gather" => {
                let mut summaries = vec![metrics_for_e2e::gather(ctx).await?];
                summaries.extend(
                    self.resource_usage
                        .execute(ctx, identifier, &with_action(p, "gather"))
                        .await?,
                );
                Err(MeasurementError::partial(
                    note("MetricsForE2E, ResourceUsageSummary"),
                    summaries,
                ))
            }
            // They pause SystemPodMetrics' restart counting, which is skipped.
            "pauseSystemPodMetrics" | "unpauseSystemPodMetrics" => Err(MeasurementError::skipped(
                format!("{NOT_APPLICABLE} (SystemPodMetrics)"),
            )),
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}
