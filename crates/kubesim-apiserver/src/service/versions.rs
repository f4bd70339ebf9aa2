//! Serving a resource in a version other than its storage version
//! (autoscaling/v1 HorizontalPodAutoscalers, events.k8s.io Events): reads
//! convert what is stored, writes convert what is sent, and everything in
//! between (defaulting, validation, the commit, watch fan-out) runs once, on
//! the storage version, as in the real API server.

use std::sync::Arc;

use bytes::Bytes;
use kubesim_core::{convert, meta, validation, ApiError, ResourceInfo};
use kubesim_runtime::{FieldValidation, WriteOptions};
use kubesim_store::Record;
use serde_json::Value;

use super::write::WriteResult;
use super::{encode, Caller, Server};

impl Server {
    /// The storage version of `resource` when it is served converted.
    pub(crate) fn stored_as(&self, resource: &ResourceInfo) -> Option<Arc<ResourceInfo>> {
        if !convert::is_converted(resource) {
            return None;
        }
        let (g, v, p) =
            convert::storage_version(&resource.group, &resource.version, &resource.plural)?;
        self.registry.get(g, v, p)
    }

    /// create through a converted version: checked against the version it
    /// was sent in, then created as its storage version.
    pub(crate) async fn create_converted(
        &self,
        resource: &ResourceInfo,
        stored: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
        caller: &Caller,
    ) -> Result<WriteResult, ApiError> {
        let warnings = self.check_body(resource, &mut obj, opts)?;
        // Rules of the version written (events.k8s.io requires the reporting
        // fields that core events may omit); the metadata is not set yet.
        let mut probe = obj.clone();
        meta::metadata_mut(&mut probe)
            .entry("namespace")
            .or_insert_with(|| Value::String(ns.to_string()));
        let causes: Vec<_> = validation::validate(resource, &probe, None)
            .into_iter()
            .filter(|c| !c.field.starts_with("metadata"))
            .collect();
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                &resource.kind,
                &resource.group,
                meta::name(&obj),
                causes,
            ));
        }
        let converted = convert::to_storage(resource, obj)?;
        // Unknown fields were judged above, in the version the client wrote.
        let inner = WriteOptions {
            field_validation: Some(FieldValidation::Ignore),
            ..opts.clone()
        };
        let mut r = Box::pin(self.create(stored, ns, converted, &inner, caller)).await?;
        r.obj = convert::from_storage(resource, r.obj);
        r.warnings.extend(warnings);
        Ok(r)
    }
}

/// Stored bytes as `resource` serves them (the same bytes when no
/// conversion applies).
pub(crate) fn present_bytes(resource: &ResourceInfo, bytes: &Bytes) -> Bytes {
    if !convert::is_converted(resource) {
        return bytes.clone();
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => encode(&convert::from_storage(resource, v)),
        Err(_) => bytes.clone(),
    }
}

/// A stored record as `resource` serves it; the index attributes stay,
/// since selectors are evaluated on the stored form.
pub(crate) fn present_record(resource: &ResourceInfo, rec: Arc<Record>) -> Arc<Record> {
    if !convert::is_converted(resource) {
        return rec;
    }
    Arc::new(Record {
        rev: rec.rev,
        bytes: present_bytes(resource, &rec.bytes),
        attrs: rec.attrs.clone(),
    })
}
