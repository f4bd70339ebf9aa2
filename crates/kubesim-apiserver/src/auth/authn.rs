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
use std::sync::Arc;

use http::{header, HeaderMap};
use kubesim_core::{meta, ApiError};
use kubesim_store::Record;
use serde_json::Value;

use super::token_cache::Checked;
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
    /// secret or node it names) still the same object. Tokens checked
    /// before are answered from [`TokenCache`](super::token_cache).
    pub fn authenticate_token(&self, token: &str) -> Option<UserInfo> {
        let now = self.clock.now().as_second();
        let current = |res: &str, key: &str| self.store.get(res, key);
        if let Some(user) = self.tokens_checked.get(token, now, current) {
            return Some(user);
        }
        let checked = self.check_token(token, now)?;
        let user = checked.user.clone();
        self.tokens_checked.put(token, checked);
        Some(user)
    }

    /// The full check of a token, with the records it depends on.
    fn check_token(&self, token: &str, now: i64) -> Option<Checked> {
        let claims = self.tokens.read().verify(token)?;
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        if s(&claims, "iss").as_deref() == Some(LEGACY_ISSUER) {
            return self.check_legacy(token, &claims);
        }
        let at = |k: &str| claims.get(k).and_then(Value::as_i64);
        let (expires, not_before) = (at("exp")?, at("nbf"));
        if now >= expires || not_before.is_some_and(|nbf| now < nbf) {
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
        let mut records = vec![self.record_with_uid("serviceaccounts", &ns, &name, &uid)?];
        let mut user = service_account_user(&ns, &name, &uid);
        for (claim, plural) in [("pod", "pods"), ("secret", "secrets"), ("node", "nodes")] {
            let Some(bound) = k8s.get(claim).filter(|b| b.is_object()) else {
                continue;
            };
            let (bname, buid) = (s(bound, "name")?, s(bound, "uid")?);
            let bns = if plural == "nodes" { "" } else { ns.as_str() };
            records.push(self.record_with_uid(plural, bns, &bname, &buid)?);
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
        Some(Checked {
            user,
            not_before,
            expires: Some(expires),
            records,
        })
    }

    /// A legacy token Secret's token: valid while the Secret still holds
    /// it and its service account is the same object.
    fn check_legacy(&self, token: &str, claims: &Value) -> Option<Checked> {
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
        let (res, key, stored) = self.record("secrets", ns, secret)?;
        let held = serde_json::from_slice::<Value>(&stored.bytes)
            .ok()?
            .pointer("/data/token")
            .and_then(Value::as_str)
            .and_then(|t| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(t).ok()
            })?;
        if held != token.as_bytes() {
            return None;
        }
        let account = self.record_with_uid("serviceaccounts", ns, name, uid)?;
        Some(Checked {
            user: service_account_user(ns, name, uid),
            not_before: None,
            expires: None,
            records: vec![(res, key, stored), account],
        })
    }

    /// The stored record of a core object: (resource key, object key, record).
    fn record(&self, plural: &str, ns: &str, name: &str) -> Option<(String, String, Arc<Record>)> {
        let r = self.resource("", "v1", plural).ok()?;
        let key = crate::service::object_key(&r, ns, name);
        let rec = self.store.get(&r.storage_key(), &key)?;
        Some((r.storage_key(), key, rec))
    }

    /// [`record`](Self::record) of the object only if it has this uid.
    fn record_with_uid(
        &self,
        plural: &str,
        ns: &str,
        name: &str,
        uid: &str,
    ) -> Option<(String, String, Arc<Record>)> {
        let found = self.record(plural, ns, name)?;
        let obj: Value = serde_json::from_slice(&found.2.bytes).ok()?;
        (meta::uid(&obj) == uid).then_some(found)
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
