//! What a request asks for, in the terms audit policies and the in-flight
//! limits speak: the Kubernetes verb and the object addressed. Computed
//! once from method, path and query, before any handler runs.

use http::Method;

use super::query::Query;
use super::route::{self, Route};

/// Subresources whose requests stay open (streams); upstream leaves them
/// out of the in-flight limits, as it does watches.
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// Health probes, which a real cluster's priority and fairness exempts so
/// that an overloaded server is not also declared dead.
const PROBES: [&str; 3] = ["/healthz", "/livez", "/readyz"];

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    /// get, list, watch, create, update, patch, delete, deletecollection;
    /// for paths that are not resources, the lower-cased HTTP method.
    pub verb: String,
    /// The request path without its query.
    pub path: String,
    /// Set for resource requests only.
    pub resource: Option<ResourceRef>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourceRef {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
}

impl RequestInfo {
    pub fn of(method: &Method, path: &str, query: Option<&str>) -> RequestInfo {
        let Route::Resource(p) = route::parse(path) else {
            return RequestInfo {
                verb: method.as_str().to_ascii_lowercase(),
                path: path.to_string(),
                resource: None,
            };
        };
        let named = p.name.is_some();
        let watch = || {
            Query::parse(query)
                .get("watch")
                .is_some_and(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
        };
        let verb = match *method {
            Method::GET | Method::HEAD if named => "get",
            Method::GET | Method::HEAD if watch() => "watch",
            Method::GET | Method::HEAD => "list",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE if named => "delete",
            Method::DELETE => "deletecollection",
            ref other => return Self::unknown_verb(other, path, p),
        };
        RequestInfo {
            verb: verb.to_string(),
            path: path.to_string(),
            resource: Some(ResourceRef::from(p)),
        }
    }

    fn unknown_verb(method: &Method, path: &str, p: route::ResourcePath) -> RequestInfo {
        RequestInfo {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
            resource: Some(ResourceRef::from(p)),
        }
    }

    /// Whether the request may stay open indefinitely (watches, streams).
    pub fn long_running(&self) -> bool {
        match &self.resource {
            Some(r) => {
                self.verb == "watch" || LONG_RUNNING_SUBRESOURCES.contains(&r.subresource.as_str())
            }
            None => false,
        }
    }

    /// Whether the request only reads, the split of upstream's two limits.
    pub fn read_only(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list" | "watch")
    }

    pub fn is_probe(&self) -> bool {
        self.resource.is_none()
            && PROBES.iter().any(|p| {
                self.path == *p
                    || self
                        .path
                        .strip_prefix(p)
                        .is_some_and(|r| r.starts_with('/'))
            })
    }
}

impl From<route::ResourcePath> for ResourceRef {
    /// A namespace is its own namespace, as upstream's request info says,
    /// so a RoleBinding may grant reading it and its audit events name it.
    fn from(p: route::ResourcePath) -> Self {
        let namespace = match &p.name {
            Some(n) if p.group.is_empty() && p.plural == "namespaces" => n.clone(),
            _ => p.namespace,
        };
        ResourceRef {
            group: p.group,
            version: p.version,
            resource: p.plural,
            subresource: p.subresource.unwrap_or_default(),
            namespace,
            name: p.name.unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(m: Method, path: &str, q: Option<&str>) -> RequestInfo {
        RequestInfo::of(&m, path, q)
    }

    #[test]
    fn verbs_follow_kubernetes() {
        let pods = "/api/v1/namespaces/default/pods";
        assert_eq!(info(Method::GET, pods, None).verb, "list");
        assert_eq!(info(Method::GET, pods, Some("watch=true")).verb, "watch");
        assert_eq!(info(Method::GET, pods, Some("watch=false")).verb, "list");
        assert_eq!(info(Method::GET, &format!("{pods}/a"), None).verb, "get");
        assert_eq!(info(Method::POST, pods, None).verb, "create");
        assert_eq!(info(Method::PUT, &format!("{pods}/a"), None).verb, "update");
        assert_eq!(
            info(Method::PATCH, &format!("{pods}/a"), None).verb,
            "patch"
        );
        assert_eq!(
            info(Method::DELETE, &format!("{pods}/a"), None).verb,
            "delete"
        );
        assert_eq!(info(Method::DELETE, pods, None).verb, "deletecollection");
        let api = info(Method::GET, "/api", None);
        assert_eq!((api.verb.as_str(), api.resource.is_none()), ("get", true));
    }

    #[test]
    fn kinds_and_exemptions() {
        let w = info(Method::GET, "/api/v1/pods", Some("watch=1"));
        assert!(w.long_running() && w.read_only());
        let log = info(Method::GET, "/api/v1/namespaces/d/pods/p/log", None);
        assert!(log.long_running());
        assert_eq!(log.resource.unwrap().subresource, "log");
        assert!(!info(Method::POST, "/api/v1/namespaces", None).read_only());
        assert!(info(Method::GET, "/readyz", None).is_probe());
        assert!(info(Method::GET, "/livez/ping", None).is_probe());
        assert!(!info(Method::GET, "/readyzz", None).is_probe());
    }
}
