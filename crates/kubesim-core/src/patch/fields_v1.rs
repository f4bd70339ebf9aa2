//! Questions asked of a `FieldsV1` object as JSON, without building its
//! [`FieldSet`]: whether it is in the form [`FieldSet::to_fields_v1`]
//! writes, and whether a write's changed or removed paths reach it. Update
//! tracking uses them to leave untouched managedFields entries as they are.

use serde_json::{Map, Value};

use super::fieldpath::{self, FieldSet};

/// Whether `v` is exactly what parsing it as a field set and writing the
/// set back gives: a non-empty object of valid elements in sorted order,
/// each a canonical node.
pub fn is_canonical(v: &Value) -> bool {
    // The root is never a member itself, so it has no `.`; an empty root
    // is an empty set, which is not stored.
    v.as_object()
        .is_some_and(|m| !m.is_empty() && children_canonical(m.iter()))
}

/// A node: `{}` (a member without children), or its children, preceded by
/// `.: {}` when the node is a member too.
fn node_canonical(v: &Value) -> bool {
    let Some(m) = v.as_object() else {
        return false;
    };
    let mut it = m.iter().peekable();
    if let Some((k, own)) = it.peek() {
        if k.as_str() == "." {
            // A member without children is written `{}`, not `{".": {}}`.
            if !own.as_object().is_some_and(Map::is_empty) || m.len() == 1 {
                return false;
            }
            it.next();
        }
    }
    children_canonical(it)
}

fn children_canonical<'a>(children: impl Iterator<Item = (&'a String, &'a Value)>) -> bool {
    let mut prev: Option<&String> = None;
    for (k, c) in children {
        // Strictly ascending: the order of the set's sorted map.
        if prev.is_some_and(|p| p >= k) || !valid_element(k) || !node_canonical(c) {
            return false;
        }
        prev = Some(k);
    }
    true
}

/// [`fieldpath::decode`] succeeds; field names, the common case, need no
/// decoding.
fn valid_element(k: &str) -> bool {
    k.starts_with("f:") || fieldpath::decode(k).is_some()
}

/// Whether a canonical `fields` object owns (has as a member, not only
/// below) any path of `paths`: then removing those paths changes it.
pub fn owns_any(fields: &Map<String, Value>, paths: &FieldSet) -> bool {
    paths.children.iter().any(|(k, p)| {
        fields
            .get(k)
            .and_then(Value::as_object)
            .is_some_and(|node| (p.own && is_member(node)) || owns_any(node, p))
    })
}

/// Whether a canonical node is a member itself.
fn is_member(node: &Map<String, Value>) -> bool {
    node.is_empty() || node.contains_key(".")
}

/// Whether a canonical `fields` object holds anything at or below a path
/// of `paths`: then removing those subtrees changes it.
pub fn holds_any(fields: &Map<String, Value>, paths: &FieldSet) -> bool {
    paths.own
        || paths.children.iter().any(|(k, p)| {
            fields
                .get(k)
                .and_then(Value::as_object)
                .is_some_and(|node| holds_any(node, p))
        })
}

