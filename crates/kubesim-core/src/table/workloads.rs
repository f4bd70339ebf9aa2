//! Workload controllers: deployments, replica sets, stateful sets, daemon
//! sets, jobs, cron jobs, replication controllers, controller revisions and
//! pod templates.
//!
//! Counts are integer cells even where upstream declares the column as a
//! string, because upstream fills them with int64 values.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::{age, between, parse_ts, since};
use super::columns::{self, boolean as bool_col, containers_images_selector, integer, string};
use super::columns::{Column, CONTAINERS_DESC, IMAGES_DESC};
use super::fields::{
    arr, bool_ptr, condition_true, containers, format_label_selector, format_labels, int,
    label_selector, opt_bool, opt_int, opt_s, s,
};
use super::Row;

fn name(obj: &Value) -> Value {
    json!(crate::meta::name(obj))
}

/// Containers and images of the pod template at `template` (a JSON pointer).
fn template_cells(obj: &Value, template: &str) -> (Value, Value) {
    let (n, i) = containers(arr(obj, &format!("{template}/spec/containers")));
    (json!(n), json!(i))
}

pub(super) fn deployment_columns() -> Vec<Column> {
    let mut c = vec![
        columns::name(),
        string("Ready", "Number of the pod with ready state"),
        string(
            "Up-to-date",
            "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
        ),
        string(
            "Available",
            "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        columns::age(),
    ];
    c.extend(containers_images_selector(
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
    ));
    c
}

pub(super) fn deployment_row(d: &Value, now: Timestamp) -> Row {
    let (names, images) = template_cells(d, "/spec/template");
    // Deployments print the selector bare: empty stays empty.
    let selector =
        label_selector(d.pointer("/spec/selector")).unwrap_or_else(|()| "<invalid>".into());
    Row::from(vec![
        name(d),
        json!(format!(
            "{}/{}",
            int(d, "/status/readyReplicas"),
            int(d, "/spec/replicas")
        )),
        json!(int(d, "/status/updatedReplicas")),
        json!(int(d, "/status/availableReplicas")),
        json!(age(now, d)),
        names,
        images,
        json!(selector),
    ])
}

pub(super) fn replicaset_columns() -> Vec<Column> {
    let mut c = vec![
        columns::name(),
        integer("Desired", "Replicas is the number of desired replicas."),
        integer(
            "Current",
            "Replicas is the most recently observed number of replicas.",
        ),
        integer(
            "Ready",
            "The number of ready replicas for this replica set.",
        ),
        columns::age(),
    ];
    c.extend(containers_images_selector(
        "Selector is a label query over pods that should match the replica count.",
    ));
    c
}

pub(super) fn replicaset_row(rs: &Value, now: Timestamp) -> Row {
    let (names, images) = template_cells(rs, "/spec/template");
    Row::from(vec![
        name(rs),
        json!(int(rs, "/spec/replicas")),
        json!(int(rs, "/status/replicas")),
        json!(int(rs, "/status/readyReplicas")),
        json!(age(now, rs)),
        names,
        images,
        json!(format_label_selector(rs.pointer("/spec/selector"))),
    ])
}

pub(super) fn replicationcontroller_columns() -> Vec<Column> {
    let mut c = replicaset_columns();
    c[3].description = "The number of ready replicas for this replication controller.".into();
    c
}

pub(super) fn replicationcontroller_row(rc: &Value, now: Timestamp) -> Row {
    let (names, images) = template_cells(rc, "/spec/template");
    Row::from(vec![
        name(rc),
        json!(int(rc, "/spec/replicas")),
        json!(int(rc, "/status/replicas")),
        json!(int(rc, "/status/readyReplicas")),
        json!(age(now, rc)),
        names,
        images,
        json!(format_labels(rc.pointer("/spec/selector"))),
    ])
}

pub(super) fn statefulset_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Ready", "Number of the pod with ready state"),
        columns::age(),
        string("Containers", CONTAINERS_DESC).wide(),
        string("Images", IMAGES_DESC).wide(),
    ]
}

pub(super) fn statefulset_row(sts: &Value, now: Timestamp) -> Row {
    let (names, images) = template_cells(sts, "/spec/template");
    Row::from(vec![
        name(sts),
        json!(format!(
            "{}/{}",
            int(sts, "/status/readyReplicas"),
            int(sts, "/spec/replicas")
        )),
        json!(age(now, sts)),
        names,
        images,
    ])
}

pub(super) fn daemonset_columns() -> Vec<Column> {
    let mut c = vec![
        columns::name(),
        integer(
            "Desired",
            "The total number of nodes that should be running the daemon pod.",
        ),
        integer(
            "Current",
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
        ),
        integer(
            "Ready",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
        ),
        integer(
            "Up-to-date",
            "The total number of nodes that are running updated daemon pod.",
        ),
        integer(
            "Available",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
        ),
        string(
            "Node Selector",
            "NodeSelector is a selector which must be true for the pod to fit on a node.",
        ),
        columns::age(),
    ];
    c.extend(containers_images_selector(
        "A label query over pods that are managed by the daemon set.",
    ));
    c
}

