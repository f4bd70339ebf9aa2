//! managedFields tracking for Update operations (create, update, patch):
//! the writing manager takes the fields that changed, and every entry
//! loses the fields that changed or disappeared.
//!
//! Most writes touch a few fields that one or two entries hold, so only
//! those entries are parsed into field sets and written back; the others
//! keep their JSON as it is, which is what writing them back would give
//! when they are in canonical form. The writer's own entry, unless the
//! write removed fields it holds, only gains the changed fields it lacks,
//! added to its JSON in place.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::apply::{Comparison, Walker};
use super::fieldpath;
use super::fields_v1;
use super::managed_fields::{self, ManagedEntry, RawEntry, SortKey};
use crate::resource::ResourceInfo;
use crate::same;

/// Records in `new.metadata.managedFields` that `manager` wrote the fields
/// that differ from `old` (an Update operation, optionally on a
/// subresource). Exported as `patch::track_update`.
pub fn track(
    resource: &ResourceInfo,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    let Some(n) = new.as_object() else {
        return;
    };
    let w = Walker::new(resource);
    let mut cmp = Comparison::default();
    match old {
        Some(Value::Object(o)) => {
            compare_objects(&w, o, n, &mut cmp);
        }
        None => {
            compare_objects(&w, &Map::new(), n, &mut cmp);
        }
        // A stored object is always an object; anything else is compared
        // as a whole.
        Some(o) => compare_whole(&w, o, new, &mut cmp),
    }
    let old = Old {
        obj: old,
        managed: None,
    };
    record(resource, old, new, cmp, manager, subresource, now);
}

/// [`track`] for a write from `old` to `new`, skipped when the two are
/// equal; cheaper than comparing them first, since the comparison that
/// finds the changed fields also tells whether anything changed. Exported
/// as `patch::track_update_if_changed`.
///
/// `old_managed` is `old`'s managedFields as JSON text when `old` was
/// decoded with the list apart, holding `null` in its place.
#[allow(clippy::too_many_arguments)]
pub fn track_if_changed(
    resource: &ResourceInfo,
    old: &Value,
    old_managed: Option<&RawValue>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        if new != old {
            track(resource, Some(old), new, manager, subresource, now);
        }
        return;
    };
    let w = Walker::new(resource);
    let mut cmp = Comparison::default();
    // The comparison that finds the changed fields also tells whether
    // anything changed, so the objects are not compared twice.
    if compare_objects(&w, o, n, &mut cmp) {
        let old = Old {
            obj: Some(old),
            managed: old_managed,
        };
        record(resource, old, new, cmp, manager, subresource, now);
    }
}

/// The entries of a managedFields list kept apart as JSON text (none when
/// it does not parse): what tracking reads of it.
fn entries(text: &RawValue) -> Vec<Value> {
    serde_json::from_str(text.get()).unwrap_or_default()
}

/// The object before a write, and its managedFields text when it was
/// decoded apart.
struct Old<'a> {
    obj: Option<&'a Value>,
    managed: Option<&'a RawValue>,
}

impl<'a> Old<'a> {
    /// The stored entries.
    fn entries(self) -> Vec<Cow<'a, Value>> {
        let placeholder = self.obj.is_some_and(managed_fields::holds_placeholder);
        match self.managed {
            Some(text) if placeholder => entries(text).into_iter().map(Cow::Owned).collect(),
            _ => self
                .obj
                .and_then(managed_fields::raw)
                .map(|list| list.iter().map(Cow::Borrowed).collect())
                .unwrap_or_default(),
        }
    }
}

fn compare_whole(w: &Walker, old: &Value, new: &Value, out: &mut Comparison) {
    w.compare(&mut Vec::new(), Some(old), Some(new), &mut Vec::new(), out);
}

/// The comparison of two objects that [`Walker::compare`] gives, and
/// whether they differ at all.
fn compare_objects(
    w: &Walker,
    o: &Map<String, Value>,
    n: &Map<String, Value>,
    out: &mut Comparison,
) -> bool {
    let mut names = Vec::new();
    let mut path = Vec::new();
    let mut differs = false;
    let mut field = |k: &String, ov: Option<&Value>, nv: Option<&Value>| {
        if k == "metadata" || same::options(ov, nv) {
            return;
        }
        differs = true;
        if Walker::ignored(&names, k) {
            return;
        }
        names.push(k.clone());
        path.push(fieldpath::field(k));
        w.compare(&mut names, ov, nv, &mut path, out);
        path.pop();
        names.pop();
    };
    same::each_key(o, n, &mut field);
    // Metadata is walked rather than first compared whole: the comparison
    // would go through managedFields, which the walk skips. Walking equal
    // values finds nothing.
    let (ov, nv) = (o.get("metadata"), n.get("metadata"));
    if ov.is_some() || nv.is_some() {
        names.push("metadata".to_string());
        path.push(fieldpath::field("metadata"));
        w.compare(&mut names, ov, nv, &mut path, out);
        differs =
            differs || !out.changed.is_empty() || !out.removed.is_empty() || !same::options(ov, nv);
    }
    differs
}

