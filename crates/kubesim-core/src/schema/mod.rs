//! OpenAPI v3 documents for the served resources and strict field checks.
//!
//! Built-in schemas come from the `k8s-openapi` types (a snapshot of their
//! schemas in the crate's assets, checked by a test) plus the
//! `x-kubernetes-*` annotations they lack; custom resources use their CRD's
//! `openAPIV3Schema`.

mod decode;
mod document;
mod duplicates;
mod extensions;
mod generate;
mod gobase64;
mod gotime;
#[cfg(test)]
mod snapshot;
mod strict;

use serde_json::Value;

use crate::resource::{Registry, ResourceInfo};

pub use decode::{decode_error, decode_error_of, decode_object, QUANTITY_MESSAGE};
pub use document::{
    crd_definition_name, crd_kind_schema, digest_hex, gv_document, gv_index_path, kind_schema,
    parse_gv_path, GvDocument, KUBERNETES_VERSION,
};
pub use duplicates::duplicate_fields;
pub use extensions::{field_patch_meta, FieldPatchMeta, FIELDS as PATCH_FIELDS};
pub use generate::{builtin as builtin_schemas, ref_name, ref_to, BuiltinSchemas, REF_PREFIX};

/// `/openapi/v3`: the index of group-version documents.
pub fn openapi_index(registry: &Registry) -> Value {
    document::index(registry)
}

/// `/openapi/v3/<path>` for `api/v1` or `apis/<group>/<version>`.
pub fn openapi_group_version(registry: &Registry, path: &str) -> Option<Value> {
    gv_document(registry, path).map(|d| d.value.clone())
}

/// Fields of `obj` the kind's schema does not know, as dotted paths
/// (`spec.containers[0].bogus`), in the order they appear.
pub fn unknown_fields(resource: &ResourceInfo, obj: &Value) -> Vec<String> {
    strict::unknown_fields(resource, obj)
}

/// Whether Go's standard base64 decoding accepts `s`.
pub fn base64_ok(s: &str) -> bool {
    gobase64::check(s).is_ok()
}

/// Whether Go's `time.Parse(time.RFC3339, s)` accepts `s`.
pub fn rfc3339_ok(s: &str) -> bool {
    gotime::check_rfc3339(s, false).is_ok()
}