pub(super) fn daemonset_row(ds: &Value, now: Timestamp) -> Row {
    let (names, images) = template_cells(ds, "/spec/template");
    let n = |p: &str| json!(int(ds, p));
    Row::from(vec![
        name(ds),
        n("/status/desiredNumberScheduled"),
        n("/status/currentNumberScheduled"),
        n("/status/numberReady"),
        n("/status/updatedNumberScheduled"),
        n("/status/numberAvailable"),
        json!(format_labels(
            ds.pointer("/spec/template/spec/nodeSelector")
        )),
        json!(age(now, ds)),
        names,
        images,
        json!(format_label_selector(ds.pointer("/spec/selector"))),
    ])
}

pub(super) fn job_columns() -> Vec<Column> {
    let mut c = vec![
        columns::name(),
        string("Status", "Status of the job."),
        string(
            "Completions",
            "The number of pods which reached phase Succeeded.",
        ),
        string("Duration", "Time required to complete the job."),
        columns::age(),
    ];
    c.extend(containers_images_selector(
        "A label query over pods that should match the pod count.",
    ));
    c
}

/// Job status in upstream's order of precedence.
fn job_status(job: &Value) -> &'static str {
    let conds = arr(job, "/status/conditions");
    if condition_true(conds, "Complete") {
        "Complete"
    } else if condition_true(conds, "Failed") {
        "Failed"
    } else if crate::meta::is_deleting(job) {
        "Terminating"
    } else if condition_true(conds, "Suspended") {
        "Suspended"
    } else if condition_true(conds, "FailureTarget") {
        "FailureTarget"
    } else if condition_true(conds, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

pub(super) fn job_row(job: &Value, now: Timestamp) -> Row {
    let succeeded = int(job, "/status/succeeded");
    let completions = match opt_int(job, "/spec/completions") {
        Some(c) => format!("{succeeded}/{c}"),
        None => match opt_int(job, "/spec/parallelism").unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = parse_ts(job.pointer("/status/startTime"));
    let done = parse_ts(job.pointer("/status/completionTime"));
    let duration = match (start, done) {
        (None, _) => String::new(),
        (Some(s), None) => between(s, now),
        (Some(s), Some(d)) => between(s, d),
    };
    let (names, images) = template_cells(job, "/spec/template");
    Row::from(vec![
        name(job),
        json!(job_status(job)),
        json!(completions),
        json!(duration),
        json!(age(now, job)),
        names,
        images,
        json!(format_label_selector(job.pointer("/spec/selector"))),
    ])
}

pub(super) fn cronjob_columns() -> Vec<Column> {
    let mut c = vec![
        columns::name(),
        string(
            "Schedule",
            "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
        ),
        string(
            "Timezone",
            "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
        ),
        bool_col(
            "Suspend",
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions. Defaults to false.",
        ),
        integer("Active", "A list of pointers to currently running jobs."),
        string(
            "Last Schedule",
            "Information when was the last time the job was successfully scheduled.",
        ),
        columns::age(),
    ];
    c.extend(containers_images_selector(
        "A label query over pods that should match the pod count.",
    ));
    c
}

pub(super) fn cronjob_row(cj: &Value, now: Timestamp) -> Row {
    let last = match cj.pointer("/status/lastScheduleTime") {
        Some(v) if !v.is_null() => since(now, Some(v)),
        _ => "<none>".into(),
    };
    let tz = opt_s(cj, "/spec/timeZone").unwrap_or("<none>");
    let (names, images) = template_cells(cj, "/spec/jobTemplate/spec/template");
    Row::from(vec![
        name(cj),
        json!(s(cj, "/spec/schedule")),
        json!(tz),
        json!(bool_ptr(opt_bool(cj, "/spec/suspend"))),
        json!(arr(cj, "/status/active").len()),
        json!(last),
        json!(age(now, cj)),
        names,
        images,
        json!(format_label_selector(
            cj.pointer("/spec/jobTemplate/spec/selector")
        )),
    ])
}

pub(super) fn controllerrevision_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Controller", "Controller of the object"),
        string(
            "Revision",
            "Revision indicates the revision of the state represented by Data.",
        ),
        columns::age(),
    ]
}

pub(super) fn controllerrevision_row(cr: &Value, now: Timestamp) -> Row {
    let owner = arr(cr, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true));
    let controller = match owner {
        None => "<none>".to_string(),
        Some(o) => {
            let group = s(o, "/apiVersion").split_once('/').map_or("", |(g, _)| g);
            let kind = s(o, "/kind");
            let gk = if group.is_empty() {
                kind.to_string()
            } else {
                format!("{kind}.{group}")
            };
            if gk.is_empty() {
                s(o, "/name").to_string()
            } else {
                format!("{}/{}", gk.to_lowercase(), s(o, "/name"))
            }
        }
    };
    Row::from(vec![
        name(cr),
        json!(controller),
        json!(int(cr, "/revision")),
        json!(age(now, cr)),
    ])
}

pub(super) fn podtemplate_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Containers", CONTAINERS_DESC),
        string("Images", IMAGES_DESC),
        string("Pod Labels", "The labels for the pod template."),
    ]
}

pub(super) fn podtemplate_row(pt: &Value, _now: Timestamp) -> Row {
    let (names, images) = template_cells(pt, "/template");
    Row::from(vec![
        name(pt),
        names,
        images,
        json!(format_labels(pt.pointer("/template/metadata/labels"))),
    ])
}
