//! RFC 6902 JSON patch and RFC 7386 merge patch.

use serde_json::Value;

use crate::error::{ApiError, Cause};

/// Upstream caps the number of operations in one JSON patch.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The 422 upstream answers when a patch is well formed but cannot be
/// applied: a generic message with the specific reason as the only cause.
pub fn unprocessable(detail: impl Into<String>) -> ApiError {
    let mut e = ApiError::new(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
    );
    e.details = Some(Box::new(crate::error::Details {
        causes: vec![Cause::new("UnexpectedServerResponse", "", detail)],
        ..Default::default()
    }));
    e
}

/// Applies an RFC 6902 patch document to `current`.
pub fn json_patch(current: &Value, patch: Value) -> Result<Value, ApiError> {
    // Keep the op names so a failure can say which operation broke.
    let ops: Vec<String> = patch
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| {
                    o.get("op")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    let p: json_patch::Patch = serde_json::from_value(patch)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    if p.0.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(ApiError::too_large(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            p.0.len()
        )));
    }
    let mut out = current.clone();
    json_patch::patch(&mut out, &p).map_err(|e| {
        let op = ops.get(e.operation).map(String::as_str).unwrap_or("");
        let why = match e.kind {
            json_patch::PatchErrorKind::TestFailed => "test failed".to_string(),
            json_patch::PatchErrorKind::InvalidPointer => "doc is missing path".to_string(),
            json_patch::PatchErrorKind::InvalidFromPointer => {
                "doc is missing from path".to_string()
            }
            other => other.to_string(),
        };
        unprocessable(format!(
            "{op} operation {} does not apply: {why}: \"{}\"",
            e.operation, e.path
        ))
    })?;
    Ok(out)
}

/// Applies an RFC 7386 merge patch; the patch must be an object.
pub fn merge_patch(current: &Value, patch: &Value) -> Result<Value, ApiError> {
    if !patch.is_object() {
        return Err(ApiError::bad_request("Invalid JSON Patch"));
    }
    let mut out = current.clone();
    json_patch::merge(&mut out, patch);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patch_ops() {
        let cur = json!({"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"a"}]}}}});
        let out = json_patch(
            &cur,
            json!([
                {"op":"test","path":"/spec/replicas","value":1},
                {"op":"replace","path":"/spec/replicas","value":3},
                {"op":"add","path":"/spec/template/spec/containers/-","value":{"name":"d"}},
                {"op":"copy","from":"/spec/replicas","path":"/spec/x"},
                {"op":"move","from":"/spec/x","path":"/spec/y"},
                {"op":"remove","path":"/spec/y"}
            ]),
        )
        .unwrap();
        assert_eq!(out["spec"]["replicas"], 3);
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][1]["name"],
            "d"
        );
        assert!(out["spec"].get("y").is_none());
    }

    #[test]
    fn json_patch_failures() {
        let cur = json!({"spec":{"replicas":1}});
        let e = json_patch(
            &cur,
            json!([{"op":"test","path":"/spec/replicas","value":2}]),
        )
        .unwrap_err();
        assert_eq!(e.code, 422);
        assert_eq!(e.reason, "Invalid");
        let cause = &e.details.as_ref().unwrap().causes[0].message;
        assert!(cause.starts_with("test operation 0"), "{cause}");
        let e = json_patch(&cur, json!([{"op":"remove","path":"/spec/nope"}])).unwrap_err();
        assert_eq!(e.code, 422);
        let e = json_patch(&cur, json!([{"op":"frobnicate","path":"/a"}])).unwrap_err();
        assert_eq!(e.code, 400);
        let e = json_patch(&cur, json!({"op":"add"})).unwrap_err();
        assert_eq!(e.code, 400);
    }

    #[test]
    fn merge_patch_semantics() {
        let cur = json!({"metadata":{"labels":{"a":"1","b":"2"}},"spec":{"l":[1,2]}});
        let out = merge_patch(
            &cur,
            &json!({"metadata":{"labels":{"a":null,"c":"3"}},"spec":{"l":[3]}}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata":{"labels":{"b":"2","c":"3"}},"spec":{"l":[3]}})
        );
        assert_eq!(merge_patch(&cur, &json!([1])).unwrap_err().code, 400);
    }
}
