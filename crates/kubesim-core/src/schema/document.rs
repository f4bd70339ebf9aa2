//! Per-group-version OpenAPI v3 documents (`/openapi/v3/<gv>`) and the
//! index that lists them (`/openapi/v3`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Map, Value};

use super::generate::{
    self, add_gvk, list_schema, ref_to, DELETE_OPTIONS, LIST_META, OBJECT_META, PATCH, STATUS,
};
use crate::resource::{Registry, ResourceInfo};

/// The Kubernetes version the documents claim to describe.
pub const KUBERNETES_VERSION: &str = "v1.36.0";

/// A rendered group-version document with its serialized form and hash, so
/// the server can answer without re-serializing and clients can cache by
/// hash.
#[derive(Debug)]
pub struct GvDocument {
    pub value: Value,
    pub json: Vec<u8>,
    /// Upper-case hex digest of `json`, used in `?hash=`.
    pub hash: String,
}

impl GvDocument {
    fn new(value: Value) -> Self {
        let json = serde_json::to_vec(&value).unwrap_or_default();
        let hash = digest_hex(&json);
        GvDocument { value, json, hash }
    }
}

/// 128-bit FNV-1a: deterministic across processes and cheap; the hash only
/// has to change when the document does.
pub fn digest_hex(bytes: &[u8]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013B;
    let mut h = OFFSET;
    for b in bytes {
        h ^= u128::from(*b);
        h = h.wrapping_mul(PRIME);
    }
    format!("{h:032X}")
}

/// Splits `api/v1` / `apis/<group>/<version>` into (group, version).
pub fn parse_gv_path(path: &str) -> Option<(&str, &str)> {
    let path = path.trim_start_matches('/');
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        ["api", v] if !v.is_empty() => Some(("", v)),
        ["apis", g, v] if !g.is_empty() && !v.is_empty() => Some((g, v)),
        _ => None,
    }
}

/// The index path of a group version: `api/v1` or `apis/<group>/<version>`.
pub fn gv_index_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// Documents of built-in-only group versions never change for a given set of
/// resources, so they are rendered once. Custom resources are rendered per
/// request (their schemas can change at any time and are small).
fn cache() -> &'static Mutex<HashMap<String, Arc<GvDocument>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<GvDocument>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn cache_key(path: &str, resources: &[Arc<ResourceInfo>]) -> Option<String> {
    let mut key = path.to_string();
    for r in resources {
        if r.is_custom() {
            return None;
        }
        key.push('|');
        key.push_str(&r.plural);
        key.push(':');
        key.push_str(&r.kind);
        key.push(if r.namespaced() { 'n' } else { 'c' });
        for v in &r.verbs {
            key.push(',');
            key.push_str(v);
        }
        for s in &r.subresources {
            key.push('/');
            key.push_str(s.name);
        }
    }
    Some(key)
}

/// The document for `path`, or `None` when no resource is served there.
pub fn gv_document(registry: &Registry, path: &str) -> Option<Arc<GvDocument>> {
    let (group, version) = parse_gv_path(path)?;
    let resources = registry.in_group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let key = cache_key(&gv_index_path(group, version), &resources);
    if let Some(key) = &key {
        let guard = cache().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(doc) = guard.get(key) {
            return Some(doc.clone());
        }
    }
    let doc = Arc::new(GvDocument::new(build(&resources)));
    if let Some(key) = key {
        cache()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, doc.clone());
    }
    Some(doc)
}

/// Every served group version (core first, then groups in discovery order)
/// with its index path.
fn served_group_versions(registry: &Registry) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let all = registry.all();
    let mut core: Vec<String> = all
        .iter()
        .filter(|r| r.group.is_empty())
        .map(|r| r.version.clone())
        .collect();
    core.dedup();
    for v in core {
        out.push((String::new(), v));
    }
    for (g, versions) in registry.groups() {
        for v in versions {
            out.push((g.clone(), v));
        }
    }
    out
}

/// `/openapi/v3`.
pub fn index(registry: &Registry) -> Value {
    let mut paths = BTreeMap::new();
    for (g, v) in served_group_versions(registry) {
        let path = gv_index_path(&g, &v);
        if let Some(doc) = gv_document(registry, &path) {
            let url = format!("/openapi/v3/{path}?hash={}", doc.hash);
            paths.insert(path, json!({"serverRelativeURL": url}));
        }
    }
    let paths: Map<String, Value> = paths.into_iter().collect();
    json!({"paths": paths})
}

