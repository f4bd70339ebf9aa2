//! Regenerates `src/proto/messages.txt`, the protobuf field table the
//! request-body decoder reads. Developer-run, not part of the normal suite:
//!
//! ```sh
//! cargo test -p kubesim-core --test proto_table -- --ignored
//! ```
//!
//! Field numbers and types come from the prost-generated sources of the
//! `k8s-pb` crate (version 0.9.0): set `K8S_PB_SRC` to its `src` directory, or
//! let the generator find it in the local cargo registry (any crate that
//! depends on `k8s-pb = "0.9"`, or `cargo fetch` on one, puts it there).
//!
//! JSON names are resolved here rather than at load time, so the committed
//! file is reviewable and the server needs no schema work to decode: each
//! prost field is matched to a property of the same-named OpenAPI definition
//! that kubesim already builds from `k8s-openapi`, comparing lowercase
//! alphanumerics only (`pod_cid_rs` = `podCIDRs`, `r#ref` = `$ref`). Fields
//! without a match (newer than the schemas) fall back to lowerCamelCase and
//! are listed on stderr.
//!
//! Only messages reachable from the served kinds' definitions are written:
//! a body for any other kind is refused before it is decoded.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

const K8S_PB: &str = "k8s-pb-0.9.0";

/// Go value fields (not pointers) of type int, bool or IntOrString: the wire
/// always carries them, and their zero means "unset", so the decoder drops
/// it as Go's `omitempty` would. Any other optional number or bool keeps an
/// explicit zero: those are pointers, where `replicas: 0` is meaningful.
/// Listing only fields that commonly reach the wire keeps the list short;
/// a field missing here merely shows up as an explicit zero.
const ZERO_IS_UNSET: &[&str] = &[
    "apimachinery.pkg.apis.meta.v1.ObjectMeta.generation",
    "apimachinery.pkg.apis.meta.v1.Condition.observedGeneration",
    "api.core.v1.PodSpec.hostNetwork",
    "api.core.v1.PodSpec.hostPID",
    "api.core.v1.PodSpec.hostIPC",
    "api.core.v1.Container.stdin",
    "api.core.v1.Container.stdinOnce",
    "api.core.v1.Container.tty",
    "api.core.v1.EphemeralContainerCommon.stdin",
    "api.core.v1.EphemeralContainerCommon.stdinOnce",
    "api.core.v1.EphemeralContainerCommon.tty",
    "api.core.v1.ContainerPort.hostPort",
    "api.core.v1.VolumeMount.readOnly",
    "api.core.v1.Probe.initialDelaySeconds",
    "api.core.v1.Probe.timeoutSeconds",
    "api.core.v1.Probe.periodSeconds",
    "api.core.v1.Probe.successThreshold",
    "api.core.v1.Probe.failureThreshold",
    "api.core.v1.ServicePort.nodePort",
    "api.core.v1.ServicePort.targetPort",
    "api.core.v1.ServiceSpec.healthCheckNodePort",
    "api.core.v1.ServiceSpec.publishNotReadyAddresses",
    "api.core.v1.NodeSpec.unschedulable",
    "api.core.v1.Event.count",
    "api.core.v1.ReplicationControllerSpec.minReadySeconds",
    "api.core.v1.ReplicationControllerStatus.fullyLabeledReplicas",
    "api.core.v1.ReplicationControllerStatus.readyReplicas",
    "api.core.v1.ReplicationControllerStatus.availableReplicas",
    "api.core.v1.ReplicationControllerStatus.observedGeneration",
    "api.apps.v1.DeploymentSpec.minReadySeconds",
    "api.apps.v1.DeploymentSpec.paused",
    "api.apps.v1.DeploymentStatus.observedGeneration",
    "api.apps.v1.DeploymentStatus.replicas",
    "api.apps.v1.DeploymentStatus.updatedReplicas",
    "api.apps.v1.DeploymentStatus.readyReplicas",
    "api.apps.v1.DeploymentStatus.availableReplicas",
    "api.apps.v1.DeploymentStatus.unavailableReplicas",
    "api.apps.v1.ReplicaSetSpec.minReadySeconds",
    "api.apps.v1.ReplicaSetStatus.fullyLabeledReplicas",
    "api.apps.v1.ReplicaSetStatus.readyReplicas",
    "api.apps.v1.ReplicaSetStatus.availableReplicas",
    "api.apps.v1.ReplicaSetStatus.observedGeneration",
    "api.apps.v1.StatefulSetSpec.minReadySeconds",
    "api.apps.v1.StatefulSetStatus.observedGeneration",
    "api.apps.v1.StatefulSetStatus.readyReplicas",
    "api.apps.v1.StatefulSetStatus.currentReplicas",
    "api.apps.v1.StatefulSetStatus.updatedReplicas",
    "api.apps.v1.DaemonSetSpec.minReadySeconds",
    "api.apps.v1.DaemonSetStatus.observedGeneration",
    "api.apps.v1.DaemonSetStatus.updatedNumberScheduled",
    "api.apps.v1.DaemonSetStatus.numberAvailable",
    "api.apps.v1.DaemonSetStatus.numberUnavailable",
    "api.batch.v1.JobStatus.active",
    "api.batch.v1.JobStatus.succeeded",
    "api.batch.v1.JobStatus.failed",
    "api.policy.v1.PodDisruptionBudgetStatus.observedGeneration",
    "api.autoscaling.v2.HorizontalPodAutoscalerStatus.currentReplicas",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec.preserveUnknownFields",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion.deprecated",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.exclusiveMaximum",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.exclusiveMinimum",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.uniqueItems",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.nullable",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.x-kubernetes-embedded-resource",
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.x-kubernetes-int-or-string",
    "api.scheduling.v1.PriorityClass.globalDefault",
];

