//! RBAC, evaluated as upstream's authorizer does: a request is allowed
//! when a rule of a role bound to its user allows it. ClusterRoleBindings
//! grant everywhere; RoleBindings grant in their namespace. Members of
//! `system:masters` are allowed before RBAC is asked.
//!
//! The bindings and roles are read from the store into an [`Index`],
//! and each subject's rules are gathered once into [`SubjectRules`]. Both
//! are kept until one of the four RBAC resources changes: the store's
//! snapshots share their maps until a write, so comparing the maps'
//! identity notices every change, from any writer, at the cost of four
//! lock-and-clone reads per request.

pub mod bootstrap;
pub mod escalation;
mod index;
pub mod rule;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

pub use index::{Index, SubjectRules};
pub use rule::Rule;

use super::{Attributes, UserInfo};
use crate::Server;

/// RBAC's answer: allowed or not, and upstream's reason when allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// The RBAC resources, by plural.
pub const RESOURCES: [&str; 4] = [
    "clusterroles",
    "clusterrolebindings",
    "roles",
    "rolebindings",
];

/// The RBAC API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// Whether RBAC is enforced, and its cache (see the module's comment).
#[derive(Default)]
pub struct Authorizer {
    /// Off by default, as for simulations whose every client is in this
    /// process; `kubesim up` turns it on unless told otherwise.
    enabled: AtomicBool,
    /// The Node authorizer runs before RBAC (`Node,RBAC`).
    pub(crate) node: AtomicBool,
    index: Mutex<Option<Arc<Index>>>,
}

impl Server {
    /// The index of the current bindings and roles.
    fn rbac_index(&self) -> Arc<Index> {
        let maps = RESOURCES.map(|plural| {
            self.resource(GROUP, "v1", plural)
                .ok()
                .and_then(|r| self.store.snapshot(&r.storage_key(), None).ok())
                .map(|s| s.items)
                .unwrap_or_default()
        });
        let mut slot = self.rbac.index.lock();
        match slot.as_ref() {
            Some(index) if index.is_of(&maps) => index.clone(),
            _ => {
                let index = Arc::new(Index::build(maps));
                *slot = Some(index.clone());
                index
            }
        }
    }

    /// Enforces RBAC (`--authorization-mode RBAC`) or allows every
    /// request (`AlwaysAllow`).
    pub fn enable_rbac(&self, on: bool) {
        self.rbac.enabled.store(on, Ordering::Relaxed);
    }

    pub fn rbac_enabled(&self) -> bool {
        self.rbac.enabled.load(Ordering::Relaxed)
    }

    /// Whether `user` may do what `a` describes under the server's mode.
    pub fn may(&self, user: &UserInfo, a: &Attributes) -> bool {
        !self.rbac_enabled() || self.authorize(user, a).allowed
    }

    /// The authorizers' answer for `user` and `a`: masters allowed
    /// first, then the Node authorizer when on, then RBAC. A refusal
    /// carries the Node authorizer's reason, if it gave one.
    pub fn authorize(&self, user: &UserInfo, a: &Attributes) -> Decision {
        if user.is_privileged() {
            return Decision {
                allowed: true,
                reason: String::new(),
            };
        }
        let mut refused = String::new();
        if self.node_authorizer_enabled() {
            match self.authorize_node(user, a) {
                Some(crate::auth::node::NodeDecision::Allow) => {
                    return Decision {
                        allowed: true,
                        reason: String::new(),
                    }
                }
                Some(crate::auth::node::NodeDecision::NoOpinion(why)) => refused = why,
                None => {}
            }
        }
        let rules = self.rbac_index().rules_of(user);
        match rules.allowing(a) {
            Some(source) => Decision {
                allowed: true,
                reason: format!("RBAC: allowed by {source}"),
            },
            None => Decision {
                allowed: false,
                reason: refused,
            },
        }
    }

    /// Every rule `user` holds in `namespace` (cluster-wide ones included;
    /// empty namespace: the cluster-wide ones only).
    pub fn rules_of(&self, user: &UserInfo, namespace: &str) -> Vec<Rule> {
        self.rbac_index().rules_of(user).in_namespace(namespace)
    }
}

impl Server {
    /// The rules of the role a binding names (None: no such role).
    pub fn role_rules(&self, kind: &str, namespace: &str, name: &str) -> Option<Vec<Rule>> {
        self.rbac_index()
            .role_rules(kind, namespace, name)
            .map(|r| r.as_ref().clone())
    }
}
