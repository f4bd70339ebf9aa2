//! Type checking of built-in objects the way upstream's JSON decoder does
//! it: a value whose JSON type does not fit the Go field it lands in is a
//! decoding error, reported with the decoder's own words
//! (`json: cannot unmarshal number into Go struct field Container.spec.containers.env of type v1.EnvVar`).
//!
//! The real API server decodes every body into its Go type before anything
//! else runs, so an object of the wrong shape is never stored. kubesim keeps
//! objects as JSON; this walk is what stands in for that decoding. It
//! borrows the generated schemas and stops at the first error, which is
//! the one Go's decoder reports (it keeps the first and goes on).

use serde_json::{Map, Value};

use self::shapes::{Shape, Shapes};
use super::generate;
use crate::quantity::Quantity;
use crate::resource::ResourceInfo;

mod shapes;

const MAX_DEPTH: usize = 128;

/// Upstream's message for a quantity that does not parse.
pub const QUANTITY_MESSAGE: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// The first decoding error of `obj` as a built-in kind, in the words of
/// upstream's decoder (without the `Pod in version "v1" cannot be handled
/// as a Pod: ` prefix the handler adds). Kinds without a generated schema
/// (custom resources among them) decode as anything.
pub fn decode_error(resource: &ResourceInfo, obj: &Value) -> Option<String> {
    if resource.crd.is_some() {
        return None;
    }
    decode_error_of(&resource.group, &resource.version, &resource.kind, obj)
}

/// [`decode_error`] for a built-in kind named by group, version and kind
/// (a subresource's body, such as autoscaling/v1 Scale).
pub fn decode_error_of(group: &str, version: &str, kind: &str, obj: &Value) -> Option<String> {
    let b = generate::builtin();
    let name = b.name_of(group, version, kind)?;
    let schema = b.get(name)?;
    let mut w = Walker::new();
    w.check(schema, obj, short_name(name), 0).err()
}

/// Decodes `obj` as upstream does before storing it: refused with
/// [`decode_error`]'s message when its types do not fit, and otherwise
/// with every quantity given as a JSON number turned into its string, as
/// a decode and re-encode of the Go object turns it (typed clients such
/// as k8s-openapi's read quantities only as strings).
pub fn decode_object(resource: &ResourceInfo, obj: &mut Value) -> Result<(), String> {
    if resource.crd.is_some() {
        return Ok(());
    }
    let b = generate::builtin();
    let Some((name, schema)) = b
        .name_of(&resource.group, &resource.version, &resource.kind)
        .and_then(|n| b.get(n).map(|s| (n, s)))
    else {
        return Ok(());
    };
    let numbers = {
        let mut w = Walker::new();
        w.check(schema, obj, short_name(name), 0)?;
        w.normalize
    };
    if numbers {
        let w = Walker::new();
        w.normalized(schema, obj, 0);
    }
    Ok(())
}

/// The string a JSON number given for a quantity becomes.
fn quantity_string(n: &serde_json::Number) -> String {
    let text = n.to_string();
    match Quantity::parse(&text) {
        // Exact in milli-units: the canonical spelling ("1.5" → "1500m").
        Ok(q) if (q.as_f64() - n.as_f64().unwrap_or(f64::NAN)).abs() < 1e-9 => {
            q.to_canonical_string()
        }
        _ => text,
    }
}

struct Walker<'a> {
    shapes: &'static Shapes,
    /// JSON field names from the root, as Go's decoder records them
    /// (struct fields only: no list indices, no map keys).
    path: Vec<&'a str>,
    /// Whether decoding and re-encoding would change the object: a
    /// quantity given as a JSON number, or a null map value or list item
    /// (Go stores the element type's zero value there).
    normalize: bool,
}

/// `io.k8s.api.core.v1.EnvVar` → `EnvVar`.
fn short_name(def: &str) -> &str {
    def.rsplit('.').next().unwrap_or(def)
}

/// `io.k8s.api.core.v1.EnvVar` → `v1.EnvVar`, as Go's reflect names it.
fn go_name(def: &str) -> String {
    let mut it = def.rsplitn(3, '.');
    match (it.next(), it.next()) {
        (Some(name), Some(pkg)) => format!("{pkg}.{name}"),
        _ => def.to_string(),
    }
}

/// The JSON kind Go's decoder names in its errors.
fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn int_fits(v: &Value, bits: &str) -> bool {
    let Value::Number(n) = v else {
        return false;
    };
    match bits {
        "int32" => n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()),
        _ => n.as_i64().is_some(),
    }
}

impl<'a> Walker<'a> {
    fn new() -> Self {
        Walker {
            shapes: shapes::built_in(),
            path: Vec::new(),
            normalize: false,
        }
    }

    fn shape(&self, schema: &'a Value) -> &'a Shape<'static> {
        self.shapes.of(schema)
    }

