//! Protobuf messages to their JSON form, driven by the field table.
//!
//! The JSON is what the Go types would marshal to: absent fields stay
//! absent, maps and repeated fields only appear when they have entries, and
//! the types with custom JSON (times, IntOrString, quantities, embedded
//! JSON) take their string or raw forms.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use super::table::{Card, Field, Special, Table, Type};
use super::wire::{Reader, Wire};

/// Deeper than any real object: a deployment is about ten messages deep and
/// a CRD schema two per level. Bounds recursion on hostile input.
pub(crate) const MAX_DEPTH: usize = 100;

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z), which
/// older encoders write for an unset non-pointer time.
const GO_ZERO_TIME: i64 = -62_135_596_800;
/// RFC 3339 years run 0000 to 9999, as Go's `Time.MarshalJSON` requires.
const YEAR_0: i64 = -62_167_219_200;
const YEAR_9999_END: i64 = 253_402_300_799;

/// A decoding failure and the JSON path where it happened.
#[derive(Debug)]
pub(crate) struct Error {
    /// Innermost segment first.
    pub path: Vec<String>,
    pub reason: String,
}

impl Error {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Error {
            path: Vec::new(),
            reason: reason.into(),
        }
    }

    fn at(mut self, segment: &str) -> Self {
        if !segment.is_empty() {
            self.path.push(segment.to_string());
        }
        self
    }
}

type Result<T> = std::result::Result<T, Error>;

/// Decodes the fields of message `m` into `out`.
pub(crate) fn object_into(
    t: &Table,
    m: usize,
    bytes: &[u8],
    depth: usize,
    out: &mut Map<String, Value>,
) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(Error::new(format!(
            "objects nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let msg = &t.messages[m];
    let mut r = Reader::new(bytes);
    while let Some((tag, wire)) = r.field().map_err(Error::new)? {
        // Unknown fields are skipped, as protobuf readers do: a newer client
        // may send fields this table predates.
        let Some(f) = msg.field(tag) else { continue };
        field(t, f, wire, depth, out).map_err(|e| e.at(f.json.as_deref().unwrap_or("")))?;
    }
    Ok(())
}

fn field(
    t: &Table,
    f: &Field,
    wire: Wire<'_>,
    depth: usize,
    out: &mut Map<String, Value>,
) -> Result<()> {
    let Some(key) = &f.json else {
        // An embedded struct: its fields belong to the parent object.
        let (Type::Message(m), Wire::Bytes(b)) = (f.ty, wire) else {
            return Err(mismatch(f.ty, wire));
        };
        return object_into(t, m, b, depth + 1, out);
    };
    match f.card {
        Card::One => match value(t, f.ty, wire, depth)? {
            Some(v) if !(f.zero_unset && is_zero(&v)) => {
                out.insert(key.clone(), v);
            }
            // A later occurrence wins, even when it means "unset".
            _ => {
                out.remove(key);
            }
        },
        Card::Repeated => {
            let items = array_at(out, key);
            match (f.ty, wire) {
                // Packed numbers: one length-delimited run of values.
                (Type::Int32 | Type::Int64 | Type::Bool, Wire::Bytes(b)) => {
                    let mut r = Reader::new(b);
                    while !r.is_empty() {
                        items.push(varint_value(f.ty, r.varint().map_err(Error::new)?));
                    }
                }
                (Type::Double, Wire::Bytes(b)) => {
                    if b.len() % 8 != 0 {
                        return Err(Error::new("packed doubles not a multiple of 8 bytes"));
                    }
                    for c in b.chunks_exact(8) {
                        let bits = u64::from_le_bytes(c.try_into().unwrap_or_default());
                        items.push(double(bits)?);
                    }
                }
                _ => items.push(value(t, f.ty, wire, depth)?.unwrap_or(Value::Null)),
            }
        }
        Card::Map => {
            let Wire::Bytes(entry) = wire else {
                return Err(mismatch(f.ty, wire));
            };
            let (k, v) = map_entry(t, f.ty, entry, depth)?;
            let slot = out
                .entry(key.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !slot.is_object() {
                *slot = Value::Object(Map::new());
            }
            if let Value::Object(map) = slot {
                map.insert(k, v);
            }
        }
    }
    Ok(())
}

fn array_at<'m>(out: &'m mut Map<String, Value>, key: &str) -> &'m mut Vec<Value> {
    let slot = out
        .entry(key.to_string())
        .or_insert_with(|| Value::Array(Vec::new()));
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    match slot {
        Value::Array(items) => items,
        _ => unreachable!("just made an array"),
    }
}

/// A `{1: key, 2: value}` map entry; a missing part is its zero value.
fn map_entry(t: &Table, ty: Type, entry: &[u8], depth: usize) -> Result<(String, Value)> {
    let mut key = String::new();
    let mut val = None;
    let mut r = Reader::new(entry);
    while let Some((tag, wire)) = r.field().map_err(Error::new)? {
        match (tag, wire) {
            (1, Wire::Bytes(b)) => key = utf8(b)?.to_string(),
            (1, w) => return Err(mismatch(Type::String, w)),
            (2, w) => val = Some(value(t, ty, w, depth)?.unwrap_or(Value::Null)),
            _ => {}
        }
    }
    let val = match val {
        Some(v) => v,
        None => value(t, ty, zero_wire(ty), depth)?.unwrap_or(Value::Null),
    };
    Ok((key, val))
}

fn zero_wire(ty: Type) -> Wire<'static> {
    match ty {
        Type::String | Type::Bytes | Type::Message(_) => Wire::Bytes(&[]),
        Type::Int32 | Type::Int64 | Type::Bool => Wire::Varint(0),
        Type::Double => Wire::Fixed64(0),
    }
}