/// Definition name of a custom kind: the group reversed, as upstream names
/// CRD schemas (`stable.example.com` → `com.example.stable.v1.CronTab`).
pub fn crd_definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').filter(|p| !p.is_empty()).collect();
    parts.reverse();
    parts.push(version);
    parts.push(kind);
    parts.join(".")
}

/// The schema of a custom resource as served: the CRD's `openAPIV3Schema`
/// with `apiVersion`, `kind` and `metadata` (a reference to ObjectMeta) and
/// the GVK extension. Without a schema everything is preserved.
pub fn crd_kind_schema(resource: &ResourceInfo) -> Value {
    let source = resource.crd.as_ref().and_then(|c| c.schema.as_ref());
    let mut def = match source {
        Some(Value::Object(m)) => m.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            m
        }
    };
    def.insert("type".into(), json!("object"));
    let mut props = Map::new();
    props.insert(
        "apiVersion".into(),
        json!({"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"}),
    );
    props.insert(
        "kind".into(),
        json!({"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"}),
    );
    props.insert(
        "metadata".into(),
        json!({"description": "Standard object's metadata.", "allOf": [{"$ref": ref_to(OBJECT_META)}]}),
    );
    if let Some(Value::Object(orig)) = def.remove("properties") {
        for (k, v) in orig {
            if !props.contains_key(&k) {
                props.insert(k, v);
            }
        }
    }
    def.insert("properties".into(), Value::Object(props));
    add_gvk(&mut def, &resource.group, &resource.version, &resource.kind);
    Value::Object(def)
}

/// The schema of a resource's kind: borrowed from the built-in set, or built
/// from the CRD.
pub fn kind_schema(resource: &ResourceInfo) -> Option<Cow<'static, Value>> {
    if resource.is_custom() {
        return Some(Cow::Owned(crd_kind_schema(resource)));
    }
    let b = generate::builtin();
    let name = b.name_of(&resource.group, &resource.version, &resource.kind)?;
    b.get(name).map(Cow::Borrowed)
}

/// `Core`, `Apps`, `RbacAuthorization`, `StableExampleCom`: the group part
/// of operation ids.
fn group_ident(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let g = group.strip_suffix(".k8s.io").unwrap_or(group);
    g.split(['.', '-']).map(capitalize).collect()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

fn gvk_value(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

fn query(name: &str, description: &str, ty: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": ty}})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "description": description, "required": true, "schema": {"type": "string"}})
}

fn write_params(patch: bool) -> Vec<Value> {
    let mut p = vec![
        query("dryRun", "When present, indicates that modifications should not be persisted. Valid values: All.", "string"),
        query("fieldManager", "A name associated with the actor or entity that is making these changes.", "string"),
        query("fieldValidation", "How the server treats unknown or duplicate fields in the request: Ignore, Warn or Strict.", "string"),
    ];
    if patch {
        p.push(query(
            "force",
            "Force is going to \"force\" Apply requests: re-acquire conflicting fields owned by other managers.",
            "boolean",
        ));
    }
    p
}

fn list_params() -> Vec<Value> {
    vec![
        query(
            "allowWatchBookmarks",
            "Requests watch events with type \"BOOKMARK\".",
            "boolean",
        ),
        query(
            "continue",
            "The continue token of a previous paged list.",
            "string",
        ),
        query(
            "fieldSelector",
            "A selector to restrict the list of returned objects by their fields.",
            "string",
        ),
        query(
            "labelSelector",
            "A selector to restrict the list of returned objects by their labels.",
            "string",
        ),
        query(
            "limit",
            "Maximum number of responses to return for a list call.",
            "integer",
        ),
        query(
            "resourceVersion",
            "Constrains which resource versions the request may be served from.",
            "string",
        ),
        query(
            "resourceVersionMatch",
            "How resourceVersion is applied to list calls.",
            "string",
        ),
        query(
            "sendInitialEvents",
            "Start a watch stream with synthetic events for the current state.",
            "boolean",
        ),
        query(
            "timeoutSeconds",
            "Timeout for the list/watch call.",
            "integer",
        ),
        query(
            "watch",
            "Watch for changes to the described resources.",
            "boolean",
        ),
    ]
}

fn delete_params() -> Vec<Value> {
    vec![
        query("dryRun", "When present, indicates that modifications should not be persisted. Valid values: All.", "string"),
        query("gracePeriodSeconds", "The duration in seconds before the object should be deleted.", "integer"),
        query("propagationPolicy", "Whether and how garbage collection will be performed: Orphan, Background or Foreground.", "string"),
    ]
}

fn schema_ref(name: Option<&str>) -> Value {
    match name {
        Some(n) => json!({"$ref": ref_to(n)}),
        None => json!({"type": "object"}),
    }
}

fn content(schema: &Value, types: &[&str]) -> Value {
    let mut m = Map::new();
    for t in types {
        m.insert((*t).to_string(), json!({"schema": schema}));
    }
    Value::Object(m)
}

const RESPONSE_TYPES: &[&str] = &["application/json", "application/yaml"];

fn responses(codes: &[(&str, &str)], schema: &Value) -> Value {
    let mut m = Map::new();
    for (code, desc) in codes {
        m.insert(
            (*code).to_string(),
            json!({"description": desc, "content": content(schema, RESPONSE_TYPES)}),
        );
    }
    m.insert("401".into(), json!({"description": "Unauthorized"}));
    Value::Object(m)
}

struct OpSpec<'a> {
    action: &'a str,
    id: String,
    description: String,
    gvk: &'a Value,
    params: Vec<Value>,
    body: Option<Value>,
    responses: Value,
    tag: &'a str,
}

fn operation(spec: OpSpec<'_>) -> Value {
    let mut op = Map::new();
    op.insert("tags".into(), json!([spec.tag]));
    op.insert("description".into(), json!(spec.description));
    op.insert("operationId".into(), json!(spec.id));
    if !spec.params.is_empty() {
        op.insert("parameters".into(), Value::Array(spec.params));
    }
    if let Some(body) = spec.body {
        op.insert("requestBody".into(), body);
    }
    op.insert("responses".into(), spec.responses);
    op.insert("x-kubernetes-action".into(), json!(spec.action));
    op.insert("x-kubernetes-group-version-kind".into(), spec.gvk.clone());
    Value::Object(op)
}

fn put_body(schema: &Value) -> Value {
    json!({"content": content(schema, &["*/*"]), "required": true})
}

fn patch_body(custom: bool) -> Value {
    let mut types = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    // Strategic merge patch needs Go struct tags: built-in kinds only.
    if !custom {
        types.push("application/strategic-merge-patch+json");
    }
    json!({"content": content(&schema_ref(Some(PATCH)), &types), "required": true})
}

/// What one served resource contributes to a document.
struct ResourceNames {
    kind: Option<String>,
    list: Option<String>,
}

/// What the operations of one path talk about.
struct Target<'a> {
    gvk: &'a Value,
    /// Operation id suffix: `CoreV1NamespacedPod`, `CoreV1NamespacedPodStatus`.
    id_kind: &'a str,
    schema: &'a Value,
    what: &'a str,
    tag: &'a str,
    custom: bool,
}

