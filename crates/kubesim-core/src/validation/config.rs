//! ConfigMaps and Secrets: valid keys, size caps, immutability.

use base64::Engine;
use serde_json::Value;

use super::fields::{self, key, obj, s};
use super::names;
use crate::error::Cause;

/// Upstream's cap for both ConfigMaps and Secrets.
pub const MAX_SIZE: usize = 1024 * 1024;

pub fn validate_config_map(cm: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut total = 0usize;
    let binary = obj(cm, "binaryData");
    if let Some(data) = obj(cm, "data") {
        for (k, v) in data {
            fields::each_invalid(&mut out, &key("data", k), k, names::config_map_key(k));
            if binary.is_some_and(|b| b.contains_key(k)) {
                out.push(fields::invalid_str(
                    key("data", k),
                    k,
                    "duplicate of key present in binaryData",
                ));
            }
            total = total.saturating_add(v.as_str().map_or(0, str::len));
        }
    }
    if let Some(b) = binary {
        for (k, v) in b {
            fields::each_invalid(&mut out, &key("binaryData", k), k, names::config_map_key(k));
            match decode(v) {
                Some(n) => total = total.saturating_add(n),
                None => out.push(fields::invalid(
                    key("binaryData", k),
                    v,
                    "must be base64 encoded",
                )),
            }
        }
    }
    if total > MAX_SIZE {
        out.push(fields::too_long("", MAX_SIZE));
    }
    out.extend(immutability(cm, old));
    out
}

pub fn validate_secret(secret: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let mut total = 0usize;
    let data = obj(secret, "data");
    if let Some(data) = data {
        for (k, v) in data {
            fields::each_invalid(&mut out, &key("data", k), k, names::config_map_key(k));
            match decode(v) {
                Some(n) => total = total.saturating_add(n),
                None => out.push(fields::invalid(key("data", k), v, "must be base64 encoded")),
            }
        }
    }
    // stringData is merged into data by the server; its keys face the same rules.
    if let Some(sd) = obj(secret, "stringData") {
        for (k, v) in sd {
            fields::each_invalid(&mut out, &key("stringData", k), k, names::config_map_key(k));
            total = total.saturating_add(v.as_str().map_or(0, str::len));
        }
    }
    if total > MAX_SIZE {
        out.push(fields::too_long("data", MAX_SIZE));
    }
    let has_key = |k: &str| {
        data.is_some_and(|d| d.contains_key(k))
            || obj(secret, "stringData").is_some_and(|d| d.contains_key(k))
    };
    let ty = s(secret, "type");
    match ty {
        "kubernetes.io/service-account-token" => {
            let annotated = secret
                .get("metadata")
                .and_then(|m| obj(m, "annotations"))
                .and_then(|a| a.get("kubernetes.io/service-account.name"))
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if !annotated {
                out.push(fields::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                ));
            }
        }
        "kubernetes.io/dockercfg" => required_keys(&mut out, &has_key, &[".dockercfg"]),
        "kubernetes.io/dockerconfigjson" => {
            required_keys(&mut out, &has_key, &[".dockerconfigjson"])
        }
        "kubernetes.io/tls" => required_keys(&mut out, &has_key, &["tls.crt", "tls.key"]),
        "kubernetes.io/ssh-auth" => required_keys(&mut out, &has_key, &["ssh-privatekey"]),
        // Basic auth needs at least one of the two credentials.
        "kubernetes.io/basic-auth" if !has_key("username") && !has_key("password") => {
            out.push(fields::required(key("data", "username")));
            out.push(fields::required(key("data", "password")));
        }
        _ => {}
    }
    if let Some(old) = old {
        if s(old, "type") != ty {
            out.push(fields::immutable(
                "type",
                secret.get("type").unwrap_or(&Value::Null),
            ));
        }
    }
    out.extend(immutability(secret, old));
    out
}

fn required_keys(out: &mut Vec<Cause>, has_key: &dyn Fn(&str) -> bool, keys: &[&str]) {
    for k in keys {
        if !has_key(k) {
            out.push(fields::required(key("data", k)));
        }
    }
}

/// Decoded length of a base64 value, or None when it is not base64.
fn decode(v: &Value) -> Option<usize> {
    match v {
        Value::String(t) => base64::engine::general_purpose::STANDARD
            .decode(t)
            .ok()
            .map(|d| d.len()),
        Value::Null => Some(0),
        _ => None,
    }
}

/// Once `immutable: true`, neither the data nor the flag may change.
fn immutability(new: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(old) = old else { return out };
    if !fields::bool_of(old, "immutable") {
        return out;
    }
    if !fields::bool_of(new, "immutable") {
        out.push(fields::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for k in ["data", "binaryData"] {
        if new.get(k) != old.get(k) {
            out.push(fields::forbidden(
                k,
                "field is immutable when `immutable` is set",
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::validation::field_reasons as f;

    #[test]
    fn config_map_keys_and_size() {
        let cm = json!({"data": {"ok.key": "v", "bad/key": "v", "dup": "x"}, "binaryData": {"dup": "eA=="}});
        let c = validate_config_map(&cm, None);
        assert_eq!(
            f(&c),
            vec![
                ("data[bad/key]", "FieldValueInvalid"),
                ("data[dup]", "FieldValueInvalid")
            ]
        );
        let big = json!({"data": {"a": "x".repeat(MAX_SIZE + 1)}});
        assert_eq!(
            f(&validate_config_map(&big, None)),
            vec![("", "FieldValueTooLong")]
        );
    }

    #[test]
    fn immutable_config_map() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": true, "data": {"a": "2"}});
        assert_eq!(
            f(&validate_config_map(&new, Some(&old))),
            vec![("data", "FieldValueForbidden")]
        );
    }

    #[test]
    fn secrets() {
        let s = json!({"type": "Opaque", "data": {"a": "aGk=", "b": "!!"}});
        assert_eq!(
            f(&validate_secret(&s, None)),
            vec![("data[b]", "FieldValueInvalid")]
        );
        let tls = json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}});
        assert_eq!(
            f(&validate_secret(&tls, None)),
            vec![("data[tls.key]", "FieldValueRequired")]
        );
        let old = json!({"type": "Opaque"});
        let c = validate_secret(
            &json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}}),
            Some(&old),
        );
        assert_eq!(f(&c), vec![("type", "FieldValueInvalid")]);
    }
}
