//! Subresources beyond status: scale, binding, eviction, finalize, log.

use kubesim_core::patch::{self, PatchType};
use kubesim_core::selector::LabelSelector;
use kubesim_core::{meta, schema, ApiError, Cause, ResourceInfo};
use kubesim_runtime::{DeleteOptions, WriteOptions};
use serde_json::{json, Value};

use super::write::{manager, Part, WriteResult};
use super::{decode_apart, Caller, Server};

/// Reads a dotted JSON path such as `.spec.replicas`.
fn at_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    meta::path(obj, path.trim_start_matches('.'))
}

fn set_path(obj: &mut Value, path: &str, v: Value) {
    let mut cur = obj;
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        if i == parts.len() - 1 {
            cur[*p] = v;
            return;
        }
        if cur.get(*p).is_none() {
            cur[*p] = json!({});
        }
        cur = &mut cur[*p];
    }
}

/// The label-selector string of a workload's `spec.selector`.
fn selector_string(sel: Option<&Value>) -> String {
    match sel {
        Some(Value::Object(m))
            if m.contains_key("matchLabels") || m.contains_key("matchExpressions") =>
        {
            LabelSelector::from_json(&Value::Object(m.clone()))
                .map(|s| s.to_string())
                .unwrap_or_default()
        }
        // ReplicationControllers use a plain map.
        Some(Value::Object(m)) => {
            let mut pairs: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect();
            pairs.sort();
            pairs.join(",")
        }
        _ => String::new(),
    }
}

fn scale_paths(resource: &ResourceInfo) -> (String, String, Option<String>) {
    match resource.crd.as_ref().and_then(|c| c.scale.as_ref()) {
        Some(s) => (
            s.spec_replicas.clone(),
            s.status_replicas.clone(),
            s.label_selector.clone(),
        ),
        None => (".spec.replicas".into(), ".status.replicas".into(), None),
    }
}

