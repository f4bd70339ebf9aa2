//! kube-apiserver's flags for auditing and overload protection.

use std::path::PathBuf;
use std::sync::Arc;

use kubesim_apiserver::audit::Auditor;
use kubesim_apiserver::http::inflight::{
    Limits, DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT, DEFAULT_MAX_REQUESTS_INFLIGHT,
};
use kubesim_apiserver::http::metrics::Metrics;

#[derive(clap::Args, Debug, Clone)]
pub struct ProtectionArgs {
    /// Read-only requests (get, list) served at once; more wait in
    /// per-user queues served in turn, and a user whose queue is full gets
    /// 429. Watches, the cluster admin (system:masters) and health probes
    /// are not counted. 0: no limit.
    #[arg(long, default_value_t = DEFAULT_MAX_REQUESTS_INFLIGHT)]
    pub max_requests_inflight: usize,
    /// The same for mutating requests (create, update, patch, delete).
    #[arg(long, default_value_t = DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT)]
    pub max_mutating_requests_inflight: usize,
    #[command(flatten)]
    pub audit: AuditArgs,
}

/// kube-apiserver's audit log flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct AuditArgs {
    /// An audit Policy (audit.k8s.io/v1, YAML or JSON); without it nothing
    /// is audited.
    #[arg(long, value_name = "FILE", requires = "audit_log_path")]
    pub audit_policy_file: Option<PathBuf>,
    /// Where audit events go, one JSON line each; `-` is standard output.
    #[arg(long, value_name = "PATH")]
    pub audit_log_path: Option<String>,
}

impl Default for ProtectionArgs {
    fn default() -> Self {
        ProtectionArgs {
            max_requests_inflight: DEFAULT_MAX_REQUESTS_INFLIGHT,
            max_mutating_requests_inflight: DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
            audit: AuditArgs::default(),
        }
    }
}

impl ProtectionArgs {
    pub fn limits(&self, metrics: &Metrics) -> Limits {
        Limits::new(
            self.max_requests_inflight,
            self.max_mutating_requests_inflight,
            metrics,
        )
    }
}

impl AuditArgs {
    /// The auditor the flags ask for; a bad policy is one error line.
    pub fn auditor(&self) -> anyhow::Result<Option<Arc<Auditor>>> {
        match (&self.audit_policy_file, &self.audit_log_path) {
            (Some(policy), Some(log)) => Auditor::open(policy, log)
                .map(|a| Some(Arc::new(a)))
                .map_err(|e| anyhow::anyhow!("cannot start auditing: {e}")),
            // As upstream, a log path without a policy logs nothing.
            _ => Ok(None),
        }
    }
}
