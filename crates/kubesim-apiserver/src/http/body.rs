//! Request bodies of creates, updates, subresources and deletes: JSON, YAML
//! or Kubernetes protobuf, all turned into JSON values. Patch bodies are
//! not decoded here: their content type names the patch kind.

use kubesim_core::proto::{self, ProtoError};
use kubesim_core::{schema, ApiError};
use kubesim_runtime::FieldValidation;
use serde_json::Value;

/// The media type of a Content-Type header, lowercased, without parameters.
fn essence(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Decodes a create/update body: JSON (also when no Content-Type is sent,
/// as the Python client does), YAML, or protobuf (kubectl's typed clients).
pub(crate) fn decode(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    let v: Value = match essence(content_type).as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the body is not valid UTF-8"))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?
        }
        proto::MEDIA_TYPE => protobuf(body)?,
        other => return Err(ApiError::unsupported_body_media_type(other)),
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    Ok(v)
}

/// The duplicate keys of a JSON create or update body under
/// `fieldValidation`: Strict refuses them, Warn (the default) returns them
/// as warnings, Ignore does not look.
pub(crate) fn duplicates(
    content_type: &str,
    body: &[u8],
    mode: Option<FieldValidation>,
) -> Result<Vec<String>, ApiError> {
    let mode = mode.unwrap_or(FieldValidation::Warn);
    let json = matches!(
        essence(content_type).as_str(),
        "" | "application/json" | "*/*"
    );
    if mode == FieldValidation::Ignore || !json {
        return Ok(Vec::new());
    }
    let found: Vec<String> = schema::duplicate_fields(body)
        .into_iter()
        .map(|f| format!("duplicate field \"{f}\""))
        .collect();
    if mode == FieldValidation::Strict && !found.is_empty() {
        return Err(ApiError::bad_request(format!(
            "strict decoding error: {}",
            found.join(", ")
        )));
    }
    Ok(found)
}

/// The optional DeleteOptions body of a DELETE; client-go's typed clients
/// send it as protobuf (`kubectl drain --disable-eviction`).
pub(crate) fn delete_options(content_type: &str, raw: &[u8]) -> Result<Option<Value>, ApiError> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    if essence(content_type) == proto::MEDIA_TYPE {
        return protobuf(raw).map(Some);
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))
}

fn protobuf(body: &[u8]) -> Result<Value, ApiError> {
    proto::decode_k8s_protobuf(body).map_err(|e| {
        let message = format!("unable to decode protobuf body: {e}");
        match e {
            // Well-formed, but nothing this server can read as protobuf:
            // the client may retry as JSON.
            ProtoError::UnknownKind { .. } | ProtoError::Unsupported(_) => {
                ApiError::new(415, "UnsupportedMediaType", message)
            }
            ProtoError::NoMagic | ProtoError::Malformed { .. } => ApiError::bad_request(message),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_bodies_decode_and_errors_map_to_status_codes() {
        // The bytes kubectl 1.32 sends for `create configmap cm --from-literal=a=b`.
        let b = [
            0x6b, 0x38, 0x73, 0x00, 0x0a, 0x0f, 0x0a, 0x02, 0x76, 0x31, 0x12, 0x09, 0x43, 0x6f,
            0x6e, 0x66, 0x69, 0x67, 0x4d, 0x61, 0x70, 0x12, 0x1c, 0x0a, 0x12, 0x0a, 0x02, 0x63,
            0x6d, 0x12, 0x00, 0x1a, 0x00, 0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42,
            0x00, 0x12, 0x06, 0x0a, 0x01, 0x61, 0x12, 0x01, 0x62, 0x1a, 0x00, 0x22, 0x00,
        ];
        let ct = "application/vnd.kubernetes.protobuf";
        let v = decode(ct, &b).unwrap();
        assert_eq!(v["kind"], "ConfigMap");
        assert_eq!(v["metadata"]["name"], "cm");
        assert_eq!(v["data"]["a"], "b");
        assert_eq!(v.as_object().unwrap().len(), 4, "{v}");

        let e = decode(ct, b"{}").unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.starts_with("unable to decode protobuf"),
            "{}",
            e.message
        );

        let mut unknown = b"k8s\0".to_vec();
        unknown.extend_from_slice(&[0x0a, 0x08, 0x0a, 0x01, b'x', 0x12, 0x03, b'F', b'o', b'o']);
        let e = decode(ct, &unknown).unwrap_err();
        assert_eq!(e.code, 415);

        let e = decode("application/cbor", b"").unwrap_err();
        assert_eq!(e.code, 415);
        assert!(e.message.contains("application/vnd.kubernetes.protobuf"));
    }

    #[test]
    fn delete_options_accept_protobuf() {
        // kubectl drain --disable-eviction --grace-period=0
        let mut b = b"k8s\0".to_vec();
        b.extend_from_slice(&[0x0a, 0x13, 0x0a, 0x02, b'v', b'1', 0x12, 0x0d]);
        b.extend_from_slice(b"DeleteOptions");
        b.extend_from_slice(&[0x12, 0x02, 0x08, 0x00]);
        let v = delete_options("application/vnd.kubernetes.protobuf", &b)
            .unwrap()
            .unwrap();
        assert_eq!(v["gracePeriodSeconds"], 0);
        assert_eq!(delete_options("", b" ").unwrap(), None);
    }
}
