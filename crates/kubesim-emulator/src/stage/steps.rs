//! Carrying out a stage's steps on one object, in order: events,
//! finalizers, patches rendered from templates, applies and deletion.

use std::sync::Arc;

use kubesim_core::patch::PatchType;
use kubesim_core::{meta, ApiError, Registry};
use kubesim_runtime::{Api, DeleteOptions, EventRecorder, EventType, ResourceRef, WriteOptions};
use serde_json::{json, Value};

use super::funcs::KwokFuncs;
use super::resolve::Target;
use super::spec::{Apply, Patch, PatchKind, Stage, Step};
use kubesim_gocompat::template::Funcs;

/// The field manager of the emulator's writes.
pub const MANAGER: &str = "kubesim-emulator";

pub struct Steps<'a> {
    pub api: &'a Arc<dyn Api>,
    pub recorder: &'a EventRecorder,
    pub funcs: KwokFuncs<'a>,
    pub target: &'a Target,
    pub registry: &'a Registry,
}

/// How the steps ended.
#[derive(Debug)]
pub enum Outcome {
    /// The object as the last write left it (None: nothing was written).
    Written(Option<Arc<Value>>),
    Deleted,
}

/// A failed step: its index (to retry from) and the error.
#[derive(Debug)]
pub struct Failed {
    pub step: usize,
    pub error: ApiError,
}

/// Whether step `i` of `stage` is one whose written object nobody reads:
/// the last, of a stage that does not go on to the next at once.
fn lean(stage: &Stage, i: usize) -> bool {
    i + 1 == stage.steps.len() && !stage.immediate_next_stage
}

fn opts() -> WriteOptions {
    WriteOptions {
        field_manager: Some(MANAGER.into()),
        ..Default::default()
    }
}

/// The options of a patch step's request.
fn patch_options(version_only: bool) -> WriteOptions {
    WriteOptions {
        version_only,
        ..opts()
    }
}

impl Steps<'_> {
    /// Runs the steps of `stage` from index `from` on `obj`.
    pub async fn run(
        &self,
        stage: &Stage,
        obj: &Arc<Value>,
        from: usize,
    ) -> Result<Outcome, Failed> {
        // Shared rather than copied: each write replaces it whole.
        let mut current: Arc<Value> = obj.clone();
        let mut written: Option<Arc<Value>> = None;
        let mut deleted = false;
        for (i, step) in stage.steps.iter().enumerate().skip(from) {
            let fail = |error| Failed { step: i, error };
            match step {
                // Events are still recorded after a delete, as kwok does.
                Step::Event(e) => {
                    let kind = if e.kind == "Warning" {
                        EventType::Warning
                    } else {
                        EventType::Normal
                    };
                    self.recorder
                        .record(&current, kind, e.reason.clone(), e.message.clone());
                }
                _ if deleted => {}
                Step::Finalizers { add, remove, empty } => {
                    let had = meta::finalizers(&current);
                    let mut want: Vec<String> = if *empty { Vec::new() } else { had.clone() };
                    want.retain(|f| !remove.contains(f));
                    for f in add {
                        if !want.contains(f) {
                            want.push(f.clone());
                        }
                    }
                    if want != had {
                        let body = json!({"metadata": {"finalizers": want}});
                        match self
                            .patch(&current, PatchType::Merge, body, None, &opts())
                            .await
                        {
                            Ok(o) => {
                                current = Arc::new(o);
                                written = Some(current.clone());
                            }
                            Err(e) if e.code == 404 => return Ok(Outcome::Deleted),
                            Err(e) => return Err(fail(e)),
                        }
                    }
                }
                Step::Delete => {
                    let o = DeleteOptions::now_status_only();
                    let r = &self.target.resource;
                    match self
                        .api
                        .delete(r, meta::namespace(&current), meta::name(&current), &o)
                        .await
                    {
                        Ok(_) => deleted = true,
                        Err(e) if e.code == 404 => deleted = true,
                        Err(e) => return Err(fail(e)),
                    }
                }
                Step::Patch(p) => match self.patch_step(stage, p, &current, lean(stage, i)).await {
                    // Nothing reads what the last step wrote.
                    Ok(Some(_)) if lean(stage, i) => {}
                    Ok(Some(o)) => {
                        current = Arc::new(o);
                        written = Some(current.clone());
                    }
                    Ok(None) => {}
                    Err(e) if e.code == 404 => return Ok(Outcome::Deleted),
                    Err(e) => return Err(fail(e)),
                },
                Step::Apply(a) => self.apply_step(a, &current).await.map_err(fail)?,
            }
        }
        Ok(if deleted {
            Outcome::Deleted
        } else {
            Outcome::Written(written)
        })
    }

    fn render(
        &self,
        t: &kubesim_gocompat::template::Template,
        obj: &Value,
    ) -> Result<Value, ApiError> {
        render(t, obj, &self.funcs).map_err(ApiError::bad_request)
    }

    /// Renders and sends a patch. None: it changed nothing, which the
    /// server tells by keeping the resourceVersion (it writes nothing then),
    /// so an immediate next stage is not tried again on the same object.
    /// When `version_only`, the object returned holds only that.
    async fn patch_step(
        &self,
        stage: &Stage,
        p: &Patch,
        obj: &Value,
        version_only: bool,
    ) -> Result<Option<Value>, ApiError> {
        let rendered = patch_body(stage, p, obj, &self.funcs).map_err(ApiError::bad_request)?;
        let Some((kind, body)) = rendered else {
            return Ok(None);
        };
        let opts = patch_options(version_only);
        let after = self
            .patch(obj, kind, body, p.subresource.as_deref(), &opts)
            .await?;
        Ok((meta::resource_version(&after) != meta::resource_version(obj)).then_some(after))
    }

    async fn patch(
        &self,
        obj: &Value,
        kind: PatchType,
        body: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.api
            .patch_value(
                &self.target.resource,
                meta::namespace(obj),
                meta::name(obj),
                kind,
                body,
                subresource,
                opts,
            )
            .await
    }

    /// Renders an object and applies it (server-side apply by default).
    async fn apply_step(&self, a: &Apply, obj: &Value) -> Result<(), ApiError> {
        let target = self.render(&a.template, obj)?;
        if target.is_null() {
            return Ok(());
        }
        let api_version = target
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = target.get("kind").and_then(Value::as_str).unwrap_or("");
        let info = self.registry.by_kind(api_version, kind).ok_or_else(|| {
            ApiError::bad_request(format!("apply: unknown kind {api_version}/{kind}"))
        })?;
        let r = ResourceRef::new(&info.group, &info.version, &info.plural);
        let kind = match a.kind.as_str() {
            "merge" => PatchType::Merge,
            "strategic" => PatchType::Strategic,
            _ => PatchType::Apply,
        };
        let mut o = opts();
        o.force = kind == PatchType::Apply;
        let ns = meta::namespace(&target).to_string();
        let name = meta::name(&target).to_string();
        self.api
            .patch(
                &r,
                &ns,
                &name,
                kind,
                target.to_string().into_bytes(),
                a.subresource.as_deref(),
                &o,
            )
            .await
            .map(|_| ())
    }
}

