//! Storage attachment, dynamic resource allocation, admission, service
//! CIDR and certificate-request kinds: what a real kube-scheduler and
//! kube-controller-manager read and write. Columns and cells follow
//! upstream's printers; kinds upstream prints only as Name/Created At get
//! Name and Age.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::age;
use super::columns::{self, boolean, integer, string, Column};
use super::fields::{arr, opt_bool, opt_int, opt_s, s};
use super::Row;

fn name(obj: &Value) -> Value {
    json!(crate::meta::name(obj))
}

/// Name and Age, for kinds without richer columns.
pub(super) fn name_age_columns() -> Vec<Column> {
    vec![columns::name(), columns::age()]
}

pub(super) fn name_age_row(obj: &Value, now: Timestamp) -> Row {
    Row::from(vec![name(obj), json!(age(now, obj))])
}

pub(super) fn csinode_columns() -> Vec<Column> {
    vec![
        columns::name(),
        integer(
            "Drivers",
            "Drivers indicates the number of CSI drivers registered on the node",
        ),
        columns::age(),
    ]
}

pub(super) fn csinode_row(obj: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(obj),
        json!(arr(obj, "/spec/drivers").len()),
        json!(age(now, obj)),
    ])
}

pub(super) fn csidriver_columns() -> Vec<Column> {
    vec![
        columns::name(),
        boolean("AttachRequired", "attachRequired indicates this CSI volume driver requires an attach operation."),
        boolean("PodInfoOnMount", "podInfoOnMount indicates this CSI volume driver requires additional pod information during mount operations."),
        boolean("StorageCapacity", "storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report."),
        string("TokenRequests", "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication."),
        boolean("RequiresRepublish", "requiresRepublish indicates the CSI driver wants NodePublishVolume being periodically called to reflect any possible change in the mounted volume."),
        string("Modes", "volumeLifecycleModes defines what kind of volumes this CSI volume driver supports."),
        columns::age(),
    ]
}

pub(super) fn csidriver_row(obj: &Value, now: Timestamp) -> Row {
    let audiences: Vec<&str> = arr(obj, "/spec/tokenRequests")
        .iter()
        .map(|t| s(t, "/audience"))
        .collect();
    let tokens = if audiences.is_empty() {
        "<unset>".to_string()
    } else {
        audiences.join(",")
    };
    let modes: Vec<&str> = arr(obj, "/spec/volumeLifecycleModes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let modes = if modes.is_empty() {
        "<none>".to_string()
    } else {
        modes.join(",")
    };
    Row::from(vec![
        name(obj),
        json!(opt_bool(obj, "/spec/attachRequired").unwrap_or(true)),
        json!(opt_bool(obj, "/spec/podInfoOnMount").unwrap_or(false)),
        json!(opt_bool(obj, "/spec/storageCapacity").unwrap_or(false)),
        json!(tokens),
        json!(opt_bool(obj, "/spec/requiresRepublish").unwrap_or(false)),
        json!(modes),
        json!(age(now, obj)),
    ])
}

pub(super) fn csistoragecapacity_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "StorageClassName",
            "storageClassName represents the name of the StorageClass that the reported capacity applies to.",
        ),
        string(
            "Capacity",
            "capacity is the value reported by the CSI driver in its GetCapacityResponse for a GetCapacityRequest with topology and parameters that match the previous fields.",
        ),
        columns::age(),
    ]
}

pub(super) fn csistoragecapacity_row(obj: &Value, now: Timestamp) -> Row {
    let capacity = match obj.get("capacity") {
        Some(Value::String(q)) => q.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "<unset>".into(),
    };
    Row::from(vec![
        name(obj),
        json!(s(obj, "/storageClassName")),
        json!(capacity),
        json!(age(now, obj)),
    ])
}

pub(super) fn volumeattachment_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Attacher",
            "attacher indicates the name of the volume driver that MUST handle this request.",
        )
        .format("name"),
        string(
            "PV",
            "persistentVolumeName represents the name of the persistent volume to attach.",
        ),
        string(
            "Node",
            "nodeName represents the node that the volume should be attached to.",
        ),
        boolean(
            "Attached",
            "attached indicates the volume is successfully attached.",
        ),
        columns::age(),
    ]
}

pub(super) fn volumeattachment_row(obj: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(obj),
        json!(s(obj, "/spec/attacher")),
        json!(s(obj, "/spec/source/persistentVolumeName")),
        json!(s(obj, "/spec/nodeName")),
        json!(opt_bool(obj, "/status/attached").unwrap_or(false)),
        json!(age(now, obj)),
    ])
}

