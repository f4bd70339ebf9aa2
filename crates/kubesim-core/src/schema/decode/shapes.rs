//! How each node of the built-in schemas decodes, worked out once.
//!
//! Finding a node's Go type means looking through `$ref` and `allOf` and
//! reading a dozen keywords, each a lookup in a map hashed with SipHash,
//! and a struct's field was then found by looking in each of the node's
//! parts in turn. The type check runs on every field of every write, so
//! that was most of its cost: a pod's check took about 13 µs, now under 2
//! (docs/decisions/schema-shapes.md). Here every node
//! reachable from a definition is resolved when the schemas are first
//! used: its shape, and for a struct one table of its fields. The walk
//! then costs a pointer's hash per node and a string's per field.

use std::sync::OnceLock;

use hashbrown::HashMap;
use serde_json::{Map, Value};

use super::super::generate::{self, ref_name};

const MAX_REF_HOPS: usize = 16;

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
/// Types whose decoders take any JSON.
const OPAQUE: &[&str] = &[
    "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// How a schema node decodes, once `$ref` and `allOf` are looked through.
pub(super) enum Shape<'a> {
    /// Takes any JSON.
    Any,
    Quantity,
    IntOrString,
    Time {
        micro: bool,
    },
    /// A Go struct: its fields' schemas by JSON name, and the definition
    /// it comes from.
    Struct(Fields<'a>, Option<&'a str>),
    Map(&'a Value),
    Slice(&'a Value),
    Bytes,
    String,
    Int(&'static str),
    Float,
    Bool,
}

/// A struct's fields: for each name, the schema of the first of the
/// node's parts that has the property.
pub(super) struct Fields<'a>(HashMap<&'a str, &'a Value>);

impl<'a> Fields<'a> {
    pub(super) fn get(&self, name: &str) -> Option<&'a Value> {
        self.0.get(name).copied()
    }
}

/// The shape of every node of the built-in schemas, by the node's address.
pub(super) struct Shapes {
    by_node: HashMap<usize, Shape<'static>>,
}

/// The built-in schemas' shapes, resolved on first use.
pub(super) fn built_in() -> &'static Shapes {
    static SHAPES: OnceLock<Shapes> = OnceLock::new();
    SHAPES.get_or_init(|| Shapes::of_definitions(&generate::builtin().definitions))
}

fn address(schema: &Value) -> usize {
    schema as *const Value as usize
}

impl Shapes {
    /// Every definition, taken as the root of a walk (a definition stands
    /// for its own Go type), and every node inside one.
    fn of_definitions(defs: &'static Map<String, Value>) -> Shapes {
        let mut shapes = Shapes {
            by_node: HashMap::new(),
        };
        for (name, def) in defs {
            shapes.resolve(defs, def, Some(name));
        }
        shapes
    }

    fn resolve(
        &mut self,
        defs: &'static Map<String, Value>,
        schema: &'static Value,
        root: Option<&'static str>,
    ) {
        if self.by_node.contains_key(&address(schema)) {
            return;
        }
        let shape = shape_of(defs, schema, root);
        // Nodes inside a `$ref`'s target belong to that definition and
        // are resolved with it; these are the ones written in place.
        let inner: Vec<&'static Value> = match &shape {
            Shape::Struct(fields, _) => fields.0.values().copied().collect(),
            Shape::Map(v) | Shape::Slice(v) => vec![*v],
            _ => Vec::new(),
        };
        self.by_node.insert(address(schema), shape);
        for v in inner {
            self.resolve(defs, v, None);
        }
    }

    /// The shape of `schema`, a node of the built-in schemas; a node
    /// from elsewhere takes any JSON.
    pub(super) fn of(&self, schema: &Value) -> &Shape<'static> {
        self.by_node.get(&address(schema)).unwrap_or(&Shape::Any)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_node.len()
    }
}

/// The maps a schema node stands for once `$ref` and `allOf` are looked
/// through.
type Parts<'a> = Vec<&'a Map<String, Value>>;

