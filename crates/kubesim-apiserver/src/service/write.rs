//! create, update and patch: decoding checks, server-set metadata,
//! defaulting, validation, managedFields and the optimistic commit.

use std::sync::Arc;

use kubesim_core::patch::{self, PatchBody, PatchType};
use kubesim_core::{defaults, meta, same, schema, validation, ApiError, Cause, ResourceInfo};
use kubesim_runtime::{FieldValidation, Rng, WriteOptions};
use kubesim_store::{Record, WriteOp};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::managed_fields_text::decode_apart;
use super::{attrs, encode, encode_with, object_key, store_error, Caller, Server};

/// How many times an update without a client precondition is retried when a
/// concurrent writer got there first.
const MAX_RETRIES: usize = 16;

/// The result of a write.
pub struct WriteResult {
    pub obj: Value,
    /// true when the write created the object (201).
    pub created: bool,
    /// `Warning` headers for the client.
    pub warnings: Vec<String>,
}

/// Which part of the object a write may change.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Main,
    Status,
}

impl Part {
    pub(super) fn of(resource: &ResourceInfo, sub: Option<&str>) -> Result<Part, ApiError> {
        match sub {
            None => Ok(Part::Main),
            Some("status") if resource.has_subresource("status") => Ok(Part::Status),
            Some(s) => Err(ApiError::path_not_found().with_details("", &resource.group, s)),
        }
    }
}

/// Fields the server owns: a client's values for them are ignored.
const SERVER_META: &[&str] = &[
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
];

/// Resources whose objects count `metadata.generation`.
fn tracks_generation(resource: &ResourceInfo) -> bool {
    if resource.is_custom() {
        return true;
    }
    !matches!(
        resource.plural.as_str(),
        "events"
            | "leases"
            | "endpoints"
            | "endpointslices"
            | "configmaps"
            | "secrets"
            | "serviceaccounts"
            | "namespaces"
            | "nodes"
            | "bindings"
    )
}

/// Resources whose create keeps a client-provided status (a kubelet
/// registers a node with its status; everything else starts empty).
fn keeps_status_on_create(resource: &ResourceInfo) -> bool {
    matches!(
        resource.plural.as_str(),
        "nodes" | "pods" | "namespaces" | "events"
    ) || !resource.has_subresource("status")
}

/// Whether anything but metadata and status (what bumps `generation`)
/// differs, compared in place rather than on copies.
fn spec_differs(a: &Value, b: &Value) -> bool {
    fn spec(obj: &Value) -> impl Iterator<Item = (&String, &Value)> {
        obj.as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
    }
    spec(a).count() != spec(b).count() || spec(a).any(|(k, v)| !same::options(b.get(k), Some(v)))
}

/// The field manager name, from `?fieldManager` or the User-Agent's program.
pub(crate) fn manager(opts: &WriteOptions, caller: &Caller) -> String {
    if let Some(m) = opts.field_manager.as_deref().filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    let ua = caller.user_agent.split('/').next().unwrap_or("").trim();
    if ua.is_empty() {
        "unknown".into()
    } else {
        ua.to_string()
    }
}

