//! How much of a remote server's answer a write reads. A caller that
//! sets [`WriteOptions::version_only`] or [`DeleteOptions::status_only`]
//! reads nothing of the answer but its resourceVersion; the server still
//! sends the whole object (the flags are never sent), but building it as a
//! tree only to drop it was a tenth of a load-test runner's CPU. Such an
//! answer is scanned for `metadata.resourceVersion` alone, and the caller
//! gets that field and nothing else: for a write, what the in-process
//! server answers ([`version_answer`]); for a deletion, where the
//! in-process server answers a Success Status, the same field-only stub.
//!
//! [`WriteOptions::version_only`]: crate::api::WriteOptions::version_only
//! [`DeleteOptions::status_only`]: crate::api::DeleteOptions::status_only
//! [`version_answer`]: crate::api::version_answer

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::version_answer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The whole object, parsed.
    Whole,
    /// Only `metadata.resourceVersion` (absent from a Status).
    Version,
}

/// The fields of an answer a `Version` reader keeps; the rest is skipped
/// without being built.
#[derive(Deserialize)]
struct Stub<'a> {
    #[serde(default, borrow)]
    metadata: Option<StubMeta<'a>>,
}

#[derive(Deserialize)]
struct StubMeta<'a> {
    #[serde(default, borrow, rename = "resourceVersion")]
    resource_version: Option<Cow<'a, str>>,
}

impl Answer {
    /// The answer to read for a caller that reads only the
    /// resourceVersion (`version_only`, `status_only`) or the whole.
    pub(crate) fn of(version_only: bool) -> Answer {
        if version_only {
            Answer::Version
        } else {
            Answer::Whole
        }
    }

    /// `bytes` read as this answer says; an error if they are not JSON.
    pub(crate) fn read(self, bytes: &[u8]) -> Result<Value, serde_json::Error> {
        match self {
            Answer::Whole => serde_json::from_slice(bytes),
            Answer::Version => {
                let stub: Stub<'_> = serde_json::from_slice(bytes)?;
                Ok(match stub.metadata.and_then(|m| m.resource_version) {
                    Some(rv) => version_answer(&rv),
                    None => json!({"metadata": {}}),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_answer_keeps_the_resource_version_alone() {
        let pod = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","labels":{"a":"b\"c"},"resourceVersion":"42"},"spec":{"containers":[{"name":"c"}]}}"#;
        assert_eq!(
            Answer::Version.read(pod).unwrap(),
            json!({"metadata": {"resourceVersion": "42"}})
        );
        let whole = Answer::Whole.read(pod).unwrap();
        assert_eq!(whole["spec"]["containers"][0]["name"], "c");
        // A Status carries no resourceVersion; an escaped one is unescaped.
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Success","metadata":{}}"#;
        assert_eq!(
            Answer::Version.read(status).unwrap(),
            json!({"metadata": {}})
        );
        let escaped = br#"{"metadata":{"resourceVersion":"4\u0032"}}"#;
        assert_eq!(
            Answer::Version.read(escaped).unwrap()["metadata"]["resourceVersion"],
            "42"
        );
    }

    #[test]
    fn a_version_answer_that_is_not_json_is_an_error() {
        assert!(Answer::Version.read(b"<html>").is_err());
        assert!(Answer::Version
            .read(br#"{"metadata":{"resourceVersion":"1""#)
            .is_err());
        assert!(Answer::Whole.read(b"").is_err());
    }
}
