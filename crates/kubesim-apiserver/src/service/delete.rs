//! delete and deletecollection: preconditions, graceful deletion,
//! finalizers and propagation policies.

use kubesim_core::{meta, ApiError, Cause, ResourceInfo};
use kubesim_runtime::{DeleteOptions, ListOptions};
use kubesim_store::WriteOp;
use serde_json::{json, Value};

use super::{decode_apart, store_error, Server};

pub const FOREGROUND: &str = "foregroundDeletion";
pub const ORPHAN: &str = "orphan";

/// What a delete answers.
pub struct DeleteResult {
    /// The object (still present, or as it was) or a Success Status.
    pub body: Value,
    pub code: u16,
}

/// Deletes answer with the deleted object for these resources (upstream's
/// `ReturnDeletedObject`) and with a Status for the rest.
fn returns_object(resource: &ResourceInfo) -> bool {
    resource.is_custom()
        || (resource.group.is_empty()
            && matches!(resource.plural.as_str(), "pods" | "services" | "namespaces"))
}

/// Whether the work after a deletion of `resource` reads the deleted
/// object: a definition's custom objects go with it.
fn reads_deleted(resource: &ResourceInfo) -> bool {
    resource.group == "apiextensions.k8s.io" && resource.plural == "customresourcedefinitions"
}

/// What a delete answers once the object is gone: the object at the
/// deletion's revision, or a Status (see [`returns_object`]).
fn deleted_body(resource: &ResourceInfo, obj: Value, rev: u64) -> Value {
    if returns_object(resource) {
        super::at_revision(obj, rev)
    } else {
        success_status(resource, &obj)
    }
}