/// How `schema` decodes; `root` names it when it is a definition itself
/// rather than a `$ref` to one.
fn shape_of(
    defs: &'static Map<String, Value>,
    schema: &'static Value,
    root: Option<&'static str>,
) -> Shape<'static> {
    let mut parts = Parts::new();
    let mut def = None;
    flatten(defs, schema, 0, &mut parts, &mut def);
    let def = def.or(root);
    if let Some(d) = def {
        match d {
            QUANTITY => return Shape::Quantity,
            INT_OR_STRING => return Shape::IntOrString,
            TIME => return Shape::Time { micro: false },
            MICRO_TIME => return Shape::Time { micro: true },
            d if OPAQUE.contains(&d) => return Shape::Any,
            _ => {}
        }
    }
    let flag = |k: &str| {
        parts
            .iter()
            .any(|m| m.get(k).and_then(Value::as_bool) == Some(true))
    };
    if flag("x-kubernetes-int-or-string") {
        return Shape::IntOrString;
    }
    if flag("x-kubernetes-preserve-unknown-fields") {
        return Shape::Any;
    }
    let ty = parts
        .iter()
        .find_map(|m| m.get("type").and_then(Value::as_str));
    let format = parts
        .iter()
        .find_map(|m| m.get("format").and_then(Value::as_str));
    match ty {
        Some("object") => {
            if parts.iter().any(|m| m.get("properties").is_some()) {
                // The first part that has a field gives its schema.
                let mut fields = HashMap::new();
                for props in parts
                    .iter()
                    .filter_map(|m| m.get("properties").and_then(Value::as_object))
                {
                    for (name, schema) in props {
                        fields.entry(name.as_str()).or_insert(schema);
                    }
                }
                return Shape::Struct(Fields(fields), def);
            }
            match parts.iter().find_map(|m| m.get("additionalProperties")) {
                Some(v @ Value::Object(_)) => Shape::Map(v),
                _ => Shape::Any,
            }
        }
        Some("array") => match parts.iter().find_map(|m| m.get("items")) {
            Some(items) => Shape::Slice(items),
            None => Shape::Any,
        },
        Some("string") if format == Some("byte") => Shape::Bytes,
        Some("string") if format == Some("int-or-string") => Shape::IntOrString,
        Some("string") => Shape::String,
        Some("integer") => Shape::Int(if format == Some("int32") {
            "int32"
        } else {
            "int64"
        }),
        Some("number") => Shape::Float,
        Some("boolean") => Shape::Bool,
        _ => Shape::Any,
    }
}

/// Looks through `$ref` and `allOf`, recording the last definition a
/// `$ref` named (the Go type the node stands for).
fn flatten<'a>(
    defs: &'a Map<String, Value>,
    schema: &'a Value,
    hops: usize,
    out: &mut Parts<'a>,
    def: &mut Option<&'a str>,
) {
    let Value::Object(m) = schema else {
        return;
    };
    if hops > MAX_REF_HOPS {
        return;
    }
    if let Some((name, target)) = m
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(ref_name)
        .and_then(|n| defs.get_key_value(n))
    {
        *def = Some(name.as_str());
        flatten(defs, target, hops + 1, out, def);
    }
    out.push(m);
    if let Some(Value::Array(subs)) = m.get("allOf") {
        for s in subs {
            flatten(defs, s, hops + 1, out, def);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The node a path of field names leads to from a definition, through
    /// list items and map values where the path says `[]`.
    fn at(shapes: &'static Shapes, def: &str, path: &[&str]) -> &'static Shape<'static> {
        let mut node = generate::builtin().get(def).expect("definition");
        for step in path {
            node = match (shapes.of(node), *step) {
                (Shape::Slice(items) | Shape::Map(items), "[]") => items,
                (Shape::Struct(fields, _), name) => fields.get(name).expect(name),
                _ => panic!("no {step} in {def} along {path:?}"),
            };
        }
        shapes.of(node)
    }

    #[test]
    fn nodes_deep_inside_a_kind_are_resolved_through_refs() {
        let shapes = built_in();
        let pod = "io.k8s.api.core.v1.Pod";
        assert!(matches!(shapes.of(generate::builtin().get(pod).unwrap()),
            Shape::Struct(_, Some(d)) if *d == pod));
        let port = ["spec", "containers", "[]", "ports", "[]", "containerPort"];
        assert!(matches!(at(shapes, pod, &port), Shape::Int("int32")));
        let cpu = ["spec", "containers", "[]", "resources", "requests", "[]"];
        assert!(matches!(at(shapes, pod, &cpu), Shape::Quantity));
        let started = ["status", "startTime"];
        assert!(matches!(
            at(shapes, pod, &started),
            Shape::Time { micro: false }
        ));
        let labels = ["metadata", "labels", "[]"];
        assert!(matches!(at(shapes, pod, &labels), Shape::String));
        // Opaque Go types take anything, whatever their schema says.
        let raw = ["metadata", "managedFields", "[]", "fieldsV1"];
        assert!(matches!(at(shapes, pod, &raw), Shape::Any));
        // More nodes than definitions: the fields written in place too.
        assert!(shapes.len() > generate::builtin().definitions.len() * 3);
    }

    #[test]
    fn a_value_from_outside_the_schemas_takes_any_json() {
        let elsewhere = serde_json::json!({"type": "string"});
        assert!(matches!(built_in().of(&elsewhere), Shape::Any));
    }
}
