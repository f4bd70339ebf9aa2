//! The new ReplicaSet (the one whose template is the Deployment's) and
//! revisions: each new template gets the next revision number, and a
//! template rolled back to takes a new number too, so `kubectl rollout
//! history` and `undo` see the order in which templates were live.

use kubesim_core::{meta, ApiError};
use kubesim_runtime::{EventType, WriteOptions};
use serde_json::{json, Map, Value};

use super::{
    deployments, int, DeploymentController, Rollout, DESIRED_REPLICAS, HASH_LABEL, MAX_REPLICAS,
    REVISION,
};
use crate::hash::template_hash;
use crate::replicaset::replicasets;

/// Annotations of the Deployment never copied onto its ReplicaSets.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    "deployment.kubernetes.io/revision-history",
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// `template` without the pod-template-hash label (and without a labels
/// map left empty by its removal).
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(Value::Object(labels)) = t.pointer_mut("/metadata/labels") {
        labels.remove(HASH_LABEL);
        if labels.is_empty() {
            if let Some(Value::Object(m)) = t.get_mut("metadata") {
                m.remove("labels");
            }
        }
    }
    t
}

/// Equal templates, ignoring the hash label and null fields (kubectl
/// rollout undo sends the old template back with `creationTimestamp: null`).
pub fn same_template(a: &Value, b: &Value) -> bool {
    crate::hash::canonical_json(&without_hash(a)) == crate::hash::canonical_json(&without_hash(b))
}

