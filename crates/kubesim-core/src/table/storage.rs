//! Persistent volumes, claims and storage classes.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::age;
use super::columns::{self, string, Column};
use super::fields::{arr, opt_bool, opt_s, s};
use super::Row;

fn name(obj: &Value) -> Value {
    json!(crate::meta::name(obj))
}

/// Access modes in upstream's fixed order, abbreviated.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(long, _)| has(long))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

fn storage_quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

/// The beta annotation still wins over the field, as upstream keeps it.
fn class(obj: &Value) -> String {
    let ann = crate::meta::annotations(obj);
    if let Some(c) = ann.get("volume.beta.kubernetes.io/storage-class") {
        return c.clone();
    }
    s(obj, "/spec/storageClassName").to_string()
}

fn phase_or_terminating(obj: &Value) -> &str {
    if crate::meta::is_deleting(obj) {
        "Terminating"
    } else {
        s(obj, "/status/phase")
    }
}

pub(super) fn pv_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Capacity", "capacity is the description of the persistent volume's resources and capacity."),
        string("Access Modes", "accessModes contains all ways the volume can be mounted."),
        string(
            "Reclaim Policy",
            "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
        ),
        string("Status", "phase indicates if a volume is available, bound to a claim, or released by a claim."),
        string("Claim", "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim."),
        string("StorageClass", "StorageClass of the pv"),
        string("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
        string("Reason", "reason is a brief CamelCase string that describes any failure."),
        columns::age(),
        string("VolumeMode", "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.").wide(),
    ]
}

pub(super) fn pv_row(pv: &Value, now: Timestamp) -> Row {
    let claim = match pv.pointer("/spec/claimRef") {
        Some(c) if c.is_object() => format!("{}/{}", s(c, "/namespace"), s(c, "/name")),
        _ => String::new(),
    };
    Row::from(vec![
        name(pv),
        json!(storage_quantity(pv.pointer("/spec/capacity/storage"))),
        json!(access_modes(arr(pv, "/spec/accessModes"))),
        json!(s(pv, "/spec/persistentVolumeReclaimPolicy")),
        json!(phase_or_terminating(pv)),
        json!(claim),
        json!(class(pv)),
        json!(opt_s(pv, "/spec/volumeAttributesClassName").unwrap_or("<unset>")),
        json!(s(pv, "/status/reason")),
        json!(age(now, pv)),
        json!(opt_s(pv, "/spec/volumeMode").unwrap_or("<unset>")),
    ])
}

pub(super) fn pvc_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string(
            "Status",
            "phase represents the current phase of PersistentVolumeClaim.",
        ),
        string(
            "Volume",
            "volumeName is the binding reference to the PersistentVolume backing this claim.",
        ),
        string(
            "Capacity",
            "capacity represents the actual resources of the underlying volume.",
        ),
        string(
            "Access Modes",
            "accessModes contains the actual access modes the volume backing the PVC has.",
        ),
        string("StorageClass", "StorageClass of the pvc"),
        string("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
        columns::age(),
        string(
            "VolumeMode",
            "volumeMode defines what type of volume is required by the claim.",
        )
        .wide(),
    ]
}

pub(super) fn pvc_row(pvc: &Value, now: Timestamp) -> Row {
    let volume = s(pvc, "/spec/volumeName");
    // Capacity and modes are only meaningful once bound.
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            storage_quantity(pvc.pointer("/status/capacity/storage")),
            access_modes(arr(pvc, "/status/accessModes")),
        )
    };
    Row::from(vec![
        name(pvc),
        json!(phase_or_terminating(pvc)),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class(pvc)),
        json!(opt_s(pvc, "/spec/volumeAttributesClassName").unwrap_or("<unset>")),
        json!(age(now, pvc)),
        json!(opt_s(pvc, "/spec/volumeMode").unwrap_or("<unset>")),
    ])
}

pub(super) fn storageclass_columns() -> Vec<Column> {
    vec![
        columns::name(),
        string("Provisioner", "provisioner indicates the type of the provisioner."),
        string("ReclaimPolicy", "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class."),
        string("VolumeBindingMode", "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound."),
        string("AllowVolumeExpansion", "allowVolumeExpansion shows whether the storage class allow volume expand."),
        columns::age(),
    ]
}

pub(super) fn storageclass_row(sc: &Value, now: Timestamp) -> Row {
    let ann = crate::meta::annotations(sc);
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|k| ann.get(*k).map(String::as_str) == Some("true"));
    let mut n = crate::meta::name(sc).to_string();
    if is_default {
        n.push_str(" (default)");
    }
    Row::from(vec![
        json!(n),
        json!(s(sc, "/provisioner")),
        json!(opt_s(sc, "/reclaimPolicy").unwrap_or("Delete")),
        json!(opt_s(sc, "/volumeBindingMode").unwrap_or("Immediate")),
        json!(opt_bool(sc, "/allowVolumeExpansion").unwrap_or(false)),
        json!(age(now, sc)),
    ])
}