/// A template's output as a value (YAML or JSON); Null when it rendered
/// nothing.
pub fn render(
    t: &kubesim_gocompat::template::Template,
    obj: &Value,
    funcs: &dyn Funcs,
) -> Result<Value, String> {
    let text = t.render(obj, funcs).map_err(|e| e.to_string())?;
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    kubesim_gocompat::plain_yaml::read(&text)
        .map_err(|e| format!("template output is not YAML: {e}"))
}

/// What a patch step sends: its type and body (None when its template
/// renders nothing).
pub type Rendered = Option<(PatchType, Value)>;

/// The type and body of the patch a step sends for `obj` (None when the
/// template renders nothing): the rendered value under `root`, as a
/// strategic merge for Pods and Nodes and a merge patch otherwise unless
/// the step names a type.
pub fn patch_body(
    stage: &Stage,
    p: &Patch,
    obj: &Value,
    funcs: &dyn Funcs,
) -> Result<Rendered, String> {
    let rendered = render(&p.template, obj, funcs)?;
    if rendered.is_null() {
        return Ok(None);
    }
    let kind = match p.kind {
        Some(PatchKind::Json) => PatchType::Json,
        Some(PatchKind::Merge) => PatchType::Merge,
        Some(PatchKind::Strategic) => PatchType::Strategic,
        None if stage.api_version == "v1" && matches!(stage.kind.as_str(), "Pod" | "Node") => {
            PatchType::Strategic
        }
        None => PatchType::Merge,
    };
    let body = match (&p.root, kind) {
        (Some(root), PatchType::Json) => prefix_paths(rendered, root),
        // Moved into a new map: `json!` would serialize the value again.
        (Some(root), _) => meta::object([(root.as_str(), rendered)]),
        (None, _) => rendered,
    };
    Ok(Some((kind, body)))
}

/// A JSON patch written relative to `root`: every path moved under it.
fn prefix_paths(ops: Value, root: &str) -> Value {
    let Value::Array(ops) = ops else {
        return ops;
    };
    Value::Array(
        ops.into_iter()
            .map(|mut op| {
                for field in ["path", "from"] {
                    if let Some(p) = op.get(field).and_then(Value::as_str) {
                        op[field] = Value::String(format!("/{root}{p}"));
                    }
                }
                op
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_patch_paths_move_under_the_root() {
        let ops = json!([{"op": "add", "path": "/phase", "value": "Running"},
                         {"op": "move", "from": "/a", "path": "/b"}]);
        assert_eq!(
            prefix_paths(ops, "status"),
            json!([{"op": "add", "path": "/status/phase", "value": "Running"},
                   {"op": "move", "from": "/status/a", "path": "/status/b"}])
        );
    }
}
