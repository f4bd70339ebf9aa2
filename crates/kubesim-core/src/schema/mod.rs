//! OpenAPI v3 documents for the served resources and strict field checks.

use serde_json::{json, Value};

use crate::resource::{Registry, ResourceInfo};

/// `/openapi/v3`: the index of group-version documents.
pub fn openapi_index(_registry: &Registry) -> Value {
    json!({"paths": {}})
}

/// `/openapi/v3/<path>` for `api/v1` or `apis/<group>/<version>`.
pub fn openapi_group_version(_registry: &Registry, _path: &str) -> Option<Value> {
    None
}

/// Fields of `obj` the kind's schema does not know, as dotted paths.
pub fn unknown_fields(_resource: &ResourceInfo, _obj: &Value) -> Vec<String> {
    Vec::new()
}
