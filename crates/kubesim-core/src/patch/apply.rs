//! Server-side apply and Update field tracking, after the semantics of
//! structured-merge-diff: field sets per manager, conflicts on fields whose
//! value another manager set, and removal of fields an applier stops
//! applying.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::fieldpath::{self, path_string, Element, FieldSet, Path};
use super::managed_fields::{self, ManagedEntry};
use super::strategy::{key_default, ListType, Types};
use crate::error::{ApiError, Cause, Details};
use crate::resource::ResourceInfo;
use crate::same;

/// Metadata the server owns; upstream strips these from every field set.
const SERVER_META: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// Struct fields that upstream's zero value already holds (non-pointer
/// structs), so creating an object does not record them with `.`.
const SKELETON: &[&str] = &[
    "metadata",
    "spec",
    "status",
    "template",
    "strategy",
    "updateStrategy",
    "jobTemplate",
    "resources",
];

pub(super) struct Walker<'a> {
    pub(super) resource: &'a ResourceInfo,
    types: Types<'a>,
}

/// Result of comparing two versions of an object.
#[derive(Default)]
pub(super) struct Comparison {
    /// Paths added or modified.
    pub(super) changed: FieldSet,
    /// Paths (roots of subtrees) that disappeared.
    pub(super) removed: FieldSet,
}

impl<'a> Walker<'a> {
    pub(super) fn new(resource: &'a ResourceInfo) -> Self {
        Walker {
            resource,
            types: Types::new(resource),
        }
    }

    fn list_type(&self, names: &[String]) -> ListType {
        self.types.list_type(names)
    }

    fn atomic_map(&self, names: &[String]) -> bool {
        self.types.map_is_atomic(names)
    }

    /// Fields never tracked: type info at the root, server-set metadata.
    pub(super) fn ignored(names: &[String], key: &str) -> bool {
        match names {
            [] => key == "apiVersion" || key == "kind",
            [m] if m == "metadata" => SERVER_META.contains(&key),
            _ => false,
        }
    }

    /// The path element of each item of a list, or None when the list
    /// must be treated as one atomic value (untyped, unkeyed, duplicates).
    fn elements(&self, names: &[String], items: &[Value]) -> Option<Vec<String>> {
        Self::elements_of(&self.list_type(names), items)
    }