/// String pointers where `""` differs from unset. Every other optional
/// string (or bytes) field drops `""`: Go value strings always reach the
/// wire, and the defaulting here (like Go's) only fills absent fields.
const EMPTY_STRING_IS_SET: &[&str] = &[
    "api.core.v1.PersistentVolumeClaimSpec.storageClassName",
    "api.core.v1.PersistentVolumeClaimSpec.volumeAttributesClassName",
];

/// JSON names the schemas cannot supply: kubesim's OpenAPI documents strip
/// `$schema` keys, which also removes JSONSchemaProps' `$schema` property.
const JSON_NAMES: &[(&str, &str)] = &[(
    "apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps.schema",
    "$schema",
)];

const INT_OR_STRING: &str = "apimachinery.pkg.util.intstr.IntOrString";

/// One field of a prost struct.
struct PbField {
    tag: u32,
    name: String,
    /// `string`, `bytes`, `int32`, `int64`, `bool`, `double` or a message
    /// name (OpenAPI-style, without `io.k8s.`).
    ty: String,
    repeated: bool,
    map: bool,
}

/// The JSON side of a message: property names by normalized name, and
/// the required ones.
#[derive(Clone, Default)]
struct Shape {
    props: HashMap<String, String>,
    required: BTreeSet<String>,
}

impl Shape {
    fn of(def: Option<&Value>) -> Shape {
        let Some(def) = def else {
            return Shape::default();
        };
        let props = def
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().map(|k| (normalize(k), k.clone())).collect())
            .unwrap_or_default();
        let required = def
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Shape { props, required }
    }
}

