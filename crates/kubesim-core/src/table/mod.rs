//! Server-side `meta.k8s.io/v1` Tables: per-kind columns, CRD printer
//! columns, and the default Name/Created At table.
//!
//! kube-apiserver always renders the wide form (every column, priority
//! included) and leaves it to the client to hide priority > 0 columns, so
//! every row here carries all cells.

mod age;
mod columns;
mod config;
mod control_plane;
mod crd;
mod default;
mod events;
mod fields;
pub mod jsonpath;
mod network;
mod node;
mod pod;
mod policy;
mod storage;
mod workloads;

use jiff::Timestamp;
use serde_json::{json, Value};

pub use age::{human_duration, human_duration_nanos};
pub use columns::Column;

use crate::resource::ResourceInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

#[derive(Debug, Clone)]
pub struct TableOptions {
    pub include: IncludeObject,
    /// The clock's now, for AGE cells.
    pub now: jiff::Timestamp,
    /// false on watch events after the first: no columnDefinitions.
    pub headers: bool,
}

/// One row before it is wrapped with its object.
pub(crate) struct Row {
    cells: Vec<Value>,
    /// TableRowConditions; upstream marks finished pods as Completed.
    conditions: Vec<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Self {
        Row {
            cells,
            conditions: Vec::new(),
        }
    }
}

type RowFn = fn(&Value, Timestamp) -> Row;
type ColumnsFn = fn() -> Vec<Column>;

/// How one kind is printed.
enum Printer {
    Builtin(ColumnsFn, RowFn),
    Custom(crd::Layout),
    Default,
}

fn events_row(obj: &Value, now: Timestamp) -> Row {
    events::row(obj, now, false)
}

fn new_events_row(obj: &Value, now: Timestamp) -> Row {
    events::row(obj, now, true)
}

/// Printers are keyed by group and resource, like upstream's registry:
/// every version of a group resource prints the same way.
fn builtin(group: &str, plural: &str) -> Option<(ColumnsFn, RowFn)> {
    let p: (ColumnsFn, RowFn) = match (group, plural) {
        ("", "pods") => (pod::columns, pod::row),
        ("", "nodes") => (node::columns, node::row),
        ("", "namespaces") => (node::namespace_columns, node::namespace_row),
        ("", "services") => (network::service_columns, network::service_row),
        ("", "endpoints") => (network::endpoints_columns, network::endpoints_row),
        ("", "configmaps") => (config::configmap_columns, config::configmap_row),
        ("", "secrets") => (config::secret_columns, config::secret_row),
        ("", "serviceaccounts") => (config::serviceaccount_columns, config::serviceaccount_row),
        ("", "resourcequotas") => (config::resourcequota_columns, config::resourcequota_row),
        ("", "events") => (events::columns, events_row),
        ("events.k8s.io", "events") => (events::columns, new_events_row),
        ("", "replicationcontrollers") => (
            workloads::replicationcontroller_columns,
            workloads::replicationcontroller_row,
        ),
        ("", "podtemplates") => (workloads::podtemplate_columns, workloads::podtemplate_row),
        ("", "persistentvolumes") => (storage::pv_columns, storage::pv_row),
        ("", "persistentvolumeclaims") => (storage::pvc_columns, storage::pvc_row),
        ("apps", "deployments") => (workloads::deployment_columns, workloads::deployment_row),
        ("apps", "replicasets") => (workloads::replicaset_columns, workloads::replicaset_row),
        ("apps", "statefulsets") => (workloads::statefulset_columns, workloads::statefulset_row),
        ("apps", "daemonsets") => (workloads::daemonset_columns, workloads::daemonset_row),
        ("apps", "controllerrevisions") => (
            workloads::controllerrevision_columns,
            workloads::controllerrevision_row,
        ),
        ("batch", "jobs") => (workloads::job_columns, workloads::job_row),
        ("batch", "cronjobs") => (workloads::cronjob_columns, workloads::cronjob_row),
        ("autoscaling", "horizontalpodautoscalers") => (policy::hpa_columns, policy::hpa_row),
        ("policy", "poddisruptionbudgets") => (policy::pdb_columns, policy::pdb_row),
        ("coordination.k8s.io", "leases") => (config::lease_columns, config::lease_row),
        ("scheduling.k8s.io", "priorityclasses") => {
            (config::priorityclass_columns, config::priorityclass_row)
        }
        ("discovery.k8s.io", "endpointslices") => {
            (network::endpointslice_columns, network::endpointslice_row)
        }
        ("networking.k8s.io", "ingresses") => (network::ingress_columns, network::ingress_row),
        ("networking.k8s.io", "networkpolicies") => {
            (network::networkpolicy_columns, network::networkpolicy_row)
        }
        ("rbac.authorization.k8s.io", "rolebindings") => {
            (config::rolebinding_columns, config::binding_row)
        }
        ("rbac.authorization.k8s.io", "clusterrolebindings") => {
            (config::clusterrolebinding_columns, config::binding_row)
        }
        ("storage.k8s.io", "storageclasses") => {
            (storage::storageclass_columns, storage::storageclass_row)
        }
        ("storage.k8s.io", "csinodes") => {
            (control_plane::csinode_columns, control_plane::csinode_row)
        }
        ("storage.k8s.io", "csidrivers") => (
            control_plane::csidriver_columns,
            control_plane::csidriver_row,
        ),
        ("storage.k8s.io", "csistoragecapacities") => (
            control_plane::csistoragecapacity_columns,
            control_plane::csistoragecapacity_row,
        ),
        ("storage.k8s.io", "volumeattachments") => (
            control_plane::volumeattachment_columns,
            control_plane::volumeattachment_row,
        ),
        ("storage.k8s.io", "volumeattributesclasses") => (
            control_plane::volumeattributesclass_columns,
            control_plane::volumeattributesclass_row,
        ),
        ("resource.k8s.io", "resourceclaims") => (
            control_plane::resourceclaim_columns,
            control_plane::resourceclaim_row,
        ),
        ("resource.k8s.io", "resourceslices") => (
            control_plane::resourceslice_columns,
            control_plane::resourceslice_row,
        ),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
        | ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            (control_plane::webhook_columns, control_plane::webhook_row)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            (control_plane::vap_columns, control_plane::vap_row)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => (
            control_plane::vap_binding_columns,
            control_plane::vap_binding_row,
        ),
        ("networking.k8s.io", "servicecidrs") => (
            control_plane::servicecidr_columns,
            control_plane::servicecidr_row,
        ),
        ("networking.k8s.io", "ipaddresses") => (
            control_plane::ipaddress_columns,
            control_plane::ipaddress_row,
        ),
        ("networking.k8s.io", "ingressclasses") => (
            control_plane::ingressclass_columns,
            control_plane::ingressclass_row,
        ),
        ("certificates.k8s.io", "certificatesigningrequests") => {
            (control_plane::csr_columns, control_plane::csr_row)
        }
        // Printed by upstream as Name and Created At; Age reads better
        // beside the other kinds of their group.
        ("resource.k8s.io", "deviceclasses" | "resourceclaimtemplates") => {
            (control_plane::name_age_columns, control_plane::name_age_row)
        }
        _ => return None,
    };
    Some(p)
}

