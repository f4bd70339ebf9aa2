//! Lenient readers for object fields. Tables must render whatever is stored,
//! so a missing or mistyped field reads as the zero value (as it would in a
//! Go struct) instead of failing.

use serde_json::Value;

/// A string at a JSON pointer; "" when absent or not a string.
pub fn s<'a>(obj: &'a Value, ptr: &str) -> &'a str {
    opt_s(obj, ptr).unwrap_or("")
}

pub fn opt_s<'a>(obj: &'a Value, ptr: &str) -> Option<&'a str> {
    obj.pointer(ptr)?.as_str()
}

/// An integer at a JSON pointer; 0 when absent.
pub fn int(obj: &Value, ptr: &str) -> i64 {
    opt_int(obj, ptr).unwrap_or(0)
}

/// Floats are truncated, as decoding into a Go integer field would.
pub fn opt_int(obj: &Value, ptr: &str) -> Option<i64> {
    as_int(obj.pointer(ptr)?)
}

pub fn as_int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
        .or_else(|| v.as_f64().map(|f| f as i64))
}

pub fn boolean(obj: &Value, ptr: &str) -> bool {
    opt_bool(obj, ptr).unwrap_or(false)
}

pub fn opt_bool(obj: &Value, ptr: &str) -> Option<bool> {
    obj.pointer(ptr)?.as_bool()
}

/// An array at a JSON pointer; empty when absent.
pub fn arr<'a>(obj: &'a Value, ptr: &str) -> &'a [Value] {
    obj.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Number of entries of a map at a JSON pointer; 0 when absent.
pub fn map_len(obj: &Value, ptr: &str) -> usize {
    obj.pointer(ptr)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

/// Go's `strings.ToLower`-free `"True"`/`"False"` for optional booleans
/// (upstream `printBoolPtr`).
pub fn bool_ptr(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    }
}

/// `k=v` pairs sorted by key, or "<none>" (upstream `labels.FormatLabels`).
pub fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<(&str, String)> = map
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), scalar_text(v)))
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        return "<none>".into();
    }
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A `metav1.LabelSelector` in the label-selector query syntax
/// (`app=web,tier in (a,b),!legacy`); `Err` when the selector is malformed.
/// An absent or empty selector is the empty string.
pub fn label_selector(sel: Option<&Value>) -> Result<String, ()> {
    let Some(sel) = sel.filter(|v| !v.is_null()) else {
        return Ok(String::new());
    };
    let sel = sel.as_object().ok_or(())?;
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(ml) = sel.get("matchLabels").filter(|v| !v.is_null()) {
        for (k, v) in ml.as_object().ok_or(())? {
            let v = v.as_str().ok_or(())?;
            if k.is_empty() {
                return Err(());
            }
            reqs.push((k.clone(), format!("{k}={v}")));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        if key.is_empty() {
            return Err(());
        }
        let mut values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        values.sort_unstable();
        let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
        let text = match op {
            "In" | "NotIn" => {
                if values.is_empty() {
                    return Err(());
                }
                let word = if op == "In" { "in" } else { "notin" };
                format!("{key} {word} ({})", values.join(","))
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    return Err(());
                }
                if op == "Exists" {
                    key.to_string()
                } else {
                    format!("!{key}")
                }
            }
            _ => return Err(()),
        };
        reqs.push((key.to_string(), text));
    }
    // Upstream keeps requirements sorted by key.
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(","))
}

/// Upstream `metav1.FormatLabelSelector`: "<none>" when empty, "<error>"
/// when malformed.
pub fn format_label_selector(sel: Option<&Value>) -> String {
    match label_selector(sel) {
        Ok(s) if s.is_empty() => "<none>".into(),
        Ok(s) => s,
        Err(()) => "<error>".into(),
    }
}

/// Container names and images, each comma-joined (upstream
/// `layoutContainerCells`).
pub fn containers(list: &[Value]) -> (String, String) {
    let names: Vec<&str> = list.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = list.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// An IntOrString as text (`2`, `50%`).
pub fn int_or_string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(as_int(&Value::Number(n.clone()))?.to_string()),
        _ => None,
    }
}

/// Go's `net.JoinHostPort`: IPv6 addresses are bracketed.
pub fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Up to `max` items joined by ",", then " + N more..." (upstream
/// `listWithMoreString`); "<unset>" when empty.
pub fn list_with_more(items: &[String], max: usize) -> String {
    let shown = &items[..items.len().min(max)];
    let text = shown.join(",");
    if items.len() > max {
        format!("{text} + {} more...", items.len() - max)
    } else if text.is_empty() {
        "<unset>".into()
    } else {
        text
    }
}

/// The status of the first condition of `type_` in a conditions list.
pub fn condition<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a Value> {
    conditions.iter().find(|c| s(c, "/type") == type_)
}

/// True when the first condition of `type_` has status "True" (upstream
/// `hasJobCondition` and friends).
pub fn condition_true(conditions: &[Value], type_: &str) -> bool {
    condition(conditions, type_).is_some_and(|c| s(c, "/status") == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors() {
        assert_eq!(label_selector(None), Ok(String::new()));
        let sel = json!({"matchLabels": {"tier": "web", "app": "x"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "zz", "operator": "DoesNotExist"},
                {"key": "b", "operator": "Exists"}]});
        assert_eq!(
            label_selector(Some(&sel)).unwrap(),
            "app=x,b,env in (dev,prod),tier=web,!zz"
        );
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        let bad = json!({"matchExpressions": [{"key": "a", "operator": "Near"}]});
        assert_eq!(format_label_selector(Some(&bad)), "<error>");
    }

    #[test]
    fn labels_and_lists() {
        assert_eq!(format_labels(Some(&json!({"b": "2", "a": "1"}))), "a=1,b=2");
        assert_eq!(format_labels(None), "<none>");
        let items: Vec<String> = (1..=5).map(|i| i.to_string()).collect();
        assert_eq!(list_with_more(&items, 3), "1,2,3 + 2 more...");
        assert_eq!(list_with_more(&[], 3), "<unset>");
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }
}
