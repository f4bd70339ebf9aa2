//! Field sets in the `FieldsV1` form used by managedFields.
//!
//! A set is a trie keyed by encoded path elements: `f:<field>` for object
//! fields, `k:<json>` for map-list items (their key fields), `v:<json>` for
//! set-list items and `i:<n>` for positions. A node's `own` flag is the `.`
//! member: the node itself is in the set, not only some of its children.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    pub own: bool,
    pub children: BTreeMap<String, FieldSet>,
}

/// A path of encoded elements from the root.
pub type Path = Vec<String>;

pub fn field(name: &str) -> String {
    // Not `format!`: every field a comparison walks into is named this way.
    let mut s = String::with_capacity(name.len() + 2);
    s.push_str("f:");
    s.push_str(name);
    s
}

/// The `k:` element of a map-list item; key fields are sorted by name.
pub fn key(fields: &BTreeMap<String, Value>) -> String {
    let m: Map<String, Value> = fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    format!("k:{}", Value::Object(m))
}

/// [`key`] of the key fields `fields` (in any order, a name given twice
/// with the same value counting once), written straight into the string:
/// list items are keyed on every comparison, and building the map and then
/// formatting it cost more than the comparison itself.
pub fn key_of(fields: &mut [(&str, Cow<'_, Value>)]) -> String {
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(b"k:{");
    let mut prev: Option<&str> = None;
    for (k, v) in fields.iter() {
        if prev == Some(*k) {
            continue;
        }
        if prev.is_some() {
            out.push(b',');
        }
        prev = Some(*k);
        // Writing a string or a value into a vector cannot fail; what a
        // failure would leave is the element a lookup can never find.
        let _ = serde_json::to_writer(&mut out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, v.as_ref());
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

pub fn value(v: &Value) -> String {
    format!("v:{v}")
}

/// A decoded path element.
#[derive(Debug, Clone, PartialEq)]
pub enum Element {
    Field(String),
    Key(Map<String, Value>),
    Value(Value),
    Index(usize),
}

pub fn decode(elem: &str) -> Option<Element> {
    let (kind, rest) = elem.split_at_checked(2)?;
    match kind {
        "f:" => Some(Element::Field(rest.to_string())),
        "k:" => match serde_json::from_str(rest) {
            Ok(Value::Object(m)) => Some(Element::Key(m)),
            _ => None,
        },
        "v:" => serde_json::from_str(rest).ok().map(Element::Value),
        "i:" => rest.parse().ok().map(Element::Index),
        _ => None,
    }
}

/// The human form upstream uses in conflict messages:
/// `.spec.containers[name="c"].image`.
pub fn path_string(path: &[String]) -> String {
    let mut s = String::new();
    for e in path {
        match decode(e) {
            Some(Element::Field(f)) => {
                s.push('.');
                s.push_str(&f);
            }
            Some(Element::Key(m)) => {
                let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}={v}")).collect();
                s.push_str(&format!("[{}]", parts.join(",")));
            }
            Some(Element::Value(v)) => s.push_str(&format!("[={v}]")),
            Some(Element::Index(i)) => s.push_str(&format!("[{i}]")),
            None => s.push_str(e),
        }
    }
    s
}

impl FieldSet {
    pub fn is_empty(&self) -> bool {
        !self.own && self.children.values().all(FieldSet::is_empty)
    }

    pub fn insert(&mut self, path: &[String]) {
        let mut node = self;
        for e in path {
            // The element is copied only for a new node: most inserts go
            // through nodes that are already there.
            if !node.children.contains_key(e) {
                node.children.insert(e.clone(), FieldSet::default());
            }
            match node.children.get_mut(e) {
                Some(n) => node = n,
                None => return,
            }
        }
        node.own = true;
    }

    pub fn contains(&self, path: &[String]) -> bool {
        self.node(path).is_some_and(|n| n.own)
    }

    pub fn node(&self, path: &[String]) -> Option<&FieldSet> {
        let mut node = self;
        for e in path {
            node = node.children.get(e)?;
        }
        Some(node)
    }

    /// Removes one path (its descendants stay).
    pub fn remove(&mut self, path: &[String]) {
        self.edit(path, |n| n.own = false);
    }

    /// Removes a path and everything under it.
    pub fn remove_tree(&mut self, path: &[String]) {
        self.edit(path, |n| *n = FieldSet::default());
    }

    fn edit(&mut self, path: &[String], f: impl FnOnce(&mut FieldSet)) {
        let mut node = self;
        for e in path {
            match node.children.get_mut(e) {
                Some(n) => node = n,
                None => return,
            }
        }
        f(node);
    }

    /// Drops nodes that no longer hold any path.
    pub fn prune(&mut self) {
        for child in self.children.values_mut() {
            child.prune();
        }
        self.children.retain(|_, c| !c.is_empty());
    }

    /// Every path in the set, depth first in element order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut cur = Vec::new();
        self.collect(&mut cur, &mut out);
        out
    }

    fn collect(&self, cur: &mut Path, out: &mut Vec<Path>) {
        if self.own {
            out.push(cur.clone());
        }
        for (k, c) in &self.children {
            cur.push(k.clone());
            c.collect(cur, out);
            cur.pop();
        }
    }

    /// Adds every path of `other`: what inserting each of its paths does,
    /// walking both tries together instead of listing the paths.
    pub fn union(&mut self, other: &FieldSet) {
        self.own |= other.own;
        for (k, c) in &other.children {
            // A node without members holds no path to insert.
            if c.is_empty() {
                continue;
            }
            match self.children.get_mut(k) {
                Some(n) => n.union(c),
                None => {
                    let mut n = FieldSet::default();
                    n.union(c);
                    self.children.insert(k.clone(), n);
                }
            }
        }
    }

    /// Removes every path of `other` (their descendants stay), then prunes.
    pub fn difference(&mut self, other: &FieldSet) {
        self.unset(other);
        self.prune();
    }

    fn unset(&mut self, other: &FieldSet) {
        if other.own {
            self.own = false;
        }
        for (k, c) in &other.children {
            if let Some(n) = self.children.get_mut(k) {
                n.unset(c);
            }
        }
    }

    /// The `FieldsV1` JSON form: `.` first, then elements in sorted order.
    pub fn to_fields_v1(&self) -> Value {
        let mut m = Map::with_capacity(self.children.len() + usize::from(self.own));
        if self.own && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (k, c) in &self.children {
            if !c.is_empty() {
                m.insert(k.clone(), c.to_fields_v1());
            }
        }
        Value::Object(m)
    }

    /// [`Self::to_fields_v1`] of a set that is no longer needed: its
    /// element strings move into the JSON instead of being copied.
    pub fn into_fields_v1(self) -> Value {
        let mut m = Map::with_capacity(self.children.len() + usize::from(self.own));
        if self.own && !self.children.is_empty() {
            m.insert(".".into(), Value::Object(Map::new()));
        }
        for (k, c) in self.children {
            if !c.is_empty() {
                m.insert(k, c.into_fields_v1());
            }
        }
        Value::Object(m)
    }

    /// Parses a `FieldsV1` object; anything malformed is skipped, since a
    /// client-supplied managedFields entry must not make writes fail.
    pub fn from_fields_v1(v: &Value) -> FieldSet {
        // The root is never a member itself, even when written as `{}`.
        let mut set = FieldSet::parse(v);
        set.own = false;
        set
    }

    fn parse(v: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        if let Some(m) = v.as_object() {
            if m.is_empty() {
                set.own = true;
            }
            for (k, c) in m {
                if k == "." {
                    set.own = true;
                } else if decode(k).is_some() {
                    set.children.insert(k.clone(), FieldSet::parse(c));
                }
            }
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip() {
        let v = json!({"f:metadata":{"f:labels":{".":{},"f:app":{}}},
            "f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{}}}}});
        let s = FieldSet::from_fields_v1(&v);
        // The root is not itself a member: it only has children.
        assert!(!s.own);
        assert_eq!(s.to_fields_v1(), v);
        let paths = s.paths();
        assert_eq!(
            path_string(&paths[paths.len() - 1]),
            ".spec.containers[name=\"c\"].image"
        );
    }

    #[test]
    fn key_of_writes_what_key_writes() {
        let cases = [
            vec![("name", json!("c"))],
            vec![("protocol", json!("TCP")), ("containerPort", json!(80))],
            vec![
                ("b", json!("x\"y\\z\u{1}é")),
                ("a", json!(1.5)),
                ("c", json!(-3)),
            ],
            vec![("type", json!({"n": [1, null, true]}))],
            vec![("uid", json!("u")), ("uid", json!("u"))],
        ];
        for fields in cases {
            let map: BTreeMap<String, Value> = fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            let mut borrowed: Vec<(&str, Cow<'_, Value>)> =
                fields.iter().map(|(k, v)| (*k, Cow::Borrowed(v))).collect();
            assert_eq!(key_of(&mut borrowed), key(&map), "{fields:?}");
        }
    }

    #[test]
    fn set_ops() {
        let mut a = FieldSet::default();
        a.insert(&[field("spec"), field("replicas")]);
        a.insert(&[field("spec"), field("paused")]);
        let mut b = FieldSet::default();
        b.insert(&[field("spec"), field("replicas")]);
        a.difference(&b);
        assert_eq!(a.to_fields_v1(), json!({"f:spec":{"f:paused":{}}}));
        a.remove_tree(&[field("spec")]);
        a.prune();
        assert!(a.is_empty());
        assert_eq!(path_string(&[field("a"), value(&json!("x"))]), ".a[=\"x\"]");
    }
}