impl Server {
    /// Checks apiVersion/kind of a body against the resource it is sent to.
    pub(crate) fn check_type(
        &self,
        resource: &ResourceInfo,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        let Some(m) = obj.as_object_mut() else {
            return Err(ApiError::bad_request(
                "the body of the request is not a JSON object",
            ));
        };
        let want_av = resource.api_version();
        match m.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                m.insert("apiVersion".into(), Value::String(want_av));
            }
            Some(av) if av == want_av => {}
            Some(av) => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({av}) does not match the expected API version ({want_av})"
                )))
            }
        }
        match m.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                m.insert("kind".into(), Value::String(resource.kind.clone()));
            }
            Some(k) if k == resource.kind => {}
            Some(k) => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    resource.kind
                )))
            }
        }
        if let Some(md) = m.get("metadata") {
            if !md.is_object() && !md.is_null() {
                return Err(ApiError::bad_request("metadata must be an object"));
            }
        }
        Ok(())
    }

    /// A whole body's decoding checks: its type, that it decodes into the
    /// kind's Go type, and `fieldValidation` on its fields; the warnings
    /// the answer carries.
    pub(crate) fn check_body(
        &self,
        resource: &ResourceInfo,
        obj: &mut Value,
        opts: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        self.check_type(resource, obj)?;
        self.check_decodes(resource, obj)?;
        self.check_fields(resource, obj, opts)
    }

    /// Refuses a body upstream's decoder could not read into the kind's Go
    /// type: 400, in the handler's words.
    pub(crate) fn check_decodes(
        &self,
        resource: &ResourceInfo,
        obj: &mut Value,
    ) -> Result<(), ApiError> {
        match schema::decode_object(resource, obj) {
            Ok(()) => Ok(()),
            Err(e) => Err(ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: {e}",
                kind = resource.kind,
                version = resource.version,
            ))),
        }
    }

    /// Refuses a JSON, merge or strategic merge patch whose result does not
    /// decode: 422 with the cause on `patch`, as upstream's patch handler.
    fn check_patched_decodes(
        &self,
        resource: &ResourceInfo,
        out: &mut Value,
    ) -> Result<(), ApiError> {
        let Err(e) = schema::decode_object(resource, out) else {
            return Ok(());
        };
        let shown = serde_json::to_string(&out.to_string()).unwrap_or_default();
        Err(ApiError::invalid(
            "",
            "",
            "",
            vec![Cause::new(
                "FieldValueInvalid",
                "patch",
                format!("Invalid value: {shown}: {e}"),
            )],
        ))
    }

    /// Refuses an apply configuration that does not fit the kind's types,
    /// as upstream's field manager does before merging it.
    fn check_applied_decodes(
        &self,
        resource: &ResourceInfo,
        applied: &mut Value,
    ) -> Result<(), ApiError> {
        match schema::decode_object(resource, applied) {
            Ok(()) => Ok(()),
            Err(e) => Err(ApiError::bad_request(format!(
                "failed to create typed patch object ({}, Kind={}): {e}",
                resource.api_version(),
                resource.kind
            ))),
        }
    }

    /// Applies `fieldValidation`: Strict fails on unknown fields, Warn
    /// returns them as warnings, Ignore drops the check.
    pub(crate) fn check_fields(
        &self,
        resource: &ResourceInfo,
        obj: &Value,
        opts: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        let mode = opts.field_validation.unwrap_or(FieldValidation::Warn);
        if mode == FieldValidation::Ignore {
            return Ok(Vec::new());
        }
        let unknown = schema::unknown_fields(resource, obj);
        if unknown.is_empty() {
            return Ok(Vec::new());
        }
        let msgs: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        if mode == FieldValidation::Strict {
            return Err(ApiError::bad_request(format!(
                "strict decoding error: {}",
                msgs.join(", ")
            )));
        }
        Ok(msgs)
    }

    /// 404 when the namespace is missing, 403 when it is terminating.
    pub(crate) fn check_namespace_open(&self, ns: &str) -> Result<(), ApiError> {
        let nsr = self.resource("", "v1", "namespaces")?;
        let Some(rec) = self.store.get(&nsr.storage_key(), ns) else {
            return Err(ApiError::not_found("namespaces", "", ns));
        };
        let deleting = match self.namespaces_deleting.is_deleting(ns, &rec) {
            Some(d) => d,
            None => meta::is_deleting(&super::decode(&rec)?),
        };
        if deleting {
            return Err(ApiError::new(
                403,
                "Forbidden",
                format!(
                    "unable to create new content in namespace {ns} because it is being terminated"
                ),
            )
            .with_details(ns, "", "namespaces"));
        }
        Ok(())
    }

    pub async fn create(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
        caller: &Caller,
    ) -> Result<WriteResult, ApiError> {
        if !resource.verbs.contains(&"create") {
            return Err(ApiError::method_not_allowed(format!(
                "create is not supported on resources of kind \"{}\"",
                resource.plural
            )));
        }
        if resource.is_review() {
            return self.create_review(resource, ns, obj, opts);
        }
        if let Some(stored) = self.stored_as(resource) {
            return self
                .create_converted(resource, &stored, ns, obj, opts, caller)
                .await;
        }
        let mgr = manager(opts, caller);
        let now = self.now_string();
        let (obj, warnings) =
            self.checked_create(resource, ns, obj, opts, &mgr, &now, &self.rng)?;
        let name = meta::name(&obj).to_string();
        self.finish_create(resource, ns, &name, obj, opts, warnings)
            .await
    }

    /// A create's object checked and prepared for the commit, and the
    /// warnings its answer carries: made at `now` by `manager`, drawing
    /// its random values from `draws`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn checked_create(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
        manager: &str,
        now: &str,
        draws: &Rng,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let warnings = self.check_body(resource, &mut obj, opts)?;
        self.prepare_create(resource, ns, &mut obj, Some(manager), now, draws)?;
        Ok((obj, warnings))
    }

    /// Everything a create does before the commit: namespace, name,
    /// server metadata, status reset, defaulting, admission, validation.
    /// With a `manager`, its managedFields entry is recorded where
    /// upstream's handler records it: after the scheme defaults, before
    /// admission and the create strategy add their fields.
    pub(crate) fn prepare_create(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        obj: &mut Value,
        manager: Option<&str>,
        now: &str,
        draws: &Rng,
    ) -> Result<(), ApiError> {
        let m = meta::metadata_mut(obj);
        if resource.namespaced() {
            match m.get("namespace").and_then(Value::as_str) {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {
                    m.insert("namespace".into(), Value::String(ns.to_string()));
                }
            }
        } else {
            m.remove("namespace");
        }
        if m.get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
        {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        m.remove("resourceVersion");
        let name = m
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() {
            match m.get("generateName").and_then(Value::as_str) {
                Some(g) if !g.is_empty() => {
                    let g = g.to_string();
                    m.insert(
                        "name".into(),
                        Value::String(format!("{g}{}", draws.suffix(5))),
                    );
                }
                _ => {
                    return Err(ApiError::invalid(
                        &resource.kind,
                        &resource.group,
                        "",
                        vec![Cause::new(
                            "FieldValueRequired",
                            "metadata.name",
                            "Required value: name or generateName is required",
                        )],
                    ))
                }
            }
        }
        for k in SERVER_META {
            m.remove(*k);
        }
        m.insert("uid".into(), Value::String(draws.uuid()));
        m.insert("creationTimestamp".into(), Value::String(now.to_string()));
        if tracks_generation(resource) {
            m.insert("generation".into(), json!(1));
        }
        if !keeps_status_on_create(resource) {
            if let Some(o) = obj.as_object_mut() {
                o.remove("status");
            }
        }
        if resource.namespaced() {
            self.check_namespace_open(ns)?;
        }
        defaults::apply_scheme(resource, obj);
        if let Some(mgr) = manager {
            // The status of a resource with a status subresource is reset
            // by the strategy, so upstream's field manager leaves it out.
            let status = match obj.as_object_mut() {
                Some(o) if resource.has_subresource("status") => o.remove("status"),
                _ => None,
            };
            patch::track_update(resource, None, obj, mgr, None, now);
            if let (Some(st), Some(o)) = (status, obj.as_object_mut()) {
                o.insert("status".into(), st);
            }
        }
        let mut suffix = move || draws.suffix(5);
        defaults::admit(
            resource,
            obj,
            &mut defaults::Context {
                random_suffix: &mut suffix,
            },
        );
        self.admit(resource, obj, None)?;
        self.node_restriction(resource, "", Some(obj), None)?;
        let causes = validation::validate(resource, obj, None);
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                &resource.kind,
                &resource.group,
                meta::name(obj),
                causes,
            ));
        }
        Ok(())
    }

    /// Commits a prepared create and answers it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn finish_create(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        mut obj: Value,
        opts: &WriteOptions,
        warnings: Vec<String>,
    ) -> Result<WriteResult, ApiError> {
        if opts.dry_run {
            return Ok(WriteResult {
                obj,
                created: true,
                warnings,
            });
        }
        let attrs = attrs::compute(resource, &obj);
        let key = object_key(resource, ns, name);
        let mut exists = false;
        let mut attrs = Some(attrs);
        let handing = self.begin_handoff(resource, &mut obj, keeps_answer(resource, opts));
        let committed = self
            .store
            .write(&resource.storage_key(), &key, &mut |cur, rev| {
                if cur.is_some() {
                    exists = true;
                    return WriteOp::Abort;
                }
                super::stamp_revision(&mut obj, rev);
                WriteOp::Put {
                    bytes: encode(&obj),
                    attrs: attrs.take().unwrap_or_default(),
                }
            })
            .map_err(store_error)?;
        if exists {
            return Err(ApiError::already_exists(
                &resource.plural,
                &resource.group,
                name,
            ));
        }
        let kept = self.settle(resource, obj, handing, &committed);
        self.store
            .wait_durable(committed.rev)
            .await
            .map_err(store_error)?;
        if let Some(o) = &kept {
            self.after_commit(resource, Some(o));
        }
        Ok(WriteResult {
            obj: kept.unwrap_or_else(|| version_stub(committed.rev)),
            created: true,
            warnings,
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn update(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        mut body: Value,
        sub: Option<&str>,
        opts: &WriteOptions,
        caller: &Caller,
    ) -> Result<WriteResult, ApiError> {
        Self::allow(resource, "update")?;
        let part = Part::of(resource, sub)?;
        let warnings = self.check_body(resource, &mut body, opts)?;
        let body_name = meta::name(&body).to_string();
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if resource.namespaced() {
            let bns = meta::namespace(&body);
            if !bns.is_empty() && bns != ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        let precondition = !meta::resource_version(&body).is_empty();
        let mgr = manager(opts, caller);
        let mut r = self
            .update_with(
                resource,
                ns,
                name,
                part,
                opts,
                Some(&mgr),
                precondition,
                false,
                &mut |_cur| Ok(body.clone()),
            )
            .await?;
        r.warnings.extend(warnings);
        Ok(r)
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn patch(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: PatchBody<'_>,
        sub: Option<&str>,
        opts: &WriteOptions,
        caller: &Caller,
    ) -> Result<WriteResult, ApiError> {
        Self::allow(resource, "patch")?;
        let part = Part::of(resource, sub)?;
        let mgr = manager(opts, caller);
        if kind == PatchType::Apply {
            // Apply bodies are YAML; one given as a value is read from its
            // JSON as a request's would be.
            let json;
            let bytes = match body {
                PatchBody::Bytes(b) => b,
                PatchBody::Value(v) => {
                    json = serde_json::to_vec(v).unwrap_or_default();
                    &json
                }
            };
            return self
                .apply(resource, ns, name, bytes, part, opts, &mgr)
                .await;
        }
        if opts.force {
            return Err(ApiError::bad_request(
                "force is only allowed for apply patches",
            ));
        }
        let mut warnings = Vec::new();
        let mut r = self
            .update_with(
                resource,
                ns,
                name,
                part,
                opts,
                Some(&mgr),
                false,
                patch_reads_managed(kind, &body),
                &mut |cur| {
                    let (out, w) = self.patched(kind, resource, cur, body, opts)?;
                    warnings = w;
                    Ok(out)
                },
            )
            .await?;
        r.warnings.extend(warnings);
        Ok(r)
    }

    /// What a patch proposes: `body` applied to `cur`, checked for its
    /// type, with the warnings its fields give.
    pub(crate) fn patched(
        &self,
        kind: PatchType,
        resource: &ResourceInfo,
        cur: &Value,
        body: PatchBody<'_>,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let mut out = patch::apply_patch_body(kind, resource, cur, body)?;
        self.check_type(resource, &mut out)?;
        self.check_patched_decodes(resource, &mut out)?;
        let warnings = self.check_fields(resource, &out, opts)?;
        Ok((out, warnings))
    }

    /// Server-side apply: creates the object when absent.
    #[allow(clippy::too_many_arguments)]
    async fn apply(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        body: &[u8],
        part: Part,
        opts: &WriteOptions,
        mgr: &str,
    ) -> Result<WriteResult, ApiError> {
        if opts.field_manager.as_deref().unwrap_or("").is_empty() {
            return Err(ApiError::bad_request(
                "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            ));
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| ApiError::bad_request("apply patch is not valid UTF-8"))?;
        let mut applied: Value = serde_saphyr::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        self.check_type(resource, &mut applied)?;
        self.check_applied_decodes(resource, &mut applied)?;
        let warnings = self.check_fields(resource, &applied, opts)?;
        let an = meta::name(&applied);
        if !an.is_empty() && an != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({an}) does not match the name on the URL ({name})"
            )));
        }
        let now = self.now_string();
        if self
            .store
            .get(&resource.storage_key(), &object_key(resource, ns, name))
            .is_none()
        {
            if part != Part::Main {
                return Err(ApiError::not_found(&resource.plural, &resource.group, name));
            }
            let mut obj =
                patch::server_side_apply(resource, None, &applied, mgr, opts.force, &now)?;
            meta::metadata_mut(&mut obj).insert("name".into(), Value::String(name.to_string()));
            self.check_type(resource, &mut obj)?;
            // Created as its storage version when applied through another.
            let stored = self.stored_as(resource);
            let target: &ResourceInfo = stored.as_deref().unwrap_or(resource);
            let mut obj = kubesim_core::convert::to_storage(resource, obj)?;
            // Server-side apply has recorded its manager already.
            self.prepare_create(target, ns, &mut obj, None, &self.now_string(), &self.rng)?;
            return match self
                .finish_create(target, ns, name, obj, opts, warnings.clone())
                .await
            {
                // Lost a race with another creator: apply onto what it made.
                Err(e) if e.code == 409 => {
                    Box::pin(self.apply(resource, ns, name, body, part, opts, mgr)).await
                }
                Ok(mut r) => {
                    r.obj = kubesim_core::convert::from_storage(resource, r.obj);
                    Ok(r)
                }
                other => other,
            };
        }
        let mut r = self
            // Apply records its own managedFields entry.
            .update_with(
                resource,
                ns,
                name,
                part,
                opts,
                None,
                false,
                true,
                &mut |cur| {
                    let mut out = patch::server_side_apply(
                        resource,
                        Some(cur),
                        &applied,
                        mgr,
                        opts.force,
                        &now,
                    )?;
                    self.check_type(resource, &mut out)?;
                    Ok(out)
                },
            )
            .await?;
        r.warnings.extend(warnings);
        Ok(r)
    }

    /// The read-modify-write loop shared by update and patch. Unless the
    /// mutation `reads_managed`, it sees the current object with a `null`
    /// placeholder for managedFields (see `managed_fields_text`): proposing the
    /// placeholder keeps the stored list, as proposing none does.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn update_with(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        part: Part,
        opts: &WriteOptions,
        mgr: Option<&str>,
        precondition: bool,
        reads_managed: bool,
        mutate: &mut (dyn FnMut(&Value) -> Result<Value, ApiError> + Send),
    ) -> Result<WriteResult, ApiError> {
        if let Some(stored) = self.stored_as(resource) {
            // The mutation sees and returns the version it was written for;
            // the rest of the loop works on the stored version.
            let mut through = |cur: &Value| -> Result<Value, ApiError> {
                let view = kubesim_core::convert::from_storage(resource, cur.clone());
                kubesim_core::convert::to_storage(resource, mutate(&view)?)
            };
            let mut r = Box::pin(self.update_with(
                &stored,
                ns,
                name,
                part,
                opts,
                mgr,
                precondition,
                reads_managed,
                &mut through,
            ))
            .await?;
            r.obj = kubesim_core::convert::from_storage(resource, r.obj);
            return Ok(r);
        }
        for _ in 0..MAX_RETRIES {
            let rec = self.get_record(resource, ns, name)?;
            let (mut cur, mut managed) = decode_apart(&rec)?;
            if reads_managed {
                super::restore_managed(&mut cur, managed.take().as_deref());
            }
            let proposed = mutate(&cur)?;
            // A proposal with a list of its own (a client echoing
            // the object it read) is compared with the stored list
            // as a value: echoing it unchanged changes nothing.
            if managed.is_some() && patch::managed_fields::raw(&proposed).is_some() {
                super::restore_managed(&mut cur, managed.take().as_deref());
            }
            let managed = managed.as_deref();
            let rv = meta::resource_version(&proposed);
            if !rv.is_empty() && rv != rec.rev.to_string() {
                return Err(ApiError::stale(&resource.plural, &resource.group, name));
            }
            let rng = self.rng.clone();
            let new = self.prepare_update(
                resource,
                ns,
                name,
                &cur,
                managed,
                proposed,
                part,
                mgr,
                &self.now_string(),
                &mut move || rng.suffix(5),
            )?;
            let unchanged = same_object(&new, &cur);
            if unchanged || opts.dry_run {
                // Nothing written: the current object, or what would
                // have been.
                let mut obj = if unchanged { cur } else { new };
                super::restore_managed(&mut obj, managed);
                return Ok(WriteResult {
                    obj,
                    created: false,
                    warnings: Vec::new(),
                });
            }
            let was = || {
                super::restore_managed(&mut cur, managed);
                Ok(cur)
            };
            let committed = self
                .commit_answer(resource, ns, name, &rec, new, managed, opts, was)
                .await?;
            match committed {
                Some(obj) => {
                    return Ok(WriteResult {
                        obj,
                        created: false,
                        warnings: Vec::new(),
                    })
                }
                None if precondition => {
                    return Err(ApiError::stale(&resource.plural, &resource.group, name));
                }
                None => continue,
            }
        }
        Err(ApiError::conflict(
            &resource.plural,
            &resource.group,
            name,
            "too many concurrent updates; please try again",
        ))
    }

    /// Commits `new` over `rec` and, once durable, answers the object
    /// written, or when the write removed it (its last finalizer gone),
    /// the object as it was (`was`) at the removal's revision. None when
    /// the object has moved past `rec`.
    #[allow(clippy::too_many_arguments)]
    async fn commit_answer(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        rec: &Arc<Record>,
        new: Value,
        managed: Option<&RawValue>,
        opts: &WriteOptions,
        was: impl FnOnce() -> Result<Value, ApiError>,
    ) -> Result<Option<Value>, ApiError> {
        let keep = keeps_answer(resource, opts);
        let Some((obj, rev)) = self.commit_update(resource, ns, name, rec, new, managed, keep)?
        else {
            return Ok(None);
        };
        self.store.wait_durable(rev).await.map_err(store_error)?;
        self.after_commit(resource, obj.as_ref());
        Ok(Some(match obj {
            Some(o) => o,
            None => super::at_revision(was()?, rev),
        }))
    }

    /// Builds the object an update stores from the current one and the
    /// proposal: server metadata kept, subresource boundaries enforced,
    /// generation counted, defaults, validation, managedFields.
    /// `cur_managed` is the current list as text when `cur` was decoded
    /// apart.
    /// `now` is the time a managedFields entry records; `suffix` draws
    /// the random suffixes defaulting may need. Nothing else read depends
    /// on the server's state, save admission of the resources
    /// [`admit`](Self::admit) says.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn prepare_update(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        cur: &Value,
        cur_managed: Option<&RawValue>,
        proposed: Value,
        part: Part,
        mgr: Option<&str>,
        now: &str,
        suffix: &mut dyn FnMut() -> String,
    ) -> Result<Value, ApiError> {
        let mut new = match part {
            Part::Main => {
                let mut n = proposed;
                if resource.has_subresource("status") {
                    match cur.get("status") {
                        Some(s) => {
                            n["status"] = s.clone();
                        }
                        None => {
                            if let Some(o) = n.as_object_mut() {
                                o.remove("status");
                            }
                        }
                    }
                }
                n
            }
            // A status write usually proposes the current object with a
            // new status: then the proposal is the result, uncopied.
            Part::Status if same_but_status(cur, &proposed) => proposed,
            Part::Status => {
                let mut proposed = proposed;
                let mut n = cur.clone();
                match proposed.get_mut("status") {
                    Some(s) => n["status"] = s.take(),
                    None => {
                        if let Some(o) = n.as_object_mut() {
                            o.remove("status");
                        }
                    }
                }
                // A mutation that keeps managedFields itself (server-side
                // apply) has recorded its entry in the proposal.
                let recorded = proposed
                    .get_mut("metadata")
                    .and_then(|m| m.get_mut("managedFields"));
                if let (None, Some(list)) = (mgr, recorded) {
                    meta::metadata_mut(&mut n).insert("managedFields".into(), list.take());
                }
                n
            }
        };
        {
            // Read in place: copying the current metadata would copy its
            // managedFields too.
            let empty = Map::new();
            let cm = kubesim_core::meta::metadata(cur).unwrap_or(&empty);
            let m = meta::metadata_mut(&mut new);
            m.insert("name".into(), Value::String(name.to_string()));
            if resource.namespaced() {
                m.insert("namespace".into(), Value::String(ns.to_string()));
            } else {
                m.remove("namespace");
            }
            if let Some(uid) = m.get("uid").and_then(Value::as_str) {
                if uid != meta::uid(cur) {
                    return Err(ApiError::conflict(
                        &resource.plural,
                        &resource.group,
                        name,
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                            meta::uid(cur)
                        ),
                    ));
                }
            }
            for k in SERVER_META {
                match cm.get(*k) {
                    Some(v) => {
                        m.insert(k.to_string(), v.clone());
                    }
                    None => {
                        m.remove(*k);
                    }
                }
            }
            if let Some(v) = cm.get("resourceVersion") {
                m.insert("resourceVersion".into(), v.clone());
            }
            if meta::is_deleting(cur) {
                let old: Vec<String> = meta::finalizers(cur);
                let added = m
                    .get("finalizers")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .any(|f| !old.iter().any(|o| o == f))
                    })
                    .unwrap_or(false);
                if added {
                    return Err(ApiError::invalid(
                        &resource.kind,
                        &resource.group,
                        name,
                        vec![Cause::forbidden(
                            "metadata.finalizers",
                            "no new finalizers can be added if the object is being deleted",
                        )],
                    ));
                }
            }
        }
        if tracks_generation(resource) && part == Part::Main && spec_differs(&new, cur) {
            let g = cur
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta::metadata_mut(&mut new).insert("generation".into(), json!(g + 1));
        }
        defaults::apply(
            resource,
            &mut new,
            &mut defaults::Context {
                random_suffix: suffix,
            },
        );
        self.admit(resource, &mut new, Some(cur))?;
        let sub = if part == Part::Status { "status" } else { "" };
        self.node_restriction(resource, sub, Some(&new), Some(cur))?;
        let causes = match part {
            Part::Main => validation::validate(resource, &new, Some(cur)),
            Part::Status => validation::validate_status_update(resource, &new, cur),
        };
        if !causes.is_empty() {
            return Err(ApiError::invalid(
                &resource.kind,
                &resource.group,
                name,
                causes,
            ));
        }
        // None: the mutation keeps managedFields itself (server-side apply).
        // Nothing is recorded when nothing changed.
        if let Some(mgr) = mgr {
            let sub = if part == Part::Status {
                Some("status")
            } else {
                None
            };
            patch::track_update_if_changed(resource, cur, cur_managed, &mut new, mgr, sub, now);
        }
        Ok(new)
    }

    /// Before a commit of `obj` to `resource`: when the caller `keep`s the
    /// value, the shapes in-process watchers wait for are copied from it
    /// now (see `values_to_watchers`); the commit sets `resourceVersion`, so it is set
    /// to a placeholder first, where the commit will put it. Otherwise the
    /// value itself goes to them after the commit.
    fn begin_handoff(&self, resource: &ResourceInfo, obj: &mut Value, keep: bool) -> Handing {
        if !keep {
            return Handing::Moved;
        }
        meta::metadata_mut(obj).insert("resourceVersion".into(), Value::String(String::new()));
        Handing::Copied(self.handoff.prepare(&resource.storage_key(), obj))
    }

    /// After a commit of `obj`: the history compacted if due, and `obj`
    /// handed to the in-process watchers. Returns `obj` when its caller
    /// keeps it; None when it went to the watchers uncopied.
    fn settle(
        &self,
        resource: &ResourceInfo,
        obj: Value,
        handing: Handing,
        committed: &kubesim_store::Committed,
    ) -> Option<Value> {
        self.compact_if_due();
        // The commit's event names its storage resource: no key to build.
        self.after_write_ttl(committed.event.as_deref());
        match handing {
            Handing::Copied(prepared) => {
                if let Some(p) = prepared {
                    self.handoff.deliver(p, committed);
                }
                Some(obj)
            }
            Handing::Moved => {
                self.handoff
                    .hand_over(&resource.storage_key(), obj, committed);
                None
            }
        }
    }

    /// Commits `new` if the object is still at `expected`'s revision.
    /// Returns None on a lost race; Some((None, rev)) when the write removed
    /// the object because its last finalizer went away.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn commit_update(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        expected: &Arc<Record>,
        new: Value,
        managed: Option<&RawValue>,
        keep: bool,
    ) -> Result<Option<(Option<Value>, u64)>, ApiError> {
        let remove = meta::is_deleting(&new)
            && meta::finalizers(&new).is_empty()
            && grace_elapsed(&new)
            && !namespace_finalizers_pending(resource, &new);
        self.commit_if_unchanged(resource, ns, name, expected, new, managed, remove, keep)
    }

    /// Stores `new` (or, with `remove`, deletes the object leaving `new` as
    /// its final state) if the object is still at `expected`'s revision;
    /// `new` is stamped with the write's revision. None on a lost race.
    /// Without `keep`, the caller gets [`version_stub`] instead of `new`,
    /// which goes to the in-process watchers uncopied. `managed` is the
    /// managedFields text of an object decoded apart, written where `new`
    /// still holds its placeholder and put back into the answer.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn commit_if_unchanged(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        expected: &Arc<Record>,
        mut new: Value,
        managed: Option<&RawValue>,
        remove: bool,
        keep: bool,
    ) -> Result<Option<(Option<Value>, u64)>, ApiError> {
        let attrs = if remove {
            None
        } else {
            Some(attrs::compute(resource, &new))
        };
        let mut attrs = attrs;
        let mut raced = false;
        let handing = self.begin_handoff(resource, &mut new, keep);
        let committed = self
            .store
            .write(
                &resource.storage_key(),
                &object_key(resource, ns, name),
                &mut |cur, rev| {
                    match cur {
                        Some(c) if c.rev == expected.rev => {}
                        _ => {
                            raced = true;
                            return WriteOp::Abort;
                        }
                    }
                    super::stamp_revision(&mut new, rev);
                    let bytes = encode_with(&new, managed);
                    if remove {
                        WriteOp::Delete { bytes }
                    } else {
                        WriteOp::Put {
                            bytes,
                            attrs: attrs.take().unwrap_or_default(),
                        }
                    }
                },
            )
            .map_err(store_error)?;
        if raced {
            return Ok(None);
        }
        let kept = self.settle(resource, new, handing, &committed);
        let answer = (!remove).then(|| match kept {
            Some(mut obj) => {
                super::restore_managed(&mut obj, managed);
                obj
            }
            None => version_stub(committed.rev),
        });
        Ok(Some((answer, committed.rev)))
    }
}

