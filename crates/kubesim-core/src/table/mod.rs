//! Server-side `meta.k8s.io/v1` Tables: per-kind columns, CRD printer
//! columns, and the default Name/Created At table.

use serde_json::{json, Value};

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

/// The Table for `objects`; the caller fills in `metadata`.
pub fn table(_resource: &ResourceInfo, objects: &[Value], _opts: &TableOptions) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| json!({"cells": [crate::meta::name(o)], "object": Value::Null}))
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [{"name": "Name", "type": "string", "format": "name", "description": "", "priority": 0}],
        "rows": rows,
    })
}
