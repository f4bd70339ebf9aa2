//! The `serviceaccounts/token` subresource: a TokenRequest
//! (authentication.k8s.io/v1) answered with a signed token for the service
//! account, as `kubectl create token` asks for. Nothing is stored; the
//! token itself is the record, and the API server accepts it back as a
//! bearer token while it is valid (see `auth::authn`).

use kubesim_core::{meta, ApiError, Cause};
use serde_json::{json, Value};

use super::jwt::ISSUER;
use super::Server;

/// Default and bounds of `spec.expirationSeconds`, upstream's.
const DEFAULT_EXPIRATION: i64 = 3600;
const MIN_EXPIRATION: i64 = 600;
const MAX_EXPIRATION: i64 = 1 << 32;

fn invalid(name: &str, cause: Cause) -> ApiError {
    ApiError::invalid("TokenRequest", "authentication.k8s.io", name, vec![cause])
}

impl Server {
    /// POST `serviceaccounts/{name}/token`.
    pub fn create_token(&self, ns: &str, name: &str, body: &Value) -> Result<Value, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request is not a JSON object",
            ));
        }
        for (field, want) in [
            ("apiVersion", "authentication.k8s.io/v1"),
            ("kind", "TokenRequest"),
        ] {
            match body.get(field).and_then(Value::as_str) {
                None | Some("") => {}
                Some(v) if v == want => {}
                Some(v) => {
                    return Err(ApiError::bad_request(format!(
                        "the {field} in the data ({v}) does not match the expected {field} ({want})"
                    )))
                }
            }
        }
        let empty = json!({});
        let spec = body.get("spec").unwrap_or(&empty);
        let expiration = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION,
            Some(v) => v.as_i64().ok_or_else(|| {
                ApiError::bad_request("spec.expirationSeconds must be an integer")
            })?,
        };
        let too = if expiration < MIN_EXPIRATION {
            Some("less than 10 minutes")
        } else if expiration > MAX_EXPIRATION {
            Some("larger than 2^32 seconds")
        } else {
            None
        };
        if let Some(too) = too {
            return Err(invalid(
                name,
                kubesim_core::validation::fields::invalid_int(
                    "spec.expirationSeconds",
                    expiration,
                    &format!("may not specify a duration {too}"),
                ),
            ));
        }
        let mut audiences: Vec<String> = match spec.get("audiences") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_str().map(str::to_string).ok_or_else(|| {
                        ApiError::bad_request("spec.audiences must be a list of strings")
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(ApiError::bad_request(
                    "spec.audiences must be a list of strings",
                ))
            }
        };
        if audiences.is_empty() {
            audiences.push(ISSUER.to_string());
        }

        let sar = self.resource("", "v1", "serviceaccounts")?;
        let sa = self.get(&sar, ns, name)?;
        self.node_token_restriction(&sar, ns, name, body)?;
        let mut k8s = json!({
            "namespace": ns,
            "serviceaccount": {"name": name, "uid": meta::uid(&sa)},
        });
        let bound = spec.get("boundObjectRef").filter(|b| !b.is_null());
        if let Some(b) = bound {
            let (claim, bound_name, bound_uid) = self.bound_object(ns, b)?;
            k8s[claim] = json!({"name": bound_name, "uid": bound_uid});
        }

        let now = self.clock.now();
        let iat = now.as_second();
        let exp = iat.saturating_add(expiration);
        let claims = json!({
            "aud": audiences,
            "exp": exp,
            "iat": iat,
            "iss": ISSUER,
            "jti": self.rng.uuid(),
            "kubernetes.io": k8s,
            "nbf": iat,
            "sub": format!("system:serviceaccount:{ns}:{name}"),
        });
        let token = self.tokens.read().sign(&claims);
        let expires = now
            .checked_add(jiff::SignedDuration::from_secs(expiration))
            .unwrap_or(now);
        let mut out_spec = json!({"audiences": audiences, "expirationSeconds": expiration});
        if let Some(b) = bound {
            out_spec["boundObjectRef"] = b.clone();
        }
        Ok(json!({
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": null},
            "spec": out_spec,
            "status": {"token": token, "expirationTimestamp": meta::format_time(expires)},
        }))
    }

    /// Checks a `boundObjectRef` (a Pod, Secret or Node that must exist,
    /// with the given uid if one is named); returns the claim it adds.
    fn bound_object(
        &self,
        ns: &str,
        b: &Value,
    ) -> Result<(&'static str, String, String), ApiError> {
        let kind = b.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = b.get("apiVersion").and_then(Value::as_str).unwrap_or("v1");
        let (claim, plural) = match (api_version, kind) {
            ("v1", "Pod") => ("pod", "pods"),
            ("v1", "Secret") => ("secret", "secrets"),
            ("v1", "Node") => ("node", "nodes"),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {api_version}, Kind={kind}"
                )))
            }
        };
        let name = b.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            return Err(invalid("", Cause::required("spec.boundObjectRef.name")));
        }
        let r = self.resource("", "v1", plural)?;
        let obj = self.get(&r, ns, name)?;
        let uid = meta::uid(&obj).to_string();
        if let Some(want) = b
            .get("uid")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
        {
            if want != uid {
                return Err(ApiError::conflict(
                    plural,
                    "",
                    name,
                    &format!("the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"),
                ));
            }
        }
        Ok((claim, name.to_string(), uid))
    }
}

/// The Secret type whose token kube-controller-manager's token controller
/// fills in for a service account (legacy, long-lived tokens).
const LEGACY_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";

impl Server {
    /// Fills a new legacy token Secret with its service account's token
    /// and namespace, as upstream's token controller does right after the
    /// create. The token does not expire; it stays valid while the Secret
    /// holds it and the account is the same object. A Secret for an
    /// account that does not exist is left empty.
    pub(crate) fn admit_legacy_token(&self, obj: &mut Value) {
        if obj.get("type").and_then(Value::as_str) != Some(LEGACY_TOKEN_TYPE) {
            return;
        }
        let has_token = obj
            .pointer("/data/token")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty());
        let (ns, secret) = (
            meta::namespace(obj).to_string(),
            meta::name(obj).to_string(),
        );
        let Some(account) = obj
            .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
            .and_then(Value::as_str)
            .map(str::to_string)
        else {
            return;
        };
        let Ok(sar) = self.resource("", "v1", "serviceaccounts") else {
            return;
        };
        let Ok(sa) = self.get(&sar, &ns, &account) else {
            return;
        };
        let uid = meta::uid(&sa).to_string();
        obj["metadata"]["annotations"]["kubernetes.io/service-account.uid"] = json!(uid);
        if has_token {
            return;
        }
        let claims = json!({
            "iss": super::jwt::LEGACY_ISSUER,
            "kubernetes.io/serviceaccount/namespace": ns,
            "kubernetes.io/serviceaccount/secret.name": secret,
            "kubernetes.io/serviceaccount/service-account.name": account,
            "kubernetes.io/serviceaccount/service-account.uid": uid,
            "sub": format!("system:serviceaccount:{ns}:{account}"),
        });
        let token = self.tokens.read().sign(&claims);
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        if !obj.get("data").is_some_and(Value::is_object) {
            obj["data"] = json!({});
        }
        obj["data"]["token"] = json!(b64(&token));
        obj["data"]["namespace"] = json!(b64(&ns));
    }
}
