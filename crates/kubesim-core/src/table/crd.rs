//! Custom resources: Name, then the CRD version's additionalPrinterColumns
//! (or Age when it defines none), cells typed as the column says.

use jiff::Timestamp;
use serde_json::{json, Map, Value};

use super::age::date_cell;
use super::columns::{self, Column, CREATED_DESC};
use super::jsonpath::JsonPath;
use crate::resource::PrinterColumn;

/// Columns and the compiled paths behind every column after Name.
pub(super) struct Layout {
    pub columns: Vec<Column>,
    paths: Vec<JsonPath>,
}

/// What a CRD without printer columns shows.
fn default_columns() -> Vec<PrinterColumn> {
    vec![PrinterColumn {
        name: "Age".into(),
        type_: "date".into(),
        format: String::new(),
        description: CREATED_DESC.into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

pub(super) fn layout(defined: &[PrinterColumn]) -> Layout {
    let fallback;
    let defined = if defined.is_empty() {
        fallback = default_columns();
        &fallback[..]
    } else {
        defined
    };
    let mut out = Layout {
        columns: vec![columns::name()],
        paths: Vec::new(),
    };
    for col in defined {
        // Upstream keeps the columns before the first bad path and drops
        // the rest; the CRD API normally rejects bad paths anyway.
        let Ok(path) = JsonPath::parse(&col.json_path) else {
            break;
        };
        let description = if col.description.is_empty() {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                col.json_path
            )
        } else {
            col.description.clone()
        };
        out.columns.push(Column {
            name: col.name.clone(),
            type_: col.type_.clone(),
            format: col.format.clone(),
            description,
            priority: col.priority,
        });
        out.paths.push(path);
    }
    out
}

impl Layout {
    pub fn cells(&self, obj: &Value, now: Timestamp) -> Vec<Value> {
        let mut cells = vec![json!(crate::meta::name(obj))];
        for (col, path) in self.columns[1..].iter().zip(&self.paths) {
            let cell = match path.first(obj) {
                None | Some(Value::Null) => Value::Null,
                Some(v) => cell(&col.type_, v, now),
            };
            cells.push(cell);
        }
        cells
    }
}

/// A JSON value as the column type wants it; null when it does not fit.
pub(super) fn cell(type_: &str, v: &Value, now: Timestamp) -> Value {
    match type_ {
        "string" => Value::String(match v {
            Value::String(s) => s.clone(),
            other => go_text(other),
        }),
        "integer" => match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_u64().map(|u| u as i64))
                .or_else(|| n.as_f64().map(|f| f as i64))
                .map_or(Value::Null, Value::from),
            _ => Value::Null,
        },
        "number" => match v {
            Value::Number(n) => match n.as_i64() {
                Some(i) => Value::from(i),
                None => n.as_f64().map_or(Value::Null, number),
            },
            _ => Value::Null,
        },
        "boolean" => match v {
            Value::Bool(b) => Value::Bool(*b),
            _ => Value::Null,
        },
        "date" => match v {
            Value::String(s) => Value::String(date_cell(now, s)),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

/// Whole floats go out as integers, as Go's encoder writes `3` for 3.0.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// How the Kubernetes JSONPath printer renders a non-string value: objects
/// and arrays as compact JSON with sorted keys, scalars as Go's `%v`.
fn go_text(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => go_json(v),
    }
}

/// Go's `%v` for float64: shortest digits, exponent form outside 1e-4..1e6.
fn go_float(f: f64) -> String {
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        format!("{f}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Go's `json.Marshal`: map keys sorted, and `<`, `>`, `&` escaped.
fn go_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(v)
        .to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_cells() {
        let now: Timestamp = "2024-05-01T12:00:00Z".parse().unwrap();
        assert_eq!(cell("integer", &json!(3.9), now), json!(3));
        assert_eq!(cell("integer", &json!("3"), now), Value::Null);
        assert_eq!(cell("number", &json!(2), now), json!(2));
        assert_eq!(cell("number", &json!(2.5), now), json!(2.5));
        assert_eq!(cell("boolean", &json!(true), now), json!(true));
        assert_eq!(cell("boolean", &json!("true"), now), Value::Null);
        assert_eq!(cell("string", &json!(7), now), json!("7"));
        assert_eq!(cell("string", &json!(1e7), now), json!("1e+07"));
        assert_eq!(cell("string", &json!(0.25), now), json!("0.25"));
        assert_eq!(
            cell("string", &json!({"b": 1, "a": "<x>"}), now),
            json!("{\"a\":\"\\u003cx\\u003e\",\"b\":1}")
        );
        assert_eq!(
            cell("date", &json!("2024-05-01T11:00:00Z"), now),
            json!("60m")
        );
        assert_eq!(cell("date", &json!("yesterday"), now), json!("<invalid>"));
        assert_eq!(cell("date", &json!(5), now), Value::Null);
        assert_eq!(cell("object", &json!({}), now), Value::Null);
    }
}
