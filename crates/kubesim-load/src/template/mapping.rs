//! The parameters a test config is rendered with: override files (flat
//! YAML maps, later files winning), then `Nodes` and `ImageRegistry`, then
//! every `CL2_*` environment variable, which may not contradict an
//! override ("merge conflict"), as ClusterLoader2 merges them.

use std::path::Path;

use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct MappingError(pub String);

/// The registry images are pulled from (`{{.ImageRegistry}}`).
pub const DEFAULT_IMAGE_REGISTRY: &str = "registry.k8s.io";

pub fn build_mapping(
    overrides: &[&Path],
    env: impl IntoIterator<Item = (String, String)>,
    nodes: i64,
) -> Result<Map<String, Value>, MappingError> {
    let mut m = Map::new();
    for path in overrides {
        let text = std::fs::read_to_string(path)
            .map_err(|e| MappingError(format!("{}: cannot read: {e}", path.display())))?;
        if text.trim().is_empty() {
            continue;
        }
        let v: Value = serde_saphyr::from_str(&text)
            .map_err(|e| MappingError(format!("{}: {e}", path.display())))?;
        match v {
            Value::Object(o) => m.extend(o),
            Value::Null => {}
            _ => {
                return Err(MappingError(format!(
                    "{}: an override file must be a map of parameters",
                    path.display()
                )))
            }
        }
    }
    m.insert("Nodes".into(), Value::from(nodes));
    m.entry("ImageRegistry")
        .or_insert_with(|| Value::from(DEFAULT_IMAGE_REGISTRY));
    let mut env: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k.starts_with("CL2_"))
        .collect();
    env.sort();
    for (k, raw) in env {
        let v = parse_env_value(&raw);
        match m.get(&k) {
            Some(old) if !same(old, &v) => {
                return Err(MappingError(format!(
                    "merge conflict for key {k:?}: {old} from an override file, {v} from the environment"
                )))
            }
            _ => {
                m.insert(k, v);
            }
        }
    }
    Ok(m)
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// An environment value as ClusterLoader2 reads it: an int64, else a
/// float64, else a bool, else the string.
pub fn parse_env_value(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(f) = s.parse::<f64>() {
        if let Some(n) = serde_json::Number::from_f64(f) {
            return Value::Number(n);
        }
    }
    match s {
        "true" | "True" | "TRUE" | "1" | "t" | "T" => Value::Bool(true),
        "false" | "False" | "FALSE" | "0" | "f" | "F" => Value::Bool(false),
        _ => Value::String(s.to_string()),
    }
}
