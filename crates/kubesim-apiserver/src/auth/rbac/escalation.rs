//! Escalation prevention, as upstream's RBAC storage enforces it: a user
//! may write a role only with rules it holds itself, and bind a role only
//! when it holds the role's rules, unless it may `escalate` roles or
//! `bind` that role. Members of `system:masters` may do both.

use kubesim_core::{meta, ApiError, ResourceInfo};
use serde_json::Value;

use super::super::{current, Attributes, UserInfo};
use super::rule::{compact, uncovered};
use super::{Rule, GROUP};
use crate::Server;

impl Server {
    /// Refuses a role or binding `obj` the requesting user may not write.
    /// Calls from components in this process are trusted.
    pub(crate) fn check_escalation(
        &self,
        resource: &ResourceInfo,
        obj: &Value,
    ) -> Result<(), ApiError> {
        let Some(auth) = current() else {
            return Ok(());
        };
        if !auth.enforce || auth.user.is_privileged() {
            return Ok(());
        }
        let user = &auth.user;
        let ns = meta::namespace(obj);
        let name = meta::name(obj);
        let may = |verb: &str, plural: &str, object: &str| {
            self.authorize(
                user,
                &Attributes {
                    verb: verb.into(),
                    resource_request: true,
                    group: GROUP.into(),
                    version: "v1".into(),
                    resource: plural.into(),
                    namespace: ns.into(),
                    name: object.into(),
                    ..Default::default()
                },
            )
            .allowed
        };
        let wanted = match resource.plural.as_str() {
            "roles" | "clusterroles" => {
                if may("escalate", &resource.plural, name) {
                    return Ok(());
                }
                if obj.get("aggregationRule").is_some_and(|r| !r.is_null()) {
                    return Err(ApiError::forbidden(
                        &resource.plural,
                        GROUP,
                        name,
                        &format!(
                            "user {:?} cannot create an aggregated ClusterRole without the escalate verb",
                            user.name
                        ),
                    ));
                }
                Rule::all_from(obj)
            }
            "rolebindings" | "clusterrolebindings" => {
                let kind = obj
                    .pointer("/roleRef/kind")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let role = obj
                    .pointer("/roleRef/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let plural = if kind == "Role" {
                    "roles"
                } else {
                    "clusterroles"
                };
                if may("bind", plural, role) {
                    return Ok(());
                }
                let role_ns = if kind == "Role" { ns } else { "" };
                match self.role_rules(kind, role_ns, role) {
                    Some(rules) => rules,
                    None => return Err(ApiError::not_found(plural, GROUP, role)),
                }
            }
            _ => return Ok(()),
        };
        let missing = uncovered(&self.rules_of(user, ns), &wanted);
        if missing.is_empty() {
            return Ok(());
        }
        Err(escalation_forbidden(resource, name, user, &missing))
    }
}

fn escalation_forbidden(
    resource: &ResourceInfo,
    name: &str,
    user: &UserInfo,
    missing: &[Rule],
) -> ApiError {
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    ApiError::forbidden(
        &resource.plural,
        GROUP,
        name,
        &format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            user.name,
            groups.join(" "),
            compact(missing)
        ),
    )
}