    /// [`Self::elements`] for a list whose type is known: comparing two
    /// versions of a list looks its type up once for both.
    fn elements_of(lt: &ListType, items: &[Value]) -> Option<Vec<String>> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let e = match lt {
                ListType::Atomic => return None,
                ListType::Set => match item {
                    Value::Object(_) | Value::Array(_) => return None,
                    v => fieldpath::value(v),
                },
                ListType::Map(keys) => {
                    let obj = item.as_object()?;
                    let mut fields = Vec::with_capacity(keys.len());
                    for k in keys {
                        match obj.get(k) {
                            Some(v) => fields.push((k.as_str(), Cow::Borrowed(v))),
                            None => {
                                if let Some(v) = key_default(k) {
                                    fields.push((k.as_str(), Cow::Owned(v)));
                                }
                            }
                        }
                    }
                    if fields.is_empty() {
                        return None;
                    }
                    fieldpath::key_of(&mut fields)
                }
            };
            if out.contains(&e) {
                return None;
            }
            out.push(e);
        }
        Some(out)
    }

    /// The fields an applied configuration sets.
    fn field_set(&self, names: &mut Vec<String>, v: &Value, path: &mut Path, set: &mut FieldSet) {
        match v {
            Value::Object(m) => {
                if !names.is_empty() && (m.is_empty() || self.atomic_map(names)) {
                    set.insert(path);
                    return;
                }
                for (k, c) in m {
                    if Self::ignored(names, k) || c.is_null() {
                        continue;
                    }
                    names.push(k.clone());
                    path.push(fieldpath::field(k));
                    self.field_set(names, c, path, set);
                    path.pop();
                    names.pop();
                }
            }
            Value::Array(items) => match self.elements(names, items) {
                None => set.insert(path),
                Some(elems) => {
                    for (e, item) in elems.into_iter().zip(items) {
                        path.push(e);
                        set.insert(path);
                        if item.as_object().is_some_and(|m| !m.is_empty()) {
                            self.field_set(names, item, path, set);
                        }
                        path.pop();
                    }
                }
            },
            _ => set.insert(path),
        }
    }

    /// Compares `old` and `new` below `path`.
    pub(super) fn compare(
        &self,
        names: &mut Vec<String>,
        old: Option<&Value>,
        new: Option<&Value>,
        path: &mut Path,
        out: &mut Comparison,
    ) {
        let top = names.is_empty();
        match (old, new) {
            (None, None) => {}
            (Some(Value::Object(o)), Some(Value::Object(n)))
                if top || !(self.atomic_map(names) || (o.is_empty() && n.is_empty())) =>
            {
                self.compare_maps(names, Some(o), Some(n), path, out);
            }
            (None, Some(Value::Object(n))) if top || !(self.atomic_map(names) || n.is_empty()) => {
                if !top && !self.is_skeleton(names) {
                    out.changed.insert(path);
                }
                self.compare_maps(names, None, Some(n), path, out);
            }
            (Some(Value::Array(o)), Some(Value::Array(n))) => {
                let lt = self.list_type(names);
                match (Self::elements_of(&lt, o), Self::elements_of(&lt, n)) {
                    (Some(oe), Some(ne)) => {
                        for (e, item) in ne.iter().zip(n) {
                            path.push(e.clone());
                            match oe.iter().position(|x| x == e) {
                                Some(i) => self.compare_item(names, o.get(i), item, path, out),
                                None => {
                                    out.changed.insert(path);
                                    self.compare_item(names, None, item, path, out);
                                }
                            }
                            path.pop();
                        }
                        for e in oe.iter().filter(|e| !ne.contains(e)) {
                            path.push(e.clone());
                            out.removed.insert(path);
                            path.pop();
                        }
                    }
                    _ => {
                        if !same::lists(o, n) {
                            out.changed.insert(path);
                        }
                    }
                }
            }
            (None, Some(Value::Array(n))) => match self.elements(names, n) {
                Some(ne) => {
                    for (e, item) in ne.into_iter().zip(n) {
                        path.push(e);
                        out.changed.insert(path);
                        self.compare_item(names, None, item, path, out);
                        path.pop();
                    }
                }
                None => out.changed.insert(path),
            },
            (Some(_), None) => out.removed.insert(path),
            (Some(o), Some(n)) => {
                if !same::values(o, n) {
                    // A container replaced by something else loses its
                    // children's owners too.
                    if o.is_object() || o.is_array() {
                        out.removed.insert(path);
                    }
                    out.changed.insert(path);
                }
            }
            (None, Some(_)) => out.changed.insert(path),
        }
    }

    fn compare_item(
        &self,
        names: &mut Vec<String>,
        old: Option<&Value>,
        new: &Value,
        path: &mut Path,
        out: &mut Comparison,
    ) {
        // The item itself is recorded by the caller; only its fields here.
        match (old, new) {
            (Some(Value::Object(o)), Value::Object(n)) => {
                self.compare_maps(names, Some(o), Some(n), path, out)
            }
            (None, Value::Object(n)) => self.compare_maps(names, None, Some(n), path, out),
            _ => {}
        }
    }

    fn compare_maps(
        &self,
        names: &mut Vec<String>,
        old: Option<&Map<String, Value>>,
        new: Option<&Map<String, Value>>,
        path: &mut Path,
        out: &mut Comparison,
    ) {
        let empty = Map::new();
        let (o, n) = (old.unwrap_or(&empty), new.unwrap_or(&empty));
        // Side by side where the two key orders agree, which they nearly
        // always do.
        same::each_key(o, n, |k, ov, nv| {
            self.compare_field(names, k, ov, nv, path, out)
        });
    }

    /// Compares field `k` of a map.
    fn compare_field(
        &self,
        names: &mut Vec<String>,
        k: &str,
        ov: Option<&Value>,
        nv: Option<&Value>,
        path: &mut Path,
        out: &mut Comparison,
    ) {
        // An unchanged field changes no ownership below it; most writes
        // touch a few fields of a large object, so this skips nearly all of
        // the walk. Ignored fields are tested first: comparing them
        // (managedFields above all) would be wasted.
        if Self::ignored(names, k) || same::options(ov, nv) {
            return;
        }
        names.push(k.to_string());
        path.push(fieldpath::field(k));
        self.compare(names, ov, nv, path, out);
        path.pop();
        names.pop();
    }

    fn is_skeleton(&self, names: &[String]) -> bool {
        self.resource.crd.is_none() && names.last().is_some_and(|n| SKELETON.contains(&n.as_str()))
    }

    /// Merges an applied configuration into the live object: maps by
    /// field, keyed and set lists by element, everything else replaced.
    fn merge(&self, names: &mut Vec<String>, live: Option<&Value>, applied: &Value) -> Value {
        match (live, applied) {
            (Some(Value::Object(l)), Value::Object(a)) if !self.atomic_map(names) => {
                let mut out = l.clone();
                for (k, av) in a {
                    if Self::ignored(names, k) && out.contains_key(k) {
                        continue;
                    }
                    if av.is_null() {
                        out.remove(k);
                        continue;
                    }
                    names.push(k.clone());
                    let merged = self.merge(names, out.get(k), av);
                    names.pop();
                    out.insert(k.clone(), merged);
                }
                Value::Object(out)
            }
            (Some(Value::Array(l)), Value::Array(a)) => {
                match (self.elements(names, l), self.elements(names, a)) {
                    (Some(le), Some(ae)) => {
                        let mut out = l.clone();
                        for (e, item) in ae.iter().zip(a) {
                            match le.iter().position(|x| x == e) {
                                Some(i) => {
                                    let merged = self.merge(names, out.get(i), item);
                                    out[i] = merged;
                                }
                                None => out.push(self.merge(names, None, item)),
                            }
                        }
                        Value::Array(out)
                    }
                    _ => self.merge(names, None, applied),
                }
            }
            (_, Value::Object(a)) => {
                let in_meta = names.len() == 1 && names[0] == "metadata";
                let mut out = Map::new();
                for (k, v) in a {
                    if v.is_null() || (in_meta && k == "managedFields") {
                        continue;
                    }
                    names.push(k.clone());
                    out.insert(k.clone(), self.merge(names, None, v));
                    names.pop();
                }
                Value::Object(out)
            }
            (_, other) => other.clone(),
        }
    }
}

