//! What a request asks to do, in the terms RBAC rules speak: a verb on a
//! resource (group, resource, subresource, namespace, name) or on a path.

use kubesim_core::ApiError;

/// The attributes of one request, as upstream's `authorizer.Attributes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// False for requests to a path outside the resource API
    /// (`/healthz`, `/version`, `/api`, ...).
    pub resource_request: bool,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The request's path, for non-resource requests.
    pub path: String,
    /// A list's or watch's `fieldSelector`, as sent.
    pub field_selector: String,
}

impl Attributes {
    /// A request to `path` outside the resource API.
    pub fn non_resource(method: &str, path: &str) -> Self {
        Attributes {
            verb: method.to_ascii_lowercase(),
            path: path.to_string(),
            ..Default::default()
        }
    }

    /// `resource` or `resource/subresource`, as rules name it.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// Upstream's 403 for a request RBAC refused, word for word.
    pub fn forbidden(&self, username: &str) -> ApiError {
        self.forbidden_because(username, "")
    }

    /// [`forbidden`](Self::forbidden), with the authorizers' reason after
    /// a colon when they gave one, as upstream.
    pub fn forbidden_because(&self, username: &str, reason: &str) -> ApiError {
        let because = if reason.is_empty() {
            String::new()
        } else {
            format!(": {reason}")
        };
        if !self.resource_request {
            return ApiError::forbidden(
                "",
                "",
                "",
                &format!(
                    "User {username:?} cannot {} path {:?}{because}",
                    self.verb, self.path
                ),
            );
        }
        let scope = if self.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", self.namespace)
        };
        let why = format!(
            "User {username:?} cannot {} resource {:?} in API group {:?} {scope}{because}",
            self.verb,
            self.combined_resource(),
            self.group
        );
        ApiError::forbidden(&self.resource, &self.group, &self.name, &why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_messages_are_upstreams() {
        let a = Attributes {
            verb: "list".into(),
            resource_request: true,
            resource: "secrets".into(),
            namespace: "default".into(),
            ..Default::default()
        };
        let e = a.forbidden("system:serviceaccount:default:bot");
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "secrets is forbidden: User \"system:serviceaccount:default:bot\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
        );
        let a = Attributes {
            verb: "delete".into(),
            resource_request: true,
            group: "apps".into(),
            resource: "deployments".into(),
            subresource: "scale".into(),
            name: "web".into(),
            ..Default::default()
        };
        assert_eq!(
            a.forbidden("bob").message,
            "deployments.apps \"web\" is forbidden: User \"bob\" cannot delete resource \"deployments/scale\" in API group \"apps\" at the cluster scope"
        );
        let a = Attributes::non_resource("GET", "/metrics");
        assert_eq!(
            a.forbidden("system:anonymous").message,
            "forbidden: User \"system:anonymous\" cannot get path \"/metrics\""
        );
    }
}
