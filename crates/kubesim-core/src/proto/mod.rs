//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`).
//!
//! kubectl's typed clients (`kubectl create deployment`, `autoscale`,
//! `drain`, ...) send built-in kinds as protobuf. The server keeps objects as
//! JSON, so bodies are turned into the JSON the same Go object would have
//! marshalled to, and everything downstream is unchanged. Responses stay
//! JSON: those clients accept it.
//!
//! A body is the magic `k8s\0` and a `runtime.Unknown`: {1: typeMeta
//! {1: apiVersion, 2: kind}, 2: raw (the object's message), 3:
//! contentEncoding, 4: contentType}. Field numbers and JSON names of the
//! object messages come from `messages.txt` (see `table.rs`).

mod decode;
mod table;
mod wire;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use table::Table;
use wire::{Reader, Wire};

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Every protobuf body starts with this.
const MAGIC: &[u8] = b"k8s\0";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    #[error("the body does not start with the protobuf prefix \"k8s\\x00\"")]
    NoMagic,
    /// The envelope names a kind the server has no message for.
    #[error("no kind {kind:?} is registered for version {api_version:?} in protobuf")]
    UnknownKind { api_version: String, kind: String },
    #[error("{0}")]
    Unsupported(String),
    /// Broken wire data; `at` is the JSON path of the field, if any.
    #[error("{}{reason}", if at.is_empty() { String::new() } else { format!("{at}: ") })]
    Malformed { at: String, reason: String },
}

impl ProtoError {
    fn malformed(reason: impl Into<String>) -> Self {
        ProtoError::Malformed {
            at: String::new(),
            reason: reason.into(),
        }
    }
}

impl From<decode::Error> for ProtoError {
    fn from(e: decode::Error) -> Self {
        let mut path = e.path;
        path.reverse();
        ProtoError::Malformed {
            at: path.join("."),
            reason: e.reason,
        }
    }
}

/// Decodes a protobuf request body into the object's JSON form, with
/// `apiVersion` and `kind` from the envelope.
pub fn decode_k8s_protobuf(body: &[u8]) -> Result<Value, ProtoError> {
    envelope(table::table(), body, 0)
}

fn envelope(t: &Table, body: &[u8], depth: usize) -> Result<Value, ProtoError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtoError::NoMagic)?;
    let mut api_version = "";
    let mut kind = "";
    let mut raw: &[u8] = &[];
    let mut encoding = "";
    let mut content_type = "";
    let mut r = Reader::new(rest);
    while let Some((tag, w)) = r.field().map_err(ProtoError::malformed)? {
        match (tag, w) {
            (1, Wire::Bytes(b)) => (api_version, kind) = type_meta(b)?,
            (2, Wire::Bytes(b)) => raw = b,
            (3, Wire::Bytes(b)) => encoding = text(b)?,
            (4, Wire::Bytes(b)) => content_type = text(b)?,
            (1..=4, w) => {
                return Err(ProtoError::malformed(format!(
                    "{} value in field {tag} of the envelope",
                    w.type_name()
                )))
            }
            _ => {}
        }
    }
    if !encoding.is_empty() {
        return Err(ProtoError::Unsupported(format!(
            "content encoding {encoding:?} is not supported"
        )));
    }
    if !content_type.is_empty() && content_type != MEDIA_TYPE {
        return Err(ProtoError::Unsupported(format!(
            "embedded content type {content_type:?} is not supported"
        )));
    }
    if kind.is_empty() {
        return Err(ProtoError::malformed("Object 'Kind' is missing"));
    }
    let m = t
        .kind(api_version, kind)
        .ok_or_else(|| ProtoError::UnknownKind {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        })?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(api_version.into()));
    out.insert("kind".into(), Value::String(kind.into()));
    decode::object_into(t, m, raw, depth, &mut out)?;
    Ok(Value::Object(out))
}

fn type_meta(b: &[u8]) -> Result<(&str, &str), ProtoError> {
    let (mut api_version, mut kind) = ("", "");
    let mut r = Reader::new(b);
    while let Some((tag, w)) = r.field().map_err(ProtoError::malformed)? {
        match (tag, w) {
            (1, Wire::Bytes(b)) => api_version = text(b)?,
            (2, Wire::Bytes(b)) => kind = text(b)?,
            (1 | 2, w) => {
                return Err(ProtoError::malformed(format!(
                    "{} value in field {tag} of typeMeta",
                    w.type_name()
                )))
            }
            _ => {}
        }
    }
    Ok((api_version, kind))
}

fn text(b: &[u8]) -> Result<&str, ProtoError> {
    std::str::from_utf8(b).map_err(|_| ProtoError::malformed("envelope string is not valid UTF-8"))
}
