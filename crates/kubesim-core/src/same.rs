//! Value equality that is cheap when both sides keep their keys in the
//! same order.
//!
//! `Value ==` compares maps by looking every key of one up in the other,
//! which hashes each key (SipHash, as the order-preserving maps use). An
//! update compares the object it read with the one it is about to write
//! several times, and the two nearly always hold their keys in the same
//! order, so these functions walk both maps side by side, comparing keys
//! as strings, and look keys up only from the first place where the orders
//! part. The answer is always the one `==` gives: maps are equal whatever
//! their order, numbers compare as `serde_json::Number` does (1 and 1.0
//! differ).

use serde_json::{Map, Value};

/// `a == b`.
pub fn values(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => maps(x, y),
        (Value::Array(x), Value::Array(y)) => lists(x, y),
        _ => a == b,
    }
}

/// `a == b` for two lists.
pub fn lists(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| values(a, b))
}

/// `a == b` for two maps.
pub fn maps(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    maps_but(a, b, None)
}

/// `a == b` for two maps, but for `skip`, which may be a key of either,
/// both or neither.
pub fn maps_but(a: &Map<String, Value>, b: &Map<String, Value>, skip: Option<&str>) -> bool {
    let skipped = |k: &String| skip.is_some_and(|s| s == k);
    let rest =
        |m: &Map<String, Value>| m.len() - usize::from(skip.is_some_and(|s| m.contains_key(s)));
    if rest(a) != rest(b) {
        return false;
    }
    let mut ai = a.iter().filter(|(k, _)| !skipped(k));
    let mut bi = b.iter().filter(|(k, _)| !skipped(k));
    while let (Some((ka, va)), Some((kb, vb))) = (ai.next(), bi.next()) {
        if ka != kb {
            // The orders part here. The keys before are the same on both
            // sides, so the rest of `a` must be found in the rest of `b`,
            // which has as many entries: look them up.
            return std::iter::once((ka, va))
                .chain(ai)
                .all(|(k, v)| b.get(k).is_some_and(|w| values(v, w)));
        }
        if !values(va, vb) {
            return false;
        }
    }
    true
}

