//! API errors and their `metav1.Status` form.
//!
//! Every failure a client can see is an [`ApiError`]: an HTTP code, a
//! Kubernetes `reason`, a message and optional details. Handlers never build
//! Status JSON by hand, so codes and reasons stay consistent across verbs.

use serde_json::{json, Value};

/// One field-level cause of a failure (`details.causes[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// e.g. `FieldValueRequired`, `FieldValueInvalid`, `FieldManagerConflict`.
    pub reason: String,
    pub message: String,
    /// Dotted field path, e.g. `spec.containers[0].image`.
    pub field: String,
}

impl Cause {
    pub fn new(reason: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Cause {
            reason: reason.to_string(),
            field: field.into(),
            message: message.into(),
        }
    }
    pub fn required(field: impl Into<String>) -> Self {
        Cause::new("FieldValueRequired", field, "Required value")
    }
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: \"{value}\": {detail}"),
        )
    }
    pub fn unsupported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        Cause::new(
            "FieldValueNotSupported",
            field,
            format!(
                "Unsupported value: \"{value}\": supported values: {}",
                list.join(", ")
            ),
        )
    }
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Cause::new(
            "FieldValueForbidden",
            field,
            format!("Forbidden: {}", detail.into()),
        )
    }
    /// The human form used inside an Invalid message: `spec.x: Required value`.
    pub fn describe(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// Details of a failure: what it was about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    pub name: String,
    pub group: String,
    /// The resource (plural) or kind the failure is about.
    pub kind: String,
    pub causes: Vec<Cause>,
    pub retry_after_seconds: Option<u32>,
}

/// A failure as the Kubernetes API reports it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub details: Option<Box<Details>>,
}

/// The `<resource>.<group>` form used in messages (`deployments.apps`).
pub fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, name: &str, group: &str, kind: &str) -> Self {
        let d = self.details.get_or_insert_with(Default::default);
        d.name = name.to_string();
        d.group = group.to_string();
        d.kind = kind.to_string();
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn not_found(resource: &str, group: &str, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(resource, group)),
        )
        .with_details(name, group, resource)
    }

    /// The answer for a path that names no resource.
    pub fn path_not_found() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(resource, group)),
        )
        .with_details(name, group, resource)
    }

    pub fn conflict(resource: &str, group: &str, name: &str, why: &str) -> Self {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(resource, group)
            ),
        )
        .with_details(name, group, resource)
    }

    /// The stale-resourceVersion conflict every client knows by heart.
    pub fn stale(resource: &str, group: &str, name: &str) -> Self {
        ApiError::conflict(
            resource,
            group,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        let list: Vec<String> = causes.iter().map(Cause::describe).collect();
        let what = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = if list.len() == 1 {
            format!("{what} \"{name}\" is invalid: {}", list[0])
        } else {
            format!("{what} \"{name}\" is invalid: [{}]", list.join(", "))
        };
        let mut e = ApiError::new(422, "Invalid", message).with_details(name, group, kind);
        if let Some(d) = e.details.as_mut() {
            d.causes = causes;
        }
        e
    }

    /// Upstream's `NewForbidden`: the resource and name are left out of
    /// the message when the request had none.
    pub fn forbidden(resource: &str, group: &str, name: &str, why: &str) -> Self {
        let message = if resource.is_empty() {
            format!("forbidden: {why}")
        } else if name.is_empty() {
            format!("{} is forbidden: {why}", qualified(resource, group))
        } else {
            format!(
                "{} \"{name}\" is forbidden: {why}",
                qualified(resource, group)
            )
        };
        ApiError::new(403, "Forbidden", message).with_details(name, group, resource)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        ApiError::new(405, "MethodNotAllowed", message)
    }

    pub fn not_acceptable(message: impl Into<String>) -> Self {
        ApiError::new(406, "NotAcceptable", message)
    }

    pub fn expired(message: impl Into<String>) -> Self {
        ApiError::new(410, "Expired", message)
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        ApiError::new(413, "RequestEntityTooLarge", message)
    }

    pub fn unsupported_media_type(content_type: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got \"{content_type}\")"),
        )
    }

    /// A create, update or subresource body in a format the server cannot read.
    pub fn unsupported_body_media_type(content_type: &str) -> Self {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got \"{content_type}\")"),
        )
    }

    pub fn too_many_requests(message: impl Into<String>, retry_after: u32) -> Self {
        let mut e = ApiError::new(429, "TooManyRequests", message);
        e.details = Some(Box::new(Details {
            retry_after_seconds: Some(retry_after),
            ..Details::default()
        }));
        e
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "InternalError", message)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        ApiError::new(504, "Timeout", message)
    }

    /// The `metav1.Status` object for this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            let mut details = serde_json::Map::new();
            if !d.name.is_empty() {
                details.insert("name".into(), d.name.clone().into());
            }
            if !d.group.is_empty() {
                details.insert("group".into(), d.group.clone().into());
            }
            if !d.kind.is_empty() {
                details.insert("kind".into(), d.kind.clone().into());
            }
            if !d.causes.is_empty() {
                let causes: Vec<Value> = d
                    .causes
                    .iter()
                    .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                    .collect();
                details.insert("causes".into(), causes.into());
            }
            if let Some(r) = d.retry_after_seconds {
                details.insert("retryAfterSeconds".into(), r.into());
            }
            status["details"] = Value::Object(details);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_group() {
        let e = ApiError::not_found("deployments", "apps", "web");
        assert_eq!(e.message, "deployments.apps \"web\" not found");
        let s = e.to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "deployments");
        assert_eq!(s["details"]["group"], "apps");
    }

    #[test]
    fn invalid_lists_causes() {
        let e = ApiError::invalid(
            "Pod",
            "",
            "p",
            vec![
                Cause::required("spec.containers"),
                Cause::required("spec.x"),
            ],
        );
        assert_eq!(
            e.message,
            "Pod \"p\" is invalid: [spec.containers: Required value, spec.x: Required value]"
        );
        assert_eq!(
            e.to_status()["details"]["causes"][0]["field"],
            "spec.containers"
        );
    }
}
