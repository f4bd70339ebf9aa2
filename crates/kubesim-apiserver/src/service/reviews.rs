//! The create-only review kinds (SelfSubjectAccessReview,
//! SelfSubjectRulesReview, SelfSubjectReview, and SubjectAccessReview and
//! LocalSubjectAccessReview, which ask about another user): the answer is
//! computed from the request and returned with 201, and nothing is
//! stored, as upstream.
//!
//! kubesim has one identity (whoever holds the cluster's token, or anyone
//! when it has none) and no authorizer, so every review reports that
//! identity with full rights.

use kubesim_core::{ApiError, Cause, ResourceInfo};
use kubesim_runtime::WriteOptions;
use serde_json::{json, Value};

use super::write::WriteResult;
use super::Server;

/// The user every request is taken to be.
pub const USERNAME: &str = "kubesim-admin";
/// Its groups: `system:masters` is what grants everything on a real cluster.
pub const GROUPS: &[&str] = &["system:masters", "system:authenticated"];

const ALLOWED_REASON: &str = "kubesim allows every authenticated request";

impl Server {
    /// Answers a review. dryRun changes nothing: a review is never stored.
    pub(crate) fn create_review(
        &self,
        resource: &ResourceInfo,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let warnings = self.check_body(resource, &mut obj, opts)?;
        let status = match resource.kind.as_str() {
            "SelfSubjectAccessReview" => access_review(&obj, &resource.kind)?,
            "SubjectAccessReview" | "LocalSubjectAccessReview" => {
                subject_access_review(&obj, &resource.kind)?
            }
            "SelfSubjectRulesReview" => rules_review(&obj)?,
            "SelfSubjectReview" => json!({
                "userInfo": {"username": USERNAME, "groups": GROUPS},
            }),
            other => return Err(ApiError::internal(format!("{other} is not a review kind"))),
        };
        if let Some(m) = obj.as_object_mut() {
            // Upstream echoes the request's metadata; a review has no name,
            // so an absent one stays an empty object rather than null.
            if !m.get("metadata").is_some_and(Value::is_object) {
                m.insert("metadata".into(), json!({}));
            }
            m.insert("status".into(), status);
        }
        Ok(WriteResult {
            obj,
            created: true,
            warnings,
        })
    }
}

/// Exactly one of resourceAttributes and nonResourceAttributes, as
/// upstream's validation demands; the answer is always yes.
fn access_review(obj: &Value, kind: &str) -> Result<Value, ApiError> {
    let spec = &obj["spec"];
    let has = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    let cause = match (has("resourceAttributes"), has("nonResourceAttributes")) {
        (true, false) | (false, true) => None,
        (false, false) => Some(Cause::invalid(
            "spec.resourceAttributes",
            "null",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        (true, true) => Some(Cause::invalid(
            "spec.nonResourceAttributes",
            &spec["nonResourceAttributes"].to_string(),
            "cannot be specified in combination with resourceAttributes",
        )),
    };
    if let Some(c) = cause {
        return Err(ApiError::invalid(kind, "authorization.k8s.io", "", vec![c]));
    }
    Ok(json!({"allowed": true, "reason": ALLOWED_REASON}))
}

/// A question about another user: as [`access_review`], naming the user
/// or at least one group, as upstream's validation demands. Every user
/// may do everything here, so the answer is yes.
fn subject_access_review(obj: &Value, kind: &str) -> Result<Value, ApiError> {
    let spec = &obj["spec"];
    let user = spec["user"].as_str().unwrap_or("");
    let groups = spec["groups"].as_array().is_some_and(|g| !g.is_empty());
    if user.is_empty() && !groups {
        return Err(ApiError::invalid(
            kind,
            "authorization.k8s.io",
            "",
            vec![Cause::invalid(
                "spec.user",
                "\"\"",
                "at least one of user or group must be specified",
            )],
        ));
    }
    access_review(obj, kind)
}

/// Every verb on everything, in the namespace asked about.
fn rules_review(obj: &Value) -> Result<Value, ApiError> {
    let ns = obj["spec"]["namespace"].as_str().unwrap_or("");
    if ns.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    Ok(json!({
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": false,
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kubesim_runtime::{Clock, Rng};
    use kubesim_store::{MemStore, Store};

    use super::*;
    use crate::service::Caller;

    fn server() -> Arc<Server> {
        let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
        Server::new(store, Clock::wall(), Rng::seeded(1))
    }

    async fn create(s: &Server, plural: &str, body: Value) -> Result<WriteResult, ApiError> {
        let group = if plural == "selfsubjectreviews" {
            "authentication.k8s.io"
        } else {
            "authorization.k8s.io"
        };
        let r = s.resource(group, "v1", plural)?;
        s.create(&r, "", body, &WriteOptions::default(), &Caller::default())
            .await
    }

    #[tokio::test]
    async fn access_review_allows_and_stores_nothing() {
        let s = server();
        let body = json!({"spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}});
        let res = create(&s, "selfsubjectaccessreviews", body)
            .await
            .expect("review");
        assert!(res.created);
        assert_eq!(res.obj["status"]["allowed"], true);
        assert_eq!(res.obj["kind"], "SelfSubjectAccessReview");
        assert_eq!(res.obj["spec"]["resourceAttributes"]["verb"], "create");
        let r = s
            .resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
            .expect("resource");
        assert!(s.store.get(&r.storage_key(), "").is_none());
        let err = create(&s, "selfsubjectaccessreviews", json!({"spec": {}}))
            .await
            .err()
            .expect("invalid");
        assert_eq!(err.code, 422);
    }

    #[tokio::test]
    async fn rules_and_self_reviews() {
        let s = server();
        let rules = create(
            &s,
            "selfsubjectrulesreviews",
            json!({"spec": {"namespace": "default"}}),
        )
        .await
        .expect("rules");
        assert_eq!(rules.obj["status"]["resourceRules"][0]["verbs"][0], "*");
        assert_eq!(rules.obj["status"]["incomplete"], false);
        let no_ns = create(&s, "selfsubjectrulesreviews", json!({"spec": {}})).await;
        assert_eq!(no_ns.err().map(|e| e.code), Some(400));
        let me = create(&s, "selfsubjectreviews", json!({}))
            .await
            .expect("whoami");
        assert_eq!(me.obj["status"]["userInfo"]["username"], USERNAME);
    }

    #[tokio::test]
    async fn subject_access_reviews_name_someone() {
        let s = server();
        let body = json!({"spec": {"user": "system:node:n1", "groups": ["system:nodes"],
            "resourceAttributes": {"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                "verb": "create", "subresource": "nodeclient"}}});
        let res = create(&s, "subjectaccessreviews", body)
            .await
            .expect("review");
        assert_eq!(res.obj["status"]["allowed"], true);
        assert_eq!(res.obj["kind"], "SubjectAccessReview");
        let anonymous =
            json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}});
        let err = create(&s, "subjectaccessreviews", anonymous)
            .await
            .err()
            .expect("invalid");
        assert_eq!(err.code, 422);
    }

    #[test]
    fn other_verbs_are_not_allowed() {
        let s = server();
        let r = s
            .resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
            .expect("resource");
        let list = s.list(&r, "", &Default::default());
        assert_eq!(list.err().map(|e| e.code), Some(405));
        assert_eq!(s.get(&r, "", "x").err().map(|e| e.code), Some(405));
    }
}