/// Whether list item `item` is the one path element `e` designates.
fn item_matches(e: &Element, item: &Value, index: usize, i: usize) -> bool {
    match e {
        Element::Key(fields) => fields
            .iter()
            .all(|(k, v)| item.get(k).cloned().or_else(|| key_default(k)).as_ref() == Some(v)),
        Element::Value(v) => item == v,
        Element::Index(n) => *n == index && index == i,
        Element::Field(_) => false,
    }
}

/// The value at `path`, if present.
pub fn value_at<'v>(v: &'v Value, path: &[String]) -> Option<&'v Value> {
    let mut cur = v;
    for e in path {
        let elem = fieldpath::decode(e)?;
        cur = match (&elem, cur) {
            (Element::Field(f), Value::Object(m)) => m.get(f)?,
            (_, Value::Array(items)) => {
                let (_, item) = items
                    .iter()
                    .enumerate()
                    .find(|(i, item)| item_matches(&elem, item, *i, *i))?;
                item
            }
            _ => return None,
        };
    }
    Some(cur)
}

/// Removes the value at `path`; a map the removal leaves empty goes too,
/// since nothing would own it.
fn remove_at(v: &mut Value, path: &[String]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let Some(elem) = fieldpath::decode(first) else {
        return false;
    };
    match (v, &elem) {
        (Value::Object(m), Element::Field(f)) => {
            if rest.is_empty() {
                return m.remove(f).is_some();
            }
            let Some(child) = m.get_mut(f) else {
                return false;
            };
            let removed = remove_at(child, rest);
            if removed && rest.len() == 1 && child.as_object().is_some_and(Map::is_empty) {
                m.remove(f);
            }
            removed
        }
        (Value::Array(items), _) => {
            let Some(i) = (0..items.len()).find(|i| item_matches(&elem, &items[*i], *i, *i)) else {
                return false;
            };
            if rest.is_empty() {
                items.remove(i);
                true
            } else {
                remove_at(&mut items[i], rest)
            }
        }
        _ => false,
    }
}