/// `a == b` for two optional values.
pub fn options(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => values(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Calls `f` with each key of `a` and its values in `a` and `b`, then with
/// each key only `b` has: the order of a walk that looks every key up,
/// without the lookups where the two orders agree.
pub fn each_key<'v>(
    a: &'v Map<String, Value>,
    b: &'v Map<String, Value>,
    mut f: impl FnMut(&'v String, Option<&'v Value>, Option<&'v Value>),
) {
    let prefix = a.keys().zip(b.keys()).take_while(|(x, y)| x == y).count();
    for ((k, av), (_, bv)) in a.iter().zip(b.iter()).take(prefix) {
        f(k, Some(av), Some(bv));
    }
    for (k, av) in a.iter().skip(prefix) {
        f(k, Some(av), b.get(k));
    }
    for (k, bv) in b.iter().skip(prefix) {
        if !a.contains_key(k) {
            f(k, None, Some(bv));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Both directions agree with `==` and with each other.
    fn check(a: &Value, b: &Value) {
        assert_eq!(values(a, b), a == b, "{a} vs {b}");
        assert_eq!(values(b, a), a == b, "{b} vs {a}");
        assert!(values(a, a), "{a}");
    }

    #[test]
    fn agrees_with_value_equality() {
        let cases = [
            (json!({"a": 1, "b": 2}), json!({"a": 1, "b": 2})),
            // Different key orders, at the top and from the middle on.
            (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1})),
            (
                json!({"a": 1, "b": 2, "c": 3, "d": 4}),
                json!({"a": 1, "b": 2, "d": 4, "c": 3}),
            ),
            (
                json!({"a": 1, "b": 2, "c": 3, "d": 4}),
                json!({"a": 1, "b": 2, "d": 4, "c": 5}),
            ),
            // Same length, one key swapped for another.
            (json!({"a": 1, "b": 2}), json!({"a": 1, "c": 2})),
            (json!({"a": 1, "b": 2}), json!({"c": 2, "a": 1})),
            (json!({"a": 1}), json!({"a": 1, "b": null})),
            (json!({}), json!({})),
            (json!({}), json!([])),
            // Nested maps in lists, in another order.
            (
                json!({"l": [{"x": 1, "y": [1, 2]}, {"z": {"p": "q", "r": "s"}}]}),
                json!({"l": [{"y": [1, 2], "x": 1}, {"z": {"r": "s", "p": "q"}}]}),
            ),
            (
                json!({"l": [{"x": 1, "y": [1, 2]}]}),
                json!({"l": [{"y": [2, 1], "x": 1}]}),
            ),
            (json!([1, 2]), json!([1, 2, 3])),
            (json!([[1], [2]]), json!([[1], [2]])),
            (json!([{"a": 1}]), json!([{"a": 2}])),
            // Numbers compare as serde_json's do: 1 and 1.0 differ.
            (json!(1), json!(1.0)),
            (json!({"n": 1}), json!({"n": 1.0})),
            (json!({"n": -1}), json!({"n": -1})),
            (json!({"n": 1.5}), json!({"n": 1.5})),
            (json!({"n": u64::MAX}), json!({"n": -1})),
            (json!(null), json!(false)),
            (json!("1"), json!(1)),
            (json!({"s": "a"}), json!({"s": "b"})),
        ];
        for (a, b) in &cases {
            check(a, b);
        }
    }

    /// What `each_key` visits, as a walk by lookup gives it.
    fn by_lookup(a: &Value, b: &Value) -> Vec<(String, Option<Value>, Option<Value>)> {
        let (a, b) = (a.as_object().unwrap(), b.as_object().unwrap());
        a.keys()
            .chain(b.keys().filter(|k| !a.contains_key(*k)))
            .map(|k| (k.clone(), a.get(k).cloned(), b.get(k).cloned()))
            .collect()
    }

    #[test]
    fn each_key_visits_as_a_walk_by_lookup() {
        let cases = [
            (json!({"a": 1, "b": 2}), json!({"a": 1, "b": 3})),
            (
                json!({"a": 1, "b": 2, "c": 3}),
                json!({"a": 1, "c": 3, "b": 2}),
            ),
            (json!({"a": 1, "b": 2}), json!({"a": 1, "b": 2, "c": 3})),
            (json!({"a": 1, "b": 2, "c": 3}), json!({"a": 1})),
            (
                json!({"a": 1, "x": 2, "b": 3}),
                json!({"a": 1, "y": 2, "b": 4, "z": 5}),
            ),
            (json!({}), json!({"a": 1})),
            (json!({"a": 1}), json!({})),
            (
                json!({"b": [1], "a": {"c": 1}}),
                json!({"a": {"c": 1}, "b": [1]}),
            ),
        ];
        for (a, b) in &cases {
            let mut seen = Vec::new();
            each_key(a.as_object().unwrap(), b.as_object().unwrap(), |k, x, y| {
                seen.push((k.clone(), x.cloned(), y.cloned()))
            });
            assert_eq!(seen, by_lookup(a, b), "{a} vs {b}");
        }
    }

    #[test]
    fn maps_but_skips_one_value() {
        let m = |v: Value| v.as_object().unwrap().clone();
        let a = m(json!({"a": 1, "status": {"p": 1}, "b": [2]}));
        for (b, same) in [
            (json!({"a": 1, "status": {"p": 2}, "b": [2]}), true),
            (json!({"b": [2], "status": 3, "a": 1}), true),
            (json!({"a": 1, "status": {"p": 1}, "b": [3]}), false),
            (json!({"a": 1, "stat": {"p": 1}, "b": [2]}), false),
            // The skipped key on one side only.
            (json!({"a": 1, "b": [2]}), true),
            (json!({"b": [2], "a": 1}), true),
            (json!({"a": 1}), false),
            (json!({"a": 1, "b": [2], "c": 3}), false),
            (json!({"status": 1, "a": 2, "b": [2]}), false),
        ] {
            let b = m(b);
            assert_eq!(maps_but(&a, &b, Some("status")), same, "{b:?}");
            assert_eq!(maps_but(&b, &a, Some("status")), same, "{b:?}");
        }
        assert!(!maps_but(
            &a,
            &m(json!({"a": 1, "status": 2, "b": [2]})),
            None
        ));
    }

    #[test]
    fn options_agree() {
        let a = json!({"b": 1, "a": 2});
        let b = json!({"a": 2, "b": 1});
        assert!(options(Some(&a), Some(&b)));
        assert!(options(None, None));
        assert!(!options(Some(&a), None));
        assert!(!options(None, Some(&b)));
        assert!(!options(Some(&a), Some(&json!({"a": 2}))));
    }
}
