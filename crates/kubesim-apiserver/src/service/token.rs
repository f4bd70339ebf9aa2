//! The `serviceaccounts/token` subresource: a TokenRequest
//! (authentication.k8s.io/v1) answered with a signed token for the service
//! account, as `kubectl create token` asks for. Nothing is stored; the
//! token itself is the record, and the API server accepts it back as a
//! bearer token while it is valid and its service account still exists.

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

    /// Whether `token` is one this server issued, still valid on the clock,
    /// for a service account that still exists (recreated accounts get a
    /// new uid, which the token does not carry).
    pub fn token_is_valid(&self, token: &str) -> bool {
        let Some(claims) = self.tokens.read().verify(token) else {
            return false;
        };
        let now = self.clock.now().as_second();
        let at = |k: &str| claims.get(k).and_then(Value::as_i64);
        if at("exp").is_none_or(|exp| now >= exp) || at("nbf").is_some_and(|nbf| now < nbf) {
            return false;
        }
        let k8s = &claims["kubernetes.io"];
        let (Some(ns), Some(name), Some(uid)) = (
            k8s["namespace"].as_str(),
            k8s["serviceaccount"]["name"].as_str(),
            k8s["serviceaccount"]["uid"].as_str(),
        ) else {
            return false;
        };
        let Ok(sar) = self.resource("", "v1", "serviceaccounts") else {
            return false;
        };
        self.get(&sar, ns, name)
            .is_ok_and(|sa| meta::uid(&sa) == uid)
    }
}
