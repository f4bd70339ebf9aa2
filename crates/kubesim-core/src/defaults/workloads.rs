//! Defaults of the workload controllers' kinds (apps/v1, batch/v1, and the
//! legacy ReplicationController).

use serde_json::{Map, Value};

use super::pod::default_template;
use super::{absent, child_obj, each_obj, existing_obj, set_default};

/// Pod templates live at `spec.template` in every workload kind.
fn template(spec: &mut Map<String, Value>) {
    if let Some(t) = spec.get_mut("template") {
        default_template(t);
    }
}

fn spec_of(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    child_obj(obj.as_object_mut()?, "spec")
}

pub fn default_deployment(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    set_default(spec, "replicas", 1);
    if let Some(strategy) = child_obj(spec, "strategy") {
        set_default(strategy, "type", "RollingUpdate");
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            if let Some(ru) = child_obj(strategy, "rollingUpdate") {
                set_default(ru, "maxUnavailable", "25%");
                set_default(ru, "maxSurge", "25%");
            }
        }
    }
    set_default(spec, "revisionHistoryLimit", 10);
    set_default(spec, "progressDeadlineSeconds", 600);
    template(spec);
}

pub fn default_replica_set(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    set_default(spec, "replicas", 1);
    template(spec);
}

/// The legacy controller also derives its selector and labels from the
/// template, as upstream's v1 defaulting does.
pub fn default_replication_controller(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let labels = root
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    if let Some(labels) = labels {
        if let Some(meta) = child_obj(root, "metadata") {
            if meta
                .get("labels")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
            {
                meta.insert("labels".into(), labels.clone());
            }
        }
        if let Some(spec) = child_obj(root, "spec") {
            if spec
                .get("selector")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
            {
                spec.insert("selector".into(), labels);
            }
        }
    }
    let Some(spec) = spec_of(obj) else { return };
    set_default(spec, "replicas", 1);
    template(spec);
}

pub fn default_stateful_set(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    set_default(spec, "podManagementPolicy", "OrderedReady");
    if let Some(us) = child_obj(spec, "updateStrategy") {
        if absent(us, "type") {
            us.insert("type".into(), "RollingUpdate".into());
            set_default(us, "rollingUpdate", Map::new());
        }
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            if let Some(ru) = existing_obj(us, "rollingUpdate") {
                set_default(ru, "partition", 0);
            }
        }
    }
    if let Some(p) = child_obj(spec, "persistentVolumeClaimRetentionPolicy") {
        set_default(p, "whenDeleted", "Retain");
        set_default(p, "whenScaled", "Retain");
    }
    set_default(spec, "replicas", 1);
    set_default(spec, "revisionHistoryLimit", 10);
    for pvc in each_obj(spec, "volumeClaimTemplates") {
        // Claim templates are printed as full PVC objects by a real cluster.
        set_default(pvc, "apiVersion", "v1");
        set_default(pvc, "kind", "PersistentVolumeClaim");
        if let Some(s) = child_obj(pvc, "spec") {
            set_default(s, "volumeMode", "Filesystem");
        }
        if let Some(st) = child_obj(pvc, "status") {
            set_default(st, "phase", "Pending");
        }
    }
    template(spec);
}

pub fn default_daemon_set(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    if let Some(us) = child_obj(spec, "updateStrategy") {
        set_default(us, "type", "RollingUpdate");
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
            if let Some(ru) = child_obj(us, "rollingUpdate") {
                set_default(ru, "maxUnavailable", 1);
                set_default(ru, "maxSurge", 0);
            }
        }
    }
    set_default(spec, "revisionHistoryLimit", 10);
    template(spec);
}

/// Job labels on pods: both the legacy and the prefixed forms.
pub const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
pub const CONTROLLER_UID_LABELS: [&str; 2] =
    ["controller-uid", "batch.kubernetes.io/controller-uid"];

pub fn default_job(obj: &mut Value) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let (name, uid) = {
        let meta = root.get("metadata");
        let get = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (get("name"), get("uid"))
    };
    // Upstream copies template labels to the Job both before and after the
    // create strategy generates its selector (the second time when the
    // stored object is read back), so the Job ends up with either the
    // user's template labels or the generated ones.
    copy_template_labels(root);
    let manual = root
        .get("spec")
        .and_then(|s| s.get("manualSelector"))
        .and_then(Value::as_bool)
        == Some(true);
    if !manual && !uid.is_empty() {
        generate_selector(root, &name, &uid);
    }
    copy_template_labels(root);
    let Some(spec) = child_obj(root, "spec") else {
        return;
    };
    if absent(spec, "completions") && absent(spec, "parallelism") {
        spec.insert("completions".into(), 1.into());
        spec.insert("parallelism".into(), 1.into());
    }
    set_default(spec, "parallelism", 1);
    if absent(spec, "backoffLimit") {
        // With a per-index limit the global one must not cut in first.
        let limit = if absent(spec, "backoffLimitPerIndex") {
            6
        } else {
            i64::from(i32::MAX)
        };
        spec.insert("backoffLimit".into(), limit.into());
    }
    set_default(spec, "completionMode", "NonIndexed");
    set_default(spec, "suspend", false);
    set_default(spec, "manualSelector", false);
    let has_failure_policy = !absent(spec, "podFailurePolicy");
    if let Some(pfp) = existing_obj(spec, "podFailurePolicy") {
        for rule in each_obj(pfp, "rules") {
            for cond in each_obj(rule, "onPodConditions") {
                set_default(cond, "status", "True");
            }
        }
    }
    set_default(
        spec,
        "podReplacementPolicy",
        if has_failure_policy {
            "Failed"
        } else {
            "TerminatingOrFailed"
        },
    );
    template(spec);
}

fn copy_template_labels(root: &mut Map<String, Value>) {
    let labels = root
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let Some(labels) = labels else { return };
    if let Some(meta) = child_obj(root, "metadata") {
        if meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            meta.insert("labels".into(), labels);
        }
    }
}

/// The Job create strategy's selector generation: pods get the Job's name
/// and uid as labels and the selector picks the uid.
fn generate_selector(root: &mut Map<String, Value>, name: &str, uid: &str) {
    let Some(spec) = child_obj(root, "spec") else {
        return;
    };
    let Some(t) = child_obj(spec, "template") else {
        return;
    };
    let Some(meta) = child_obj(t, "metadata") else {
        return;
    };
    let Some(labels) = child_obj(meta, "labels") else {
        return;
    };
    for k in JOB_NAME_LABELS {
        // A user-set value is kept; validation rejects a wrong one.
        set_default(labels, k, name);
    }
    for k in CONTROLLER_UID_LABELS {
        set_default(labels, k, uid);
    }
    let Some(sel) = child_obj(spec, "selector") else {
        return;
    };
    let Some(ml) = child_obj(sel, "matchLabels") else {
        return;
    };
    set_default(ml, "batch.kubernetes.io/controller-uid", uid);
}

pub fn default_cron_job(obj: &mut Value) {
    let Some(spec) = spec_of(obj) else { return };
    set_default(spec, "concurrencyPolicy", "Allow");
    set_default(spec, "suspend", false);
    set_default(spec, "successfulJobsHistoryLimit", 3);
    set_default(spec, "failedJobsHistoryLimit", 1);
    // Only the pod template inside the job template is defaulted: Job
    // defaults apply when the CronJob controller creates the Job.
    if let Some(js) = existing_obj(spec, "jobTemplate").and_then(|jt| existing_obj(jt, "spec")) {
        template(js);
    }
}
