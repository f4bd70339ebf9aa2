//! Measurements whose subject kubesim cannot provide, reported as skipped
//! with the reason rather than refused (which would stop the whole config)
//! or faked (which would put an invented number in a report).
//!
//! These are probes of what runs inside pods and nodes (network, DNS,
//! add-ons such as metrics-server or Cilium): they have nothing to measure
//! on emulated nodes, whose pods run no containers.

use crate::params::Params;
use crate::report::Summary;

use super::{Ctx, Measurement, MeasurementError, NOT_APPLICABLE};

/// Methods that observe containers, node networking or node add-ons, with
/// what each one would have observed.
pub const NOT_APPLICABLE_METHODS: &[(&str, &str)] = &[
    (
        "InClusterNetworkLatency",
        "its ping pods measure pod-to-pod round trips; emulated pods run no containers",
    ),
    (
        "DnsLookupLatency",
        "its prober pods resolve names through cluster DNS; emulated pods run no containers",
    ),
    (
        "DnsPropagation",
        "its prober pods watch DNS records appear; emulated pods run no containers",
    ),
    (
        "DNSPerformanceK",
        "its client pods query cluster DNS; emulated pods run no containers",
    ),
    (
        "NodeLocalDNSLatencyPrometheus",
        "it reads NodeLocal DNSCache's metrics; emulated nodes run no node-local DNS",
    ),
    (
        "NetworkPolicyEnforcement",
        "its client pods probe connectivity through network policies; emulated nodes enforce none",
    ),
    (
        "CiliumEndpointPropagationDelay",
        "it reads Cilium's agent metrics; emulated nodes run no CNI",
    ),
    (
        "MetricsServerPrometheus",
        "its prober pods query metrics-server; emulated pods run no containers",
    ),
    (
        "KubeStateMetricsLatency",
        "its prober pods query kube-state-metrics; emulated pods run no containers",
    ),
    (
        "RestartApiserver",
        "it restarts kube-apiserver on the control-plane hosts over SSH; kubesim has none",
    ),
];

/// A method that reports every call as skipped with one reason.
pub struct Skip {
    reason: String,
}

impl Skip {
    pub fn not_applicable(method: &str) -> Self {
        let why = NOT_APPLICABLE_METHODS
            .iter()
            .find(|(m, _)| *m == method)
            .map(|(_, why)| *why)
            .unwrap_or("its subject does not exist on emulated nodes");
        Skip {
            reason: format!("{NOT_APPLICABLE} ({why})"),
        }
    }
}

#[async_trait::async_trait]
impl Measurement for Skip {
    async fn execute(
        &mut self,
        _ctx: &Ctx,
        _identifier: &str,
        _p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        Err(MeasurementError::skipped(self.reason.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measurement::test_support::ctx;
    use crate::measurement::ErrorKind;

    #[tokio::test(start_paused = true)]
    async fn not_applicable_names_the_reason_and_the_subject() {
        let (ctx, _api) = ctx().await;
        let mut m = Skip::not_applicable("DnsLookupLatency");
        let e = m.execute(&ctx, "x", &Params::new()).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Skipped);
        assert!(e.message.starts_with("not applicable to emulated nodes ("));
        assert!(e.message.contains("cluster DNS"), "{}", e.message);
        assert!(e.summaries.is_empty());
    }
}
