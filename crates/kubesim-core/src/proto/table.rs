//! The field table of `messages.txt`, parsed once on first use.
//!
//! The file is generated (see `tests/proto_table.rs`) and committed, so a
//! parse failure here is a build defect, not bad input: it panics, and the
//! `table_parses` test catches it before anything ships.

use std::collections::HashMap;
use std::sync::OnceLock;

const MESSAGES: &str = include_str!("messages.txt");

/// Wire types whose JSON form is not a plain object of their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Special {
    Time,
    MicroTime,
    Duration,
    IntOrString,
    Quantity,
    /// RawExtension, FieldsV1 and apiextensions' JSON: embedded JSON bytes.
    RawJson,
    SchemaOrArray,
    SchemaOrBool,
    SchemaOrStringArray,
}

const SPECIALS: &[(&str, Special)] = &[
    ("apimachinery.pkg.apis.meta.v1.Time", Special::Time),
    (
        "apimachinery.pkg.apis.meta.v1.MicroTime",
        Special::MicroTime,
    ),
    ("apimachinery.pkg.apis.meta.v1.Duration", Special::Duration),
    (
        "apimachinery.pkg.util.intstr.IntOrString",
        Special::IntOrString,
    ),
    ("apimachinery.pkg.api.resource.Quantity", Special::Quantity),
    ("apimachinery.pkg.runtime.RawExtension", Special::RawJson),
    ("apimachinery.pkg.apis.meta.v1.FieldsV1", Special::RawJson),
    (
        "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
        Special::RawJson,
    ),
    (
        "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
        Special::SchemaOrArray,
    ),
    (
        "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
        Special::SchemaOrBool,
    ),
    (
        "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
        Special::SchemaOrStringArray,
    ),
];

/// The schema that the `JSONSchemaPropsOr*` wrappers hold.
const SCHEMA_PROPS: &str = "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Type {
    String,
    Bytes,
    Int32,
    Int64,
    Bool,
    Double,
    /// Index into [`Table::messages`].
    Message(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Card {
    One,
    Repeated,
    /// `map<string, T>`: repeated `{1: key, 2: value}` entries.
    Map,
}

#[derive(Debug)]
pub(crate) struct Field {
    pub tag: u32,
    /// `None`: an embedded struct whose fields are inlined in the parent.
    pub json: Option<String>,
    pub ty: Type,
    pub card: Card,
    /// The zero value means unset (Go value field) and is left out.
    pub zero_unset: bool,
}

#[derive(Debug)]
pub(crate) struct Message {
    pub special: Option<Special>,
    /// Sorted by tag.
    pub fields: Vec<Field>,
}

impl Message {
    pub(crate) fn field(&self, tag: u32) -> Option<&Field> {
        self.fields
            .binary_search_by_key(&tag, |f| f.tag)
            .ok()
            .map(|i| &self.fields[i])
    }
}

#[derive(Debug)]
pub(crate) struct Table {
    pub messages: Vec<Message>,
    by_name: HashMap<String, usize>,
    /// (apiVersion or `*`, kind) → message.
    kinds: HashMap<(String, String), usize>,
}

impl Table {
    pub(crate) fn kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        self.kinds
            .get(&(api_version.to_string(), kind.to_string()))
            .or_else(|| self.kinds.get(&("*".to_string(), kind.to_string())))
            .copied()
    }

    pub(crate) fn schema_props(&self) -> Option<usize> {
        self.by_name.get(SCHEMA_PROPS).copied()
    }

    #[cfg(test)]
    pub(crate) fn kinds(&self) -> impl Iterator<Item = &(String, String)> {
        self.kinds.keys()
    }
}

pub(crate) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| parse(MESSAGES))
}

fn bad_line(n: usize, line: &str, what: &str) -> ! {
    panic!("messages.txt:{}: {what}: {line}", n + 1)
}

fn parse(text: &str) -> Table {
    // First pass: message names, so fields can refer to later messages.
    let mut by_name = HashMap::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("message ") {
            by_name.insert(name.to_string(), by_name.len());
        }
    }
    let mut messages: Vec<Message> = Vec::with_capacity(by_name.len());
    let mut kinds = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(name) = line.strip_prefix("message ") {
            let special = SPECIALS.iter().find(|(s, _)| *s == name).map(|(_, k)| *k);
            messages.push(Message {
                special,
                fields: Vec::new(),
            });
        } else if words.first() == Some(&"kind") && words.len() == 4 {
            let idx = *by_name
                .get(words[3])
                .unwrap_or_else(|| bad_line(n, line, "unknown message"));
            kinds.insert((words[1].to_string(), words[2].to_string()), idx);
        } else if line.starts_with("  ") && (3..=4).contains(&words.len()) {
            let tag = words[0]
                .parse()
                .unwrap_or_else(|_| bad_line(n, line, "bad tag"));
            let (card, ty) = if let Some(t) = words[2].strip_prefix("[]") {
                (Card::Repeated, t)
            } else if let Some(t) = words[2].strip_prefix("{}") {
                (Card::Map, t)
            } else {
                (Card::One, words[2])
            };
            let ty = match ty {
                "string" => Type::String,
                "bytes" => Type::Bytes,
                "int32" => Type::Int32,
                "int64" => Type::Int64,
                "bool" => Type::Bool,
                "double" => Type::Double,
                m => Type::Message(
                    *by_name
                        .get(m)
                        .unwrap_or_else(|| bad_line(n, line, "unknown type")),
                ),
            };
            let field = Field {
                tag,
                json: (words[1] != "-").then(|| words[1].to_string()),
                ty,
                card,
                zero_unset: words.get(3) == Some(&"z"),
            };
            let msg = messages
                .last_mut()
                .unwrap_or_else(|| bad_line(n, line, "field outside a message"));
            msg.fields.push(field);
        } else {
            bad_line(n, line, "unrecognized line")
        }
    }
    for m in &mut messages {
        m.fields.sort_by_key(|f| f.tag);
    }
    Table {
        messages,
        by_name,
        kinds,
    }
}
