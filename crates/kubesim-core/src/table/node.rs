//! Nodes and namespaces.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::age;
use super::columns::{self, string, Column};
use super::fields::{arr, boolean, s};
use super::Row;

pub(super) fn columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Status", "The status of the node"),
        string("Roles", "The roles of the node"),
        columns::age(),
        string("Version", "Kubelet Version reported by the node."),
        string("Internal-IP", "List of addresses reachable to the node.").wide(),
        string("External-IP", "List of addresses reachable to the node.").wide(),
        string(
            "OS-Image",
            "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        )
        .wide(),
        string(
            "Kernel-Version",
            "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        )
        .wide(),
        string(
            "Container-Runtime",
            "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        )
        .wide(),
    ]
}

/// Roles come from `node-role.kubernetes.io/<role>` label keys and from the
/// value of the older `kubernetes.io/role` label; sorted and unique.
fn roles(node: &Value) -> String {
    let mut roles: Vec<String> = Vec::new();
    for (k, v) in crate::meta::labels(node) {
        if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
            if !role.is_empty() {
                roles.push(role.to_string());
            }
        } else if k == "kubernetes.io/role" && !v.is_empty() {
            roles.push(v);
        }
    }
    roles.sort();
    roles.dedup();
    if roles.is_empty() {
        "<none>".into()
    } else {
        roles.join(",")
    }
}

fn address(node: &Value, type_: &str) -> String {
    arr(node, "/status/addresses")
        .iter()
        .find(|a| s(a, "/type") == type_)
        .map_or_else(|| "<none>".into(), |a| s(a, "/address").to_string())
}

pub(super) fn row(node: &Value, now: Timestamp) -> Row {
    // Only the Ready condition decides; a later duplicate overrides an
    // earlier one, as building a map by type does upstream.
    let mut status: Vec<&str> = Vec::new();
    if let Some(c) = arr(node, "/status/conditions")
        .iter()
        .rev()
        .find(|c| s(c, "/type") == "Ready")
    {
        status.push(if s(c, "/status") == "True" {
            "Ready"
        } else {
            "NotReady"
        });
    }
    if status.is_empty() {
        status.push("Unknown");
    }
    if boolean(node, "/spec/unschedulable") {
        status.push("SchedulingDisabled");
    }
    let info = |field: &str| {
        let v = s(node, &format!("/status/nodeInfo/{field}"));
        if v.is_empty() {
            "<unknown>".to_string()
        } else {
            v.to_string()
        }
    };
    Row::from(vec![
        json!(crate::meta::name(node)),
        json!(status.join(",")),
        json!(roles(node)),
        json!(age(now, node)),
        json!(s(node, "/status/nodeInfo/kubeletVersion")),
        json!(address(node, "InternalIP")),
        json!(address(node, "ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ])
}

pub(super) fn namespace_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Status", "The status of the namespace"),
        columns::age(),
    ]
}

pub(super) fn namespace_row(ns: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        json!(crate::meta::name(ns)),
        json!(s(ns, "/status/phase")),
        json!(age(now, ns)),
    ])
}