/// How a commit's value reaches the in-process watchers.
enum Handing {
    /// Their shapes were copied before the commit (None: nobody watches);
    /// the caller keeps the value.
    Copied(Option<super::values_to_watchers::Prepared>),
    /// The value itself goes to them after the commit.
    Moved,
}

/// Whether a write answers its caller with the written object: unless the
/// caller asked for the resourceVersion only, and nothing the server does
/// after the commit reads the object.
fn keeps_answer(resource: &ResourceInfo, opts: &WriteOptions) -> bool {
    !opts.version_only || Server::reads_committed(resource)
}

/// Whether applying a patch may read the current managedFields: a JSON
/// Patch may test, copy or move any path, and a merge patch that names the
/// list (or replaces the metadata) is applied to the list as stored.
pub(super) fn patch_reads_managed(kind: PatchType, body: &PatchBody<'_>) -> bool {
    match (kind, body) {
        (PatchType::Json, _) => true,
        (_, PatchBody::Value(v)) => v
            .get("metadata")
            .is_some_and(|m| !m.is_object() || m.get("managedFields").is_some()),
        (_, PatchBody::Bytes(b)) => b.windows(13).any(|w| w == b"managedFields"),
    }
}

/// The answer to a caller that wants only the resourceVersion written.
fn version_stub(rev: u64) -> Value {
    kubesim_runtime::version_answer(&rev.to_string())
}

