//! Who is asking and whether they may: authentication of a request to a
//! user ([`authn`], [`impersonate`]), the attributes of what it asks
//! ([`attributes`]), and the answer of the Node authorizer ([`node`]) and
//! RBAC ([`rbac`]).
//!
//! The HTTP front authenticates every request and asks RBAC before it
//! reaches the service layer. Components in the same process call the
//! service layer directly and are trusted, as the real control plane's
//! loopback client is.

pub mod attributes;
pub mod authn;
mod current;
pub mod impersonate;
pub mod node;
mod node_restriction;
pub mod rbac;

use std::collections::BTreeMap;

pub use attributes::Attributes;
pub use current::{current, scoped, RequestAuth};

/// The group whose members every authorizer allows, as upstream.
pub const MASTERS: &str = "system:masters";
/// Added to every authenticated user.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group of requests that carry no credentials.
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of requests that carry no credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The user the cluster's own token and plain loopback HTTP act as.
pub const ADMIN: &str = "kubesim-admin";

/// An authenticated user, as upstream's `user.Info`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// An authenticated user: `system:authenticated` is added to its
    /// groups unless it is already there, as upstream's authenticator does.
    pub fn authenticated(name: impl Into<String>, groups: Vec<String>) -> Self {
        let mut groups = groups;
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_string());
        }
        UserInfo {
            name: name.into(),
            groups,
            ..Default::default()
        }
    }

    /// The cluster's administrator.
    pub fn admin() -> Self {
        Self::authenticated(ADMIN, vec![MASTERS.to_string()])
    }

    /// A request without credentials, when anonymous access is on.
    pub fn anonymous() -> Self {
        UserInfo {
            name: ANONYMOUS.to_string(),
            groups: vec![UNAUTHENTICATED.to_string()],
            ..Default::default()
        }
    }

    /// Members of `system:masters` may do everything, before RBAC is asked.
    pub fn is_privileged(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }

    /// The user as the review and audit objects carry it.
    pub fn to_value(&self) -> serde_json::Value {
        let mut v = serde_json::json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            v["uid"] = self.uid.clone().into();
        }
        if !self.extra.is_empty() {
            v["extra"] = serde_json::json!(self.extra);
        }
        v
    }
}
