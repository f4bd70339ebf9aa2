//! Configuration and cluster bookkeeping kinds: config maps, secrets,
//! service accounts, resource quotas, leases, priority classes and RBAC
//! bindings.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::age;
use super::columns::{self, boolean, integer, string, Column};
use super::fields::{arr, int, map_len, opt_s, s};
use super::Row;

fn name(obj: &Value) -> Value {
    json!(crate::meta::name(obj))
}

pub(super) fn configmap_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Data", "Data contains the configuration data."),
        columns::age(),
    ]
}

pub(super) fn configmap_row(cm: &Value, now: Timestamp) -> Row {
    let n = map_len(cm, "/data") + map_len(cm, "/binaryData");
    Row::from(vec![name(cm), json!(n), json!(age(now, cm))])
}

pub(super) fn secret_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Type",
            "Used to facilitate programmatic handling of secret data.",
        ),
        string("Data", "Data contains the secret data."),
        columns::age(),
    ]
}

pub(super) fn secret_row(sec: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(sec),
        json!(s(sec, "/type")),
        json!(map_len(sec, "/data")),
        json!(age(now, sec)),
    ])
}

/// Current upstream prints only Name and Age for service accounts; the
/// Secrets count went away with auto-generated token secrets.
pub(super) fn serviceaccount_columns() -> Vec<Column> {
    vec![columns::name(), columns::age()]
}

pub(super) fn serviceaccount_row(sa: &Value, now: Timestamp) -> Row {
    Row::from(vec![name(sa), json!(age(now, sa))])
}

pub(super) fn resourcequota_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Request",
            "Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        string(
            "Limit",
            "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
        columns::age(),
    ]
}

fn quantity_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        // A missing quantity is Go's zero Quantity.
        _ => "0".into(),
    }
}

pub(super) fn resourcequota_row(rq: &Value, now: Timestamp) -> Row {
    let mut names: Vec<&String> = rq
        .pointer("/status/hard")
        .and_then(Value::as_object)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    names.sort();
    let mut requests: Vec<String> = Vec::new();
    let mut limits: Vec<String> = Vec::new();
    for r in names {
        let used = quantity_text(rq.pointer("/status/used").and_then(|u| u.get(r.as_str())));
        let hard = quantity_text(rq.pointer("/status/hard").and_then(|h| h.get(r.as_str())));
        let text = format!("{r}: {used}/{hard}");
        let mut pieces = r.split('.');
        let first = pieces.next();
        if first == Some("limits") && pieces.next().is_some() {
            limits.push(text);
        } else {
            requests.push(text);
        }
    }
    Row::from(vec![
        name(rq),
        json!(requests.join(", ")),
        json!(limits.join(", ")),
        json!(age(now, rq)),
    ])
}

pub(super) fn lease_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Holder",
            "holderIdentity contains the identity of the holder of a current lease.",
        ),
        columns::age(),
    ]
}

pub(super) fn lease_row(l: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(l),
        json!(s(l, "/spec/holderIdentity")),
        json!(age(now, l)),
    ])
}

pub(super) fn priorityclass_columns() -> Vec<Column> {
    vec![
        columns::name(),
        integer(
            "Value",
            "value represents the integer value of this priority class.",
        ),
        boolean(
            "Global-Default",
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
        ),
        columns::age(),
        string(
            "PreemptionPolicy",
            "preemptionPolicy is the Policy for preempting pods with lower priority.",
        ),
    ]
}

pub(super) fn priorityclass_row(pc: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(pc),
        json!(int(pc, "/value")),
        json!(pc
            .get("globalDefault")
            .and_then(Value::as_bool)
            .unwrap_or(false)),
        json!(age(now, pc)),
        json!(s(pc, "/preemptionPolicy")),
    ])
}

pub(super) fn binding_columns(what: &str) -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Role",
            "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
        ),
        columns::age(),
        string("Users", &format!("Users in the {what}")).wide(),
        string("Groups", &format!("Groups in the {what}")).wide(),
        string("ServiceAccounts", &format!("ServiceAccounts in the {what}")).wide(),
    ]
}

pub(super) fn rolebinding_columns() -> Vec<Column> {
    binding_columns("roleBinding")
}

pub(super) fn clusterrolebinding_columns() -> Vec<Column> {
    binding_columns("clusterRoleBinding")
}

pub(super) fn binding_row(b: &Value, now: Timestamp) -> Row {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut sas = Vec::new();
    for subj in arr(b, "/subjects") {
        let n = s(subj, "/name").to_string();
        match s(subj, "/kind") {
            "User" => users.push(n),
            "Group" => groups.push(n),
            "ServiceAccount" => match opt_s(subj, "/namespace").filter(|ns| !ns.is_empty()) {
                Some(ns) => sas.push(format!("{ns}/{n}")),
                None => sas.push(n),
            },
            _ => {}
        }
    }
    Row::from(vec![
        name(b),
        json!(format!(
            "{}/{}",
            s(b, "/roleRef/kind"),
            s(b, "/roleRef/name")
        )),
        json!(age(now, b)),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ])
}