fn conflict_error(conflicts: &[(String, Path)]) -> ApiError {
    let causes: Vec<Cause> = conflicts
        .iter()
        .map(|(who, p)| {
            Cause::new(
                "FieldManagerConflict",
                path_string(p),
                format!("conflict with {who}"),
            )
        })
        .collect();
    let message = if let [(who, p)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {who}: {}",
            path_string(p)
        )
    } else {
        let mut lines = Vec::new();
        let mut last: Option<&str> = None;
        for (who, p) in conflicts {
            if last != Some(who.as_str()) {
                lines.push(format!("conflicts with {who}:"));
                last = Some(who);
            }
            lines.push(format!("- {}", path_string(p)));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let mut e = ApiError::new(409, "Conflict", message);
    e.details = Some(Box::new(Details {
        causes,
        ..Details::default()
    }));
    e
}

/// Server-side apply; see [`super::server_side_apply`].
pub fn apply(
    resource: &ResourceInfo,
    current: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, ApiError> {
    if !applied.is_object() {
        return Err(ApiError::bad_request(
            "error decoding apply configuration: expected an object",
        ));
    }
    let w = Walker::new(resource);
    let mut applied_set = FieldSet::default();
    w.field_set(&mut Vec::new(), applied, &mut Vec::new(), &mut applied_set);
    let merged = w.merge(&mut Vec::new(), current, applied);

    let mut entries = current.map(managed_fields::read).unwrap_or_default();
    let me = entries.iter().position(|e| e.is(manager, "Apply", None));
    let previous = me.map(|i| entries[i].fields.clone()).unwrap_or_default();

    let mut cmp = Comparison::default();
    w.compare(
        &mut Vec::new(),
        current,
        Some(&merged),
        &mut Vec::new(),
        &mut cmp,
    );
    let changed = cmp.changed.paths();

    let mut conflicts: Vec<(String, Path, usize)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if Some(i) == me {
            continue;
        }
        for p in changed.iter().filter(|p| e.fields.contains(p)) {
            conflicts.push((e.describe(), p.clone(), i));
        }
    }
    conflicts.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    if !conflicts.is_empty() && !force {
        let list: Vec<(String, Path)> = conflicts.into_iter().map(|(w, p, _)| (w, p)).collect();
        return Err(conflict_error(&list));
    }
    for (_, p, i) in &conflicts {
        entries[*i].fields.remove(p);
    }
    for (i, e) in entries.iter_mut().enumerate() {
        if Some(i) != me {
            for p in cmp.removed.paths() {
                e.fields.remove_tree(&p);
            }
            e.fields.prune();
        }
    }

    // Fields this manager applied before but no longer does, and that
    // nobody else owns, are removed from the object.
    let mut others = FieldSet::default();
    for (i, e) in entries.iter().enumerate() {
        if Some(i) != me {
            others.union(&e.fields);
        }
    }
    let mut out = merged;
    let mut gone = previous;
    gone.difference(&applied_set);
    for p in gone.paths() {
        let kept_below = |s: &FieldSet| s.node(&p).is_some_and(|n| !n.is_empty());
        if others.contains(&p) || kept_below(&applied_set) || kept_below(&others) {
            continue;
        }
        remove_at(&mut out, &p);
    }

    let entry = ManagedEntry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: resource.api_version(),
        time: Some(now.to_string()),
        subresource: None,
        fields: applied_set,
    };
    match me {
        Some(i) => entries[i] = entry,
        None => entries.push(entry),
    }
    managed_fields::write(&mut out, entries);
    Ok(out)
}
