//! Events, in both API groups. `events.k8s.io/v1` is another view of the
//! same stored Event upstream, so both print with one set of columns; the
//! newer field names are mapped onto the core ones first.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::age::{parse_ts, since};
use super::columns::{self, string, Column};
use super::fields::{int, s};
use super::Row;

pub(super) fn columns() -> Vec<Column> {
    vec![
        string(
            "Last Seen",
            "The time at which the most recent occurrence of this event was recorded.",
        ),
        string("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
        string(
            "Reason",
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        ),
        string("Object", "The object that this event is about."),
        string(
            "Subobject",
            "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.",
        )
        .wide(),
        string("Source", "The component reporting this event.").wide(),
        string("Message", "A human-readable description of the status of this operation."),
        string(
            "First Seen",
            "The time at which the event was first recorded.",
        )
        .wide(),
        string("Count", "The number of times this event has occurred.").wide(),
        columns::name().wide(),
    ]
}

/// The fields a row needs, whichever group the event came from.
struct EventView<'a> {
    first: Option<&'a Value>,
    last: Option<&'a Value>,
    event_time: Option<&'a Value>,
    count: i64,
    series: Option<&'a Value>,
    object: Option<&'a Value>,
    component: &'a str,
    host: &'a str,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
    message: &'a str,
}

fn view(ev: &Value, new_api: bool) -> EventView<'_> {
    let get = |k: &str| ev.get(k).filter(|v| !v.is_null());
    if new_api {
        EventView {
            first: get("deprecatedFirstTimestamp"),
            last: get("deprecatedLastTimestamp"),
            event_time: get("eventTime"),
            count: int(ev, "/deprecatedCount"),
            series: get("series"),
            object: get("regarding"),
            component: s(ev, "/deprecatedSource/component"),
            host: s(ev, "/deprecatedSource/host"),
            reporting_controller: s(ev, "/reportingController"),
            reporting_instance: s(ev, "/reportingInstance"),
            message: s(ev, "/note"),
        }
    } else {
        EventView {
            first: get("firstTimestamp"),
            last: get("lastTimestamp"),
            event_time: get("eventTime"),
            count: int(ev, "/count"),
            series: get("series"),
            object: get("involvedObject"),
            component: s(ev, "/source/component"),
            host: s(ev, "/source/host"),
            reporting_controller: s(ev, "/reportingComponent"),
            reporting_instance: s(ev, "/reportingInstance"),
            message: s(ev, "/message"),
        }
    }
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() {
        b
    } else {
        a
    }
}

pub(super) fn row(ev: &Value, now: Timestamp, new_api: bool) -> Row {
    let v = view(ev, new_api);
    let first = if parse_ts(v.first).is_some() {
        since(now, v.first)
    } else {
        since(now, v.event_time)
    };
    let mut last = if parse_ts(v.last).is_some() {
        since(now, v.last)
    } else {
        first.clone()
    };
    let mut count = v.count;
    if let Some(series) = v.series {
        last = since(now, series.get("lastObservedTime"));
        count = int(series, "/count");
    } else if count == 0 {
        // Singleton events of the new API carry no count.
        count = 1;
    }
    let (kind, name, field_path) = match v.object {
        Some(o) => (s(o, "/kind"), s(o, "/name"), s(o, "/fieldPath")),
        None => ("", "", ""),
    };
    let target = if name.is_empty() {
        kind.to_lowercase()
    } else {
        format!("{}/{}", kind.to_lowercase(), name)
    };
    let component = first_non_empty(v.component, v.reporting_controller);
    let instance = first_non_empty(v.host, v.reporting_instance);
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    Row::from(vec![
        json!(last),
        json!(s(ev, "/type")),
        json!(s(ev, "/reason")),
        json!(target),
        json!(field_path),
        json!(source),
        json!(v.message.trim()),
        json!(first),
        json!(count),
        json!(crate::meta::name(ev)),
    ])
}