/// Adds get/put/patch (and delete) operations of one object path.
fn object_ops(item: &mut Map<String, Value>, verbs: &[&str], with_delete: bool, t: &Target<'_>) {
    let has = |v: &str| verbs.contains(&v);
    let (gvk, id_kind, schema, what, tag) = (t.gvk, t.id_kind, t.schema, t.what, t.tag);
    if has("get") {
        item.insert(
            "get".into(),
            operation(OpSpec {
                action: "get",
                id: format!("read{id_kind}"),
                description: format!("read {what}"),
                gvk,
                params: Vec::new(),
                body: None,
                responses: responses(&[("200", "OK")], schema),
                tag,
            }),
        );
    }
    if has("update") {
        item.insert(
            "put".into(),
            operation(OpSpec {
                action: "put",
                id: format!("replace{id_kind}"),
                description: format!("replace {what}"),
                gvk,
                params: write_params(false),
                body: Some(put_body(schema)),
                responses: responses(&[("200", "OK"), ("201", "Created")], schema),
                tag,
            }),
        );
    }
    if has("patch") {
        item.insert(
            "patch".into(),
            operation(OpSpec {
                action: "patch",
                id: format!("patch{id_kind}"),
                description: format!("partially update {what}"),
                gvk,
                params: write_params(true),
                body: Some(patch_body(t.custom)),
                responses: responses(&[("200", "OK"), ("201", "Created")], schema),
                tag,
            }),
        );
    }
    if with_delete && has("delete") {
        item.insert(
            "delete".into(),
            operation(OpSpec {
                action: "delete",
                id: format!("delete{id_kind}"),
                description: format!("delete {what}"),
                gvk,
                params: delete_params(),
                body: Some(
                    json!({"content": content(&schema_ref(Some(DELETE_OPTIONS)), &["*/*"])}),
                ),
                responses: responses(
                    &[("200", "OK"), ("202", "Accepted")],
                    &schema_ref(Some(STATUS)),
                ),
                tag,
            }),
        );
    }
}