fn success_status(resource: &ResourceInfo, obj: &Value) -> Value {
    let mut details =
        json!({"name": meta::name(obj), "kind": resource.plural, "uid": meta::uid(obj)});
    if !resource.group.is_empty() {
        details["group"] = Value::String(resource.group.clone());
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// The grace period a pod gets, or 0 where deletion is immediate.
fn grace_period(resource: &ResourceInfo, obj: &Value, opts: &DeleteOptions) -> i64 {
    if !(resource.group.is_empty() && resource.plural == "pods") {
        return 0;
    }
    let spec = obj.get("spec");
    let bound = spec
        .and_then(|s| s.get("nodeName"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let phase = obj
        .get("status")
        .and_then(|s| s.get("phase"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if !bound || phase == "Succeeded" || phase == "Failed" {
        return 0;
    }
    let g = opts.grace_period_seconds.unwrap_or_else(|| {
        spec.and_then(|s| s.get("terminationGracePeriodSeconds"))
            .and_then(Value::as_i64)
            .unwrap_or(30)
    });
    // Upstream turns a negative grace into the minimum of one second.
    if g < 0 {
        1
    } else {
        g
    }
}

fn policy(resource: &ResourceInfo, opts: &DeleteOptions) -> Result<String, ApiError> {
    if let Some(p) = opts.propagation_policy.as_deref().filter(|p| !p.is_empty()) {
        if opts.orphan_dependents.is_some() {
            return Err(ApiError::invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                vec![Cause::invalid(
                    "propagationPolicy",
                    p,
                    "orphanDependents and deletionPropagation cannot be both set",
                )],
            ));
        }
        return match p {
            "Foreground" | "Background" | "Orphan" => Ok(p.to_string()),
            other => Err(ApiError::invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                vec![Cause::unsupported(
                    "propagationPolicy",
                    other,
                    &["Foreground", "Background", "Orphan"],
                )],
            )),
        };
    }
    Ok(match opts.orphan_dependents {
        Some(true) => "Orphan".into(),
        Some(false) => "Background".into(),
        // The legacy ReplicationController keeps its pods unless told
        // otherwise, as upstream's strategy for it says (kubectl always
        // sends a policy).
        None if resource.group.is_empty() && resource.plural == "replicationcontrollers" => {
            "Orphan".into()
        }
        None => "Background".into(),
    })
}

impl Server {
    pub async fn delete(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteResult, ApiError> {
        Self::allow(resource, "delete")?;
        if let Some(stored) = self.stored_as(resource) {
            let mut r = Box::pin(self.delete(&stored, ns, name, opts)).await?;
            if r.body.get("kind").and_then(Value::as_str) != Some("Status") {
                r.body = kubesim_core::convert::from_storage(resource, r.body);
            }
            return Ok(r);
        }
        let policy = policy(resource, opts)?;
        for _ in 0..16 {
            let rec = self.get_record(resource, ns, name)?;
            let (mut cur, managed) = decode_apart(&rec)?;
            self.node_restriction(resource, "", None, Some(&cur))?;
            let managed = managed.as_deref();
            // What answers with the object has its managedFields back.
            let whole = |mut obj: Value| {
                super::restore_managed(&mut obj, managed);
                obj
            };
            if let Some(uid) = opts.precondition_uid.as_deref() {
                if uid != meta::uid(&cur) {
                    return Err(ApiError::conflict(&resource.plural, &resource.group, name, &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}", meta::uid(&cur))));
                }
            }
            if let Some(rv) = opts.precondition_resource_version.as_deref() {
                if rv != meta::resource_version(&cur) {
                    return Err(ApiError::conflict(&resource.plural, &resource.group, name, &format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        meta::resource_version(&cur))));
                }
            }
            let grace = grace_period(resource, &cur, opts);
            let mut finalizers = meta::finalizers(&cur);
            let extra = match policy.as_str() {
                "Foreground" => Some(FOREGROUND),
                "Orphan" => Some(ORPHAN),
                _ => None,
            };
            if let Some(f) = extra {
                if !meta::is_deleting(&cur) && !finalizers.iter().any(|x| x == f) {
                    finalizers.push(f.to_string());
                }
            }
            let ns_pending = resource.group.is_empty()
                && resource.plural == "namespaces"
                && cur
                    .get("spec")
                    .and_then(|s| s.get("finalizers"))
                    .and_then(Value::as_array)
                    .is_some_and(|a| !a.is_empty());
            if grace > 0 || !finalizers.is_empty() || ns_pending {
                if meta::is_deleting(&cur) {
                    let existing = cur
                        .get("metadata")
                        .and_then(|m| m.get("deletionGracePeriodSeconds"))
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    // Only a shorter grace period changes a deletion in progress.
                    if grace >= existing || (!finalizers.is_empty() && grace > 0) || ns_pending {
                        return Ok(DeleteResult {
                            body: whole(cur),
                            code: 200,
                        });
                    }
                }
                let now = self.clock.now();
                let at = now
                    .checked_add(jiff::SignedDuration::from_secs(grace))
                    .unwrap_or(now);
                // Copied only for a deletion that keeps the object a while.
                let mut new = cur.clone();
                {
                    let m = meta::metadata_mut(&mut new);
                    m.insert(
                        "deletionTimestamp".into(),
                        Value::String(meta::format_time(at)),
                    );
                    m.insert("deletionGracePeriodSeconds".into(), json!(grace));
                    if !finalizers.is_empty() {
                        m.insert("finalizers".into(), json!(finalizers));
                    }
                }
                if ns_pending {
                    new["status"]["phase"] = Value::String("Terminating".into());
                }
                if opts.dry_run {
                    return Ok(DeleteResult {
                        body: whole(new),
                        code: 200,
                    });
                }
                match self.commit_update(resource, ns, name, &rec, new, managed, true)? {
                    Some((obj, rev)) => {
                        self.store.wait_durable(rev).await.map_err(store_error)?;
                        return Ok(match obj {
                            Some(o) => DeleteResult {
                                body: o,
                                code: if opts.orphan_dependents == Some(false) {
                                    202
                                } else {
                                    200
                                },
                            },
                            None => {
                                self.after_delete(resource, &cur);
                                DeleteResult {
                                    body: deleted_body(resource, whole(cur), rev),
                                    code: 200,
                                }
                            }
                        });
                    }
                    None => continue,
                }
            }
            if opts.dry_run {
                return Ok(DeleteResult {
                    body: deleted_body(resource, whole(cur), rec.rev),
                    code: 200,
                });
            }
            // The final state goes to the watchers uncopied; `cur` is kept
            // only when the answer or the work after the deletion reads it.
            let answer_object = returns_object(resource) && !opts.status_only;
            let status = (!answer_object).then(|| success_status(resource, &cur));
            let final_state = if answer_object || reads_deleted(resource) {
                cur.clone()
            } else {
                std::mem::take(&mut cur)
            };
            let Some((_, rev)) = self.commit_if_unchanged(
                resource,
                ns,
                name,
                &rec,
                final_state,
                managed,
                true,
                false,
            )?
            else {
                continue;
            };
            self.store.wait_durable(rev).await.map_err(store_error)?;
            self.after_delete(resource, &cur);
            return Ok(DeleteResult {
                body: status.unwrap_or_else(|| super::at_revision(whole(cur), rev)),
                code: 200,
            });
        }
        Err(ApiError::conflict(
            &resource.plural,
            &resource.group,
            name,
            "too many concurrent updates; please try again",
        ))
    }

    /// Work after an object is gone for good (see [`reads_deleted`]).
    fn after_delete(&self, resource: &ResourceInfo, obj: &Value) {
        if reads_deleted(resource) {
            // The custom objects go with their definition.
            for r in super::crd::crd_resources(obj) {
                let key = r.storage_key();
                if let Ok(snap) = self.store.snapshot(&key, None) {
                    for (k, rec) in snap.items.iter() {
                        let bytes = rec.bytes.clone();
                        let _ = self.store.write(&key, k, &mut |_, _| WriteOp::Delete {
                            bytes: bytes.clone(),
                        });
                    }
                }
            }
            self.unregister_crd(obj);
        }
    }

    pub async fn delete_collection(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let page = self.list(
            resource,
            ns,
            &ListOptions {
                limit: None,
                continue_token: None,
                ..list.clone()
            },
        )?;
        for rec in page.items {
            let obj = super::decode(&rec)?;
            match self
                .delete(resource, meta::namespace(&obj), meta::name(&obj), opts)
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}))
    }
}
