//! `x-kubernetes-validations`: CEL rules over `self` (and `oldSelf` for
//! transition rules), evaluated at the schema node that carries them, with
//! upstream's messages (`message`, `messageExpression`, or
//! `failed rule: <rule>`) and reasons.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::objects::{Key, Map};
use cel::{Context, Env, Program, Value as Cel};
use serde_json::Value;

use super::{property, MAX_DEPTH};
use crate::error::Cause;

fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib())).clone()
}

/// Rules compiled once per process; None when a rule does not compile
/// (the CRD's validation is where that is reported).
fn program(source: &str) -> Option<Arc<Program>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Arc<Program>>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = map.get(source) {
        return p.clone();
    }
    let compiled = env().compile(source).ok().map(Arc::new);
    if map.len() < 4096 {
        map.insert(source.to_string(), compiled.clone());
    }
    compiled
}

/// JSON as CEL sees it: integers are `int`, as the rules compare them.
pub fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(a) => Cel::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => Cel::Map(Map {
            map: Arc::new(
                m.iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                    .collect(),
            ),
        }),
    }
}

fn run(source: &str, this: &Value, old: Option<&Value>) -> Result<Cel, String> {
    let Some(p) = program(source) else {
        return Err(format!("compilation failed for rule {source:?}"));
    };
    let mut ctx = Context::with_env(env());
    ctx.add_variable_from_value("self", to_cel(this));
    if let Some(o) = old {
        ctx.add_variable_from_value("oldSelf", to_cel(o));
    }
    p.execute(&ctx).map_err(|e| e.to_string())
}

/// Whether `schema` holds an `x-kubernetes-validations` rule anywhere.
pub(super) fn has_rules(schema: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match schema {
        Value::Object(m) => {
            m.contains_key("x-kubernetes-validations")
                || m.values().any(|v| has_rules(v, depth + 1))
        }
        Value::Array(items) => items.iter().any(|v| has_rules(v, depth + 1)),
        _ => false,
    }
}

/// Checks every rule under `schema` against `obj` (and `old`).
pub(super) fn check_tree(schema: &Value, obj: &Value, old: Option<&Value>, out: &mut Vec<Cause>) {
    let mut path = String::new();
    walk(schema, obj, old, &mut path, out, 0);
}

fn walk(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &mut String,
    out: &mut Vec<Cause>,
    depth: usize,
) {
    if depth > MAX_DEPTH || !schema.is_object() || value.is_null() {
        return;
    }
    if let Some(Value::Array(rules)) = schema.get("x-kubernetes-validations") {
        for rule in rules {
            check_rule(schema, rule, value, old, path, out);
        }
    }
    match value {
        Value::Object(o) => {
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (k, child) in o {
                let Some(sub) = property(schema, k).or(additional) else {
                    continue;
                };
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(k);
                let old_child = old.and_then(|o| o.get(k));
                walk(sub, child, old_child, path, out, depth + 1);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            let Some(sub) = schema.get("items") else {
                return;
            };
            // Old items are matched only where upstream can correlate them:
            // by their keys in a map list.
            let keys: Vec<&str> = match schema.get("x-kubernetes-list-type").and_then(Value::as_str)
            {
                Some("map") => schema
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|k| k.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default(),
                _ => Vec::new(),
            };
            for (i, item) in items.iter().enumerate() {
                let old_item = if keys.is_empty() {
                    None
                } else {
                    old.and_then(Value::as_array).and_then(|olds| {
                        olds.iter()
                            .find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k)))
                    })
                };
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(sub, item, old_item, path, out, depth + 1);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

fn check_rule(
    schema: &Value,
    rule: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let Some(source) = rule.get("rule").and_then(Value::as_str) else {
        return;
    };
    let transition = source.contains("oldSelf");
    let optional_old = rule.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
    // A transition rule is checked only on an update that had a value here.
    if transition && old.is_none() && !optional_old {
        return;
    }
    let at = match rule.get("fieldPath").and_then(Value::as_str) {
        Some(fp) if !fp.is_empty() => format!("{path}{fp}"),
        _ => path.to_string(),
    };
    let at = at.trim_start_matches('.').to_string();
    let ty = schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("object");
    let message = match run(source, value, old) {
        Ok(Cel::Bool(true)) => return,
        Ok(Cel::Bool(false)) => failure_message(rule, source, value, old),
        Ok(other) => format!("rule {source:?} evaluated to {other:?}, not a bool"),
        Err(e) => format!("rule evaluation error: {e}"),
    };
    let reason = rule
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("FieldValueInvalid");
    out.push(match reason {
        "FieldValueForbidden" => Cause::forbidden(at, message),
        "FieldValueRequired" => Cause::new(
            "FieldValueRequired",
            at,
            format!("Required value: {message}"),
        ),
        "FieldValueDuplicate" => Cause::new(
            "FieldValueDuplicate",
            at,
            format!("Duplicate value: \"{ty}\""),
        ),
        _ => Cause::new(
            "FieldValueInvalid",
            at,
            format!("Invalid value: \"{ty}\": {message}"),
        ),
    });
}

fn failure_message(rule: &Value, source: &str, value: &Value, old: Option<&Value>) -> String {
    if let Some(expr) = rule.get("messageExpression").and_then(Value::as_str) {
        if let Ok(Cel::String(s)) = run(expr, value, old) {
            if !s.trim().is_empty() {
                return s.to_string();
            }
        }
    }
    match rule.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!("failed rule: {}", source.trim()),
    }
}
