//! Who sent a request, for the audit log and the in-flight fair share.
//!
//! A stand-in until the server authenticates requests itself: whoever
//! holds the admin token (or any caller when no token is configured) is the
//! cluster admin, a service account token the server issued names that
//! account, and anything else is anonymous. Replace [`request_user`] with
//! the authenticated user once authentication lands; nothing else here
//! depends on how the user was found.

use axum::extract::Request;
use http::header;

use super::App;

pub const ADMIN: &str = "kubesim-admin";
/// The group that upstream never throttles and that RBAC never denies.
pub const MASTERS: &str = "system:masters";
const AUTHENTICATED: &str = "system:authenticated";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
}

impl User {
    fn admin() -> User {
        User {
            name: ADMIN.to_string(),
            groups: vec![MASTERS.to_string(), AUTHENTICATED.to_string()],
        }
    }

    fn anonymous() -> User {
        User {
            name: "system:anonymous".to_string(),
            groups: vec!["system:unauthenticated".to_string()],
        }
    }

    fn service_account(ns: &str, name: &str) -> User {
        User {
            name: format!("system:serviceaccount:{ns}:{name}"),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{ns}"),
                AUTHENTICATED.to_string(),
            ],
        }
    }

    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

pub fn request_user(app: &App, req: &Request) -> User {
    let Some(admin_token) = &app.token else {
        return User::admin();
    };
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if given.is_empty() {
        return User::anonymous();
    }
    // Not a security decision (dispatch makes that); constant time anyway
    // so this path leaks no more than the real check.
    let same = given.len() == admin_token.len()
        && given
            .bytes()
            .zip(admin_token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if same {
        return User::admin();
    }
    let Some(claims) = app.server.tokens.read().verify(given) else {
        return User::anonymous();
    };
    let k8s = &claims["kubernetes.io"];
    match (
        k8s["namespace"].as_str(),
        k8s["serviceaccount"]["name"].as_str(),
    ) {
        (Some(ns), Some(name)) => User::service_account(ns, name),
        _ => User::anonymous(),
    }
}
