//! The create-only review kinds (SelfSubjectAccessReview,
//! SelfSubjectRulesReview, SelfSubjectReview, and SubjectAccessReview and
//! LocalSubjectAccessReview, which ask about another user): the answer is
//! computed from the request and returned with 201, and nothing is
//! stored, as upstream.
//!
//! Access reviews are answered by the server's authorizer (RBAC, or
//! everything allowed when RBAC is off), so `kubectl auth can-i` tells
//! the truth. The self reviews ask about the requesting user; calls from
//! components in this process ask as the admin.

use std::collections::BTreeMap;

use kubesim_core::{ApiError, Cause, ResourceInfo};
use kubesim_runtime::WriteOptions;
use serde_json::{json, Value};

use super::write::WriteResult;
use super::Server;
use crate::auth::{self, Attributes, UserInfo};

impl Server {
    /// Answers a review. dryRun changes nothing: a review is never stored.
    pub(crate) fn create_review(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<WriteResult, ApiError> {
        let warnings = self.check_body(resource, &mut obj, opts)?;
        let requester = || {
            auth::current()
                .map(|a| a.user.as_ref().clone())
                .unwrap_or_else(UserInfo::admin)
        };
        let kind = resource.kind.as_str();
        let status = match kind {
            "SelfSubjectAccessReview" => {
                let a = review_attributes(&obj, kind)?;
                self.access_decision(&requester(), &a)
            }
            "SubjectAccessReview" | "LocalSubjectAccessReview" => {
                let user = reviewed_user(&obj, kind)?;
                let a = review_attributes(&obj, kind)?;
                if kind == "LocalSubjectAccessReview" && a.resource_request && a.namespace != ns {
                    return Err(invalid(
                        kind,
                        Cause::invalid(
                            "spec.resourceAttributes.namespace",
                            &format!("{:?}", a.namespace),
                            &format!("must match metadata.namespace: {ns:?}"),
                        ),
                    ));
                }
                self.access_decision(&user, &a)
            }
            "SelfSubjectRulesReview" => self.rules_review(&requester(), &obj)?,
            "SelfSubjectReview" => json!({"userInfo": requester().to_value()}),
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

    /// An access review's status: allowed or not, with the reason.
    fn access_decision(&self, user: &UserInfo, a: &Attributes) -> Value {
        let (allowed, reason) = if self.rbac_enabled() {
            let d = self.authorize(user, a);
            (d.allowed, d.reason)
        } else {
            (true, String::new())
        };
        let mut status = json!({"allowed": allowed});
        if !reason.is_empty() {
            status["reason"] = reason.into();
        }
        status
    }

    /// What the user may do in the namespace asked about.
    fn rules_review(&self, user: &UserInfo, obj: &Value) -> Result<Value, ApiError> {
        let ns = obj["spec"]["namespace"].as_str().unwrap_or("");
        if ns.is_empty() {
            return Err(ApiError::bad_request("no namespace on request"));
        }
        if !self.rbac_enabled() || user.is_privileged() {
            return Ok(json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            }));
        }
        let rules = self.rules_of(user, ns);
        let (urls, resources): (Vec<_>, Vec<_>) =
            rules.iter().partition(|r| !r.non_resource_urls.is_empty());
        let mut status = json!({
            "resourceRules": resources.iter().map(|r| r.to_value()).collect::<Vec<_>>(),
            "nonResourceRules": urls.iter().map(|r| r.to_value()).collect::<Vec<_>>(),
            "incomplete": false,
        });
        // A kubelet's rights depend on its pods, which no list of rules
        // can state: upstream's Node authorizer says so, and the list is
        // RBAC's alone.
        if self.node_authorizer_enabled() && crate::auth::node::node_of(user).is_some() {
            status["incomplete"] = json!(true);
            status["evaluationError"] =
                json!("node authorizer does not support user rule resolution");
        }
        Ok(status)
    }
}

fn invalid(kind: &str, cause: Cause) -> ApiError {
    ApiError::invalid(kind, "authorization.k8s.io", "", vec![cause])
}

/// The request a review asks about: exactly one of resourceAttributes and
/// nonResourceAttributes, as upstream's validation demands.
fn review_attributes(obj: &Value, kind: &str) -> Result<Attributes, ApiError> {
    let spec = &obj["spec"];
    let has = |k: &str| spec.get(k).is_some_and(|v| !v.is_null());
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match (has("resourceAttributes"), has("nonResourceAttributes")) {
        (true, false) => {
            let r = &spec["resourceAttributes"];
            Ok(Attributes {
                verb: s(r, "verb"),
                resource_request: true,
                group: s(r, "group"),
                version: s(r, "version"),
                resource: s(r, "resource"),
                subresource: s(r, "subresource"),
                namespace: s(r, "namespace"),
                name: s(r, "name"),
                path: String::new(),
                field_selector: s(&r["fieldSelector"], "rawSelector"),
            })
        }
        (false, true) => {
            let r = &spec["nonResourceAttributes"];
            Ok(Attributes {
                verb: s(r, "verb"),
                path: s(r, "path"),
                ..Default::default()
            })
        }
        (false, false) => Err(invalid(
            kind,
            Cause::invalid(
                "spec.resourceAttributes",
                "null",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ),
        )),
        (true, true) => Err(invalid(
            kind,
            Cause::invalid(
                "spec.nonResourceAttributes",
                &spec["nonResourceAttributes"].to_string(),
                "cannot be specified in combination with resourceAttributes",
            ),
        )),
    }
}

/// The user a review about another user names: a user or at least one
/// group, as upstream's validation demands.
fn reviewed_user(obj: &Value, kind: &str) -> Result<UserInfo, ApiError> {
    let spec = &obj["spec"];
    let user = spec["user"].as_str().unwrap_or("").to_string();
    let groups: Vec<String> = spec["groups"]
        .as_array()
        .map(|g| {
            g.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if user.is_empty() && groups.is_empty() {
        return Err(invalid(
            kind,
            Cause::invalid(
                "spec.user",
                "\"\"",
                "at least one of user or group must be specified",
            ),
        ));
    }
    let extra: BTreeMap<String, Vec<String>> = spec["extra"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let vals = v
                        .as_array()
                        .map(|a| {
                            a.iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string)
                                .collect()
                        })
                        .unwrap_or_default();
                    (k.clone(), vals)
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(UserInfo {
        name: user,
        uid: spec["uid"].as_str().unwrap_or("").to_string(),
        groups,
        extra,
    })
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
        assert_eq!(me.obj["status"]["userInfo"]["username"], crate::auth::ADMIN);
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
