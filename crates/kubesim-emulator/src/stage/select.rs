//! Which stage an object is in: selectors evaluated as kwok does, then a
//! weighted draw among the stages that match.

use kubesim_core::meta;
use kubesim_runtime::Rng;
use serde_json::Value;

use super::expr::cel_holds;
use super::jq::Input;
use super::spec::{Operator, Requirement, Selector, Stage};

impl Selector {
    pub fn matches(&self, obj: &Value, input: &Input) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| string_in(obj, "labels", k) == Some(v.as_str()))
            && self
                .match_annotations
                .iter()
                .all(|(k, v)| string_in(obj, "annotations", k) == Some(v.as_str()))
            && self.match_expressions.iter().all(|r| r.matches(input))
    }
}

/// One string entry of a metadata map, as `meta::string_map` would hold
/// it, read in place: every object change is matched against every stage.
fn string_in<'v>(obj: &'v Value, map: &str, key: &str) -> Option<&'v str> {
    meta::metadata(obj)?.get(map)?.get(key)?.as_str()
}

/// Whether a jq result, as the string it is compared with, is one of
/// `values`: strings as they are, other values as JSON text; null is no
/// value.
fn one_of(v: &Value, values: &[String]) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => values.iter().any(|x| x == s),
        other => {
            let text = other.to_string();
            values.contains(&text)
        }
    }
}

impl Requirement {
    /// A jq program's results behave as a set: In holds when any result is
    /// one of the values, Exists when any result is not null. A runtime
    /// error yields no results, so NotIn and DoesNotExist then hold. A CEL
    /// expression must give true.
    pub fn matches(&self, input: &Input) -> bool {
        let (key, operator, values) = match self {
            Requirement::Cel(e) => return cel_holds(e, input),
            Requirement::Jq {
                key,
                operator,
                values,
            } => (key, operator, values),
        };
        let results = key.run(input);
        match operator {
            Operator::In => results.iter().any(|r| one_of(r, values)),
            Operator::NotIn => !results.iter().any(|r| one_of(r, values)),
            Operator::Exists => results.iter().any(|r| !r.is_null()),
            Operator::DoesNotExist => results.iter().all(Value::is_null),
        }
    }
}

