//! What the engine would do with an object, without doing it: every
//! matching stage with its weight, delay range and rendered steps. Used
//! to check stage files against kwok's golden fixtures, and handy for
//! seeing why an object moves (or does not).

use std::sync::Arc;

use jiff::Timestamp;
use kubesim_core::patch::PatchType;
use serde_json::{json, Value};

use super::jq::Input;
use super::select::weight;
use super::spec::{Stage, Step};
use super::steps::{patch_body, render};
use kubesim_gocompat::template::Funcs;

/// One stage that matches the object.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub stage: String,
    /// None when `weightFrom` yields something that is not a number.
    pub weight: Option<i64>,
    /// Milliseconds, or the range [low, high) they are drawn from.
    pub delay: (i64, Option<i64>),
    /// Each step as `{"kind": "patch"|"delete"|"event"|"finalizers"|"apply", ...}`.
    pub steps: Vec<Value>,
}

fn content_type(t: PatchType) -> &'static str {
    match t {
        PatchType::Json => "application/json-patch+json",
        PatchType::Merge => "application/merge-patch+json",
        PatchType::Strategic => "application/strategic-merge-patch+json",
        PatchType::Apply => "application/apply-patch+yaml",
    }
}

pub fn explain(
    stages: &[Arc<Stage>],
    obj: &Value,
    funcs: &dyn Funcs,
    now: Timestamp,
) -> Result<Vec<Planned>, String> {
    let input = Input::new(obj);
    let mut out = Vec::new();
    for s in stages.iter().filter(|s| s.selector.matches(obj, &input)) {
        let mut steps = Vec::new();
        for step in &s.steps {
            steps.push(match step {
                Step::Event(e) => json!({"kind": "event",
                    "event": {"type": e.kind, "reason": e.reason, "message": e.message}}),
                Step::Finalizers { add, remove, empty } => json!({"kind": "finalizers",
                    "add": add, "remove": remove, "empty": empty}),
                Step::Delete => json!({"kind": "delete"}),
                Step::Patch(p) => match patch_body(s, p, obj, funcs)? {
                    Some((t, body)) => json!({"kind": "patch", "data": body,
                        "subresource": p.subresource, "type": content_type(t)}),
                    None => json!({"kind": "patch", "data": null}),
                },
                Step::Apply(a) => json!({"kind": "apply",
                    "data": render(&a.template, obj, funcs)?, "subresource": a.subresource}),
            });
        }
        out.push(Planned {
            stage: s.name.clone(),
            weight: weight(s, &input),
            delay: s.delay.bounds(&input, now),
            steps,
        });
    }
    Ok(out)
}
