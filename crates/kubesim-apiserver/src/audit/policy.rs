//! The audit Policy (`audit.k8s.io/v1`) and the level it gives a request.
//!
//! Rules are tried in order and the first whose every field matches gives
//! the level; with none, the request is not logged (level None). Stages a
//! rule omits are added to the policy's own.

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    api_version: String,
    kind: String,
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    pub rules: Vec<Rule>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(rename = "nonResourceURLs", default)]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// What a rule is matched against.
#[derive(Debug, Clone, Default)]
pub struct Attributes<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    pub verb: &'a str,
    /// None for requests that do not address a resource.
    pub resource: Option<ResourceAttributes<'a>>,
    pub path: &'a str,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ResourceAttributes<'a> {
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// The outcome for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Decision {
    pub fn logs(&self, stage: Stage) -> bool {
        self.level != Level::None && !self.omit_stages.contains(&stage)
    }
}

impl Policy {
    /// Reads and checks a policy file (YAML or JSON); the error says what
    /// is wrong in one line.
    pub fn parse(text: &str) -> Result<Policy, String> {
        // The parser's message is followed by a picture of the spot; its
        // first line says what and where.
        let p: Policy = serde_saphyr::from_str(text).map_err(|e| {
            let e = e.to_string();
            e.lines().next().unwrap_or_default().trim().to_string()
        })?;
        if p.api_version != "audit.k8s.io/v1" {
            return Err(format!(
                "apiVersion must be audit.k8s.io/v1, not {:?}",
                p.api_version
            ));
        }
        if p.kind != "Policy" {
            return Err(format!("kind must be Policy, not {:?}", p.kind));
        }
        if p.rules.is_empty() {
            return Err("the policy has no rules".to_string());
        }
        for (i, r) in p.rules.iter().enumerate() {
            r.validate().map_err(|e| format!("rules[{i}]: {e}"))?;
        }
        Ok(p)
    }

    pub fn decide(&self, a: &Attributes) -> Decision {
        let rule = self.rules.iter().find(|r| r.matches(a));
        let mut omit_stages = self.omit_stages.clone();
        if let Some(r) = rule {
            for s in &r.omit_stages {
                if !omit_stages.contains(s) {
                    omit_stages.push(*s);
                }
            }
        }
        Decision {
            level: rule.map_or(Level::None, |r| r.level),
            omit_stages,
            omit_managed_fields: rule
                .and_then(|r| r.omit_managed_fields)
                .unwrap_or(self.omit_managed_fields),
        }
    }
}

impl Rule {
    fn validate(&self) -> Result<(), String> {
        if !self.non_resource_urls.is_empty()
            && (!self.resources.is_empty() || !self.namespaces.is_empty())
        {
            return Err(
                "a rule matches either resources and namespaces or nonResourceURLs, not both"
                    .to_string(),
            );
        }
        for u in &self.non_resource_urls {
            if !u.starts_with('/') && u != "*" {
                return Err(format!("nonResourceURLs entry {u:?} must begin with /"));
            }
            if u.trim_end_matches('*').contains('*') {
                return Err(format!(
                    "nonResourceURLs entry {u:?}: * is allowed only at the end"
                ));
            }
        }
        for g in &self.resources {
            if !g.resource_names.is_empty() && g.resources.is_empty() {
                return Err("resourceNames needs resources".to_string());
            }
            for r in &g.resources {
                if r.is_empty() {
                    return Err("an empty resource name".to_string());
                }
            }
        }
        Ok(())
    }

    fn matches(&self, a: &Attributes) -> bool {
        if !self.users.is_empty() && !self.users.iter().any(|u| u == a.user) {
            return false;
        }
        if !self.user_groups.is_empty() && !a.groups.iter().any(|g| self.user_groups.contains(g)) {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == a.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return a.resource.is_some_and(|r| self.matches_resource(&r));
        }
        if !self.non_resource_urls.is_empty() {
            return a.resource.is_none()
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(a.path, spec));
        }
        true
    }

    fn matches_resource(&self, r: &ResourceAttributes) -> bool {
        // Cluster-scoped resources have the empty namespace.
        if !self.namespaces.is_empty() && !self.namespaces.iter().any(|n| n == r.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        self.resources
            .iter()
            .filter(|g| g.group == r.group)
            .any(|g| g.matches(r))
    }
}

impl GroupResources {
    fn matches(&self, r: &ResourceAttributes) -> bool {
        if self.resources.is_empty() {
            return true;
        }
        if !self.resource_names.is_empty() && !self.resource_names.iter().any(|n| n == r.name) {
            return false;
        }
        self.resources.iter().any(|spec| {
            if spec == "*" {
                return true;
            }
            let exact = match spec.split_once('/') {
                None => r.subresource.is_empty() && spec == r.resource,
                Some((res, sub)) => res == r.resource && sub == r.subresource,
            };
            // As upstream: `*/scale` needs a subresource, while `pods/*`
            // also matches the pods themselves.
            exact
                || spec
                    .strip_prefix("*/")
                    .is_some_and(|sub| !r.subresource.is_empty() && sub == r.subresource)
                || spec.strip_suffix("/*").is_some_and(|res| res == r.resource)
        })
    }
}

/// Exact, `*` for all, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    match spec.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => path == spec,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["pods/log", "*/scale"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets", "configmaps"]
    resourceNames: ["controller-leader"]
  omitStages: [ResponseStarted]
- level: Request
  userGroups: ["system:nodes"]
  namespaces: ["kube-system", ""]
- level: Request
  resources:
  - group: apps
  omitManagedFields: true