/// The weight of a stage for this object: what `weightFrom` yields (a
/// number, or a string holding one), the fixed weight when it yields
/// nothing, None when it yields something that is not a number.
pub fn weight(stage: &Stage, input: &Input) -> Option<i64> {
    let Some(from) = &stage.weight_from else {
        return Some(stage.weight);
    };
    match from.first(input) {
        None => Some(stage.weight),
        Some(v) => as_int(&v),
    }
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// The stage the object moves through next, if any matches: with several,
/// a draw weighted as kwok weighs them (uniform when no weight could be
/// evaluated or all are zero; otherwise only positive weights count).
pub fn choose<'s>(
    stages: &'s [std::sync::Arc<Stage>],
    obj: &Value,
    input: &Input,
    rng: &Rng,
) -> Option<&'s std::sync::Arc<Stage>> {
    let matched: Vec<&std::sync::Arc<Stage>> = stages
        .iter()
        .filter(|s| s.selector.matches(obj, input))
        .collect();
    match matched.len() {
        0 => return None,
        1 => return matched.first().copied(),
        _ => {}
    }
    let weighed: Vec<(&std::sync::Arc<Stage>, i64)> = matched
        .iter()
        .filter_map(|s| weight(s, input).map(|w| (*s, w.max(0))))
        .collect();
    if weighed.is_empty() {
        return matched
            .get(rng.below(matched.len() as u64) as usize)
            .copied();
    }
    let total: i64 = weighed.iter().map(|(_, w)| w).sum();
    if total == 0 {
        return weighed
            .get(rng.below(weighed.len() as u64) as usize)
            .map(|(s, _)| *s);
    }
    let mut pick = rng.below(total as u64) as i64;
    for (s, w) in &weighed {
        if pick < *w {
            return Some(s);
        }
        pick -= w;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn stage(name: &str, spec: Value) -> Arc<Stage> {
        let mut spec = spec;
        spec["resourceRef"] = json!({"kind": "Pod"});
        Arc::new(Stage::from_object(&json!({"metadata": {"name": name}, "spec": spec})).unwrap())
    }

    fn matches(selector: Value, obj: Value) -> bool {
        let s = stage("s", json!({"selector": selector}));
        s.selector.matches(&obj, &Input::new(&obj))
    }

    #[test]
    fn labels_annotations_and_jq_requirements() {
        let pod = json!({"metadata": {"labels": {"app": "a"}, "annotations": {"x": "1"}},
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}});
        assert!(matches(
            json!({"matchLabels": {"app": "a"}, "matchAnnotations": {"x": "1"}}),
            pod.clone()
        ));
        assert!(!matches(json!({"matchLabels": {"app": "b"}}), pod.clone()));
        assert!(matches(
            json!({"matchExpressions": [
            {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
            {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
            {"key": ".status.conditions.[] | select( .type == \"Ready\" ) | .status",
             "operator": "NotIn", "values": ["True"]}]}),
            pod.clone()
        ));
        assert!(!matches(
            json!({"matchExpressions": [
            {"key": ".metadata.labels.app", "operator": "NotIn", "values": ["a"]}]}),
            pod.clone()
        ));
        // A runtime error (indexing a string) counts as no value.
        assert!(matches(
            json!({"matchExpressions": [
            {"key": ".status.phase.x", "operator": "DoesNotExist"}]}),
            pod.clone()
        ));
        // Non-string results compare as JSON text.
        assert!(matches(
            json!({"matchExpressions": [
            {"key": ".spec.hostNetwork", "operator": "In", "values": ["true"]}]}),
            json!({"spec": {"hostNetwork": true}})
        ));
    }

    #[test]
    fn weights_follow_kwoks_rules() {
        let obj = json!({"metadata": {"annotations": {"w": "3"}}});
        let input = Input::new(&obj);
        let rng = Rng::seeded(7);
        let only = vec![stage("a", json!({"selector": {}, "weight": 0}))];
        assert_eq!(choose(&only, &obj, &input, &rng).unwrap().name, "a");
        // A positive weight beats every zero weight.
        let two = vec![
            stage("zero", json!({"selector": {}})),
            stage("one", json!({"selector": {}, "weight": 1})),
        ];
        for _ in 0..50 {
            assert_eq!(choose(&two, &obj, &input, &rng).unwrap().name, "one");
        }
        // weightFrom reads the object; 3 against 1 gives about 3/4.
        let weighed = vec![
            stage(
                "from",
                json!({"selector": {}, "weightFrom": {"jq": {"expression": ".metadata.annotations.w"}}}),
            ),
            stage("fixed", json!({"selector": {}, "weight": 1})),
        ];
        let n = (0..4000)
            .filter(|_| choose(&weighed, &obj, &input, &rng).unwrap().name == "from")
            .count();
        assert!((2700..3300).contains(&n), "{n} of 4000");
        // All zero: uniform.
        let zeros = vec![
            stage("a", json!({"selector": {}})),
            stage("b", json!({"selector": {}})),
        ];
        let a = (0..2000)
            .filter(|_| choose(&zeros, &obj, &input, &rng).unwrap().name == "a")
            .count();
        assert!((800..1200).contains(&a), "{a} of 2000");
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;
    use std::sync::Arc;

    proptest! {
        /// A stage of weight 0 is never drawn while another has a positive
        /// weight, and the same seed always draws the same stage.
        #[test]
        fn zero_weights_lose_and_seeds_repeat(weights in proptest::collection::vec(0i64..5, 2..6), seed in any::<u64>()) {
            let stages: Vec<Arc<Stage>> = weights
                .iter()
                .enumerate()
                .map(|(i, w)| Arc::new(Stage::from_object(&json!({"metadata": {"name": i.to_string()},
                    "spec": {"resourceRef": {"kind": "Pod"}, "selector": {}, "weight": w}})).unwrap()))
                .collect();
            let obj = json!({});
            let input = Input::new(&obj);
            let a = choose(&stages, &obj, &input, &kubesim_runtime::Rng::seeded(seed)).unwrap().name.clone();
            let b = choose(&stages, &obj, &input, &kubesim_runtime::Rng::seeded(seed)).unwrap().name.clone();
            prop_assert_eq!(&a, &b);
            let w = weights[a.parse::<usize>().unwrap()];
            if weights.iter().any(|w| *w > 0) {
                prop_assert!(w > 0);
            }
        }
    }
}