pub(super) fn volumeattributesclass_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "DriverName",
            "Name of the CSI driver This field is immutable.",
        ),
        columns::age(),
    ]
}

pub(super) fn volumeattributesclass_row(obj: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(obj),
        json!(s(obj, "/driverName")),
        json!(age(now, obj)),
    ])
}

pub(super) fn resourceclaim_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "State",
            "A summary of the current state (allocated, pending, reserved, etc.).",
        ),
        columns::age(),
    ]
}

/// Upstream's summary: deleted, then pending or allocated, then reserved.
fn claim_state(obj: &Value) -> String {
    let deleting = crate::meta::is_deleting(obj);
    let mut states = Vec::new();
    if deleting {
        states.push("deleted");
    }
    match obj.pointer("/status/allocation") {
        Some(a) if !a.is_null() => states.push("allocated"),
        _ if !deleting => states.push("pending"),
        _ => {}
    }
    if !arr(obj, "/status/reservedFor").is_empty() {
        states.push("reserved");
    }
    states.join(",")
}

pub(super) fn resourceclaim_row(obj: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(obj),
        json!(claim_state(obj)),
        json!(age(now, obj)),
    ])
}

pub(super) fn resourceslice_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Node",
            "NodeName identifies the node which provides the resources in this pool.",
        ),
        string(
            "Driver",
            "Driver identifies the DRA driver providing the capacity information.",
        ),
        string("Pool", "Name is used to identify the pool."),
        columns::age(),
    ]
}

pub(super) fn resourceslice_row(obj: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(obj),
        json!(s(obj, "/spec/nodeName")),
        json!(s(obj, "/spec/driver")),
        json!(s(obj, "/spec/pool/name")),
        json!(age(now, obj)),
    ])
}

pub(super) fn webhook_columns() -> Vec<Column> {
    vec![
        columns::name(),
        integer(
            "Webhooks",
            "Webhooks indicates the number of webhooks registered in this configuration",
        ),
        columns::age(),
    ]
}

pub(super) fn webhook_row(obj: &Value, now: Timestamp) -> Row {
    Row::from(vec![
        name(obj),
        json!(arr(obj, "/webhooks").len()),
        json!(age(now, obj)),
    ])
}

pub(super) fn vap_columns() -> Vec<Column> {
    vec![
        columns::name(),
        integer(
            "Validations",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        string(
            "ParamKind",
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
        columns::age(),
    ]
}

pub(super) fn vap_row(obj: &Value, now: Timestamp) -> Row {
    let param_kind = match obj.pointer("/spec/paramKind") {
        Some(p) if p.is_object() => format!("{}/{}", s(p, "/apiVersion"), s(p, "/kind")),
        _ => "<unset>".into(),
    };
    Row::from(vec![
        name(obj),
        json!(arr(obj, "/spec/validations").len()),
        json!(param_kind),
        json!(age(now, obj)),
    ])
}

pub(super) fn vap_binding_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "PolicyName",
            "PolicyName references a ValidatingAdmissionPolicy name which the ValidatingAdmissionPolicyBinding binds to.",
        ),
        string(
            "ParamRef",
            "ParamRef specifies the parameter resource used to configure the admission control policy.",
        ),
        columns::age(),
    ]
}

pub(super) fn vap_binding_row(obj: &Value, now: Timestamp) -> Row {
    let param_ref = match obj.pointer("/spec/paramRef") {
        Some(p) if p.is_object() => {
            let (ns, n) = (s(p, "/namespace"), s(p, "/name"));
            if !n.is_empty() {
                let ns = if ns.is_empty() { "*" } else { ns };
                format!("{ns}/{n}")
            } else if p.get("selector").is_some_and(Value::is_object) {
                super::fields::format_label_selector(p.get("selector"))
            } else {
                "<invalid>".into()
            }
        }
        _ => "<unset>".into(),
    };
    Row::from(vec![
        name(obj),
        json!(s(obj, "/spec/policyName")),
        json!(param_ref),
        json!(age(now, obj)),
    ])
}

pub(super) fn servicecidr_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "CIDRs",
            "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs.",
        ),
        columns::age(),
    ]
}

pub(super) fn servicecidr_row(obj: &Value, now: Timestamp) -> Row {
    let cidrs: Vec<&str> = arr(obj, "/spec/cidrs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    Row::from(vec![
        name(obj),
        json!(cidrs.join(",")),
        json!(age(now, obj)),
    ])
}

pub(super) fn ipaddress_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "ParentRef",
            "ParentRef references the resource that an IPAddress is attached to.",
        ),
        columns::age(),
    ]
}

