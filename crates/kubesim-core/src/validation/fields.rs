//! Field paths, cause constructors and tolerant JSON accessors.
//!
//! Causes render the way apimachinery's `field.Error` does, because kubectl
//! shows those strings verbatim and tests elsewhere compare against them.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::Cause;

/// `parent.child`, or `child` at the root.
pub fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

/// `parent[i]`
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// `parent[key]`, the form upstream uses for map entries.
pub fn key(parent: &str, k: &str) -> String {
    format!("{parent}[{k}]")
}

/// Go's `%q` of a string, which JSON string syntax matches closely enough.
pub fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// How upstream prints a bad value: strings quoted, scalars bare, `null`,
/// and anything structured as compact JSON.
pub fn render(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Null => "null".into(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        _ => serde_json::to_string(v).unwrap_or_default(),
    }
}

/// Go's `%#v` of a `map[string]string` (keys sorted), as in the selector
/// mismatch message every Deployment author has seen.
pub fn go_string_map(v: Option<&Value>) -> String {
    let Some(Value::Object(m)) = v else {
        return "map[string]string(nil)".into();
    };
    let sorted: BTreeMap<&String, &Value> = m.iter().collect();
    let parts: Vec<String> = sorted
        .iter()
        .map(|(k, v)| format!("{}:{}", quote(k), quote(v.as_str().unwrap_or_default())))
        .collect();
    format!("map[string]string{{{}}}", parts.join(", "))
}

pub fn required(field: impl Into<String>) -> Cause {
    Cause::required(field)
}

/// `Required value: <detail>`
pub fn required_msg(field: impl Into<String>, detail: &str) -> Cause {
    if detail.is_empty() {
        return Cause::required(field);
    }
    Cause::new(
        "FieldValueRequired",
        field,
        format!("Required value: {detail}"),
    )
}

pub fn invalid_str(field: impl Into<String>, value: &str, detail: &str) -> Cause {
    Cause::invalid(field, value, detail)
}

pub fn invalid_raw(field: impl Into<String>, rendered: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {rendered}: {detail}"),
    )
}

pub fn invalid(field: impl Into<String>, value: &Value, detail: &str) -> Cause {
    invalid_raw(field, &render(value), detail)
}

pub fn invalid_int(field: impl Into<String>, value: i64, detail: &str) -> Cause {
    invalid_raw(field, &value.to_string(), detail)
}

pub fn unsupported(field: impl Into<String>, value: &str, supported: &[&str]) -> Cause {
    Cause::unsupported(field, value, supported)
}

pub fn forbidden(field: impl Into<String>, detail: &str) -> Cause {
    Cause::forbidden(field, detail)
}

pub fn duplicate(field: impl Into<String>, value: &Value) -> Cause {
    Cause::new(
        "FieldValueDuplicate",
        field,
        format!("Duplicate value: {}", render(value)),
    )
}

pub fn not_found(field: impl Into<String>, value: &Value) -> Cause {
    Cause::new(
        "FieldValueNotFound",
        field,
        format!("Not found: {}", render(value)),
    )
}

pub fn too_long(field: impl Into<String>, max_bytes: usize) -> Cause {
    let unit = if max_bytes == 1 { "byte" } else { "bytes" };
    Cause::new(
        "FieldValueTooLong",
        field,
        format!("Too long: may not be more than {max_bytes} {unit}"),
    )
}

pub fn immutable(field: impl Into<String>, value: &Value) -> Cause {
    invalid(field, value, "field is immutable")
}

/// Upstream's `ValidateNonnegativeField`.
pub fn nonnegative(out: &mut Vec<Cause>, field: &str, v: Option<&Value>) {
    if let Some(n) = v.and_then(Value::as_i64) {
        if n < 0 {
            out.push(invalid_int(field, n, "must be greater than or equal to 0"));
        }
    }
}

/// Upstream's `ValidatePositiveField` (strictly greater than zero).
pub fn positive(out: &mut Vec<Cause>, field: &str, v: Option<&Value>) {
    if let Some(n) = v.and_then(Value::as_i64) {
        if n <= 0 {
            out.push(invalid_int(field, n, "must be greater than 0"));
        }
    }
}

/// A string field; absent, null and non-string all read as "".
pub fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// An object field, or None when absent or of another shape.
pub fn obj<'a>(v: &'a Value, k: &str) -> Option<&'a Map<String, Value>> {
    v.get(k).and_then(Value::as_object)
}

/// An array field; anything else reads as empty.
pub fn arr<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A present, non-null field.
pub fn has(v: &Value, k: &str) -> bool {
    v.get(k).is_some_and(|x| !x.is_null())
}

pub fn bool_of(v: &Value, k: &str) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(false)
}

/// Pushes one Invalid cause per message.
pub fn each_invalid(out: &mut Vec<Cause>, field: &str, value: &str, msgs: Vec<String>) {
    for m in msgs {
        out.push(Cause::invalid(field, value, &m));
    }
}
