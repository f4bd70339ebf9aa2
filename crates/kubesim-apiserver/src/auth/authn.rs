//! Authentication: which user a request comes from, as upstream's chain
//! of authenticators decides it. In order:
//! 1. a client certificate signed by the cluster's CA (the TLS server
//!    checks the chain and hands the subject in as [`PeerIdentity`]): the
//!    CN is the user, each O a group;
//! 2. a bearer token: the cluster's admin token, a ServiceAccount token
//!    issued by the TokenRequest API, or a legacy token Secret's token;
//! 3. no credentials: the admin on plain loopback HTTP (which has no
//!    way to carry credentials it could trust), else `system:anonymous`
//!    when anonymous access is on, else 401.
//!
//! A credential that is presented and not valid is refused with 401,
//! whatever else the request carries, as upstream does.

use std::collections::BTreeMap;

use http::{header, HeaderMap};
use kubesim_core::{meta, ApiError};
use serde_json::Value;

use super::UserInfo;
use crate::service::jwt::{ISSUER, LEGACY_ISSUER};
use crate::Server;

/// How a server authenticates and authorizes its requests.
#[derive(Debug, Clone)]
pub struct Config {
    /// The cluster's admin bearer token, if it has one.
    pub admin_token: Option<String>,
    /// Requests without credentials act as the admin (plain HTTP, which
    /// is served on loopback only).
    pub plain_admin: bool,
    /// Requests without credentials are `system:anonymous` (else 401).
    pub anonymous: bool,
    /// RBAC decides what each user may do (else everyone may do all).
    pub rbac: bool,
}

impl Default for Config {
    /// Plain loopback HTTP: no credentials needed, RBAC for those given.
    fn default() -> Self {
        Config {
            admin_token: None,
            plain_admin: true,
            anonymous: true,
            rbac: true,
        }
    }
}

impl Config {
    /// HTTPS with the cluster's admin token.
    pub fn tls(admin_token: String) -> Self {
        Config {
            admin_token: Some(admin_token),
            plain_admin: false,
            ..Default::default()
        }
    }
}

/// The subject of a verified client certificate, put on each request of
/// its connection by the TLS server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    pub common_name: String,
    pub organizations: Vec<String>,
}

/// Upstream's answer to a request whose credentials do not hold.
pub fn unauthorized() -> ApiError {
    ApiError::new(401, "Unauthorized", "Unauthorized")
}

/// Compares without an early exit, so timing does not leak a prefix.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Server {
    /// The user a request with `headers` (and `peer`, its connection's
    /// client certificate) comes from.
    pub fn authenticate(
        &self,
        config: &Config,
        headers: &HeaderMap,
        peer: Option<&PeerIdentity>,
    ) -> Result<UserInfo, ApiError> {
        if let Some(p) = peer.filter(|p| !p.common_name.is_empty()) {
            return Ok(UserInfo::authenticated(
                p.common_name.clone(),
                p.organizations.clone(),
            ));
        }
        let bearer = match headers.get(header::AUTHORIZATION) {
            None => None,
            Some(v) => {
                let v = v.to_str().map_err(|_| unauthorized())?;
                match v.split_once(' ') {
                    Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                        Some(token.trim())
                    }
                    // Basic and other schemes are not accepted upstream
                    // either; the request counts as carrying no token.
                    _ => None,
                }
            }
        };
        match bearer {
            Some("") | None => {}
            Some(token) => {
                if config
                    .admin_token
                    .as_deref()
                    .is_some_and(|admin| same_secret(admin, token))
                {
                    return Ok(UserInfo::admin());
                }
                return self.authenticate_token(token).ok_or_else(unauthorized);
            }
        }
        if config.plain_admin {
            Ok(UserInfo::admin())
        } else if config.anonymous {
            Ok(UserInfo::anonymous())
        } else {
            Err(unauthorized())
        }
    }

    /// The service account a token this server issued speaks for, while
    /// the token is valid: signed here, unexpired, for the API server's
    /// audience, and everything it is bound to (its account, and the pod,
    /// secret or node it names) still the same object.
    pub fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        let claims = self.tokens.read().verify(token)?;
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        if s(&claims, "iss").as_deref() == Some(LEGACY_ISSUER) {
            return self.authenticate_legacy(token, &claims);
        }
        let now = self.clock.now().as_second();
        let at = |k: &str| claims.get(k).and_then(Value::as_i64);
        if at("exp").is_none_or(|exp| now >= exp) || at("nbf").is_some_and(|nbf| now < nbf) {
            return None;
        }
        let audiences = match &claims["aud"] {
            Value::String(a) => vec![a.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !audiences.contains(&ISSUER) {
            return None;
        }
        let k8s = &claims["kubernetes.io"];
        let ns = s(k8s, "namespace")?;
        let sa = &k8s["serviceaccount"];
        let (name, uid) = (s(sa, "name")?, s(sa, "uid")?);
        if !self.object_has_uid("serviceaccounts", &ns, &name, &uid) {
            return None;
        }
        let mut user = service_account_user(&ns, &name, &uid);
        for (claim, plural) in [("pod", "pods"), ("secret", "secrets"), ("node", "nodes")] {
            let Some(bound) = k8s.get(claim).filter(|b| b.is_object()) else {
                continue;
            };
            let (bname, buid) = (s(bound, "name")?, s(bound, "uid")?);
            let bns = if plural == "nodes" { "" } else { ns.as_str() };
            if !self.object_has_uid(plural, bns, &bname, &buid) {
                return None;
            }
            if claim != "secret" {
                user.extra.insert(
                    format!("authentication.kubernetes.io/{claim}-name"),
                    vec![bname],
                );
                user.extra.insert(
                    format!("authentication.kubernetes.io/{claim}-uid"),
                    vec![buid],
                );
            }
        }
        if let Some(jti) = s(&claims, "jti") {
            user.extra.insert(
                "authentication.kubernetes.io/credential-id".into(),
                vec![format!("JTI={jti}")],
            );
        }
        Some(user)
    }

    /// A legacy token Secret's token: valid while the Secret still holds
    /// it and its service account is the same object.
    fn authenticate_legacy(&self, token: &str, claims: &Value) -> Option<UserInfo> {
        let c = |k: &str| {
            claims
                .get(format!("kubernetes.io/serviceaccount/{k}"))
                .and_then(Value::as_str)
        };
        let (ns, secret, name, uid) = (
            c("namespace")?,
            c("secret.name")?,
            c("service-account.name")?,
            c("service-account.uid")?,
        );
        let r = self.resource("", "v1", "secrets").ok()?;
        let stored = self.get(&r, ns, secret).ok()?;
        let held = stored
            .pointer("/data/token")
            .and_then(Value::as_str)
            .and_then(|t| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(t).ok()
            })?;
        if held != token.as_bytes() || !self.object_has_uid("serviceaccounts", ns, name, uid) {
            return None;
        }
        Some(service_account_user(ns, name, uid))
    }

    /// Whether the object exists with this uid.
    fn object_has_uid(&self, plural: &str, ns: &str, name: &str, uid: &str) -> bool {
        let Ok(r) = self.resource("", "v1", plural) else {
            return false;
        };
        self.get(&r, ns, name).is_ok_and(|o| meta::uid(&o) == uid)
    }
}

/// The user a service account's token authenticates as.
pub fn service_account_user(ns: &str, name: &str, uid: &str) -> UserInfo {
    let mut u = UserInfo::authenticated(
        format!("system:serviceaccount:{ns}:{name}"),
        vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{ns}"),
        ],
    );
    u.uid = uid.to_string();
    u.extra = BTreeMap::new();
    u
}