/// One value; `None` when the Go value marshals to nothing (a zero time,
/// an empty raw extension).
fn value(t: &Table, ty: Type, wire: Wire<'_>, depth: usize) -> Result<Option<Value>> {
    Ok(Some(match (ty, wire) {
        (Type::String, Wire::Bytes(b)) => Value::String(utf8(b)?.to_string()),
        (Type::Bytes, Wire::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Type::Int32 | Type::Int64 | Type::Bool, Wire::Varint(v)) => varint_value(ty, v),
        (Type::Double, Wire::Fixed64(bits)) => double(bits)?,
        (Type::Message(m), Wire::Bytes(b)) => return message(t, m, b, depth + 1),
        (ty, w) => return Err(mismatch(ty, w)),
    }))
}

fn message(t: &Table, m: usize, bytes: &[u8], depth: usize) -> Result<Option<Value>> {
    match t.messages[m].special {
        Some(s) => special(t, s, bytes, depth),
        None => {
            let mut out = Map::new();
            object_into(t, m, bytes, depth, &mut out)?;
            Ok(Some(Value::Object(out)))
        }
    }
}

fn varint_value(ty: Type, v: u64) -> Value {
    // Protobuf truncates: an int32 is sign-extended to ten bytes on the wire.
    match ty {
        Type::Int32 => Value::from(v as i32),
        Type::Bool => Value::Bool(v != 0),
        _ => Value::from(v as i64),
    }
}

fn double(bits: u64) -> Result<Value> {
    Number::from_f64(f64::from_bits(bits))
        .map(Value::Number)
        .ok_or_else(|| Error::new("a double that is not a finite number"))
}

fn utf8(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_err(|_| Error::new("a string that is not valid UTF-8"))
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        _ => false,
    }
}

fn mismatch(ty: Type, w: Wire<'_>) -> Error {
    let expected = match ty {
        Type::String => "string",
        Type::Bytes => "bytes",
        Type::Int32 => "int32",
        Type::Int64 => "int64",
        Type::Bool => "bool",
        Type::Double => "double",
        Type::Message(_) => "message",
    };
    Error::new(format!("{} value for a {expected} field", w.type_name()))
}