#[test]
#[ignore = "developer-run generator; needs the k8s-pb sources"]
fn regenerate_proto_table() {
    let src = k8s_pb_src();
    let mut messages: BTreeMap<String, Vec<PbField>> = BTreeMap::new();
    read_tree(&src, &src, &mut messages);
    for fields in messages.values_mut() {
        fields.sort_by_key(|f| f.tag);
    }
    assert!(
        !messages.is_empty(),
        "no prost structs under {}",
        src.display()
    );

    let defs = &kubesim_core::schema::builtin_schemas().definitions;
    // Message names use the OpenAPI spelling where a definition matches
    // (`HTTPGetAction`, not prost's `HttpGetAction`).
    let by_lower: HashMap<String, String> = defs
        .keys()
        .filter_map(|k| k.strip_prefix("io.k8s."))
        .map(|k| (k.to_ascii_lowercase(), k.to_string()))
        .collect();
    let canonical = |pb: &str| -> String {
        by_lower
            .get(&pb.to_ascii_lowercase())
            .cloned()
            .unwrap_or_else(|| pb.to_string())
    };
    let messages: BTreeMap<String, Vec<PbField>> = messages
        .into_iter()
        .map(|(name, mut fields)| {
            for f in &mut fields {
                if !is_scalar(&f.ty) {
                    f.ty = canonical(&f.ty);
                }
            }
            (canonical(&name), fields)
        })
        .collect();

    // Everything reachable from the definitions that have a message.
    let mut keep = BTreeSet::new();
    let mut stack: Vec<String> = defs
        .keys()
        .filter_map(|k| k.strip_prefix("io.k8s."))
        .filter(|k| messages.contains_key(*k))
        .map(str::to_string)
        .collect();
    while let Some(m) = stack.pop() {
        if !keep.insert(m.clone()) {
            continue;
        }
        for f in &messages[&m] {
            if !is_scalar(&f.ty) {
                assert!(messages.contains_key(&f.ty), "{m}: unknown type {}", f.ty);
                stack.push(f.ty.clone());
            }
        }
    }

    let mut out = String::from(HEADER);
    let mut kinds = BTreeSet::new();
    for name in &keep {
        let Some(def) = defs.get(&format!("io.k8s.{name}")) else {
            continue;
        };
        if let Some(Value::Array(gvks)) = def.get("x-kubernetes-group-version-kind") {
            for gvk in gvks {
                let (g, v, k) = (&gvk["group"], &gvk["version"], &gvk["kind"]);
                let (Some(g), Some(v), Some(k)) = (g.as_str(), v.as_str(), k.as_str()) else {
                    continue;
                };
                let api_version = if g.is_empty() {
                    v.to_string()
                } else {
                    format!("{g}/{v}")
                };
                kinds.insert(format!("kind {api_version} {k} {name}\n"));
            }
        }
    }
    // DeleteOptions bodies carry whatever group version the client picked.
    kinds.insert("kind * DeleteOptions apimachinery.pkg.apis.meta.v1.DeleteOptions\n".into());
    out.extend(kinds);

    // Each message's JSON properties: its definition's, or for an embedded
    // message without one (EphemeralContainerCommon), the embedding one's.
    let mut shapes: HashMap<&str, Shape> = keep
        .iter()
        .map(|m| (m.as_str(), Shape::of(defs.get(&format!("io.k8s.{m}")))))
        .collect();
    for name in &keep {
        let parent = shapes[name.as_str()].clone();
        for f in &messages[name] {
            if !parent.props.contains_key(&normalize(&f.name))
                && !f.repeated
                && !f.map
                && inlines(&messages, &f.ty, &parent.props)
                && shapes[f.ty.as_str()].props.is_empty()
            {
                shapes.insert(f.ty.as_str(), parent.clone());
            }
        }
    }

    let mut fallbacks = Vec::new();
    let mut inlined = Vec::new();
    for name in &keep {
        let Shape { props, required } = &shapes[name.as_str()];
        let _ = writeln!(out, "message {name}");
        for f in &messages[name] {
            let path = format!("{name}.{}", f.name);
            let known = JSON_NAMES
                .iter()
                .find(|(k, _)| *k == path)
                .map(|(_, j)| *j)
                .or(props.get(&normalize(&f.name)).map(String::as_str));
            let json = match known {
                Some(j) => j.to_string(),
                // An embedded Go struct: its own message on the wire, its
                // fields inlined in JSON (`LocalObjectReference` in
                // `SecretKeySelector`, `ProbeHandler` in `Probe`).
                None if !f.repeated && !f.map && inlines(&messages, &f.ty, props) => {
                    inlined.push(path);
                    "-".to_string()
                }
                None => {
                    let j = lower_camel(&f.name);
                    if !props.is_empty() {
                        fallbacks.push(format!("{name}.{j}"));
                    }
                    j
                }
            };
            let full = format!("{name}.{json}");
            let ty = match (f.repeated, f.map) {
                (_, true) => format!("{{}}{}", f.ty),
                (true, false) => format!("[]{}", f.ty),
                _ => f.ty.clone(),
            };
            let zero_unset = !f.repeated
                && !f.map
                && !required.contains(&json)
                && match f.ty.as_str() {
                    "string" | "bytes" => !EMPTY_STRING_IS_SET.contains(&full.as_str()),
                    "int32" | "int64" | "bool" | "double" | INT_OR_STRING => {
                        ZERO_IS_UNSET.contains(&full.as_str())
                    }
                    _ => false,
                };
            let flag = if zero_unset { " z" } else { "" };
            let _ = writeln!(out, "  {} {json} {ty}{flag}", f.tag);
        }
    }
    eprintln!("inlined: {}", inlined.join(", "));
    if !fallbacks.is_empty() {
        eprintln!("lowerCamelCase fallback for: {}", fallbacks.join(", "));
    }
    let dest = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/proto/messages.txt");
    std::fs::write(&dest, &out).unwrap();
    eprintln!("wrote {} ({} messages)", dest.display(), keep.len());
    for listed in ZERO_IS_UNSET.iter().chain(EMPTY_STRING_IS_SET) {
        let (msg, field) = listed.rsplit_once('.').unwrap();
        assert!(has_field(&out, msg, field), "{listed} is not in the table");
    }
}

