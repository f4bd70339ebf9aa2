//! kwok's ResourceUsage (namespaced, for the pod of the same name) and
//! ClusterResourceUsage (for the pods its selector picks) compiled once
//! per change, so evaluating usage never parses them again.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_core::quantity::Quantity;
use serde_json::Value;

use super::cel::{Expr, Resource};

/// Where one resource's usage comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A fixed quantity, in cores or bytes.
    Value(f64),
    Expr(Expr),
}

#[derive(Debug, Clone)]
struct Entry {
    /// Empty: every container.
    containers: Vec<String>,
    cpu: Option<Source>,
    memory: Option<Source>,
}

/// One compiled ResourceUsage or ClusterResourceUsage.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The object, to hang events on when an expression fails.
    pub object: Arc<Value>,
    /// `Kind name` (with the namespace for ResourceUsage), for messages.
    pub id: String,
    namespaces: Vec<String>,
    names: Vec<String>,
    entries: Vec<Entry>,
}

impl Rule {
    /// Compiles a ResourceUsage (`cluster` false) or ClusterResourceUsage;
    /// an error names the object and the field.
    pub fn from_object(obj: Arc<Value>, cluster: bool) -> Result<Rule, String> {
        let kind = if cluster {
            "ClusterResourceUsage"
        } else {
            "ResourceUsage"
        };
        let id = match meta::namespace(&obj) {
            "" => format!("{kind} {}", meta::name(&obj)),
            ns => format!("{kind} {ns}/{}", meta::name(&obj)),
        };
        let strings = |path: &str| -> Result<Vec<String>, String> {
            match meta::path(&obj, path) {
                None | Some(Value::Null) => Ok(vec![]),
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| format!("{id}: {path} must be a list of strings")),
                Some(_) => Err(format!("{id}: {path} must be a list of strings")),
            }
        };
        let (namespaces, names) = if cluster {
            (
                strings("spec.selector.matchNamespaces")?,
                strings("spec.selector.matchNames")?,
            )
        } else {
            (vec![], vec![])
        };
        let usages = match meta::path(&obj, "spec.usages") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => return Err(format!("{id}: spec.usages must be a list")),
        };
        let mut entries = Vec::new();
        for (i, u) in usages.iter().enumerate() {
            let at = format!("spec.usages[{i}]");
            let containers = match u.get("containers") {
                None | Some(Value::Null) => vec![],
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| format!("{id}: {at}.containers must be names"))?,
                Some(_) => return Err(format!("{id}: {at}.containers must be a list")),
            };
            let source = |r: &str| -> Result<Option<Source>, String> {
                let field = format!("{at}.usage.{r}");
                match u.get("usage").and_then(|x| x.get(r)) {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => source(v)
                        .map(Some)
                        .map_err(|e| format!("{id}: {field}: {e}")),
                }
            };
            entries.push(Entry {
                containers,
                cpu: source("cpu")?,
                memory: source("memory")?,
            });
        }
        Ok(Rule {
            object: obj,
            id,
            namespaces,
            names,
            entries,
        })
    }

    /// Whether a ClusterResourceUsage's selector picks the pod (an empty
    /// list picks all).
    pub fn selects(&self, namespace: &str, name: &str) -> bool {
        (self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace))
            && (self.names.is_empty() || self.names.iter().any(|n| n == name))
    }

    /// The first entry naming the container (or all containers) that says
    /// something about `resource`.
    pub fn source(&self, container: &str, resource: Resource) -> Option<&Source> {
        self.entries
            .iter()
            .filter(|e| e.containers.is_empty() || e.containers.iter().any(|c| c == container))
            .find_map(|e| match resource {
                Resource::Cpu => e.cpu.as_ref(),
                Resource::Memory => e.memory.as_ref(),
            })
    }
}

