//! Parses request paths into what they address.

use percent_encoding::percent_decode_str;

/// A resource request's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Version,
    Health(&'static str),
    Metrics,
    ApiVersions,
    ApiGroups,
    Group(String),
    GroupVersion { group: String, version: String },
    OpenApiIndex,
    OpenApiDoc(String),
    OpenApiV2,
    Resource(ResourcePath),
    NotFound,
}

fn seg(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

pub fn parse(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    match trimmed {
        "/version" => return Route::Version,
        "/healthz" => return Route::Health("healthz"),
        "/livez" => return Route::Health("livez"),
        "/readyz" => return Route::Health("readyz"),
        "/metrics" => return Route::Metrics,
        "/api" => return Route::ApiVersions,
        "/apis" => return Route::ApiGroups,
        "/openapi/v3" => return Route::OpenApiIndex,
        "/openapi/v2" => return Route::OpenApiV2,
        _ => {}
    }
    if let Some(rest) = trimmed.strip_prefix("/openapi/v3/") {
        return Route::OpenApiDoc(rest.to_string());
    }
    if trimmed.starts_with("/healthz/")
        || trimmed.starts_with("/livez/")
        || trimmed.starts_with("/readyz/")
    {
        return Route::Health("healthz");
    }
    let parts: Vec<String> = trimmed.split('/').skip(1).map(seg).collect();
    let (group, version, rest) = match parts.first().map(String::as_str) {
        Some("api") if parts.len() >= 2 => (String::new(), parts[1].clone(), &parts[2..]),
        Some("apis") if parts.len() == 2 => return Route::Group(parts[1].clone()),
        Some("apis") if parts.len() >= 3 => (parts[1].clone(), parts[2].clone(), &parts[3..]),
        _ => return Route::NotFound,
    };
    if rest.is_empty() {
        return Route::GroupVersion { group, version };
    }
    if rest.iter().any(|s| s.is_empty()) {
        return Route::NotFound;
    }
    let mut p = ResourcePath {
        group,
        version,
        plural: String::new(),
        namespace: String::new(),
        name: None,
        subresource: None,
    };
    let rest: &[String] = rest;
    // namespaces/<ns>/<resource>... unless it is a namespace's own subresource.
    let rest = if rest.len() >= 3
        && rest[0] == "namespaces"
        && !(rest.len() == 3 && (rest[2] == "status" || rest[2] == "finalize"))
    {
        p.namespace = rest[1].clone();
        &rest[2..]
    } else {
        rest
    };
    match rest.len() {
        1 => p.plural = rest[0].clone(),
        2 => {
            p.plural = rest[0].clone();
            p.name = Some(rest[1].clone());
        }
        3 => {
            p.plural = rest[0].clone();
            p.name = Some(rest[1].clone());
            p.subresource = Some(rest[2].clone());
        }
        _ => return Route::NotFound,
    }
    Route::Resource(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match parse(path) {
            Route::Resource(p) => p,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn resource_paths() {
        let p = res("/api/v1/namespaces/default/pods/web/status");
        assert_eq!(
            (p.namespace.as_str(), p.plural.as_str()),
            ("default", "pods")
        );
        assert_eq!(p.name.as_deref(), Some("web"));
        assert_eq!(p.subresource.as_deref(), Some("status"));
        let n = res("/api/v1/namespaces/x/finalize");
        assert_eq!(
            (
                n.plural.as_str(),
                n.name.as_deref(),
                n.subresource.as_deref()
            ),
            ("namespaces", Some("x"), Some("finalize"))
        );
        let d = res("/apis/apps/v1/deployments");
        assert_eq!((d.group.as_str(), d.namespace.as_str()), ("apps", ""));
        assert_eq!(
            res("/api/v1/namespaces/kube-system").name.as_deref(),
            Some("kube-system")
        );
        assert_eq!(parse("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(parse("/api/v1/namespaces/a/pods/b/c/d"), Route::NotFound);
    }
}