    /// The Go type name of a schema node, for messages.
    fn go_type(&self, schema: &'a Value, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "interface {}".into();
        }
        match self.shape(schema) {
            Shape::Any => "interface {}".into(),
            Shape::Quantity => "resource.Quantity".into(),
            Shape::IntOrString => "intstr.IntOrString".into(),
            Shape::Time { micro: false } => "v1.Time".into(),
            Shape::Time { micro: true } => "v1.MicroTime".into(),
            Shape::Struct(_, def) => def.map(go_name).unwrap_or_else(|| "struct".into()),
            Shape::Map(v) => format!("map[string]{}", self.go_type(v, depth + 1)),
            Shape::Slice(v) => format!("[]{}", self.go_type(v, depth + 1)),
            Shape::Bytes => "[]uint8".into(),
            Shape::String => "string".into(),
            Shape::Int(bits) => (*bits).into(),
            Shape::Float => "float64".into(),
            Shape::Bool => "bool".into(),
        }
    }

    /// The error Go's decoder gives for `value` landing in a field of Go
    /// type `ty`, inside struct `owner`.
    fn mismatch(&self, owner: &str, value: String, ty: &str) -> String {
        if self.path.is_empty() {
            format!("json: cannot unmarshal {value} into Go value of type {ty}")
        } else {
            format!(
                "json: cannot unmarshal {value} into Go struct field {owner}.{} of type {ty}",
                self.path.join(".")
            )
        }
    }

    /// The JSON of the Go zero value a null element becomes.
    fn zero(&self, schema: &'a Value) -> Value {
        match self.shape(schema) {
            Shape::String | Shape::Bytes => Value::String(String::new()),
            Shape::Int(_) | Shape::Float | Shape::IntOrString => Value::from(0),
            Shape::Bool => Value::Bool(false),
            Shape::Quantity => Value::String("0".into()),
            Shape::Struct(..) | Shape::Map(_) => Value::Object(Map::new()),
            Shape::Slice(_) => Value::Array(Vec::new()),
            Shape::Time { .. } | Shape::Any => Value::Null,
        }
    }

    /// Rewrites what [`check`](Self::check) found Go's decoding would
    /// change: quantities given as numbers become strings, null map values
    /// and list items their type's zero value. `value` has passed it.
    fn normalized(&self, schema: &'a Value, value: &mut Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match (self.shape(schema), value) {
            (Shape::Quantity, v @ Value::Number(_)) => {
                if let Value::Number(n) = v {
                    *v = Value::String(quantity_string(n));
                }
            }
            (Shape::Struct(fields, _), Value::Object(obj)) => {
                for (key, child) in obj.iter_mut() {
                    if let Some(prop) = fields.get(key) {
                        self.normalized(prop, child, depth + 1);
                    }
                }
            }
            (Shape::Map(items), Value::Object(obj)) => {
                for child in obj.values_mut() {
                    if child.is_null() {
                        *child = self.zero(items);
                    }
                    self.normalized(items, child, depth + 1);
                }
            }
            (Shape::Slice(items), Value::Array(list)) => {
                for child in list {
                    if child.is_null() {
                        *child = self.zero(items);
                    }
                    self.normalized(items, child, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn check(
        &mut self,
        schema: &'a Value,
        value: &'a Value,
        owner: &str,
        depth: usize,
    ) -> Result<(), String> {
        // null decodes into every Go type (it leaves the zero value).
        if value.is_null() || depth > MAX_DEPTH {
            return Ok(());
        }
        let shape = self.shape(schema);
        let wrong = |w: &Self| Err(w.mismatch(owner, json_kind(value), &w.go_type(schema, depth)));
        match shape {
            Shape::Any => Ok(()),
            Shape::Quantity => match value {
                Value::String(s) if Quantity::parse(s.trim()).is_ok() => Ok(()),
                Value::Number(n) if Quantity::parse(&n.to_string()).is_ok() => {
                    self.normalize = true;
                    Ok(())
                }
                _ => Err(QUANTITY_MESSAGE.into()),
            },
            Shape::IntOrString => match value {
                Value::String(_) => Ok(()),
                v if int_fits(v, "int32") => Ok(()),
                Value::Number(n) => Err(format!(
                    "json: cannot unmarshal number {n} into Go value of type int32"
                )),
                v => Err(format!(
                    "json: cannot unmarshal {} into Go value of type int32",
                    json_kind(v)
                )),
            },
            Shape::Time { micro } => match value {
                Value::String(s) => super::gotime::check_rfc3339(s, *micro),
                v => Err(format!(
                    "json: cannot unmarshal {} into Go value of type string",
                    json_kind(v)
                )),
            },
            Shape::Struct(fields, def) => {
                let Value::Object(obj) = value else {
                    return wrong(self);
                };
                let struct_name = def.map(short_name).unwrap_or("struct");
                for (key, child) in obj {
                    // Unknown fields are the strict decoder's business.
                    let Some(prop) = fields.get(key) else {
                        continue;
                    };
                    self.path.push(key);
                    let r = self.check(prop, child, struct_name, depth + 1);
                    self.path.pop();
                    r?;
                }
                Ok(())
            }
            Shape::Map(items) => {
                let Value::Object(obj) = value else {
                    return wrong(self);
                };
                obj.values().try_for_each(|child| {
                    self.normalize |= child.is_null();
                    self.check(items, child, owner, depth + 1)
                })
            }
            Shape::Slice(items) => {
                let Value::Array(list) = value else {
                    return wrong(self);
                };
                list.iter().try_for_each(|child| {
                    self.normalize |= child.is_null();
                    self.check(items, child, owner, depth + 1)
                })
            }
            Shape::Bytes => match value {
                Value::String(s) => super::gobase64::check(s),
                _ => wrong(self),
            },
            Shape::String => match value {
                Value::String(_) => Ok(()),
                _ => wrong(self),
            },
            Shape::Int(bits) => match value {
                v if int_fits(v, bits) => Ok(()),
                Value::Number(n) => Err(self.mismatch(owner, format!("number {n}"), bits)),
                _ => wrong(self),
            },
            Shape::Float => match value {
                Value::Number(_) => Ok(()),
                _ => wrong(self),
            },
            Shape::Bool => match value {
                Value::Bool(_) => Ok(()),
                _ => wrong(self),
            },
        }
    }
}

#[cfg(test)]
mod tests;