- level: Metadata
"#;

    fn policy() -> Policy {
        Policy::parse(POLICY).unwrap()
    }

    fn res<'a>(
        group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> Option<ResourceAttributes<'a>> {
        Some(ResourceAttributes {
            group,
            resource,
            subresource,
            namespace,
            name,
        })
    }

    fn level(p: &Policy, a: Attributes) -> Level {
        p.decide(&a).level
    }

    #[test]
    fn first_matching_rule_wins() {
        let p = policy();
        let proxy = Attributes {
            user: "system:kube-proxy",
            verb: "watch",
            resource: res("", "endpoints", "", "", ""),
            ..Default::default()
        };
        assert_eq!(level(&p, proxy.clone()), Level::None);
        // The same user listing falls through to the catch-all.
        let list = Attributes {
            verb: "list",
            ..proxy
        };
        assert_eq!(level(&p, list), Level::Metadata);
    }

    #[test]
    fn non_resource_urls_with_prefixes() {
        let p = policy();
        let get = |path| Attributes {
            verb: "get",
            path,
            ..Default::default()
        };
        assert_eq!(level(&p, get("/healthz")), Level::None);
        assert_eq!(level(&p, get("/healthz/etcd")), Level::None);
        assert_eq!(level(&p, get("/version")), Level::None);
        assert_eq!(level(&p, get("/versions")), Level::Metadata);
        // A resource request never matches a nonResourceURLs rule.
        let pods = Attributes {
            verb: "get",
            path: "/healthz",
            resource: res("", "pods", "", "a", "b"),
            ..Default::default()
        };
        assert_eq!(level(&p, pods), Level::Metadata);
    }

    #[test]
    fn subresources_and_wildcards() {
        let p = policy();
        let at = |resource, sub| Attributes {
            verb: "get",
            resource: res("", resource, sub, "d", "x"),
            ..Default::default()
        };
        assert_eq!(level(&p, at("pods", "log")), Level::RequestResponse);
        assert_eq!(
            level(&p, at("replicationcontrollers", "scale")),
            Level::RequestResponse
        );
        // pods/log does not match plain pods, nor pods/status.
        assert_eq!(level(&p, at("pods", "")), Level::Metadata);
        assert_eq!(level(&p, at("pods", "status")), Level::Metadata);
        // Another group's scale does not match the core group's rule.
        let apps_scale = Attributes {
            verb: "get",
            resource: res("apps", "deployments", "scale", "d", "x"),
            ..Default::default()
        };
        assert_eq!(level(&p, apps_scale), Level::Request);
    }

    #[test]
    fn resource_names_groups_and_namespaces() {
        let p = policy();
        let cm = |name| Attributes {
            verb: "update",
            resource: res("", "configmaps", "", "kube-system", name),
            ..Default::default()
        };
        let d = p.decide(&cm("controller-leader"));
        assert_eq!(d.level, Level::Metadata);
        assert!(d.omit_stages.contains(&Stage::ResponseStarted));
        assert!(d.omit_stages.contains(&Stage::RequestReceived));
        assert!(!d.logs(Stage::RequestReceived) && d.logs(Stage::ResponseComplete));
        let nodes = vec!["system:nodes".to_string()];
        let by_node = Attributes {
            groups: &nodes,
            ..cm("other")
        };
        assert_eq!(level(&p, by_node.clone()), Level::Request);
        // Cluster-scoped objects are in namespace "".
        let node_obj = Attributes {
            resource: res("", "nodes", "", "", "n1"),
            ..by_node.clone()
        };
        assert_eq!(level(&p, node_obj), Level::Request);
        let elsewhere = Attributes {
            resource: res("", "configmaps", "", "default", "other"),
            ..by_node
        };
        assert_eq!(level(&p, elsewhere), Level::Metadata);
    }

    #[test]
    fn managed_fields_rule_overrides_policy() {
        let p = policy();
        let deploy = Attributes {
            verb: "create",
            resource: res("apps", "deployments", "", "d", ""),
            ..Default::default()
        };
        assert!(p.decide(&deploy).omit_managed_fields);
        let pods = Attributes {
            resource: res("", "pods", "", "d", ""),
            ..deploy
        };
        assert!(!p.decide(&pods).omit_managed_fields);
    }

    #[test]
    fn no_rule_matched_is_none() {
        let p = Policy::parse(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  verbs: [create]\n",
        )
        .unwrap();
        let get = Attributes {
            verb: "get",
            ..Default::default()
        };
        let d = p.decide(&get);
        assert_eq!(d.level, Level::None);
        assert!(!d.logs(Stage::ResponseComplete));
    }

    #[test]
    fn bad_policies_say_why() {
        let head = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";
        for (text, want) in [
            (
                "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]",
                "apiVersion",
            ),
            (
                "apiVersion: audit.k8s.io/v1\nkind: Pod\nrules: [{level: None}]",
                "kind",
            ),
            (head, "no rules"),
            (&format!("{head}rules: [{{level: Loud}}]"), "Loud"),
            (
                &format!("{head}rules: [{{level: None, verb: [get]}}]"),
                "verb",
            ),
            (
                &format!("{head}rules: [{{level: None, omitStages: [Sometimes]}}]"),
                "Sometimes",
            ),
            (
                &format!("{head}rules: [{{level: None, nonResourceURLs: [/a], namespaces: [b]}}]"),
                "not both",
            ),
            (
                &format!("{head}rules: [{{level: None, nonResourceURLs: ['/a*/b']}}]"),
                "only at the end",
            ),
            (
                &format!("{head}rules: [{{level: None, resources: [{{resourceNames: [x]}}]}}]"),
                "resourceNames",
            ),
            ("{{{", ""),
        ] {
            let err = Policy::parse(text).expect_err(text);
            assert!(err.contains(want), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }
}
