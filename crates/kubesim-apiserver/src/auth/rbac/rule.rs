//! One RBAC PolicyRule: whether it allows a request, and whether a set of
//! rules covers another (the escalation check).

use serde_json::{json, Value};

use super::super::Attributes;

/// `*` in a verb, group or resource list matches everything.
const ALL: &str = "*";

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn has(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == ALL || x == want)
}

/// Upstream's resource match: `*`, the exact `resource[/subresource]`,
/// or `*/subresource` for any resource's subresource.
fn resource_matches(rules: &[String], combined: &str, subresource: &str) -> bool {
    rules.iter().any(|r| {
        r == ALL
            || r == combined
            || (!subresource.is_empty() && r.strip_prefix("*/").is_some_and(|s| s == subresource))
    })
}

/// A rule URL matches the path exactly, or as a prefix when it ends in `*`.
fn url_matches(rules: &[String], path: &str) -> bool {
    rules.iter().any(|r| {
        r == ALL
            || r == path
            || r.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    })
}

impl Rule {
    /// A rule as stored in a Role or ClusterRole.
    pub fn from_value(v: &Value) -> Self {
        Rule {
            verbs: strings(v, "verbs"),
            api_groups: strings(v, "apiGroups"),
            resources: strings(v, "resources"),
            resource_names: strings(v, "resourceNames"),
            non_resource_urls: strings(v, "nonResourceURLs"),
        }
    }