/// The types whose JSON is not an object of their fields.
fn special(t: &Table, s: Special, bytes: &[u8], depth: usize) -> Result<Option<Value>> {
    use Special::*;
    // Field 1 and 2 varints, the one string, the raw bytes, and the
    // JSONSchemaProps wrappers' schema and list.
    let (mut v1, mut v2) = (0i64, 0i64);
    let mut text = "";
    let mut raw: &[u8] = &[];
    let mut schema = None;
    let mut list = Vec::new();
    let mut r = Reader::new(bytes);
    while let Some((tag, wire)) = r.field().map_err(Error::new)? {
        match (s, tag, wire) {
            (Time | MicroTime | Duration | IntOrString | SchemaOrBool, 1, Wire::Varint(v)) => {
                v1 = v as i64
            }
            (Time | MicroTime | IntOrString, 2, Wire::Varint(v)) => v2 = v as i64,
            (IntOrString, 3, Wire::Bytes(b)) | (Quantity, 1, Wire::Bytes(b)) => text = utf8(b)?,
            (RawJson, 1, Wire::Bytes(b)) => raw = b,
            (SchemaOrArray | SchemaOrStringArray, 1, Wire::Bytes(b))
            | (SchemaOrBool, 2, Wire::Bytes(b)) => schema = Some(schema_props(t, b, depth)?),
            (SchemaOrArray, 2, Wire::Bytes(b)) => list.push(schema_props(t, b, depth)?),
            (SchemaOrStringArray, 2, Wire::Bytes(b)) => {
                list.push(Value::String(utf8(b)?.to_string()))
            }
            (_, _, w) if defines(s, tag) => {
                return Err(Error::new(format!(
                    "{} value in field {tag} of {s:?}",
                    w.type_name()
                )))
            }
            _ => {}
        }
    }
    Ok(match s {
        Time | MicroTime => time(v1, v2, s == MicroTime)?,
        Duration => Some(Value::String(kubesim_gocompat::duration::format(v1))),
        // Type 1 is a string; 0 (or anything else) an int.
        IntOrString if v1 == 1 => Some(Value::String(text.to_string())),
        IntOrString => Some(Value::from(v2 as i32)),
        // A zero Quantity marshals as "0".
        Quantity if text.is_empty() => Some(Value::String("0".into())),
        Quantity => Some(Value::String(text.to_string())),
        RawJson => raw_json(t, raw, depth)?,
        SchemaOrBool => Some(schema.unwrap_or(Value::Bool(v1 != 0))),
        SchemaOrArray | SchemaOrStringArray if !list.is_empty() => Some(Value::Array(list)),
        SchemaOrArray | SchemaOrStringArray => schema,
    })
}

/// Whether special type `s` has a field `tag` (others are skipped).
fn defines(s: Special, tag: u32) -> bool {
    match s {
        Special::IntOrString => tag <= 3,
        Special::Time
        | Special::MicroTime
        | Special::SchemaOrArray
        | Special::SchemaOrBool
        | Special::SchemaOrStringArray => tag <= 2,
        Special::Duration | Special::Quantity | Special::RawJson => tag == 1,
    }
}

fn schema_props(t: &Table, b: &[u8], depth: usize) -> Result<Value> {
    let m = t
        .schema_props()
        .ok_or_else(|| Error::new("JSONSchemaProps is not in the field table"))?;
    Ok(message(t, m, b, depth + 1)?.unwrap_or(Value::Null))
}

/// Embedded JSON, or an embedded protobuf object when it carries the magic.
fn raw_json(t: &Table, raw: &[u8], depth: usize) -> Result<Option<Value>> {
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.starts_with(super::MAGIC) {
        return super::envelope(t, raw, depth + 1)
            .map(Some)
            .map_err(|e| Error::new(format!("embedded object: {e}")));
    }
    serde_json::from_slice(raw)
        .map(Some)
        .map_err(|e| Error::new(format!("embedded JSON: {e}")))
}

/// `metav1.Time` marshals at second precision, `MicroTime` with six
/// fractional digits; both in UTC. The zero time marshals to nothing.
fn time(secs: i64, nanos: i64, micro: bool) -> Result<Option<Value>> {
    if nanos == 0 && (secs == 0 || secs == GO_ZERO_TIME) {
        return Ok(None);
    }
    let total = i128::from(secs) * 1_000_000_000 + i128::from(nanos);
    let (secs, nanos) = (
        total.div_euclid(1_000_000_000),
        total.rem_euclid(1_000_000_000),
    );
    let secs = i64::try_from(secs)
        .ok()
        .filter(|s| (YEAR_0..=YEAR_9999_END).contains(s))
        .ok_or_else(|| Error::new("a time outside the years 0000 to 9999"))?;
    let ts = jiff::Timestamp::from_second(secs).map_err(|e| Error::new(e.to_string()))?;
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S");
    Ok(Some(Value::String(if micro {
        format!("{base}.{:06}Z", nanos / 1000)
    } else {
        format!("{base}Z")
    })))
}