fn source(v: &Value) -> Result<Source, String> {
    match (v.get("value"), v.get("expression")) {
        (Some(q), None) => {
            let text = match q {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => return Err("value must be a quantity".into()),
            };
            Quantity::parse(&text)
                .map(|q| Source::Value(q.milli() as f64 / 1000.0))
                .map_err(|_| format!("value {text:?} is not a quantity"))
        }
        (None, Some(Value::String(e))) => Expr::compile(e).map(Source::Expr),
        (None, Some(_)) => Err("expression must be a string".into()),
        (Some(_), Some(_)) => Err("give value or expression, not both".into()),
        (None, None) => Err("needs value or expression".into()),
    }
}

/// Every usage object in force.
#[derive(Debug, Default)]
pub struct Rules {
    /// ResourceUsages by (namespace, name) of the pod they are for.
    pub by_pod: BTreeMap<(String, String), Rule>,
    /// ClusterResourceUsages in name order: the first that selects a pod
    /// and speaks of a resource decides it.
    pub cluster: Vec<Rule>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiles_values_expressions_and_selectors() {
        let obj = json!({"kind": "ClusterResourceUsage", "metadata": {"name": "u"},
            "spec": {"selector": {"matchNamespaces": ["a"]},
                "usages": [
                    {"containers": ["x"], "usage": {"cpu": {"value": "250m"}}},
                    {"usage": {"cpu": {"value": 2}, "memory": {"expression": "Quantity(\"1Mi\")"}}}]}});
        let r = Rule::from_object(Arc::new(obj), true).unwrap();
        assert!(r.selects("a", "anything"));
        assert!(!r.selects("b", "anything"));
        assert!(matches!(r.source("x", Resource::Cpu), Some(Source::Value(v)) if *v == 0.25));
        assert!(matches!(r.source("y", Resource::Cpu), Some(Source::Value(v)) if *v == 2.0));
        // The first entry is silent on memory, so the second answers.
        assert!(matches!(
            r.source("x", Resource::Memory),
            Some(Source::Expr(_))
        ));
    }

    #[test]
    fn errors_name_the_object_and_field() {
        let obj = json!({"kind": "ResourceUsage", "metadata": {"name": "p", "namespace": "d"},
            "spec": {"usages": [{"usage": {"memory": {"expression": "pod.("}}}]}});
        let e = Rule::from_object(Arc::new(obj), false).unwrap_err();
        assert!(
            e.contains("ResourceUsage d/p") && e.contains("spec.usages[0].usage.memory"),
            "{e}"
        );
        let obj = json!({"metadata": {"name": "p"},
            "spec": {"usages": [{"usage": {"cpu": {"value": "a lot"}}}]}});
        let e = Rule::from_object(Arc::new(obj), true).unwrap_err();
        assert!(e.contains("not a quantity"), "{e}");
        let obj = json!({"metadata": {"name": "p"}, "spec": {"usages": {"cpu": 1}}});
        assert!(Rule::from_object(Arc::new(obj), true).is_err());
    }
}

#[cfg(test)]
mod prop {
    use super::*;
    use proptest::prelude::*;

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(Value::from),
            "[a-z0-9 .()\"]{0,8}".prop_map(Value::String),
            proptest::sample::select(vec!["250m", "1Mi", "Quantity(\"1m\")", "pod.x"])
                .prop_map(|s| Value::String(s.into())),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    proptest::sample::select(vec![
                        "spec",
                        "usages",
                        "usage",
                        "cpu",
                        "memory",
                        "value",
                        "expression",
                        "containers",
                        "selector",
                        "matchNames",
                        "metrics",
                        "path",
                        "name",
                        "kind",
                        "dimension",
                        "labels",
                        "buckets",
                        "le",
                        "metadata",
                    ])
                    .prop_map(str::to_string),
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Any object a user applies compiles or is refused; none panics.
        #[test]
        fn any_object_compiles_or_is_refused(v in json()) {
            let v = Arc::new(v);
            let _ = Rule::from_object(v.clone(), false);
            let _ = Rule::from_object(v.clone(), true);
            let _ = crate::usage::metric::MetricSet::from_object(v);
        }
    }
}
