//! Pieces several plugins share: tolerations, node selector terms, and the
//! default score normalization.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::framework::{Taint, MAX_NODE_SCORE};

/// A pod's toleration.
#[derive(Clone, Debug, Default)]
pub struct Toleration {
    pub key: String,
    /// `Exists` or `Equal` (the default).
    pub exists: bool,
    pub value: String,
    /// Empty matches every effect.
    pub effect: String,
}

impl Toleration {
    /// Whether this toleration covers `taint`: same effect (or any), same
    /// key (an empty key with `Exists` covers every key), and the same
    /// value unless the operator is `Exists`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if self.key.is_empty() {
            return self.exists;
        }
        self.key == taint.key && (self.exists || self.value == taint.value)
    }
}

/// The tolerations of a pod's `spec`.
pub fn tolerations(spec: &Value) -> Vec<Toleration> {
    spec.get("tolerations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            Toleration {
                key: s("key"),
                exists: s("operator") == "Exists",
                value: s("value"),
                effect: s("effect"),
            }
        })
        .collect()
}

pub fn tolerated(tols: &[Toleration], taint: &Taint) -> bool {
    tols.iter().any(|t| t.tolerates(taint))
}

/// One requirement of a node selector term.
#[derive(Clone, Debug)]
pub struct Requirement {
    pub key: String,
    pub op: String,
    pub values: Vec<String>,
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match self.op.as_str() {
            "In" => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            "NotIn" => !value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            "Gt" | "Lt" => {
                let (Some(v), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|b| b.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.op == "Gt" {
                    v > bound
                } else {
                    v < bound
                }
            }
            _ => false,
        }
    }
}

/// A node selector term: label expressions and field expressions (only
/// `metadata.name`), all of which must match. An empty term matches no node.
#[derive(Clone, Debug, Default)]
pub struct Term {
    pub expressions: Vec<Requirement>,
    pub fields: Vec<Requirement>,
}

fn requirements(v: Option<&Value>) -> Vec<Requirement> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| Requirement {
            key: r.get("key").and_then(Value::as_str).unwrap_or("").into(),
            op: r
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or("")
                .into(),
            values: r
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        })
        .collect()
}

impl Term {
    pub fn parse(v: &Value) -> Term {
        Term {
            expressions: requirements(v.get("matchExpressions")),
            fields: requirements(v.get("matchFields")),
        }
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>, node_name: &str) -> bool {
        if self.expressions.is_empty() && self.fields.is_empty() {
            return false;
        }
        self.expressions
            .iter()
            .all(|r| r.matches(labels.get(&r.key).map(String::as_str)))
            && self
                .fields
                .iter()
                .all(|r| r.key == "metadata.name" && r.matches(Some(node_name)))
    }
}

/// Upstream's default normalization: scale so the highest score becomes
/// MAX_NODE_SCORE (score * 100 / max); `reverse` then flips each score
/// (100 - score), so a node with the fewest "bad" points ranks first.
/// When every score is 0: all 0, or all 100 when reversed.
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    if max == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = MAX_NODE_SCORE);
        }
        return;
    }
    for s in scores.iter_mut() {
        *s = MAX_NODE_SCORE * *s / max;
        if reverse {
            *s = MAX_NODE_SCORE - *s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn toleration_matching() {
        let taint = Taint {
            key: "k".into(),
            value: "v".into(),
            effect: "NoSchedule".into(),
        };
        let pod = json!({"spec": {"tolerations": [
            {"key": "k", "value": "v"},
            {"key": "k", "operator": "Exists", "effect": "NoExecute"},
            {"operator": "Exists"},
            {"key": "k", "value": "w", "effect": "NoSchedule"},
        ]}});
        let t = tolerations(&pod["spec"]);
        let got: Vec<bool> = t.iter().map(|t| t.tolerates(&taint)).collect();
        assert_eq!(got, [true, false, true, false]);
    }

    #[test]
    fn term_operators() {
        let labels: BTreeMap<String, String> = [
            ("zone".to_string(), "a".to_string()),
            ("gen".into(), "5".into()),
        ]
        .into();
        let term = |e: Value| Term::parse(&json!({"matchExpressions": [e]}));
        assert!(
            term(json!({"key": "zone", "operator": "In", "values": ["a", "b"]}))
                .matches(&labels, "n")
        );
        assert!(
            !term(json!({"key": "zone", "operator": "NotIn", "values": ["a"]}))
                .matches(&labels, "n")
        );
        assert!(term(json!({"key": "x", "operator": "DoesNotExist"})).matches(&labels, "n"));
        assert!(
            term(json!({"key": "gen", "operator": "Gt", "values": ["4"]})).matches(&labels, "n")
        );
        assert!(
            !term(json!({"key": "gen", "operator": "Lt", "values": ["4"]})).matches(&labels, "n")
        );
        let f = Term::parse(
            &json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}),
        );
        assert!(f.matches(&labels, "n") && !f.matches(&labels, "m"));
        assert!(!Term::default().matches(&labels, "n"));
    }

    #[test]
    fn normalization() {
        let mut s = [0, 5, 10];
        default_normalize(&mut s, false);
        assert_eq!(s, [0, 50, 100]);
        let mut s = [0, 1, 4];
        default_normalize(&mut s, true);
        // 100 - (0, 25, 100)
        assert_eq!(s, [100, 75, 0]);
        let mut s = [0, 0];
        default_normalize(&mut s, true);
        assert_eq!(s, [100, 100]);
    }
}
