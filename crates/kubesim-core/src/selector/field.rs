//! Field selectors and the per-kind set of selectable fields.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::error::ApiError;
use crate::resource::ResourceInfo;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Eq,
    NotEq,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub op: FieldOp,
    pub value: String,
}

impl FieldRequirement {
    /// A missing field reads as the empty string, as upstream's `fields.Set`.
    pub fn matches<'a>(&self, get: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        let actual = get(&self.field).unwrap_or("");
        match self.op {
            FieldOp::Eq => actual == self.value,
            FieldOp::NotEq => actual != self.value,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            FieldOp::Eq => "=",
            FieldOp::NotEq => "!=",
        };
        write!(f, "{}{op}{}", self.field, escape_value(&self.value))
    }
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `f=v,g!=w` as `fields.ParseSelector` does: terms are split on
    /// unescaped commas, empty terms are skipped, and the field name is taken
    /// verbatim (unknown names are caught by `check_supported`). Upstream
    /// sorts the raw terms; sorting the canonical terms instead gives the
    /// same kind of stable order and makes the string form a fixed point.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let terms = split_terms(s);
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms {
            if term.is_empty() {
                continue;
            }
            let Some((field, op, raw)) = split_term(term) else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            let value = unescape_value(raw).map_err(ApiError::bad_request)?;
            requirements.push(FieldRequirement {
                field: field.to_string(),
                op,
                value,
            });
        }
        requirements.sort_by_cached_key(|r| r.to_string());
        Ok(FieldSelector { requirements })
    }
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
    /// 400 `field label not supported: X` for a field the kind does not index.
    pub fn check_supported(&self, resource: &ResourceInfo) -> Result<(), ApiError> {
        let supported = selectable_fields(resource);
        match self
            .requirements
            .iter()
            .find(|r| !supported.contains(&r.field.as_str()))
        {
            Some(r) => Err(ApiError::bad_request(format!(
                "field label not supported: {}",
                r.field
            ))),
            None => Ok(()),
        }
    }
    pub fn matches<'a>(&self, get: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(get))
    }
    /// Matches an object directly, reading only the fields the selector names.
    pub fn matches_object(&self, resource: &ResourceInfo, obj: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let actual = field_value(resource, obj, &r.field);
            r.matches(&|_| actual.as_deref())
        })
    }
    /// The value of `field=value` when the selector pins `field` exactly.
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.op == FieldOp::Eq)
            .map(|r| r.value.as_str())
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Splits on commas not preceded by a backslash escape.
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// The first operator wins, so `a=b=c` is `a` `=` `b=c` (and then fails on the
/// unescaped `=` in the value).
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOp::NotEq),
            ("==", FieldOp::Eq),
            ("=", FieldOp::Eq),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, value));
            }
        }
    }
    None
}

/// Escapes `\`, `,` and `=` so any string can be a field selector value.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Undoes [`escape_value`]; unknown escapes and bare `,`/`=` are errors with
/// upstream's messages.
pub fn unescape_value(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                ));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            // Upstream formats the rune with %v, which prints its code point.
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ))
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".to_string());
    }
    Ok(out)
}

const META: &[&str] = &["metadata.name", "metadata.namespace"];
const POD: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];
const CORE_EVENT: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];
/// events.k8s.io accepts its own field names and, for convenience, the core
/// ones too, so one selector works against either API.
const EVENTS_V1_EVENT: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reportingController",
];
const NODE: &[&str] = &["metadata.name", "metadata.namespace", "spec.unschedulable"];
const NAMESPACE: &[&str] = &["metadata.name", "metadata.namespace", "status.phase"];
const SECRET: &[&str] = &["metadata.name", "metadata.namespace", "type"];
const REPLICATED: &[&str] = &["metadata.name", "metadata.namespace", "status.replicas"];
const JOB: &[&str] = &["metadata.name", "metadata.namespace", "status.successful"];
const CSR: &[&str] = &["metadata.name", "metadata.namespace", "spec.signerName"];

/// The fields a kind can be selected by, in the order `field_values` uses.
pub fn selectable_fields(resource: &ResourceInfo) -> &'static [&'static str] {
    match (resource.group.as_str(), resource.plural.as_str()) {
        ("", "pods") => POD,
        ("", "events") => CORE_EVENT,
        ("events.k8s.io", "events") => EVENTS_V1_EVENT,
        ("", "nodes") => NODE,
        ("", "namespaces") => NAMESPACE,
        ("", "secrets") => SECRET,
        ("apps", "replicasets") | ("", "replicationcontrollers") => REPLICATED,
        ("batch", "jobs") => JOB,
        ("certificates.k8s.io", "certificatesigningrequests") => CSR,
        _ => META,
    }
}

/// How upstream renders a field into its `fields.Set`: strings as is,
/// booleans and integers in Go's formatting, anything missing as "".
/// Borrowed where it can be: every write computes these for its index.
fn render(v: Option<&Value>) -> Cow<'_, str> {
    match v {
        Some(Value::String(s)) => Cow::Borrowed(s),
        Some(Value::Bool(b)) => Cow::Borrowed(bool_str(*b)),
        Some(Value::Number(n)) => Cow::Owned(n.to_string()),
        _ => Cow::Borrowed(""),
    }
}

fn bool_str(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

fn at<'a>(obj: &'a Value, dotted: &str) -> Option<&'a Value> {
    crate::meta::path(obj, dotted)
}

fn first_non_empty<'a>(obj: &'a Value, paths: &[&str]) -> Cow<'a, str> {
    paths
        .iter()
        .map(|p| render(at(obj, p)))
        .find(|s| !s.is_empty())
        .unwrap_or_default()
}