    /// The rules of a role object (`rules`, absent: none).
    pub fn all_from(role: &Value) -> Vec<Rule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|rs| rs.iter().map(Rule::from_value).collect())
            .unwrap_or_default()
    }

    /// The rule as a review's status or a role lists it.
    pub fn to_value(&self) -> Value {
        let mut v = json!({"verbs": self.verbs});
        let mut put = |k: &str, list: &Vec<String>| {
            if !list.is_empty() {
                v[k] = json!(list);
            }
        };
        put("apiGroups", &self.api_groups);
        put("resources", &self.resources);
        put("resourceNames", &self.resource_names);
        put("nonResourceURLs", &self.non_resource_urls);
        v
    }

    /// Whether this rule allows the request `a`.
    pub fn allows(&self, a: &Attributes) -> bool {
        if !has(&self.verbs, &a.verb) {
            return false;
        }
        if !a.resource_request {
            return url_matches(&self.non_resource_urls, &a.path);
        }
        has(&self.api_groups, &a.group)
            && resource_matches(&self.resources, &a.combined_resource(), &a.subresource)
            && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == &a.name))
    }

    /// The rule broken into rules of one verb, group, resource and name
    /// (or one verb and URL): each must be covered on its own.
    fn atoms(&self) -> Vec<Rule> {
        let one = |s: &String| vec![s.clone()];
        let mut out = Vec::new();
        for verb in &self.verbs {
            for url in &self.non_resource_urls {
                out.push(Rule {
                    verbs: one(verb),
                    non_resource_urls: one(url),
                    ..Default::default()
                });
            }
            for group in &self.api_groups {
                for resource in &self.resources {
                    let base = Rule {
                        verbs: one(verb),
                        api_groups: one(group),
                        resources: one(resource),
                        ..Default::default()
                    };
                    if self.resource_names.is_empty() {
                        out.push(base);
                    } else {
                        for name in &self.resource_names {
                            out.push(Rule {
                                resource_names: one(name),
                                ..base.clone()
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Whether this rule grants everything the one-atom rule `atom` does.
    fn covers_atom(&self, atom: &Rule) -> bool {
        let first = |l: &[String]| l.first().cloned().unwrap_or_default();
        if !has(&self.verbs, &first(&atom.verbs)) {
            return false;
        }
        if !atom.non_resource_urls.is_empty() {
            return url_covers(&self.non_resource_urls, &first(&atom.non_resource_urls));
        }
        let resource = first(&atom.resources);
        let sub = resource.split_once('/').map(|(_, s)| s).unwrap_or("");
        has(&self.api_groups, &first(&atom.api_groups))
            && (self.resources.iter().any(|r| r == ALL || *r == resource)
                || (!sub.is_empty()
                    && sub != ALL
                    && resource_matches(&self.resources, &resource, sub)))
            && (self.resource_names.is_empty()
                || atom
                    .resource_names
                    .first()
                    .is_some_and(|n| self.resource_names.contains(n)))
    }
}

/// Whether an owner's URL covers a requested one: `*`, equal, or a prefix
/// rule (`/apis/*`) covering every URL and prefix beneath it.
fn url_covers(owner: &[String], wanted: &str) -> bool {
    owner.iter().any(|o| {
        o == ALL || o == wanted || o.strip_suffix('*').is_some_and(|p| wanted.starts_with(p))
    })
}

/// The parts of `wanted` that no rule in `owned` covers (empty: covered),
/// as upstream's `Covers` finds them.
pub fn uncovered(owned: &[Rule], wanted: &[Rule]) -> Vec<Rule> {
    let mut missing: Vec<Rule> = wanted
        .iter()
        .flat_map(Rule::atoms)
        .filter(|atom| !owned.iter().any(|o| o.covers_atom(atom)))
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

/// Rules as upstream's escalation message lists them, one per line.
pub fn compact(rules: &[Rule]) -> String {
    let q = |l: &[String]| {
        let inner: Vec<String> = l.iter().map(|s| format!("{s:?}")).collect();
        format!("[{}]", inner.join(" "))
    };
    rules
        .iter()
        .map(|r| {
            let mut parts = Vec::new();
            if !r.api_groups.is_empty() {
                parts.push(format!("APIGroups:{}", q(&r.api_groups)));
            }
            if !r.resources.is_empty() {
                parts.push(format!("Resources:{}", q(&r.resources)));
            }
            if !r.resource_names.is_empty() {
                parts.push(format!("ResourceNames:{}", q(&r.resource_names)));
            }
            if !r.non_resource_urls.is_empty() {
                parts.push(format!("NonResourceURLs:{}", q(&r.non_resource_urls)));
            }
            parts.push(format!("Verbs:{}", q(&r.verbs)));
            format!("{{{}}}", parts.join(", "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(v: Value) -> Rule {
        Rule::from_value(&v)
    }

    fn req(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            namespace: "default".into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn matches_as_upstream() {
        let r = rule(
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]}),
        );
        assert!(r.allows(&req("get", "", "pods", "", "p")));
        assert!(r.allows(&req("get", "", "pods", "log", "p")));
        assert!(!r.allows(&req("get", "", "pods", "exec", "p")));
        assert!(!r.allows(&req("delete", "", "pods", "", "p")));
        assert!(!r.allows(&req("get", "apps", "pods", "", "p")));
        let sub = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/scale"]}));
        assert!(sub.allows(&req("update", "apps", "deployments", "scale", "d")));
        assert!(!sub.allows(&req("update", "apps", "deployments", "", "d")));
        let named = rule(
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]}),
        );
        assert!(named.allows(&req("get", "", "configmaps", "", "a")));
        assert!(!named.allows(&req("get", "", "configmaps", "", "b")));
        assert!(!named.allows(&req("list", "", "configmaps", "", "")));
        let urls = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}));
        assert!(urls.allows(&Attributes::non_resource("GET", "/healthz")));
        assert!(urls.allows(&Attributes::non_resource("GET", "/apis/apps/v1")));
        assert!(!urls.allows(&Attributes::non_resource("GET", "/metrics")));
        assert!(!urls.allows(&req("get", "", "pods", "", "")));
    }

    #[test]
    fn covers_breaks_rules_down() {
        let owned = vec![
            rule(
                json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "secrets"]}),
            ),
            rule(json!({"verbs": ["*"], "apiGroups": ["apps"], "resources": ["*"]})),
        ];
        let ok = vec![rule(
            json!({"verbs": ["get"], "apiGroups": ["", "apps"], "resources": ["pods"]}),
        )];
        // "apps" pods is covered by the apps wildcard, "" pods by the first.
        assert!(uncovered(&owned, &ok).is_empty());
        let more = vec![rule(
            json!({"verbs": ["get", "delete"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["x"]}),
        )];
        let missing = uncovered(&owned, &more);
        assert_eq!(missing.len(), 1);
        assert_eq!(
            compact(&missing),
            "{APIGroups:[\"\"], Resources:[\"pods\"], ResourceNames:[\"x\"], Verbs:[\"delete\"]}"
        );
        // A wildcard is only covered by a wildcard.
        let star = vec![rule(
            json!({"verbs": ["*"], "apiGroups": [""], "resources": ["pods"]}),
        )];
        assert_eq!(uncovered(&owned, &star).len(), 1);
        let urls = vec![rule(
            json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*"]}),
        )];
        assert!(uncovered(
            &[rule(
                json!({"verbs": ["get"], "nonResourceURLs": ["/apis*"]})
            )],
            &urls
        )
        .is_empty());
        assert_eq!(uncovered(&owned, &urls).len(), 1);
    }
}
