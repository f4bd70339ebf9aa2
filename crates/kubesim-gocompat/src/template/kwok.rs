//! kwok's template functions that need nothing but their arguments
//! (`Quote`, `YAML`, `NodeConditions`). The ones that read the cluster or
//! the clock (`Now`, `NodeIP`, `PodIPsWith`, ...) belong to the emulator,
//! which answers them from its own state and calls these for the rest.

use serde_json::{json, Value};

/// The five conditions a healthy kubelet reports.
pub fn node_conditions() -> Value {
    json!([
        {"type": "Ready", "status": "True", "reason": "KubeletReady",
         "message": "kubelet is posting ready status"},
        {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
         "message": "kubelet has sufficient memory available"},
        {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
         "message": "kubelet has no disk pressure"},
        {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
         "message": "kubelet has sufficient PID available"},
        {"type": "NetworkUnavailable", "status": "False", "reason": "RouteCreated",
         "message": "RouteController created a route"},
    ])
}

/// `Quote`: strings JSON-quoted; anything else as JSON text, quoted.
pub fn quote(v: &Value) -> Value {
    // Serializing the &str quotes it as `Value::String` would, without
    // copying the string first.
    let quoted = match v {
        Value::String(s) => serde_json::to_string(s),
        other => serde_json::to_string(&other.to_string()),
    };
    Value::String(quoted.unwrap_or_default())
}

/// `YAML obj [n]`: the object as YAML, every line indented by 2n spaces.
pub fn yaml(args: &[Value]) -> Result<Value, String> {
    let obj = args.first().ok_or("YAML needs an argument")?;
    let indent = args.get(1).and_then(Value::as_u64).unwrap_or(0) as usize;
    let text = serde_saphyr::to_string(obj).map_err(|e| format!("YAML: {e}"))?;
    let pad = " ".repeat(indent * 2);
    let lines: Vec<String> = text
        .trim_end_matches('\n')
        .lines()
        .map(|l| format!("{pad}{l}"))
        .collect();
    Ok(Value::String(lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_yaml_and_conditions() {
        assert_eq!(quote(&json!("a\"b")), json!("\"a\\\"b\""));
        assert_eq!(quote(&json!(5)), json!("\"5\""));
        assert_eq!(
            yaml(&[json!({"cpu": "1", "pods": "110"}), json!(1)]),
            Ok(json!("  cpu: \"1\"\n  pods: \"110\""))
        );
        assert!(yaml(&[]).is_err());
        assert_eq!(node_conditions().as_array().map(Vec::len), Some(5));
    }
}
