//! The bindings and roles of one state of the store, and the rules each
//! subject gets from them.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use imbl::OrdMap;
use kubesim_store::Record;
use parking_lot::Mutex;
use serde_json::Value;

use super::super::{Attributes, UserInfo};
use super::Rule;

type Map = OrdMap<Arc<str>, Arc<Record>>;

/// A user's name and groups: all RBAC looks at.
type SubjectKey = (String, Vec<String>);

/// A subject of a binding, as upstream describes it in reasons.
#[derive(Debug, Clone)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

impl Subject {
    fn from_value(v: &Value, binding_ns: &str) -> Self {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let mut namespace = s("namespace");
        if namespace.is_empty() && s("kind") == "ServiceAccount" {
            namespace = binding_ns.to_string();
        }
        Subject {
            kind: s("kind"),
            name: s("name"),
            namespace,
        }
    }

    fn applies_to(&self, user: &UserInfo) -> bool {
        match self.kind.as_str() {
            "User" => self.name == user.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                !self.namespace.is_empty()
                    && user.name
                        == format!("system:serviceaccount:{}:{}", self.namespace, self.name)
            }
            _ => false,
        }
    }

    fn describe(&self) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => format!(
                "ServiceAccount {:?}",
                format!("{}/{}", self.name, self.namespace)
            ),
            kind => format!("{kind} {:?}", self.name),
        }
    }
}

struct Binding {
    name: String,
    /// Empty for a ClusterRoleBinding.
    namespace: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

/// A rule a subject holds, with the binding that grants it.
#[derive(Debug, Clone)]
struct Granted {
    rule: Rule,
    source: Arc<str>,
}

/// The rules one subject holds.
#[derive(Debug, Default)]
pub struct SubjectRules {
    cluster: Vec<Granted>,
    namespaced: BTreeMap<String, Vec<Granted>>,
}

impl SubjectRules {
    /// The binding whose rules allow `a`, described as upstream's reason.
    pub fn allowing(&self, a: &Attributes) -> Option<Arc<str>> {
        let local = (!a.namespace.is_empty())
            .then(|| self.namespaced.get(&a.namespace))
            .flatten();
        self.cluster
            .iter()
            .chain(local.into_iter().flatten())
            .find(|g| g.rule.allows(a))
            .map(|g| g.source.clone())
    }

    pub fn in_namespace(&self, namespace: &str) -> Vec<Rule> {
        let local = (!namespace.is_empty())
            .then(|| self.namespaced.get(namespace))
            .flatten();
        self.cluster
            .iter()
            .chain(local.into_iter().flatten())
            .map(|g| g.rule.clone())
            .collect()
    }
}

/// The RBAC objects of one state of the store.
pub struct Index {
    maps: [Map; 4],
    cluster_roles: HashMap<String, Arc<Vec<Rule>>>,
    roles: HashMap<(String, String), Arc<Vec<Rule>>>,
    /// ClusterRoleBindings, then RoleBindings, each in key order.
    bindings: Vec<Binding>,
    by_subject: Mutex<HashMap<SubjectKey, Arc<SubjectRules>>>,
}

fn values(map: &Map) -> impl Iterator<Item = Value> + '_ {
    map.values()
        .filter_map(|rec| serde_json::from_slice::<Value>(&rec.bytes).ok())
}

fn text<'a>(v: &'a Value, path: &str) -> &'a str {
    v.pointer(path).and_then(Value::as_str).unwrap_or("")
}

impl Index {
    /// Reads the store's maps in [`super::RESOURCES`] order.
    pub fn build(maps: [Map; 4]) -> Self {
        let [cluster_roles, cluster_bindings, roles, role_bindings] = &maps;
        let cluster_roles = values(cluster_roles)
            .map(|r| {
                (
                    text(&r, "/metadata/name").to_string(),
                    Arc::new(Rule::all_from(&r)),
                )
            })
            .collect();
        let roles = values(roles)
            .map(|r| {
                let key = (
                    text(&r, "/metadata/namespace").to_string(),
                    text(&r, "/metadata/name").to_string(),
                );
                (key, Arc::new(Rule::all_from(&r)))
            })
            .collect();
        let bindings = values(cluster_bindings)
            .chain(values(role_bindings))
            .map(|b| {
                let namespace = text(&b, "/metadata/namespace").to_string();
                let subjects = b
                    .get("subjects")
                    .and_then(Value::as_array)
                    .map(|s| {
                        s.iter()
                            .map(|s| Subject::from_value(s, &namespace))
                            .collect()
                    })
                    .unwrap_or_default();
                Binding {
                    name: text(&b, "/metadata/name").to_string(),
                    role_kind: text(&b, "/roleRef/kind").to_string(),
                    role_name: text(&b, "/roleRef/name").to_string(),
                    namespace,
                    subjects,
                }
            })
            .collect();
        Index {
            maps,
            cluster_roles,
            roles,
            bindings,
            by_subject: Mutex::default(),
        }
    }

    /// Whether this index was built from exactly these maps.
    pub fn is_of(&self, maps: &[Map; 4]) -> bool {
        self.maps.iter().zip(maps).all(|(a, b)| a.ptr_eq(b))
    }

    /// The rules of a role a binding refers to (None: no such role).
    pub fn role_rules(&self, kind: &str, namespace: &str, name: &str) -> Option<Arc<Vec<Rule>>> {
        match kind {
            "ClusterRole" => self.cluster_roles.get(name).cloned(),
            "Role" => self
                .roles
                .get(&(namespace.to_string(), name.to_string()))
                .cloned(),
            _ => None,
        }
    }

    /// The rules `user` holds, gathered once per subject.
    pub fn rules_of(&self, user: &UserInfo) -> Arc<SubjectRules> {
        let key = (user.name.clone(), user.groups.clone());
        if let Some(r) = self.by_subject.lock().get(&key) {
            return r.clone();
        }
        let mut out = SubjectRules::default();
        for b in &self.bindings {
            let Some(subject) = b.subjects.iter().find(|s| s.applies_to(user)) else {
                continue;
            };
            let Some(rules) = self.role_rules(&b.role_kind, &b.namespace, &b.role_name) else {
                continue;
            };
            let source: Arc<str> = if b.namespace.is_empty() {
                format!(
                    "ClusterRoleBinding {:?} of {} {:?} to {}",
                    b.name,
                    b.role_kind,
                    b.role_name,
                    subject.describe()
                )
            } else {
                format!(
                    "RoleBinding {:?} of {} {:?} to {}",
                    format!("{}/{}", b.name, b.namespace),
                    b.role_kind,
                    b.role_name,
                    subject.describe()
                )
            }
            .into();
            let granted = rules.iter().map(|rule| Granted {
                rule: rule.clone(),
                source: source.clone(),
            });
            if b.namespace.is_empty() {
                out.cluster.extend(granted);
            } else {
                out.namespaced
                    .entry(b.namespace.clone())
                    .or_default()
                    .extend(granted);
            }
        }
        let out = Arc::new(out);
        self.by_subject.lock().insert(key, out.clone());
        out
    }
}