pub fn revision_of(rs: &Value) -> i64 {
    meta::annotations(rs)
        .get(REVISION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Splits the Deployment's ReplicaSets (oldest first) into the new one and
/// the others. Several with the same template can exist after a hash
/// collision; the oldest wins, as upstream.
pub fn split(d: &Value, owned: Vec<Value>) -> (Option<Value>, Vec<Value>) {
    let template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut new_rs = None;
    let mut old = Vec::new();
    for rs in owned {
        let t = rs.pointer("/spec/template").unwrap_or(&Value::Null);
        if new_rs.is_none() && same_template(t, &template) {
            new_rs = Some(rs);
        } else {
            old.push(rs);
        }
    }
    (new_rs, old)
}

/// Copies the Deployment's annotations onto `rs` and raises its revision
/// to `revision` when lower; true when something changed.
fn stamp(d: &Value, rs: &mut Value, revision: i64) -> bool {
    let mut changed = false;
    let anns = meta::metadata_mut(rs)
        .entry("annotations")
        .or_insert_with(|| json!({}));
    if !anns.is_object() {
        *anns = json!({});
    }
    let Some(anns) = anns.as_object_mut() else {
        return false;
    };
    for (k, v) in meta::annotations(d) {
        if NOT_COPIED.contains(&k.as_str()) {
            continue;
        }
        if anns.get(&k).and_then(Value::as_str) != Some(v.as_str()) {
            anns.insert(k, json!(v));
            changed = true;
        }
    }
    let current: i64 = anns
        .get(REVISION)
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if current < revision {
        anns.insert(REVISION.into(), json!(revision.to_string()));
        changed = true;
    }
    changed
}

pub async fn sync(c: &DeploymentController, r: &mut Rollout, create: bool) -> Result<(), ApiError> {
    let max_old = r.old.iter().map(revision_of).max().unwrap_or(0);
    let next = max_old + 1;
    let min_ready = int(&r.d, "/spec/minReadySeconds");
    if let Some(rs) = r.new_rs.as_mut() {
        let mut copy = rs.clone();
        let stamped = stamp(&r.d, &mut copy, next);
        if stamped || int(&copy, "/spec/minReadySeconds") != min_ready {
            copy["spec"]["minReadySeconds"] = json!(min_ready);
            let ns = meta::namespace(&copy).to_string();
            let updated = c
                .ctx
                .api
                .update(&replicasets(), &ns, copy, None, &WriteOptions::default())
                .await?;
            *rs = c.remember(updated);
        }
        if crate::pods::condition(&r.d, "Progressing").is_none()
            && super::status::has_deadline(&r.d)
        {
            r.progress_note = Some((
                "FoundNewReplicaSet",
                format!("Found new replica set \"{}\"", meta::name(rs)),
            ));
        }
    } else if create {
        let rs = create_new(c, r, next).await?;
        r.new_rs = Some(rs);
    } else {
        return Ok(());
    }
    let revision = r.new_rs.as_ref().map(revision_of).unwrap_or(0);
    if revision > 0 && meta::annotations(&r.d).get(REVISION) != Some(&revision.to_string()) {
        // An update, as upstream's controller writes it: its role may
        // update Deployments, not patch them.
        let mut d = r.d.clone();
        d["metadata"]["annotations"][REVISION] = json!(revision.to_string());
        let ns = meta::namespace(&r.d).to_string();
        let updated = c
            .ctx
            .api
            .update(&deployments(), &ns, d, None, &WriteOptions::default())
            .await?;
        // Later writes of status must carry the new resourceVersion.
        if meta::uid(&updated) == meta::uid(&r.d) {
            r.d = updated;
        }
    }
    Ok(())
}

async fn create_new(
    c: &DeploymentController,
    r: &mut Rollout,
    revision: i64,
) -> Result<Value, ApiError> {
    let collisions =
        r.d.pointer("/status/collisionCount")
            .and_then(Value::as_i64);
    let template = r.d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let hash = template_hash(&template, collisions);
    let name = format!("{}-{hash}", meta::name(&r.d));
    let mut t = template.clone();
    set_label(&mut t, &hash);
    let mut selector = r.d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    if let Some(s) = selector.as_object_mut() {
        let ml = s.entry("matchLabels").or_insert_with(|| json!({}));
        if let Some(m) = ml.as_object_mut() {
            m.insert(HASH_LABEL.into(), json!(hash));
        }
    }
    let labels = t.pointer("/metadata/labels").cloned().unwrap_or(json!({}));
    // Sized as the strategy allows for a ReplicaSet starting from zero.
    let size = if super::is_rolling(&r.d) {
        super::rolling::new_rs_size(r, 0)
    } else {
        r.replicas()
    };
    let mut rs = json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": meta::namespace(&r.d),
            "labels": labels,
            "ownerReferences": [crate::pods::controller_ref(&r.d)],
        },
        "spec": {
            "replicas": 0,
            "minReadySeconds": int(&r.d, "/spec/minReadySeconds"),
            "selector": selector,
            "template": t,
        },
    });
    stamp(&r.d, &mut rs, revision);
    if let Some(Value::Object(a)) = rs.pointer_mut("/metadata/annotations") {
        a.insert(DESIRED_REPLICAS.into(), json!(r.replicas().to_string()));
        a.insert(
            MAX_REPLICAS.into(),
            json!((r.replicas() + r.max_surge()).to_string()),
        );
    }
    rs["spec"]["replicas"] = json!(size);
    let ns = meta::namespace(&r.d).to_string();
    match c
        .ctx
        .api
        .create(&replicasets(), &ns, rs, &WriteOptions::default())
        .await
    {
        Ok(created) => {
            c.ctx.recorder.record(
                &r.d,
                EventType::Normal,
                "ScalingReplicaSet",
                format!("Scaled up replica set {name} from 0 to {size}"),
            );
            r.progress_note = Some((
                "NewReplicaSetCreated",
                format!("Created new replica set \"{name}\""),
            ));
            Ok(c.remember(created))
        }
        Err(e) if e.code == 409 => {
            // The name is taken: ours from a pass whose write the cache has
            // not shown, or someone else's (a hash collision).
            let existing = c.ctx.api.get(&replicasets(), &ns, &name).await?;
            let ours = crate::pods::is_controlled_by(&existing, meta::uid(&r.d));
            if ours
                && same_template(
                    existing.pointer("/spec/template").unwrap_or(&Value::Null),
                    &template,
                )
            {
                return Ok(c.remember(existing));
            }
            let mut st = r.d.get("status").cloned().unwrap_or_else(|| json!({}));
            st["collisionCount"] = json!(collisions.unwrap_or(0) + 1);
            crate::replicaset::update_status(&*c.ctx.api, &deployments(), &r.d, st).await?;
            Err(ApiError::conflict(
                "replicasets",
                "apps",
                &name,
                "hash collision; retrying with a new collision count",
            ))
        }
        Err(e) => {
            c.ctx.recorder.record(
                &r.d,
                EventType::Warning,
                "FailedCreate",
                format!("Failed to create new replica set \"{name}\": {}", e.message),
            );
            Err(e)
        }
    }
}

fn set_label(template: &mut Value, hash: &str) {
    let m = match template.as_object_mut() {
        Some(m) => m,
        None => return,
    };
    let md = m.entry("metadata").or_insert_with(|| json!({}));
    let Some(md) = md.as_object_mut() else { return };
    let labels = md
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(l) = labels.as_object_mut() {
        l.insert(HASH_LABEL.into(), json!(hash));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_label_is_ignored_when_comparing_templates() {
        let a = json!({"metadata": {"labels": {"app": "w", HASH_LABEL: "abc"}}, "spec": {"x": 1}});
        let b = json!({"metadata": {"labels": {"app": "w"}}, "spec": {"x": 1}});
        let c = json!({"metadata": {"labels": {HASH_LABEL: "abc"}}, "spec": {"x": 1}});
        let d = json!({"metadata": {"creationTimestamp": null}, "spec": {"x": 1}});
        assert!(same_template(&a, &b));
        assert!(same_template(&c, &d));
        assert!(!same_template(&a, &d));
    }
}