impl Server {
    /// The autoscaling/v1 Scale view of an object.
    pub fn scale_of(&self, resource: &ResourceInfo, obj: &Value) -> Value {
        let (spec_p, status_p, sel_p) = scale_paths(resource);
        let selector = match sel_p {
            Some(p) => at_path(obj, &p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            None => selector_string(obj.get("spec").and_then(|s| s.get("selector"))),
        };
        let m = meta::metadata(obj).cloned().unwrap_or_default();
        let mut md = serde_json::Map::new();
        for k in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = m.get(k) {
                md.insert(k.into(), v.clone());
            }
        }
        json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": md,
            "spec": {"replicas": at_path(obj, &spec_p).and_then(Value::as_i64).unwrap_or(0)},
            "status": {"replicas": at_path(obj, &status_p).and_then(Value::as_i64).unwrap_or(0), "selector": selector},
        })
    }

    pub fn get_scale(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> Result<Value, ApiError> {
        let obj = self.get(resource, ns, name)?;
        Ok(self.scale_of(resource, &obj))
    }

    /// PUT or PATCH of `/scale`: `change` turns the current Scale into the new one.
    pub async fn write_scale(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
        change: ScaleChange<'_>,
        opts: &WriteOptions,
        caller: &Caller,
    ) -> Result<Value, ApiError> {
        let (spec_p, _, _) = scale_paths(resource);
        let mgr = manager(opts, caller);
        let r = self
            .update_with(
                resource,
                ns,
                name,
                Part::Main,
                opts,
                Some(&mgr),
                false,
                false,
                &mut |cur| {
                    let scale = self.scale_of(resource, cur);
                    let new_scale = match &change {
                        ScaleChange::Replace(body) => {
                            let rv = meta::resource_version(body);
                            if !rv.is_empty() && rv != meta::resource_version(cur) {
                                return Err(ApiError::stale(
                                    &resource.plural,
                                    &resource.group,
                                    name,
                                ));
                            }
                            (*body).clone()
                        }
                        ScaleChange::Patch(kind, body) => {
                            let scale_info = scale_resource_info();
                            patch::apply_patch(*kind, &scale_info, &scale, body)?
                        }
                    };
                    if let Some(e) =
                        schema::decode_error_of("autoscaling", "v1", "Scale", &new_scale)
                    {
                        return Err(ApiError::bad_request(format!(
                            "Scale in version \"v1\" cannot be handled as a Scale: {e}"
                        )));
                    }
                    let replicas = new_scale
                        .get("spec")
                        .and_then(|s| s.get("replicas"))
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    if replicas < 0 {
                        return Err(ApiError::invalid(
                            "Scale",
                            "autoscaling",
                            name,
                            vec![Cause::invalid(
                                "spec.replicas",
                                &replicas.to_string(),
                                "must be greater than or equal to 0",
                            )],
                        ));
                    }
                    let mut out = cur.clone();
                    set_path(&mut out, &spec_p, json!(replicas));
                    Ok(out)
                },
            )
            .await;
        let WriteResult { obj, .. } = r?;
        Ok(self.scale_of(resource, &obj))
    }

    /// `POST pods/<name>/binding`: assigns the pod to a node, once.
    pub async fn bind(&self, ns: &str, name: &str, binding: &Value) -> Result<Value, ApiError> {
        let pods = self.resource("", "v1", "pods")?;
        let target = binding
            .get("target")
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if target.is_empty() {
            return Err(ApiError::invalid(
                "Binding",
                "",
                name,
                vec![Cause::required("target.name")],
            ));
        }
        for _ in 0..16 {
            let rec = self.get_record(&pods, ns, name)?;
            let (cur, managed) = decode_apart(&rec)?;
            if meta::is_deleting(&cur) {
                return Err(ApiError::conflict(
                    "pods",
                    "",
                    name,
                    "pod is being deleted, cannot be assigned to a host",
                ));
            }
            let node = cur
                .get("spec")
                .and_then(|s| s.get("nodeName"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if !node.is_empty() {
                return Err(ApiError::conflict(
                    "pods",
                    "",
                    name,
                    &format!("pod {name} is already assigned to node \"{node}\""),
                ));
            }
            let mut new = cur;
            let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
                // Only a store written before writes were type-checked can
                // hold such a pod.
                return Err(ApiError::internal(format!(
                    "the stored pod {name} cannot be decoded: its spec is not an object"
                )));
            };
            spec.insert("nodeName".into(), Value::String(target.to_string()));
            if let Some(ann) = binding
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .and_then(Value::as_object)
            {
                let m = meta::metadata_mut(&mut new);
                let a = m.entry("annotations").or_insert_with(|| json!({}));
                if let Some(a) = a.as_object_mut() {
                    for (k, v) in ann {
                        a.insert(k.clone(), v.clone());
                    }
                }
            }
            set_condition(&mut new, "PodScheduled", "True", &self.now_string());
            // The answer is a Status: the pod goes to the watchers uncopied.
            if let Some((_, rev)) =
                self.commit_update(&pods, ns, name, &rec, new, managed.as_deref(), false)?
            {
                self.store
                    .wait_durable(rev)
                    .await
                    .map_err(super::store_error)?;
                return Ok(
                    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
                );
            }
        }
        Err(ApiError::conflict(
            "pods",
            "",
            name,
            "too many concurrent updates; please try again",
        ))
    }

    /// `POST pods/<name>/eviction`: a graceful delete unless a
    /// PodDisruptionBudget forbids it (429).
    pub async fn evict(&self, ns: &str, name: &str, eviction: &Value) -> Result<Value, ApiError> {
        let pods = self.resource("", "v1", "pods")?;
        let pod = self.get(&pods, ns, name)?;
        let labels = meta::labels(&pod);
        let pdbs = self.resource("policy", "v1", "poddisruptionbudgets")?;
        let snap = self
            .store
            .snapshot(&pdbs.storage_key(), None)
            .map_err(super::store_error)?;
        let prefix = format!("{ns}/");
        let mut matching = Vec::new();
        for (k, rec) in snap.items.iter() {
            if !k.starts_with(prefix.as_str()) {
                continue;
            }
            let pdb = super::decode(rec)?;
            let Some(sel) = pdb.get("spec").and_then(|s| s.get("selector")) else {
                continue;
            };
            let Ok(sel) = LabelSelector::from_json(sel) else {
                continue;
            };
            if sel.is_empty() || !sel.matches_map(&labels) {
                continue;
            }
            matching.push(pdb);
        }
        // A pod that is not running (finished, pending, or already going)
        // disrupts nothing: upstream evicts it without asking the budget.
        let phase = pod
            .get("status")
            .and_then(|s| s.get("phase"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let exempt =
            matches!(phase, "Succeeded" | "Failed" | "Pending" | "") || meta::is_deleting(&pod);
        let dry_run = eviction
            .get("deleteOptions")
            .and_then(|d| d.get("dryRun"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if !exempt {
            if matching.len() > 1 {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(pdb) = matching.first() {
                self.take_disruption(&pdbs, ns, pdb, name, dry_run).await?;
            }
        }
        let d = eviction.get("deleteOptions");
        let opts = DeleteOptions {
            grace_period_seconds: d
                .and_then(|d| d.get("gracePeriodSeconds"))
                .and_then(Value::as_i64),
            precondition_uid: d
                .and_then(|d| d.get("preconditions"))
                .and_then(|p| p.get("uid"))
                .and_then(Value::as_str)
                .map(str::to_string),
            precondition_resource_version: d
                .and_then(|d| d.get("preconditions"))
                .and_then(|p| p.get("resourceVersion"))
                .and_then(Value::as_str)
                .map(str::to_string),
            dry_run: d
                .and_then(|d| d.get("dryRun"))
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()),
            ..DeleteOptions::default()
        };
        self.delete(&pods, ns, name, &opts).await?;
        Ok(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        )
    }

    /// Spends one of `pdb`'s allowed disruptions on evicting `pod`: the
    /// budget's status loses one `disruptionsAllowed` and records the pod
    /// in `disruptedPods` until the disruption controller sees it go, so
    /// two evictions racing cannot both spend the last disruption.
    async fn take_disruption(
        &self,
        pdbs: &ResourceInfo,
        ns: &str,
        pdb: &Value,
        pod: &str,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let refuse = |p: &Value| {
            let num = |k: &str| {
                p.get("status")
                    .and_then(|s| s.get(k))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            ApiError::too_many_requests(
                format!("Cannot evict pod as it would violate the pod's disruption budget. The disruption budget {} needs {} healthy pods and has {} currently",
                    meta::name(p), num("desiredHealthy"), num("currentHealthy")),
                10,
            )
        };
        let generation = pdb
            .get("metadata")
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let observed = pdb
            .get("status")
            .and_then(|s| s.get("observedGeneration"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if observed < generation {
            return Err(ApiError::too_many_requests(
                format!(
                    "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget {} is still being processed by the server.",
                    meta::name(pdb)
                ),
                10,
            ));
        }
        let allowed = |p: &Value| {
            p.get("status")
                .and_then(|s| s.get("disruptionsAllowed"))
                .and_then(Value::as_i64)
                .unwrap_or(0)
        };
        if allowed(pdb) <= 0 {
            return Err(refuse(pdb));
        }
        if dry_run {
            return Ok(());
        }
        let now = meta::format_time(self.clock.now());
        let uid = meta::uid(pdb).to_string();
        self.update_with(
            pdbs,
            ns,
            meta::name(pdb),
            Part::Status,
            &WriteOptions::default(),
            None,
            false,
            false,
            &mut |cur| {
                if meta::uid(cur) != uid || allowed(cur) <= 0 {
                    return Err(refuse(cur));
                }
                let mut out = cur.clone();
                let n = allowed(cur) - 1;
                if let Some(st) = out.get_mut("status").and_then(Value::as_object_mut) {
                    st.insert("disruptionsAllowed".into(), json!(n));
                    let dp = st.entry("disruptedPods").or_insert_with(|| json!({}));
                    if let Some(m) = dp.as_object_mut() {
                        m.insert(pod.to_string(), json!(now));
                    }
                }
                Ok(out)
            },
        )
        .await?;
        Ok(())
    }

    /// `PUT namespaces/<name>/finalize`: replaces `spec.finalizers`; a
    /// terminating namespace with none left is removed.
    pub async fn finalize_namespace(
        &self,
        name: &str,
        body: &Value,
        caller: &Caller,
    ) -> Result<Value, ApiError> {
        let nsr = self.resource("", "v1", "namespaces")?;
        let fins = body
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .cloned()
            .unwrap_or(json!([]));
        let opts = WriteOptions::default();
        let mgr = manager(&opts, caller);
        let r = self
            .update_with(
                &nsr,
                "",
                name,
                Part::Main,
                &opts,
                Some(&mgr),
                false,
                false,
                &mut |cur| {
                    let mut n = cur.clone();
                    n["spec"]["finalizers"] = fins.clone();
                    Ok(n)
                },
            )
            .await?;
        Ok(r.obj)
    }
}

pub enum ScaleChange<'a> {
    Replace(&'a Value),
    Patch(PatchType, &'a [u8]),
}

/// A stand-in resource for patching Scale objects (no lists, no schema).
fn scale_resource_info() -> ResourceInfo {
    ResourceInfo {
        group: "autoscaling".into(),
        version: "v1".into(),
        kind: "Scale".into(),
        plural: "scales".into(),
        singular: "scale".into(),
        scope: kubesim_core::Scope::Namespaced,
        short_names: vec![],
        categories: vec![],
        verbs: vec![],
        subresources: vec![],
        crd: None,
    }
}

/// Sets (or adds) a status condition, keeping lastTransitionTime when the
/// status does not change.
pub fn set_condition(obj: &mut Value, ty: &str, status: &str, now: &str) {
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    let conds = obj["status"]
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])));
    let Some(Value::Array(list)) = conds else {
        return;
    };
    if let Some(c) = list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
    {
        if c.get("status").and_then(Value::as_str) != Some(status) {
            c["status"] = Value::String(status.into());
            c["lastTransitionTime"] = Value::String(now.into());
        }
        return;
    }
    list.push(
        json!({"type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": now}),
    );
}
