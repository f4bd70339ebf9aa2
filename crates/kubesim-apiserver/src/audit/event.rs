//! One audit event (`audit.k8s.io/v1` Event), serialized with upstream's
//! field names; optional fields are left out when empty, as upstream does.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;
use serde_json::Value;

use super::{Level, Stage};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub level: &'static str,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: &'static str,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: UserInfo,
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    pub request_received_timestamp: String,
    pub stage_timestamp: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct UserInfo {
    pub username: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// metav1.MicroTime: RFC 3339 with six fractional digits, in UTC.
pub fn micro_time(t: Timestamp) -> String {
    format!("{t:.6}")
}

impl Event {
    /// An event at the first stage; later stages are clones with the stage,
    /// its time and the response filled in.
    #[allow(clippy::too_many_arguments)]
    pub fn received(
        level: Level,
        audit_id: String,
        request_uri: String,
        verb: String,
        user: UserInfo,
        source_ips: Vec<String>,
        user_agent: String,
        object_ref: Option<ObjectRef>,
        at: Timestamp,
    ) -> Event {
        let t = micro_time(at);
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: level.as_str(),
            audit_id,
            stage: Stage::RequestReceived.as_str(),
            request_uri,
            verb,
            user,
            source_ips,
            user_agent,
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: t.clone(),
            stage_timestamp: t,
            annotations: BTreeMap::new(),
        }
    }

    pub fn at_stage(&self, stage: Stage, at: Timestamp) -> Event {
        let mut e = self.clone();
        e.stage = stage.as_str();
        e.stage_timestamp = micro_time(at);
        e
    }
}

/// Drops `metadata.managedFields` from an object, or from each item of a
/// list, for policies with omitManagedFields.
pub fn strip_managed_fields(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        for i in items {
            strip_managed_fields(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_has_six_digits() {
        let t: Timestamp = "2026-01-02T03:04:05.123456789Z".parse().unwrap();
        let s = micro_time(t);
        assert!(s.starts_with("2026-01-02T03:04:05.123456"), "{s}");
        assert!(s.ends_with('Z') && s.len() == 27, "{s}");
        let whole: Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
        assert_eq!(micro_time(whole), "2026-01-02T03:04:05.000000Z");
    }

    #[test]
    fn empty_fields_are_left_out() {
        let t: Timestamp = "2026-01-02T03:04:05Z".parse().unwrap();
        let e = Event::received(
            Level::Metadata,
            "id".into(),
            "/api".into(),
            "get".into(),
            UserInfo {
                username: "u".into(),
                groups: vec![],
            },
            vec![],
            String::new(),
            None,
            t,
        )
        .at_stage(Stage::ResponseComplete, t);
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["kind"], "Event");
        assert_eq!(v["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(v["stage"], "ResponseComplete");
        assert_eq!(v["auditID"], "id");
        assert_eq!(v["requestURI"], "/api");
        for absent in [
            "objectRef",
            "sourceIPs",
            "userAgent",
            "requestObject",
            "annotations",
        ] {
            assert!(v.get(absent).is_none(), "{absent}: {v}");
        }
        assert!(v["user"].get("groups").is_none());
    }

    #[test]
    fn managed_fields_are_stripped_from_objects_and_lists() {
        let mut v = serde_json::json!({
            "metadata": {"name": "a", "managedFields": [{}]},
            "items": [{"metadata": {"managedFields": [{}], "name": "b"}}],
        });
        strip_managed_fields(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"metadata": {"name": "a"}, "items": [{"metadata": {"name": "b"}}]})
        );
    }
}
