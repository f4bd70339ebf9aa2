//! ControllerRevisions: the templates a StatefulSet or DaemonSet has had,
//! one object per template named `<owner>-<hash>`, numbered in the order
//! they became current. `kubectl rollout history` and `undo` read them.
//! Used only when the API serves `apps/v1 controllerrevisions`.

use std::sync::Arc;

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{DeleteOptions, ResourceRef, WriteOptions};
use serde_json::{json, Value};

use crate::pods::{controller_ref, is_controlled_by};
use crate::Context;

pub fn controller_revisions() -> ResourceRef {
    ResourceRef::new("apps", "v1", "controllerrevisions")
}

pub fn served(ctx: &Context) -> bool {
    ctx.registry
        .get("apps", "v1", "controllerrevisions")
        .is_some()
}

/// The owner's revisions in `cache`.
pub fn owned(cache: &kubesim_runtime::Cache, owner: &Value) -> Vec<Arc<Value>> {
    cache
        .list_namespace(meta::namespace(owner))
        .into_iter()
        .filter(|r| is_controlled_by(r, meta::uid(owner)))
        .collect()
}

/// The template a revision recorded.
pub fn template_of(rev: &Value) -> Option<&Value> {
    rev.pointer("/data/spec/template")
}

/// Makes sure the revision `name` exists with the highest number; creates
/// it (or renumbers it when an older template comes back).
pub async fn ensure(
    ctx: &Context,
    cache: &kubesim_runtime::Cache,
    owner: &Value,
    name: &str,
    template: &Value,
) -> Result<(), ApiError> {
    let revs = owned(cache, owner);
    let max = revs
        .iter()
        .map(|r| r.get("revision").and_then(Value::as_i64).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let ns = meta::namespace(owner);
    if let Some(existing) = revs.iter().find(|r| meta::name(r) == name) {
        let n = existing
            .get("revision")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if n < max {
            let mut o = (**existing).clone();
            o["revision"] = json!(max + 1);
            match ctx
                .api
                .update(
                    &controller_revisions(),
                    ns,
                    o,
                    None,
                    &WriteOptions::default(),
                )
                .await
            {
                Ok(_) | Err(ApiError { code: 409, .. }) => {}
                Err(e) => return Err(e),
            }
        }
        return Ok(());
    }
    let labels = owner
        .pointer("/spec/selector/matchLabels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let rev = json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": ns, "labels": labels,
            "ownerReferences": [controller_ref(owner)]},
        "data": {"spec": {"template": template}},
        "revision": max + 1,
    });
    match ctx
        .api
        .create(&controller_revisions(), ns, rev, &WriteOptions::default())
        .await
    {
        Ok(_) => Ok(()),
        // Created by an earlier pass the cache has not shown yet.
        Err(e) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the oldest revisions beyond `limit`, never one in `live`.
pub async fn prune(
    ctx: &Context,
    cache: &kubesim_runtime::Cache,
    owner: &Value,
    live: &[&str],
) -> Result<(), ApiError> {
    let limit = owner
        .pointer("/spec/revisionHistoryLimit")
        .and_then(Value::as_i64)
        .unwrap_or(10)
        .max(0) as usize;
    let mut old: Vec<Arc<Value>> = owned(cache, owner)
        .into_iter()
        .filter(|r| !live.contains(&meta::name(r)))
        .collect();
    if old.len() <= limit {
        return Ok(());
    }
    old.sort_by_key(|r| r.get("revision").and_then(Value::as_i64).unwrap_or(0));
    let excess = old.len() - limit;
    for r in old.into_iter().take(excess) {
        let opts = DeleteOptions {
            precondition_uid: Some(meta::uid(&r).to_string()),
            ..Default::default()
        };
        match ctx
            .api
            .delete(
                &controller_revisions(),
                meta::namespace(&r),
                meta::name(&r),
                &opts,
            )
            .await
        {
            Ok(_)
            | Err(ApiError {
                code: 404 | 409, ..
            }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