fn pod_ip(obj: &Value) -> Cow<'_, str> {
    let first = at(obj, "status.podIPs")
        .and_then(Value::as_array)
        .and_then(|ips| ips.first())
        .map(|ip| render(ip.get("ip")));
    match first {
        Some(ip) => ip,
        None => render(at(obj, "status.podIP")),
    }
}

/// Events written through either API: core names first, then the
/// events.k8s.io ones, so the value is found whichever shape was stored.
fn event_value<'a>(obj: &'a Value, field: &str) -> Option<Cow<'a, str>> {
    let regarding = |sub: &str| {
        ["involvedObject", "regarding"]
            .iter()
            .map(|r| render(obj.get(r).and_then(|o| o.get(sub))))
            .find(|s| !s.is_empty())
            .unwrap_or_default()
    };
    Some(match field {
        "involvedObject.kind" | "regarding.kind" => regarding("kind"),
        "involvedObject.namespace" | "regarding.namespace" => regarding("namespace"),
        "involvedObject.name" | "regarding.name" => regarding("name"),
        "involvedObject.uid" | "regarding.uid" => regarding("uid"),
        "involvedObject.apiVersion" | "regarding.apiVersion" => regarding("apiVersion"),
        "involvedObject.resourceVersion" | "regarding.resourceVersion" => {
            regarding("resourceVersion")
        }
        "involvedObject.fieldPath" | "regarding.fieldPath" => regarding("fieldPath"),
        "reason" => render(at(obj, "reason")),
        "type" => render(at(obj, "type")),
        "reportingComponent" | "reportingController" => {
            first_non_empty(obj, &["reportingComponent", "reportingController"])
        }
        "source" => first_non_empty(
            obj,
            &[
                "source.component",
                "deprecatedSource.component",
                "reportingComponent",
                "reportingController",
            ],
        ),
        _ => return None,
    })
}

/// The value of one selectable field, or None when the kind cannot be
/// selected by it.
pub fn field_value(resource: &ResourceInfo, obj: &Value, field: &str) -> Option<String> {
    if !selectable_fields(resource).contains(&field) {
        return None;
    }
    value_of(resource, obj, field).map(Cow::into_owned)
}

fn value_of<'a>(resource: &ResourceInfo, obj: &'a Value, field: &str) -> Option<Cow<'a, str>> {
    Some(match field {
        "metadata.name" => Cow::Borrowed(crate::meta::name(obj)),
        "metadata.namespace" => Cow::Borrowed(crate::meta::namespace(obj)),
        _ => match (resource.group.as_str(), resource.plural.as_str()) {
            ("", "pods") => match field {
                "spec.hostNetwork" => Cow::Borrowed(bool_str(
                    at(obj, "spec.hostNetwork")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                )),
                "status.podIP" | "status.podIPs" => pod_ip(obj),
                _ => render(at(obj, field)),
            },
            ("", "events") | ("events.k8s.io", "events") => event_value(obj, field)?,
            ("", "nodes") => Cow::Borrowed(bool_str(
                at(obj, "spec.unschedulable")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            )),
            ("apps", "replicasets") | ("", "replicationcontrollers") => Cow::Owned(
                at(obj, "status.replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    .to_string(),
            ),
            ("batch", "jobs") => Cow::Owned(
                at(obj, "status.succeeded")
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
                    .to_string(),
            ),
            _ => render(at(obj, field)),
        },
    })
}

/// The selectable field values of an object, `metadata.name` and
/// `metadata.namespace` included, in a fixed order; borrowed from the
/// object wherever they are its own strings.
pub fn field_values<'a>(
    resource: &ResourceInfo,
    obj: &'a Value,
) -> Vec<(&'static str, Cow<'a, str>)> {
    // Every indexed field has a value (`value_of` gives None only for
    // names a kind is not selected by); "" stands in should one not, so
    // that positions hold.
    indexed_fields(resource)
        .iter()
        .map(|f| (*f, value_of(resource, obj, f).unwrap_or_default()))
        .collect()
}

/// The fields indexed for a stored object, in the order of
/// [`field_values`]: its selectable fields. Events keep the core names
/// only: each events.k8s.io name reads the same value as a core one
/// ([`indexed_slot`]), and indexing both nearly doubled what an Event
/// cost beside its bytes.
fn indexed_fields(resource: &ResourceInfo) -> &'static [&'static str] {
    if is_event(resource) {
        CORE_EVENT
    } else {
        selectable_fields(resource)
    }
}

fn is_event(resource: &ResourceInfo) -> bool {
    matches!(
        (resource.group.as_str(), resource.plural.as_str()),
        ("", "events") | ("events.k8s.io", "events")
    )
}

/// How many values [`field_values`] gives for `resource`'s objects.
pub fn indexed_count(resource: &ResourceInfo) -> usize {
    indexed_fields(resource).len()
}

/// Where `field`'s value is among [`field_values`]; None when objects of
/// `resource` are not indexed by it. Both APIs select Events from the one
/// storage, so the events.k8s.io names find the core field of the same
/// value (`event_value` reads `regarding.kind` as `involvedObject.kind`).
pub fn indexed_slot(resource: &ResourceInfo, field: &str) -> Option<usize> {
    let fields = indexed_fields(resource);
    if !is_event(resource) {
        return fields.iter().position(|f| *f == field);
    }
    if let Some(sub) = field.strip_prefix("regarding.") {
        return fields
            .iter()
            .position(|f| f.strip_prefix("involvedObject.") == Some(sub));
    }
    let field = match field {
        "reportingController" => "reportingComponent",
        other => other,
    };
    fields.iter().position(|f| *f == field)
}

#[cfg(test)]
#[path = "field_tests.rs"]
mod tests;