fn path_item(params: Vec<Value>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("parameters".into(), Value::Array(params));
    m
}

fn add_resource_paths(
    paths: &mut BTreeMap<String, Value>,
    r: &ResourceInfo,
    names: &ResourceNames,
    scale_name: Option<&str>,
) {
    let gv_ident = format!("{}{}", group_ident(&r.group), capitalize(&r.version));
    let tag = format!("{}_{}", group_ident(&r.group).to_lowercase(), r.version);
    let scoped = if r.namespaced() { "Namespaced" } else { "" };
    let id_kind = format!("{gv_ident}{scoped}{}", r.kind);
    let gvk = gvk_value(&r.group, &r.version, &r.kind);
    let kind_schema = schema_ref(names.kind.as_deref());
    let list_schema = schema_ref(names.list.as_deref());
    let prefix = r.gv_path();
    let ns = if r.namespaced() {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let coll = format!("{prefix}{ns}/{}", r.plural);
    let obj = format!("{coll}/{{name}}");
    let pretty = query(
        "pretty",
        "If 'true', then the output is pretty printed.",
        "string",
    );
    let mut base_params = Vec::new();
    if r.namespaced() {
        base_params.push(path_param(
            "namespace",
            "object name and auth scope, such as for teams and projects",
        ));
    }
    base_params.push(pretty.clone());
    let mut obj_params = vec![path_param("name", &format!("name of the {}", r.kind))];
    obj_params.extend(base_params.iter().cloned());

    let has = |v: &str| r.verbs.contains(&v);
    let what = format!("the specified {}", r.kind);

    // Object path.
    let mut item = path_item(obj_params.clone());
    let target = Target {
        gvk: &gvk,
        id_kind: &id_kind,
        schema: &kind_schema,
        what: &what,
        tag: &tag,
        custom: r.is_custom(),
    };
    object_ops(&mut item, &r.verbs, true, &target);
    if item.len() > 1 {
        paths.insert(obj, Value::Object(item));
    }

    // Collection path.
    let mut c = path_item(base_params);
    if has("list") {
        let mut params = list_params();
        params.retain(|p| p["name"] != "pretty");
        c.insert(
            "get".into(),
            operation(OpSpec {
                action: "list",
                id: format!("list{id_kind}"),
                description: format!("list or watch objects of kind {}", r.kind),
                gvk: &gvk,
                params,
                body: None,
                responses: responses(&[("200", "OK")], &list_schema),
                tag: &tag,
            }),
        );
    }
    if has("create") {
        c.insert(
            "post".into(),
            operation(OpSpec {
                action: "post",
                id: format!("create{id_kind}"),
                description: format!("create a {}", r.kind),
                gvk: &gvk,
                params: write_params(false),
                body: Some(put_body(&kind_schema)),
                responses: responses(
                    &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                    &kind_schema,
                ),
                tag: &tag,
            }),
        );
    }
    if has("deletecollection") {
        let mut params = delete_params();
        params.extend(list_params());
        c.insert(
            "delete".into(),
            operation(OpSpec {
                action: "deletecollection",
                id: format!("delete{gv_ident}Collection{scoped}{}", r.kind),
                description: format!("delete collection of {}", r.kind),
                gvk: &gvk,
                params,
                body: Some(
                    json!({"content": content(&schema_ref(Some(DELETE_OPTIONS)), &["*/*"])}),
                ),
                responses: responses(&[("200", "OK")], &schema_ref(Some(STATUS))),
                tag: &tag,
            }),
        );
    }
    if c.len() > 1 {
        paths.insert(coll.clone(), Value::Object(c));
    }

    // Listing across namespaces.
    if r.namespaced() && has("list") {
        let mut c = path_item(vec![pretty]);
        c.insert(
            "get".into(),
            operation(OpSpec {
                action: "list",
                id: format!("list{gv_ident}{}ForAllNamespaces", r.kind),
                description: format!("list or watch objects of kind {}", r.kind),
                gvk: &gvk,
                params: list_params(),
                body: None,
                responses: responses(&[("200", "OK")], &list_schema),
                tag: &tag,
            }),
        );
        paths.insert(format!("{prefix}/{}", r.plural), Value::Object(c));
    }

    // Status and scale subresources: same operations on the sub-path.
    let obj = format!("{coll}/{{name}}");
    // Subresources have their own verb set, not the parent's.
    const SUB: &[&str] = &["get", "update", "patch"];
    if r.has_subresource("status") {
        let mut item = path_item(obj_params.clone());
        let id = format!("{id_kind}Status");
        let what = format!("status of the specified {}", r.kind);
        let target = Target {
            id_kind: &id,
            what: &what,
            ..target
        };
        object_ops(&mut item, SUB, false, &target);
        paths.insert(format!("{obj}/status"), Value::Object(item));
    }
    let scale = scale_name.filter(|_| {
        r.has_subresource("scale") || r.crd.as_ref().is_some_and(|c| c.scale.is_some())
    });
    if let Some(scale) = scale {
        let mut item = path_item(obj_params.clone());
        let id = format!("{id_kind}Scale");
        let what = format!("scale of the specified {}", r.kind);
        let scale_gvk = gvk_value("autoscaling", "v1", "Scale");
        let scale_schema = schema_ref(Some(scale));
        let target = Target {
            gvk: &scale_gvk,
            id_kind: &id,
            schema: &scale_schema,
            what: &what,
            ..target
        };
        object_ops(&mut item, SUB, false, &target);
        paths.insert(format!("{obj}/scale"), Value::Object(item));
    }
    // serviceaccounts/token: create only, speaking TokenRequest.
    let token = generate::builtin().name_of("authentication.k8s.io", "v1", "TokenRequest");
    if let (true, Some(token)) = (r.has_subresource("token"), token) {
        let mut item = path_item(obj_params.clone());
        let token_gvk = gvk_value("authentication.k8s.io", "v1", "TokenRequest");
        let token_schema = schema_ref(Some(token));
        item.insert(
            "post".into(),
            operation(OpSpec {
                action: "post",
                id: format!("create{id_kind}Token"),
                description: format!("create token of a {}", r.kind),
                gvk: &token_gvk,
                params: write_params(false),
                body: Some(put_body(&token_schema)),
                responses: responses(
                    &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
                    &token_schema,
                ),
                tag: target.tag,
            }),
        );
        paths.insert(format!("{obj}/token"), Value::Object(item));
    }
}

/// Builds the document of one group version.
fn build(resources: &[Arc<ResourceInfo>]) -> Value {
    let b = generate::builtin();
    let mut paths = BTreeMap::new();
    let mut schemas: BTreeMap<String, Value> = BTreeMap::new();
    let mut roots: Vec<&str> = vec![OBJECT_META, LIST_META, STATUS, DELETE_OPTIONS, PATCH];
    let scale_name = b.name_of("autoscaling", "v1", "Scale");

    for r in resources {
        let names = if r.is_custom() {
            let kind = crd_definition_name(&r.group, &r.version, &r.kind);
            let list = format!("{kind}List");
            schemas.insert(kind.clone(), crd_kind_schema(r));
            let mut l = list_schema(&r.kind, &kind);
            if let Value::Object(obj) = &mut l {
                add_gvk(obj, &r.group, &r.version, &r.list_kind());
            }
            schemas.insert(list.clone(), l);
            ResourceNames {
                kind: Some(kind),
                list: Some(list),
            }
        } else {
            let kind = b.name_of(&r.group, &r.version, &r.kind);
            let list = b.name_of(&r.group, &r.version, &r.list_kind());
            roots.extend(kind);
            roots.extend(list);
            ResourceNames {
                kind: kind.map(str::to_string),
                list: list.map(str::to_string),
            }
        };
        let wants_scale =
            r.has_subresource("scale") || r.crd.as_ref().is_some_and(|c| c.scale.is_some());
        if wants_scale {
            roots.extend(scale_name);
        }
        if r.has_subresource("token") {
            roots.extend(b.name_of("authentication.k8s.io", "v1", "TokenRequest"));
        }
        add_resource_paths(&mut paths, r, &names, scale_name);
    }

    for name in generate::reachable(&b.definitions, &roots) {
        if let Some(def) = b.get(name) {
            schemas
                .entry(name.to_string())
                .or_insert_with(|| def.clone());
        }
    }

    let paths: Map<String, Value> = paths.into_iter().collect();
    let schemas: Map<String, Value> = schemas.into_iter().collect();
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert_eq!(parse_gv_path("api/v1"), Some(("", "v1")));
        assert_eq!(parse_gv_path("apis/apps/v1"), Some(("apps", "v1")));
        assert_eq!(parse_gv_path("apis/apps"), None);
        assert_eq!(
            crd_definition_name("stable.example.com", "v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
        assert_eq!(
            group_ident("rbac.authorization.k8s.io"),
            "RbacAuthorization"
        );
        assert_eq!(group_ident(""), "Core");
        assert_eq!(digest_hex(b"").len(), 32);
        assert_ne!(digest_hex(b"a"), digest_hex(b"b"));
    }
}
