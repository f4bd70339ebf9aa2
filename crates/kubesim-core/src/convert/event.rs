//! Event: core/v1 (the storage version) and events.k8s.io/v1.
//!
//! The fields map one to one (regarding = involvedObject, note = message,
//! deprecatedSource/FirstTimestamp/LastTimestamp/Count = source/
//! firstTimestamp/lastTimestamp/count, reportingController =
//! reportingComponent); the rest keep their names. Core events written by
//! older recorders name their reporter only in `source`, so the
//! events.k8s.io view falls back to `source.component` and `source.host`
//! for the reporting fields, as those recorders' newer versions fill both.

use serde_json::{Map, Value};

use super::{copy, into_map};

/// Fields with the same name in both versions.
const SHARED: &[&str] = &[
    "metadata",
    "eventTime",
    "series",
    "action",
    "reason",
    "related",
    "type",
    "reportingInstance",
];

fn non_empty_str(m: &Map<String, Value>, key: &str) -> Option<Value> {
    m.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| Value::String(s.to_string()))
}

pub(super) fn core_to_v1(obj: Value) -> Value {
    let m = into_map(obj);
    let mut out = Map::new();
    out.insert("apiVersion".into(), "events.k8s.io/v1".into());
    out.insert("kind".into(), "Event".into());
    for k in SHARED {
        copy(&m, k, &mut out, k);
    }
    let source = m.get("source").and_then(Value::as_object);
    let from_source = |key: &str| source.and_then(|s| non_empty_str(s, key));
    if let Some(c) = non_empty_str(&m, "reportingComponent").or_else(|| from_source("component")) {
        out.insert("reportingController".into(), c);
    }
    if non_empty_str(&m, "reportingInstance").is_none() {
        if let Some(h) = from_source("host") {
            out.insert("reportingInstance".into(), h);
        }
    }
    copy(&m, "involvedObject", &mut out, "regarding");
    copy(&m, "message", &mut out, "note");
    if source.is_some_and(|s| !s.is_empty()) {
        copy(&m, "source", &mut out, "deprecatedSource");
    }
    copy(&m, "firstTimestamp", &mut out, "deprecatedFirstTimestamp");
    copy(&m, "lastTimestamp", &mut out, "deprecatedLastTimestamp");
    copy(&m, "count", &mut out, "deprecatedCount");
    Value::Object(out)
}

pub(super) fn v1_to_core(obj: Value) -> Value {
    let m = into_map(obj);
    let mut out = Map::new();
    out.insert("apiVersion".into(), "v1".into());
    out.insert("kind".into(), "Event".into());
    for k in SHARED {
        copy(&m, k, &mut out, k);
    }
    // involvedObject is a value (not optional) in the core type.
    let regarding = m
        .get("regarding")
        .filter(|v| v.is_object())
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    out.insert("involvedObject".into(), regarding);
    copy(&m, "note", &mut out, "message");
    copy(&m, "reportingController", &mut out, "reportingComponent");
    copy(&m, "deprecatedSource", &mut out, "source");
    copy(&m, "deprecatedFirstTimestamp", &mut out, "firstTimestamp");
    copy(&m, "deprecatedLastTimestamp", &mut out, "lastTimestamp");
    copy(&m, "deprecatedCount", &mut out, "count");
    Value::Object(out)
}