fn printer(resource: &ResourceInfo) -> Printer {
    if let Some(crd) = &resource.crd {
        return Printer::Custom(crd::layout(&crd.printer_columns));
    }
    match builtin(&resource.group, &resource.plural) {
        Some((cols, row)) => Printer::Builtin(cols, row),
        None => Printer::Default,
    }
}

/// The columns a Table of `resource` has, wide ones included.
pub fn column_definitions(resource: &ResourceInfo) -> Vec<Column> {
    match printer(resource) {
        Printer::Builtin(cols, _) => cols(),
        Printer::Custom(layout) => layout.columns,
        Printer::Default => default::columns(),
    }
}

/// The cells of one object's row, in column order.
pub fn row_cells(resource: &ResourceInfo, obj: &Value, now: Timestamp) -> Vec<Value> {
    render_row(&printer(resource), obj, now).cells
}

fn render_row(p: &Printer, obj: &Value, now: Timestamp) -> Row {
    match p {
        Printer::Builtin(_, row) => row(obj, now),
        Printer::Custom(layout) => Row::from(layout.cells(obj, now)),
        Printer::Default => default::row(obj),
    }
}

/// What `row.object` embeds.
fn row_object(obj: &Value, include: IncludeObject) -> Value {
    match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").filter(|m| m.is_object()).cloned().unwrap_or_else(|| json!({})),
        }),
    }
}

/// The Table for `objects`; the caller fills in `metadata`.
pub fn table(resource: &ResourceInfo, objects: &[Value], opts: &TableOptions) -> Value {
    let p = printer(resource);
    let columns: Vec<Value> = if opts.headers {
        let cols = match &p {
            Printer::Builtin(cols, _) => cols(),
            Printer::Custom(layout) => layout.columns.clone(),
            Printer::Default => default::columns(),
        };
        cols.iter().map(Column::to_json).collect()
    } else {
        Vec::new()
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let row = render_row(&p, o, opts.now);
            let mut r = serde_json::Map::new();
            r.insert("cells".into(), Value::Array(row.cells));
            if !row.conditions.is_empty() {
                r.insert("conditions".into(), Value::Array(row.conditions));
            }
            r.insert("object".into(), row_object(o, opts.include));
            Value::Object(r)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": columns,
        "rows": rows,
    })
}
