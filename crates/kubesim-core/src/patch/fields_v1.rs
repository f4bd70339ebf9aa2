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

/// Whether a canonical `fields` object owns every path of `paths`: then
/// taking those paths away and adding them back gives the same set.
pub fn owns_all(fields: &Map<String, Value>, paths: &FieldSet) -> bool {
    // The root of a stored set is never a member.
    !paths.own && owns_children(fields, paths)
}

fn owns_children(fields: &Map<String, Value>, paths: &FieldSet) -> bool {
    paths.children.iter().all(|(k, p)| {
        // A node without members holds no path.
        p.is_empty()
            || fields
                .get(k)
                .and_then(Value::as_object)
                .is_some_and(|node| (!p.own || is_member(node)) && owns_children(node, p))
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
        assert!(owns_all(fields, &path(&["f:spec", "f:a"])));
        assert!(owns_all(fields, &path(&["f:spec", "f:c", "f:d"])));
        assert!(!owns_all(fields, &path(&["f:spec", "f:c"])));
        assert!(!owns_all(fields, &path(&["f:spec", "f:x"])));
        assert!(!owns_all(fields, &path(&["f:spec", "f:a", "f:b", "f:e"])));
        let mut two = path(&["f:spec", "f:a", "f:b"]);
        two.insert(&["f:spec".to_string(), "f:c".to_string(), "f:d".to_string()]);
        assert!(owns_all(fields, &two));
        two.insert(&["f:spec".to_string(), "f:e".to_string()]);
        assert!(!owns_all(fields, &two));
        // The root is never owned.
        assert!(!owns_all(fields, &path(&[])));
    }
}
