//! Measurement and tuning-set parameters, read as ClusterLoader2 reads
//! them: integers may be written as numbers or numeric strings, durations
//! must be Go duration strings, booleans must be booleans. A missing
//! parameter takes the caller's default; a present one of the wrong shape
//! is an error naming it.

use std::time::Duration;

use serde_json::{Map, Value};

pub type Params = Map<String, Value>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("parameter {name:?}: {message}")]
pub struct ParamError {
    pub name: String,
    pub message: String,
}

fn bad(name: &str, message: impl Into<String>) -> ParamError {
    ParamError {
        name: name.into(),
        message: message.into(),
    }
}

fn present<'a>(p: &'a Params, name: &str) -> Option<&'a Value> {
    p.get(name).filter(|v| !v.is_null())
}

pub fn string(p: &Params, name: &str) -> Result<Option<String>, ParamError> {
    match present(p, name) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(bad(name, format!("expected a string, got {v}"))),
    }
}

pub fn string_or(p: &Params, name: &str, default: &str) -> Result<String, ParamError> {
    Ok(string(p, name)?.unwrap_or_else(|| default.to_string()))
}

pub fn required_string(p: &Params, name: &str) -> Result<String, ParamError> {
    string(p, name)?.ok_or_else(|| bad(name, "is required"))
}

pub fn int(p: &Params, name: &str) -> Result<Option<i64>, ParamError> {
    match present(p, name) {
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| bad(name, format!("{n} is not an integer"))),
        Some(Value::String(s)) => s
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| bad(name, format!("{s:?} is not an integer"))),
        Some(v) => Err(bad(name, format!("expected an integer, got {v}"))),
    }
}

pub fn int_or(p: &Params, name: &str, default: i64) -> Result<i64, ParamError> {
    Ok(int(p, name)?.unwrap_or(default))
}

pub fn float(p: &Params, name: &str) -> Result<Option<f64>, ParamError> {
    match present(p, name) {
        None => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(Value::String(s)) => s
            .trim()
            .parse::<f64>()
            .map(Some)
            .map_err(|_| bad(name, format!("{s:?} is not a number"))),
        Some(v) => Err(bad(name, format!("expected a number, got {v}"))),
    }
}

pub fn float_or(p: &Params, name: &str, default: f64) -> Result<f64, ParamError> {
    Ok(float(p, name)?.unwrap_or(default))
}

pub fn bool_or(p: &Params, name: &str, default: bool) -> Result<bool, ParamError> {
    match present(p, name) {
        None => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(bad(name, format!("expected true or false, got {v}"))),
    }
}

pub fn duration(p: &Params, name: &str) -> Result<Option<Duration>, ParamError> {
    match present(p, name) {
        None => Ok(None),
        Some(Value::String(s)) => kubesim_gocompat::duration::parse_std(s)
            .map(Some)
            .map_err(|e| bad(name, e.to_string())),
        Some(v) => Err(bad(
            name,
            format!("expected a duration string such as \"30s\", got {v}"),
        )),
    }
}

pub fn duration_or(p: &Params, name: &str, default: Duration) -> Result<Duration, ParamError> {
    Ok(duration(p, name)?.unwrap_or(default))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(v: Value) -> Params {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn ints_accept_numbers_and_numeric_strings() {
        let ps = p(json!({"a": 3, "b": "42", "c": 2.9, "d": "x", "e": true}));
        assert_eq!(int(&ps, "a"), Ok(Some(3)));
        assert_eq!(int(&ps, "b"), Ok(Some(42)));
        assert_eq!(int(&ps, "c"), Ok(Some(2)));
        assert!(int(&ps, "d").is_err());
        assert!(int(&ps, "e").is_err());
        assert_eq!(int_or(&ps, "missing", 7), Ok(7));
    }

    #[test]
    fn durations_must_be_strings() {
        let ps = p(json!({"a": "1m30s", "b": 5, "c": "-1s", "d": null}));
        assert_eq!(duration(&ps, "a"), Ok(Some(Duration::from_secs(90))));
        assert!(duration(&ps, "b").is_err());
        assert!(duration(&ps, "c").is_err());
        assert_eq!(
            duration_or(&ps, "d", Duration::from_secs(5)),
            Ok(Duration::from_secs(5))
        );
    }

    #[test]
    fn bools_must_be_bools() {
        let ps = p(json!({"a": true, "b": "true"}));
        assert_eq!(bool_or(&ps, "a", false), Ok(true));
        assert!(bool_or(&ps, "b", false).is_err());
        assert_eq!(bool_or(&ps, "c", true), Ok(true));
    }
}