const HEADER: &str = "\
# Protobuf field table of the built-in kinds, for decoding request bodies.
# Generated by crates/kubesim-core/tests/proto_table.rs; do not edit.
#
# kind <apiVersion> <Kind> <message>      (apiVersion `*` matches any)
# message <name>                          (OpenAPI name without `io.k8s.`)
#   <tag> <jsonName> <type> [z]          (jsonName `-`: fields inlined)
# type: string, bytes, int32, int64, bool, double or a message name;
# `[]` prefix: repeated; `{}` prefix: map with string keys.
# z: the zero value (\"\", 0, false) means unset and is left out.
";

fn has_field(out: &str, msg: &str, field: &str) -> bool {
    out.lines()
        .skip_while(|l| *l != format!("message {msg}"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .any(|l| l.split_whitespace().nth(1) == Some(field))
}

/// Whether message `ty` is embedded in a definition with properties
/// `props`: most of its fields are properties of the parent. (Not all: the
/// k8s-pb messages can be newer than the schemas.)
fn inlines(
    messages: &BTreeMap<String, Vec<PbField>>,
    ty: &str,
    props: &HashMap<String, String>,
) -> bool {
    inlines_within(messages, ty, props, 3)
}

/// [`inlines`], following embedded structs at most `depth` levels down
/// (some messages contain themselves).
fn inlines_within(
    messages: &BTreeMap<String, Vec<PbField>>,
    ty: &str,
    props: &HashMap<String, String>,
    depth: u32,
) -> bool {
    let Some(fields) = messages.get(ty) else {
        return false;
    };
    if depth == 0 {
        return false;
    }
    // A field counts when the parent has it, or when it is itself an
    // embedded struct whose fields the parent has (`Rule` inside
    // `RuleWithOperations` inside `NamedRuleWithOperations`).
    let known = fields
        .iter()
        .filter(|f| {
            props.contains_key(&normalize(&f.name))
                || (!f.repeated
                    && !f.map
                    && !is_scalar(&f.ty)
                    && inlines_within(messages, &f.ty, props, depth - 1))
        })
        .count();
    known * 2 > fields.len()
}

fn is_scalar(ty: &str) -> bool {
    matches!(
        ty,
        "string" | "bytes" | "int32" | "int64" | "bool" | "double"
    )
}

fn normalize(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    for (i, part) in snake.split('_').filter(|p| !p.is_empty()).enumerate() {
        let mut cs = part.chars();
        if let Some(c) = cs.next() {
            if i == 0 {
                out.push(c);
            } else {
                out.push(c.to_ascii_uppercase());
            }
            out.extend(cs);
        }
    }
    out
}

fn k8s_pb_src() -> PathBuf {
    if let Ok(p) = std::env::var("K8S_PB_SRC") {
        return PathBuf::from(p);
    }
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cargo"));
    let registry = home.join("registry/src");
    for index in std::fs::read_dir(&registry).into_iter().flatten().flatten() {
        let p = index.path().join(K8S_PB).join("src");
        if p.is_dir() {
            return p;
        }
    }
    panic!(
        "{K8S_PB} sources not found under {}; set K8S_PB_SRC",
        registry.display()
    );
}

/// Reads every `mod.rs` below `dir`; the directory path is the proto package.
fn read_tree(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<PbField>>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            read_tree(root, &p, out);
        } else if p.file_name().is_some_and(|n| n == "mod.rs") {
            let module: Vec<String> = dir
                .strip_prefix(root)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            parse_module(&std::fs::read_to_string(&p).unwrap(), &module, out);
        }
    }
}

