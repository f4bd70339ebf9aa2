//! What the two Job measurements share: the Jobs a config selects, an
//! informer on them started and synced on the clock, and when a Job counts
//! as finished.

use std::time::Duration;

use kubesim_runtime::ResourceRef;
use serde_json::Value;

use super::informer_pool::Subscription;
use super::wait_pods::PodSelector;
use super::{Ctx, MeasurementError};

/// ClusterLoader2's default `timeout` of both Job measurements' gather.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Both measurements check their condition once a second, as upstream.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(1);

pub fn jobs() -> ResourceRef {
    ResourceRef::new("batch", "v1", "jobs")
}

/// The shared informer on the selected Jobs, listed before this returns;
/// `handler` sees every change, starting with the Jobs that already
/// exist, as long as the returned subscription is kept.
pub async fn start_informer(
    ctx: &Ctx,
    method: &str,
    sel: &PodSelector,
    handler: impl Fn(&kubesim_runtime::Change) + Send + Sync + 'static,
) -> Result<Subscription, MeasurementError> {
    let pooled = ctx.informer(
        jobs(),
        &sel.namespace,
        sel.label_selector.clone(),
        sel.field_selector.clone(),
    );
    super::subscribe_synced(ctx, method, "jobs", &pooled, handler).await
}

/// `Complete` or `Failed` when the Job has that condition with status
/// True (the Job controller's verdict), else None.
pub fn finished_condition(job: &Value) -> Option<&str> {
    job.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        .filter_map(|c| c.get("type").and_then(Value::as_str))
        .find(|t| *t == "Complete" || *t == "Failed")
}

/// `namespace/name`, the key upstream's informer uses.
pub fn key(job: &Value) -> String {
    format!(
        "{}/{}",
        kubesim_core::meta::namespace(job),
        kubesim_core::meta::name(job)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_true_terminal_conditions_finish_a_job() {
        let job = |conds: Value| json!({"status": {"conditions": conds}});
        assert_eq!(finished_condition(&json!({})), None);
        assert_eq!(
            finished_condition(&job(json!([{"type": "Complete", "status": "False"}]))),
            None
        );
        assert_eq!(
            finished_condition(&job(
                json!([{"type": "SuccessCriteriaMet", "status": "True"}])
            )),
            None
        );
        assert_eq!(
            finished_condition(&job(json!([
                {"type": "FailureTarget", "status": "True"},
                {"type": "Failed", "status": "True"}
            ]))),
            Some("Failed")
        );
        assert_eq!(
            finished_condition(&job(json!([{"type": "Complete", "status": "True"}]))),
            Some("Complete")
        );
    }
}