/// An entry of the list being written.
enum Slot {
    /// Canonical and out of the write's reach: stored as it came.
    Kept(Value),
    /// Parsed, edited, and written back.
    Built(ManagedEntry),
}

impl Slot {
    fn sort_key(&self) -> SortKey<'_> {
        match self {
            Slot::Kept(v) => RawEntry(v).sort_key(),
            Slot::Built(e) => e.sort_key(),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Slot::Kept(v) => v,
            Slot::Built(e) => e.into_value(),
        }
    }
}

/// Takes the changed fields for `manager` and takes the changed and
/// removed ones from everyone else.
fn record(
    resource: &ResourceInfo,
    old: Old<'_>,
    new: &mut Value,
    cmp: Comparison,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    // A client may replace managedFields by sending a different list (an
    // empty one resets ownership); otherwise the stored entries carry over.
    // A sent list equal to the stored one reads as the stored one does, so
    // whenever a list was sent it is the one read, and no copy is made.
    let sent = new
        .get_mut("metadata")
        .and_then(|m| m.get_mut("managedFields"))
        .and_then(Value::as_array_mut)
        .map(std::mem::take);
    let source: Vec<Cow<'_, Value>> = match sent {
        Some(list) => list.into_iter().map(Cow::Owned).collect(),
        None => old.entries(),
    };

    // Subresource writers (status, scale) are recorded in the version of
    // the object whose fields they changed.
    let api_version = resource.api_version();
    let removed = cmp.removed.paths();
    let mut mine_found = false;
    let mut slots: Vec<Slot> = Vec::with_capacity(source.len() + 1);
    for v in source {
        let raw = RawEntry(&v);
        if !raw.readable() {
            continue;
        }
        // The first entry of this manager takes the changed fields.
        let mine = !mine_found && !cmp.changed.is_empty() && raw.is(manager, "Update", subresource);
        mine_found |= mine;
        // The writer's entry holds none of the removed fields, as when a
        // controller rewrites the status it wrote before, perhaps with a
        // few fields more: giving up the changed fields and taking them
        // back leaves its set as it was, so the set only gains the changed
        // fields it lacks, added to its JSON where they sort (nothing when
        // it owns them all already), and the time and version are written.
        let merged = mine
            && !cmp.changed.own
            && raw.is_canonical()
            && raw
                .fields()
                .is_some_and(|f| !fields_v1::holds_any(f, &cmp.removed));
        if merged {
            let mut v = v.into_owned();
            if let Some(Value::Object(f)) = v.get_mut("fieldsV1") {
                fields_v1::union_in_place(f, &cmp.changed);
            }
            slots.push(Slot::Kept(restamp(v, &api_version, now)));
            continue;
        }
        let untouched = !mine
            && raw.is_canonical()
            && raw.fields().is_some_and(|f| {
                !fields_v1::owns_any(f, &cmp.changed) && !fields_v1::holds_any(f, &cmp.removed)
            });
        if untouched {
            slots.push(Slot::Kept(v.into_owned()));
            continue;
        }
        let Some(mut e) = ManagedEntry::from_value(&v) else {
            continue;
        };
        e.fields.difference(&cmp.changed);
        for p in &removed {
            e.fields.remove_tree(p);
        }
        e.fields.prune();
        if mine {
            e.fields.union(&cmp.changed);
            e.time = Some(now.to_string());
            e.api_version = api_version.clone();
        }
        slots.push(Slot::Built(e));
    }
    if !cmp.changed.is_empty() && !mine_found {
        slots.push(Slot::Built(ManagedEntry {
            manager: manager.to_string(),
            operation: "Update".into(),
            api_version,
            time: Some(now.to_string()),
            subresource: subresource.map(str::to_string),
            fields: cmp.changed,
        }));
    }
    // As `managed_fields::write` does: empty entries go, the rest sorted.
    slots.retain(|s| match s {
        Slot::Kept(_) => true,
        Slot::Built(e) => !e.fields.is_empty(),
    });
    slots.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    managed_fields::store(new, slots.into_iter().map(Slot::into_value).collect());
}

/// A canonical entry with `apiVersion` and `time` set as a rewrite of the
/// entry with them would write it, its other members untouched.
fn restamp(entry: Value, api_version: &str, now: &str) -> Value {
    let Value::Object(mut m) = entry else {
        return entry;
    };
    if let Some(t) = m.get_mut("time") {
        *t = Value::String(now.to_string());
        if let Some(v) = m.get_mut("apiVersion") {
            *v = Value::String(api_version.to_string());
        }
        return Value::Object(m);
    }
    // No time yet: it goes right after apiVersion.
    let mut out = Map::with_capacity(m.len() + 1);
    for (k, v) in m {
        if k == "apiVersion" {
            out.insert(k, Value::String(api_version.to_string()));
            out.insert("time".into(), Value::String(now.to_string()));
        } else {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}
