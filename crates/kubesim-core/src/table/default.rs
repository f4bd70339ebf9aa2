//! The table of kinds without a printer: Name and Created At, where the
//! cell is the creation time itself (type `date`), not an age.

use serde_json::{json, Value};

use super::columns::{self, Column, CREATED_DESC};
use super::Row;

pub(super) fn columns() -> Vec<Column> {
    vec![
        columns::name(),
        Column::new("Created At", "date", CREATED_DESC),
    ]
}

pub(super) fn row(obj: &Value) -> Row {
    // Go formats the zero time when the field is unset.
    let created = obj
        .pointer("/metadata/creationTimestamp")
        .and_then(Value::as_str)
        .and_then(crate::meta::parse_time)
        .map_or_else(
            || "0001-01-01T00:00:00Z".to_string(),
            crate::meta::format_time,
        );
    Row::from(vec![json!(crate::meta::name(obj)), json!(created)])
}