/// Whether `proposed` has the keys of `cur` in the same order, with the
/// same values but for `status`: what copying `cur` and setting the
/// proposal's status in it would give.
fn same_but_status(cur: &Value, proposed: &Value) -> bool {
    match (cur, proposed) {
        (Value::Object(c), Value::Object(p)) => {
            c.len() == p.len()
                && c.iter().zip(p.iter()).all(|((ck, cv), (pk, pv))| {
                    ck == pk && (ck == "status" || same::values(cv, pv))
                })
        }
        _ => false,
    }
}

/// `a == b`, with `status` compared first: most writes are status writes,
/// and a whole-object comparison would go through the unchanged metadata
/// (managedFields included) and spec before reaching it.
pub(super) fn same_object(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            same::options(a.get("status"), b.get("status")) && same::maps_but(a, b, Some("status"))
        }
        _ => a == b,
    }
}

/// Whether a deleting object may go: its grace period is zero (finalizer
/// deletions) — a graceful pod waits for its kubelet's final delete.
fn grace_elapsed(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
        == 0
}

/// A namespace also waits for `spec.finalizers` (emptied by finalize).
fn namespace_finalizers_pending(resource: &ResourceInfo, obj: &Value) -> bool {
    resource.group.is_empty()
        && resource.plural == "namespaces"
        && obj
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_differs_ignores_metadata_and_status() {
        let a = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},
            "spec":{"x":1,"y":2},"status":{"phase":"Pending"}});
        let mut b = json!({"spec":{"y":2,"x":1},"status":{},"metadata":{"name":"b"},
            "kind":"Pod","apiVersion":"v2"});
        assert!(!spec_differs(&a, &b));
        b["extra"] = json!(null);
        assert!(spec_differs(&a, &b));
        assert!(spec_differs(&b, &a));
        b.as_object_mut().unwrap().remove("extra");
        b["spec"]["x"] = json!(3);
        assert!(spec_differs(&a, &b));
        assert!(!spec_differs(&json!(1), &json!({"status":{}})));
    }

    #[test]
    fn same_object_is_equality() {
        let a = json!({"metadata":{"name":"a"},"spec":{"x":1},"status":{"p":1}});
        let b = json!({"status":{"p":1},"spec":{"x":1},"metadata":{"name":"a"}});
        assert!(same_object(&a, &b));
        for other in [
            json!({"metadata":{"name":"a"},"spec":{"x":1}}),
            json!({"metadata":{"name":"a"},"spec":{"x":1},"status":{"p":2}}),
            json!({"metadata":{"name":"a"},"spec":{"x":2},"status":{"p":1}}),
            json!({"metadata":{"name":"a"},"spec":{"x":1},"stat":{"p":1}}),
            json!([1]),
        ] {
            assert_eq!(same_object(&a, &other), a == other, "{other}");
            assert_eq!(same_object(&other, &a), a == other, "{other}");
        }
        assert!(same_object(&json!([1]), &json!([1])));
    }
}