/// `["api", "apps", "v1"]` → `api.apps.v1`; `apiextensions_apiserver` is
/// spelled with a dash in OpenAPI names.
fn package(module: &[String]) -> String {
    module.join(".").replace('_', "-")
}

/// Collects the structs of one prost module. prost writes each field as a
/// `#[prost(...)]` line followed by `pub name: Type,` (the type may wrap).
fn parse_module(text: &str, module: &[String], out: &mut BTreeMap<String, Vec<PbField>>) {
    let mut current: Option<String> = None;
    let mut attr: Option<String> = None;
    let mut decl = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("pub struct ") {
            // `pub struct Patch {}` has no body to read.
            let (name, empty) = match rest.strip_suffix(" {}") {
                Some(n) => (n, true),
                None => (rest.trim_end_matches(" {"), false),
            };
            let full = format!("{}.{}", package(module), name.trim());
            out.insert(full.clone(), Vec::new());
            current = (!empty).then_some(full);
            continue;
        }
        if line == "}" {
            current = None;
            continue;
        }
        let Some(msg) = &current else { continue };
        let t = line.trim();
        if let Some(a) = t.strip_prefix("#[prost(") {
            attr = Some(a.trim_end_matches(")]").to_string());
            decl.clear();
            continue;
        }
        if attr.is_none() || t.starts_with("///") || t.starts_with("#[") {
            continue;
        }
        decl.push_str(t);
        let depth = decl.matches('<').count() as i64 - decl.matches('>').count() as i64;
        if depth == 0 && decl.ends_with(',') {
            let a = attr.take().unwrap();
            let field = parse_field(&a, &decl, module);
            out.get_mut(msg).unwrap().push(field);
            decl.clear();
        }
    }
}

fn parse_field(attr: &str, decl: &str, module: &[String]) -> PbField {
    let tag = attr
        .split("tag = \"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no tag in {attr}"));
    let (name, ty) = decl
        .strip_prefix("pub ")
        .and_then(|d| d.split_once(':'))
        .unwrap_or_else(|| panic!("unexpected field {decl}"));
    let name = name.trim().trim_start_matches("r#").to_string();
    // Wrapped types keep rustfmt's trailing commas: `Option<T,>`.
    let ty = ty.trim().trim_end_matches(',').replace(",>", ">");
    let ty = ty.as_str();
    let kind = attr.split([',', ' ']).next().unwrap();
    let repeated = attr.contains("repeated");
    if kind == "btree_map" {
        let value = attr.split('"').nth(1).unwrap().split(", ").nth(1).unwrap();
        let ty = match value {
            "string" | "bytes" => value.to_string(),
            "message" => {
                // BTreeMap<String, V>: V follows the key's comma.
                let args = ty.split_once('<').unwrap().1.strip_suffix('>').unwrap();
                resolve(args.split_once(',').unwrap().1.trim(), module)
            }
            other => panic!("unexpected map value {other}"),
        };
        return PbField {
            tag,
            name,
            ty,
            repeated: false,
            map: true,
        };
    }
    let ty = match kind {
        "string" | "bool" | "int32" | "int64" | "double" | "bytes" => kind.to_string(),
        "message" => {
            let inner = strip_wrappers(ty);
            resolve(inner, module)
        }
        other => panic!("unexpected prost kind {other} in {attr}"),
    };
    PbField {
        tag,
        name,
        ty,
        repeated,
        map: false,
    }
}

/// `Option<Box<T>>`, `Vec<T>` → `T`.
fn strip_wrappers(mut ty: &str) -> &str {
    for w in [
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
    ] {
        if let Some(inner) = ty.strip_prefix(w) {
            ty = strip_wrappers(inner.strip_suffix('>').unwrap());
        }
    }
    ty
}

/// A prost type path relative to `module` → a message name.
fn resolve(path: &str, module: &[String]) -> String {
    let mut base: Vec<String> = module.to_vec();
    let mut parts: Vec<&str> = path.split("::").collect();
    while parts.first() == Some(&"super") {
        base.pop();
        parts.remove(0);
    }
    let name = parts.pop().unwrap();
    base.extend(parts.iter().map(|p| p.to_string()));
    format!("{}.{name}", package(&base))
}