/// Adds every path of `paths` to a canonical `fields` object, leaving it
/// canonical: what parsing it, taking the union and writing the set back
/// gives, without the round trip. Only the nodes on the added paths are
/// visited; new nodes go where the sorted order puts them.
pub fn union_in_place(fields: &mut Map<String, Value>, paths: &FieldSet) {
    for (k, p) in &paths.children {
        // A node without members holds no path to add.
        if p.is_empty() {
            continue;
        }
        match fields.get_mut(k) {
            Some(Value::Object(node)) => {
                let member = is_member(node) || p.own;
                union_in_place(node, p);
                // A member with children says so with `.`, first.
                if member && !node.is_empty() && !node.contains_key(".") {
                    node.shift_insert(0, ".".into(), Value::Object(Map::new()));
                }
            }
            // Canonical nodes are objects; anything else is replaced as a
            // fresh node would be written.
            Some(other) => *other = p.to_fields_v1(),
            None => {
                // Elements sort after `.`, so it never moves.
                let at = fields
                    .keys()
                    .position(|x| x.as_str() > k.as_str())
                    .unwrap_or(fields.len());
                fields.shift_insert(at, k.clone(), p.to_fields_v1());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: &Value) -> String {
        v.to_string()
    }

    fn set(v: Value) -> FieldSet {
        FieldSet::from_fields_v1(&v)
    }

    #[test]
    fn canonical_is_what_a_round_trip_keeps() {
        for v in [
            json!({"f:a":{}}),
            json!({"f:a":{".":{},"f:b":{}},"f:c":{"k:{\"name\":\"x\"}":{".":{},"f:name":{}}}}),
            json!({"f:s":{"i:0":{},"v:\"x\"":{}}}),
        ] {
            assert!(is_canonical(&v), "{v}");
            assert_eq!(set(v.clone()).to_fields_v1(), v);
        }
        for v in [
            json!({}),
            json!([]),
            json!({".":{},"f:a":{}}),
            json!({"f:b":{},"f:a":{}}),
            json!({"f:a":{".":{}}}),
            json!({"f:a":{"f:b":{},".":{}}}),
            json!({"f:a":{".":{"x":1},"f:b":{}}}),
            json!({"f:a":1}),
            json!({"f:a":{"f:b":[]}}),
            json!({"x:a":{}}),
            json!({"f:a":{"k:1":{}}}),
            json!({"f:a":{"i:x":{}}}),
        ] {
            assert!(!is_canonical(&v), "{v}");
            let back = set(v.clone());
            // Compared as text: map equality ignores key order.
            assert!(
                back.is_empty() || text(&back.to_fields_v1()) != text(&v),
                "{v}"
            );
        }
    }

    #[test]
    fn reach_of_paths() {
        let fields = json!({"f:spec":{"f:a":{".":{},"f:b":{}},"f:c":{"f:d":{}}}});
        let fields = fields.as_object().unwrap();
        let path = |p: &[&str]| {
            let mut s = FieldSet::default();
            s.insert(&p.iter().map(|e| e.to_string()).collect::<Vec<_>>());
            s
        };
        assert!(owns_any(fields, &path(&["f:spec", "f:a"])));
        assert!(owns_any(fields, &path(&["f:spec", "f:a", "f:b"])));
        // f:c only has children: it is not a member.
        assert!(!owns_any(fields, &path(&["f:spec", "f:c"])));
        assert!(!owns_any(fields, &path(&["f:spec", "f:x"])));
        assert!(holds_any(fields, &path(&["f:spec", "f:c"])));
        assert!(holds_any(fields, &path(&["f:spec"])));
        assert!(!holds_any(fields, &path(&["f:spec", "f:c", "f:e"])));
        assert!(!holds_any(fields, &path(&["f:status"])));
    }

    /// A set of up to eight paths over a small alphabet of elements, so
    /// that paths share prefixes, end inside one another and come in any
    /// order.
    fn paths() -> impl proptest::strategy::Strategy<Value = FieldSet> {
        use proptest::prelude::*;
        let element = prop::sample::select(vec!["f:a", "f:b", "f:c", "i:0", "k:{\"n\":1}", "v:2"]);
        prop::collection::vec(prop::collection::vec(element, 1..4), 0..8).prop_map(|paths| {
            let mut set = FieldSet::default();
            for p in paths {
                set.insert(&p.iter().map(|e| e.to_string()).collect::<Vec<_>>());
            }
            set
        })
    }

    proptest::proptest! {
        /// Adding paths to the JSON in place writes what the round trip
        /// through a parsed set writes, byte for byte.
        #[test]
        fn union_in_place_is_the_round_trip(held in paths(), added in paths()) {
            let stored = held.to_fields_v1();
            proptest::prop_assume!(is_canonical(&stored));
            let mut expected = FieldSet::from_fields_v1(&stored);
            expected.union(&added);
            let mut got = stored.clone();
            if let Some(m) = got.as_object_mut() {
                union_in_place(m, &added);
            }
            proptest::prop_assert_eq!(text(&got), text(&expected.to_fields_v1()));
            proptest::prop_assert!(is_canonical(&got));
        }
    }

    #[test]
    fn union_in_place_marks_members_and_sorts() {
        let mut fields = json!({"f:spec":{"f:b":{}, "f:d":{"f:e":{}}}});
        let mut add = FieldSet::default();
        for p in [
            &["f:spec", "f:b", "f:x"][..],
            &["f:spec", "f:c"],
            &["f:spec", "f:d"],
            &["f:spec", "f:a"],
            &["f:status"],
        ] {
            add.insert(&p.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        }
        union_in_place(fields.as_object_mut().unwrap(), &add);
        assert_eq!(
            text(&fields),
            text(&json!({"f:spec":{"f:a":{},"f:b":{".":{},"f:x":{}},"f:c":{},
                "f:d":{".":{},"f:e":{}}},"f:status":{}}))
        );
    }
}