pub(super) fn ipaddress_row(obj: &Value, now: Timestamp) -> Row {
    let parent = match obj.pointer("/spec/parentRef") {
        Some(p) if p.is_object() => {
            let (group, resource) = (s(p, "/group"), s(p, "/resource"));
            let mut out = if group.is_empty() {
                resource.to_lowercase()
            } else {
                format!("{resource}.{group}").to_lowercase()
            };
            let ns = s(p, "/namespace");
            if !ns.is_empty() {
                out.push('/');
                out.push_str(ns);
            }
            out.push('/');
            out.push_str(s(p, "/name"));
            out
        }
        _ => "<none>".into(),
    };
    Row::from(vec![name(obj), json!(parent), json!(age(now, obj))])
}

pub(super) fn ingressclass_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Controller",
            "Controller that is responsible for handling this class",
        ),
        string(
            "Parameters",
            "A reference to a resource with additional parameters",
        ),
        columns::age(),
    ]
}

pub(super) fn ingressclass_row(obj: &Value, now: Timestamp) -> Row {
    let parameters = match obj.pointer("/spec/parameters") {
        Some(p) if p.is_object() => {
            let mut out = s(p, "/kind").to_string();
            if let Some(g) = opt_s(p, "/apiGroup") {
                out.push('.');
                out.push_str(g);
            }
            format!("{out}/{}", s(p, "/name"))
        }
        _ => "<none>".into(),
    };
    Row::from(vec![
        name(obj),
        json!(s(obj, "/spec/controller")),
        json!(parameters),
        json!(age(now, obj)),
    ])
}

pub(super) fn csr_columns() -> Vec<Column> {
    vec![
        columns::name(),
        columns::age(),
        string("SignerName", "signerName indicates the requested signer, and is a qualified name."),
        string("Requestor", "request contains an x509 certificate signing request encoded in a \"CERTIFICATE REQUEST\" PEM block."),
        string("RequestedDuration", "expirationSeconds is the requested duration of validity of the issued certificate."),
        string("Condition", "conditions applied to the request. Known conditions are \"Approved\", \"Denied\", and \"Failed\"."),
    ]
}

/// Upstream's condition summary: the known condition types in order,
/// "Pending" when none, and ",Issued" once a certificate is set.
pub(crate) fn csr_condition(obj: &Value) -> String {
    let mut states: Vec<&str> = arr(obj, "/status/conditions")
        .iter()
        .filter_map(|c| match s(c, "/type") {
            t @ ("Approved" | "Denied" | "Failed") => Some(t),
            _ => None,
        })
        .collect();
    if states.is_empty() {
        states.push("Pending");
    }
    let mut out = states.join(",");
    if !s(obj, "/status/certificate").is_empty() {
        out.push_str(",Issued");
    }
    out
}

pub(super) fn csr_row(obj: &Value, now: Timestamp) -> Row {
    let duration = match opt_int(obj, "/spec/expirationSeconds") {
        Some(secs) => super::age::human_duration(jiff::SignedDuration::from_secs(secs)),
        None => "<none>".into(),
    };
    Row::from(vec![
        name(obj),
        json!(age(now, obj)),
        json!(opt_s(obj, "/spec/signerName").unwrap_or("<none>")),
        json!(s(obj, "/spec/username")),
        json!(duration),
        json!(csr_condition(obj)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_states() {
        let pending = json!({"metadata": {"name": "c"}});
        assert_eq!(claim_state(&pending), "pending");
        let reserved = json!({"metadata": {"name": "c"},
            "status": {"allocation": {"devices": {}}, "reservedFor": [{"name": "p"}]}});
        assert_eq!(claim_state(&reserved), "allocated,reserved");
        let gone = json!({"metadata": {"name": "c", "deletionTimestamp": "2024-01-01T00:00:00Z"}});
        assert_eq!(claim_state(&gone), "deleted");
    }

    #[test]
    fn csr_conditions() {
        let pending = json!({"metadata": {"name": "x"}});
        assert_eq!(csr_condition(&pending), "Pending");
        let issued = json!({"status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Zm9v"}});
        assert_eq!(csr_condition(&issued), "Approved,Issued");
    }

    #[test]
    fn ip_address_parent() {
        let ip = json!({"metadata": {"name": "10.96.0.1"},
            "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "kubernetes"}}});
        let row = ipaddress_row(&ip, Timestamp::UNIX_EPOCH);
        assert_eq!(row.cells[1], "services/default/kubernetes");
    }
}
