//! Reading and writing `metadata.managedFields` entries.

use serde_json::{Map, Value};

use super::fieldpath::FieldSet;
use super::fields_v1;

/// One `metadata.managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedEntry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    pub time: Option<String>,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl ManagedEntry {
    /// Whether this entry is the one `manager` writes with `operation`.
    pub fn is(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }

    /// How conflict messages name the owner: appliers by name only, since
    /// they are one owner across versions; updaters with their version.
    pub fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if let Some(sub) = &self.subresource {
            s.push_str(&format!(" with subresource {sub:?}"));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    /// Where the entry sorts in the stored list.
    pub(super) fn sort_key(&self) -> SortKey<'_> {
        SortKey {
            operation: &self.operation,
            time: self.time.as_deref(),
            manager: &self.manager,
            api_version: &self.api_version,
            subresource: self.subresource.as_deref(),
        }
    }

    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), self.manager.clone().into());
        m.insert("operation".into(), self.operation.clone().into());
        m.insert("apiVersion".into(), self.api_version.clone().into());
        if let Some(t) = &self.time {
            m.insert("time".into(), t.clone().into());
        }
        m.insert("fieldsType".into(), "FieldsV1".into());
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), s.clone().into());
        }
        Value::Object(m)
    }

    /// [`Self::to_value`] of an entry that is no longer needed, moving its
    /// strings instead of copying them.
    pub(super) fn into_value(self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), self.manager.into());
        m.insert("operation".into(), self.operation.into());
        m.insert("apiVersion".into(), self.api_version.into());
        if let Some(t) = self.time {
            m.insert("time".into(), t.into());
        }
        m.insert("fieldsType".into(), "FieldsV1".into());
        m.insert("fieldsV1".into(), self.fields.into_fields_v1());
        if let Some(s) = self.subresource {
            m.insert("subresource".into(), s.into());
        }
        Value::Object(m)
    }

    pub(super) fn from_value(v: &Value) -> Option<ManagedEntry> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(ManagedEntry {
            manager: s("manager").unwrap_or_default(),
            operation: s("operation")?,
            api_version: s("apiVersion").unwrap_or_default(),
            time: s("time"),
            subresource: s("subresource").filter(|s| !s.is_empty()),
            fields: v
                .get("fieldsV1")
                .map(FieldSet::from_fields_v1)
                .unwrap_or_default(),
        })
    }
}

/// The order of the stored list, as upstream sorts it: appliers first,
/// then by time, manager, apiVersion and subresource.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct SortKey<'a> {
    operation: &'a str,
    time: Option<&'a str>,
    manager: &'a str,
    api_version: &'a str,
    subresource: Option<&'a str>,
}

/// An entry as JSON, read the way [`ManagedEntry::from_value`] reads it
/// but without parsing its field set.
#[derive(Clone, Copy)]
pub(super) struct RawEntry<'a>(pub(super) &'a Value);

impl<'a> RawEntry<'a> {
    fn str(&self, k: &str) -> Option<&'a str> {
        self.0.get(k).and_then(Value::as_str)
    }

    /// Entries without an operation are dropped on reading.
    pub(super) fn readable(&self) -> bool {
        self.str("operation").is_some()
    }

    /// [`ManagedEntry::is`] of the entry this one reads as.
    pub(super) fn is(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.str("manager").unwrap_or_default() == manager
            && self.str("operation") == Some(operation)
            && self.str("subresource").filter(|s| !s.is_empty()) == subresource
    }

    /// [`ManagedEntry::sort_key`] of the entry this one reads as.
    pub(super) fn sort_key(&self) -> SortKey<'a> {
        SortKey {
            operation: self.str("operation").unwrap_or_default(),
            time: self.str("time"),
            manager: self.str("manager").unwrap_or_default(),
            api_version: self.str("apiVersion").unwrap_or_default(),
            subresource: self.str("subresource").filter(|s| !s.is_empty()),
        }
    }

    /// The fieldsV1 object, when the entry is canonical.
    pub(super) fn fields(&self) -> Option<&'a Map<String, Value>> {
        self.0.get("fieldsV1").and_then(Value::as_object)
    }

    /// Whether reading the entry and writing it back gives it unchanged,
    /// key order included: then it can be stored as it is.
    pub(super) fn is_canonical(&self) -> bool {
        let Some(m) = self.0.as_object() else {
            return false;
        };
        let mut it = m.iter().peekable();
        // The members `to_value` writes, in its order; time and
        // subresource are optional.
        for (name, required) in [
            ("manager", true),
            ("operation", true),
            ("apiVersion", true),
            ("time", false),
            ("fieldsType", true),
            ("fieldsV1", true),
            ("subresource", false),
        ] {
            match it.peek() {
                Some((k, v)) if k.as_str() == name => {
                    let ok = match name {
                        "fieldsType" => v.as_str() == Some("FieldsV1"),
                        "fieldsV1" => fields_v1::is_canonical(v),
                        "subresource" => v.as_str().is_some_and(|s| !s.is_empty()),
                        _ => v.is_string(),
                    };
                    if !ok {
                        return false;
                    }
                    it.next();
                }
                _ if required => return false,
                _ => {}
            }
        }
        it.next().is_none()
    }
}

/// The raw managedFields array of an object, if it has one.
pub fn raw(obj: &Value) -> Option<&Vec<Value>> {
    obj.get("metadata")?.get("managedFields")?.as_array()
}

/// Whether `obj` holds `null` where its managedFields list goes: the
/// placeholder a decoder that keeps the list apart as text leaves (see
/// `kubesim_runtime::decode::managed_fields_apart`).
pub fn holds_placeholder(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(Value::is_null)
}

/// The entries of an object; malformed entries are dropped.
pub fn read(obj: &Value) -> Vec<ManagedEntry> {
    raw(obj)
        .map(|a| a.iter().filter_map(ManagedEntry::from_value).collect())
        .unwrap_or_default()
}

/// Stores `entries` into `obj.metadata.managedFields`, dropping empty ones
/// and sorting as upstream does: appliers first, then by time, manager,
/// apiVersion and subresource.
pub fn write(obj: &mut Value, mut entries: Vec<ManagedEntry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    store(
        obj,
        entries.into_iter().map(ManagedEntry::into_value).collect(),
    );
}

/// Stores already sorted, non-empty entries; none removes the list.
pub(super) fn store(obj: &mut Value, entries: Vec<Value>) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Some(meta) = meta.as_object_mut() {
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), Value::Array(entries));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn into_value_writes_what_to_value_writes() {
        let fields = FieldSet::from_fields_v1(&json!({"f:metadata":{"f:labels":{".":{},"f:a":{}}},
            "f:spec":{"f:c":{"k:{\"name\":\"x\"}":{".":{},"f:image":{}}}}}));
        for (time, subresource) in [(None, None), (Some("2024-01-01T00:00:00Z"), Some("status"))] {
            let e = ManagedEntry {
                manager: "m".into(),
                operation: "Update".into(),
                api_version: "v1".into(),
                time: time.map(str::to_string),
                subresource: subresource.map(str::to_string),
                fields: fields.clone(),
            };
            // Compared as text: map equality ignores key order.
            assert_eq!(e.to_value().to_string(), e.clone().into_value().to_string());
        }
    }
}
