//! The schema checks of a custom resource, in upstream's words: the
//! message of each names the field `in body`, and the cause wraps it the
//! way apiextensions turns OpenAPI errors into field errors
//! (`spec.replicas: Invalid value: "string": spec.replicas in body must
//! be of type integer: "string"`).

use serde_json::{Map, Value};

use super::{cel_rules, flag, format, property, MAX_DEPTH};
use crate::error::Cause;
use crate::validation::metadata;
use crate::validation::NameRule;

pub(super) fn validate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut w = Walker { out: Vec::new() };
    // The root is a resource envelope: apiVersion, kind and metadata are
    // the server's, whatever the schema says of them.
    if let (Value::Object(o), Value::Object(_)) = (obj, schema) {
        let mut path = String::new();
        w.object_fields(schema, o, &mut path, true, 0);
        w.object_bounds(schema, o, &path);
    }
    // As upstream: rules are not run over values of the wrong type, and
    // a schema that has rules says so.
    if !cel_rules::has_rules(schema, 0) {
        return w.out;
    }
    if w.out.iter().any(|c| c.reason == "FieldValueTypeInvalid") {
        w.out.push(Cause::new(
            "FieldValueInvalid",
            "<nil>",
            "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
    } else {
        cel_rules::check_tree(schema, obj, old, &mut w.out);
    }
    w.out
}

struct Walker {
    out: Vec<Cause>,
}

/// The JSON type name go-openapi gives a value.
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as Go's `%#v`-like rendering in `Invalid value: …` shows it:
/// strings quoted, numbers and booleans bare.
pub(super) fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "null".into(),
        Value::Array(_) | Value::Object(_) => format!("{:?}", v.to_string()),
        other => other.to_string(),
    }
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// Go's `%v` of a float64 bound (`1`, `1.5`).
fn bound(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

impl Walker {
    fn invalid(&mut self, path: &str, value: &Value, detail: String) {
        self.out.push(Cause::new(
            "FieldValueInvalid",
            path,
            format!("Invalid value: {}: {detail}", shown(value)),
        ));
    }

    fn walk(&mut self, schema: &Value, value: &Value, path: &mut String, depth: usize) {
        if depth > MAX_DEPTH || !schema.is_object() {
            return;
        }
        let int_or_string = flag(schema, "x-kubernetes-int-or-string");
        let ty = schema.get("type").and_then(Value::as_str);
        if value.is_null() {
            if !flag(schema, "nullable") && (ty.is_some() || int_or_string) {
                let want = ty.unwrap_or("string");
                self.out.push(Cause::new(
                    "FieldValueTypeInvalid",
                    path.as_str(),
                    format!(
                        "Invalid value: \"null\": {path} in body must be of type {want}: \"null\""
                    ),
                ));
            }
            return;
        }
        let actual = type_name(value);
        let fits = match (ty, value) {
            _ if int_or_string => {
                matches!(value, Value::String(_))
                    || value.as_i64().is_some()
                    || value.as_u64().is_some()
            }
            (None, _) => true,
            (Some("integer"), Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            (Some("number"), Value::Number(_)) => true,
            (Some(t), _) => t == actual,
        };
        if !fits {
            let want = if int_or_string {
                "integer,string".to_string()
            } else {
                ty.unwrap_or_default().to_string()
            };
            self.out.push(Cause::new(
                "FieldValueTypeInvalid",
                path.as_str(),
                format!("Invalid value: \"{actual}\": {path} in body must be of type {want}: \"{actual}\""),
            ));
            return;
        }
        self.enum_check(schema, value, path);
        match value {
            Value::Object(o) => {
                self.object_fields(
                    schema,
                    o,
                    path,
                    flag(schema, "x-kubernetes-embedded-resource"),
                    depth,
                );
                self.object_bounds(schema, o, path);
            }
            Value::Array(items) => self.array(schema, items, path, depth),
            Value::String(s) => self.string(schema, s, value, path),
            Value::Number(_) => self.number(schema, value, path),
            Value::Bool(_) | Value::Null => {}
        }
    }

    fn enum_check(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(Value::Array(allowed)) = schema.get("enum") else {
            return;
        };
        if allowed.iter().any(|a| crate::same::values(a, value)) {
            return;
        }
        let list: Vec<String> = allowed.iter().map(shown).collect();
        self.out.push(Cause::new(
            "FieldValueNotSupported",
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                list.join(", ")
            ),
        ));
    }

    fn object_fields(
        &mut self,
        schema: &Value,
        o: &Map<String, Value>,
        path: &mut String,
        envelope: bool,
        depth: usize,
    ) {
        if let Some(Value::Array(required)) = schema.get("required") {
            for r in required.iter().filter_map(Value::as_str) {
                if !o.contains_key(r) {
                    self.out.push(Cause::required(child(path, r)));
                }
            }
        }
        if envelope {
            self.envelope(o, path);
        }
        let additional = schema.get("additionalProperties").filter(|a| a.is_object());
        for (key, v) in o {
            if envelope && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let sub = match property(schema, key) {
                Some(s) => s,
                None => match additional {
                    Some(s) => s,
                    // Pruned, or kept by x-kubernetes-preserve-unknown-fields.
                    None => continue,
                },
            };
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            self.walk(sub, v, path, depth + 1);
            path.truncate(len);
        }
    }

    /// An embedded resource needs apiVersion and kind, and its metadata
    /// follows ObjectMeta's rules (a name is optional there).
    fn envelope(&mut self, o: &Map<String, Value>, path: &str) {
        if path.is_empty() {
            return;
        }
        for key in ["apiVersion", "kind"] {
            match o.get(key) {
                Some(Value::String(s)) if !s.is_empty() => {}
                _ => self.out.push(Cause::required(child(path, key))),
            }
        }
        if let Some(md @ Value::Object(m)) = o.get("metadata") {
            if m.get("name").is_some() || m.get("generateName").is_some() {
                let wrapped = serde_json::json!({ "metadata": md });
                for mut c in
                    metadata::validate_object_meta(&wrapped, NameRule::Dns1123Subdomain, false)
                {
                    if c.field.starts_with("metadata.name") && !m.contains_key("name") {
                        continue;
                    }
                    c.field = child(path, &c.field);
                    self.out.push(c);
                }
            }
        }
    }

    fn object_bounds(&mut self, schema: &Value, o: &Map<String, Value>, path: &str) {
        let n = o.len() as f64;
        if let Some(max) = number(schema.get("maxProperties")) {
            if n > max {
                self.out.push(Cause::new(
                    "FieldValueTooMany",
                    path,
                    format!(
                        "Too many: {}: must have at most {} items",
                        o.len(),
                        bound(max)
                    ),
                ));
            }
        }
        if let Some(min) = number(schema.get("minProperties")) {
            if n < min {
                self.invalid(
                    path,
                    &Value::from(o.len()),
                    format!(
                        "{path} in body should have at least {} properties",
                        bound(min)
                    ),
                );
            }
        }
    }

    fn array(&mut self, schema: &Value, items: &[Value], path: &mut String, depth: usize) {
        let n = items.len() as f64;
        if let Some(max) = number(schema.get("maxItems")) {
            if n > max {
                self.out.push(Cause::new(
                    "FieldValueTooMany",
                    path.as_str(),
                    format!(
                        "Too many: {}: must have at most {} items",
                        items.len(),
                        bound(max)
                    ),
                ));
            }
        }
        if let Some(min) = number(schema.get("minItems")) {
            if n < min {
                let detail = format!("{path} in body should have at least {} items", bound(min));
                self.invalid(path, &Value::from(items.len()), detail);
            }
        }
        self.list_type(schema, items, path);
        let Some(item_schema) = schema.get("items") else {
            return;
        };
        for (i, item) in items.iter().enumerate() {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            self.walk(item_schema, item, path, depth + 1);
            path.truncate(len);
        }
    }

    /// `x-kubernetes-list-type`: `set` items and `map` keys are unique.
    fn list_type(&mut self, schema: &Value, items: &[Value], path: &str) {
        match schema.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => {
                for (i, item) in items.iter().enumerate() {
                    if items[..i].iter().any(|p| crate::same::values(p, item)) {
                        self.out.push(Cause::new(
                            "FieldValueDuplicate",
                            format!("{path}[{i}]"),
                            format!("Duplicate value: {}", shown(item)),
                        ));
                    }
                }
            }
            Some("map") => {
                let keys: Vec<&str> = schema
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|k| k.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let key_of = |item: &Value| -> Vec<Value> {
                    keys.iter()
                        .map(|k| item.get(*k).cloned().unwrap_or(Value::Null))
                        .collect()
                };
                for (i, item) in items.iter().enumerate() {
                    let k = key_of(item);
                    if items[..i].iter().any(|p| key_of(p) == k) {
                        let shown_keys: Vec<String> = keys
                            .iter()
                            .zip(&k)
                            .map(|(name, v)| format!("{name:?}:{}", shown(v)))
                            .collect();
                        self.out.push(Cause::new(
                            "FieldValueDuplicate",
                            format!("{path}[{i}]"),
                            format!(
                                "Duplicate value: map[string]interface {{}}{{{}}}",
                                shown_keys.join(", ")
                            ),
                        ));
                    }
                }
            }
            _ => {}
        }
    }

    fn string(&mut self, schema: &Value, s: &str, value: &Value, path: &str) {
        let chars = s.chars().count() as f64;
        if let Some(max) = number(schema.get("maxLength")) {
            if chars > max {
                let unit = if max == 1.0 { "byte" } else { "bytes" };
                self.out.push(Cause::new(
                    "FieldValueTooLong",
                    path,
                    format!("Too long: may not be more than {} {unit}", bound(max)),
                ));
            }
        }
        if let Some(min) = number(schema.get("minLength")) {
            if chars < min {
                let detail = format!(
                    "{path} in body should be at least {} chars long",
                    bound(min)
                );
                self.invalid(path, value, detail);
            }
        }
        if let Some(p) = schema.get("pattern").and_then(Value::as_str) {
            if let Some(re) = format::regex(p) {
                if !re.is_match(s) {
                    self.invalid(path, value, format!("{path} in body should match '{p}'"));
                }
            }
        }
        if let Some(f) = schema.get("format").and_then(Value::as_str) {
            if !format::string_fits(f, s) {
                self.invalid(
                    path,
                    value,
                    format!("{path} in body must be of type {f}: {s:?}"),
                );
            }
        }
    }

    fn number(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(x) = value.as_f64() else {
            return;
        };
        let exclusive = |k: &str| flag(schema, k);
        if let Some(min) = number(schema.get("minimum")) {
            if exclusive("exclusiveMinimum") && x <= min {
                self.invalid(
                    path,
                    value,
                    format!("{path} in body should be greater than {}", bound(min)),
                );
            } else if x < min {
                let detail = format!(
                    "{path} in body should be greater than or equal to {}",
                    bound(min)
                );
                self.invalid(path, value, detail);
            }
        }
        if let Some(max) = number(schema.get("maximum")) {
            if exclusive("exclusiveMaximum") && x >= max {
                self.invalid(
                    path,
                    value,
                    format!("{path} in body should be less than {}", bound(max)),
                );
            } else if x > max {
                let detail = format!(
                    "{path} in body should be less than or equal to {}",
                    bound(max)
                );
                self.invalid(path, value, detail);
            }
        }
        if let Some(m) = number(schema.get("multipleOf")) {
            if m > 0.0 && (x / m).fract().abs() > 1e-9 {
                self.invalid(
                    path,
                    value,
                    format!("{path} in body should be a multiple of {}", bound(m)),
                );
            }
        }
        if let Some(f) = schema.get("format").and_then(Value::as_str) {
            let range = match f {
                "int32" => Some((f64::from(i32::MIN), f64::from(i32::MAX))),
                _ => None,
            };
            if let Some((lo, hi)) = range {
                if x < lo || x > hi {
                    self.invalid(
                        path,
                        value,
                        format!(
                            "{path} in body must be of type {f}: {:?}",
                            value.to_string()
                        ),
                    );
                }
            }
        }
    }
}
