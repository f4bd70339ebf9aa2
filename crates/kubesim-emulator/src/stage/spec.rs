//! A Stage as written (`kwok.x-k8s.io/v1alpha1`), and its compiled form:
//! jq programs and templates parsed once, the deprecated `next` turned into
//! `steps` the way kwok converts it (event, finalizers, status patch,
//! delete).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::expr::Expression;
use super::jq::Jq;
use crate::usage::cel::Expr;
use kubesim_gocompat::template::Template;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawStage {
    #[serde(default)]
    metadata: RawMeta,
    #[serde(default)]
    spec: RawSpec,
}

#[derive(Debug, Default, Deserialize)]
struct RawMeta {
    #[serde(default)]
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpec {
    resource_ref: Option<RawResourceRef>,
    selector: Option<RawSelector>,
    #[serde(default)]
    weight: i64,
    weight_from: Option<RawExpressionFrom>,
    delay: Option<RawDelay>,
    #[serde(default)]
    immediate_next_stage: bool,
    #[serde(default)]
    steps: Vec<RawStep>,
    next: Option<RawNext>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawResourceRef {
    #[serde(default)]
    api_group: String,
    #[serde(default)]
    kind: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSelector {
    #[serde(default)]
    match_labels: BTreeMap<String, String>,
    #[serde(default)]
    match_annotations: BTreeMap<String, String>,
    #[serde(default)]
    match_expressions: Vec<RawRequirement>,
}

#[derive(Debug, Default, Deserialize)]
struct RawRequirement {
    jq: Option<RawJqRequirement>,
    cel: Option<RawCel>,
    // The deprecated flat form of a jq requirement.
    key: Option<String>,
    operator: Option<String>,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct RawJqRequirement {
    key: String,
    operator: String,
    #[serde(default)]
    values: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
struct RawCel {
    #[serde(default)]
    expression: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawExpressionFrom {
    jq: Option<RawCel>,
    cel: Option<RawCel>,
    expression_from: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDelay {
    duration_milliseconds: Option<i64>,
    duration_from: Option<RawExpressionFrom>,
    jitter_duration_milliseconds: Option<i64>,
    jitter_duration_from: Option<RawExpressionFrom>,
}

#[derive(Debug, Default, Deserialize)]
struct RawStep {
    event: Option<Event>,
    finalizers: Option<RawFinalizers>,
    #[serde(default)]
    delete: bool,
    patch: Option<RawPatch>,
    apply: Option<RawApply>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawNext {
    event: Option<Event>,
    finalizers: Option<RawFinalizers>,
    #[serde(default)]
    delete: bool,
    #[serde(default)]
    patches: Vec<RawPatch>,
    status_template: Option<String>,
    status_subresource: Option<String>,
    status_patch_as: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct RawFinalizers {
    #[serde(default)]
    add: Vec<FinalizerItem>,
    #[serde(default)]
    remove: Vec<FinalizerItem>,
    #[serde(default)]
    empty: bool,
}

#[derive(Debug, Default, Deserialize)]
struct FinalizerItem {
    value: String,
}

#[derive(Debug, Default, Deserialize)]
struct RawPatch {
    subresource: Option<String>,
    root: Option<String>,
    #[serde(default)]
    template: String,
    #[serde(rename = "type")]
    kind: Option<String>,
    impersonation: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct RawApply {
    #[serde(default)]
    template: String,
    subresource: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

/// An event a step records on the object.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Event {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
}

/// The compiled Stage.
#[derive(Debug)]
pub struct Stage {
    pub name: String,
    /// The `apiGroup` of the resourceRef: a group/version such as `v1`.
    pub api_version: String,
    pub kind: String,
    pub selector: Selector,
    pub weight: i64,
    pub weight_from: Option<Expression>,
    pub delay: Delay,
    pub steps: Vec<Step>,
    pub immediate_next_stage: bool,
}

#[derive(Debug, Default)]
pub struct Selector {
    pub match_labels: BTreeMap<String, String>,
    pub match_annotations: BTreeMap<String, String>,
    pub match_expressions: Vec<Requirement>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Debug)]
pub enum Requirement {
    /// A jq program whose results are compared with `values`.
    Jq {
        key: Jq,
        operator: Operator,
        values: Vec<String>,
    },
    /// A CEL expression over `self` that must be true.
    Cel(Expr),
}

#[derive(Debug, Default)]
pub struct Delay {
    pub duration_ms: i64,
    pub duration_from: Option<Expression>,
    pub jitter_ms: Option<i64>,
    pub jitter_from: Option<Expression>,
}

#[derive(Debug)]
pub enum Step {
    Event(Event),
    Finalizers {
        add: Vec<String>,
        remove: Vec<String>,
        empty: bool,
    },
    Delete,
    Patch(Patch),
    Apply(Apply),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    Strategic,
}

#[derive(Debug)]
pub struct Patch {
    pub subresource: Option<String>,
    pub root: Option<String>,
    pub template: Template,
    /// None: strategic for Pods and Nodes, merge for the rest.
    pub kind: Option<PatchKind>,
}

#[derive(Debug)]
pub struct Apply {
    pub template: Template,
    pub subresource: Option<String>,
    /// apply (server-side), merge or strategic.
    pub kind: String,
}

impl Stage {
    /// Compiles a Stage object. A Stage without a selector is dropped by
    /// kwok; here it is an error the caller reports.
    pub fn from_object(obj: &Value) -> Result<Stage, String> {
        let raw: RawStage =
            serde_json::from_value(obj.clone()).map_err(|e| format!("invalid Stage: {e}"))?;
        let name = raw.metadata.name;
        let at = |e: String| format!("stage {name:?}: {e}");
        let spec = raw.spec;
        let rr = spec
            .resource_ref
            .ok_or_else(|| at("spec.resourceRef is required".into()))?;
        if rr.kind.is_empty() {
            return Err(at("spec.resourceRef.kind is required".into()));
        }
        let selector = spec
            .selector
            .ok_or_else(|| at("spec.selector is required ({} matches every object)".into()))?;
        let selector = compile_selector(selector).map_err(at)?;
        if spec.weight < 0 {
            return Err(at("spec.weight must not be negative".into()));
        }
        let weight_from = spec
            .weight_from
            .map(compile_from)
            .transpose()
            .map_err(at)?
            .flatten();
        let delay = match spec.delay {
            None => Delay::default(),
            Some(d) => compile_delay(d).map_err(at)?,
        };
        let raw_steps = if spec.steps.is_empty() {
            spec.next.map(next_to_steps).unwrap_or_default()
        } else {
            spec.steps
        };
        let mut steps = Vec::new();
        for s in raw_steps {
            compile_step(s, &mut steps).map_err(at)?;
        }
        Ok(Stage {
            name,
            api_version: if rr.api_group.is_empty() {
                "v1".into()
            } else {
                rr.api_group
            },
            kind: rr.kind,
            selector,
            weight: spec.weight,
            weight_from,
            delay,
            steps,
            immediate_next_stage: spec.immediate_next_stage,
        })
    }
}

/// The deprecated `next` as the steps kwok converts it into.
fn next_to_steps(next: RawNext) -> Vec<RawStep> {
    let mut steps = Vec::new();
    if let Some(e) = next.event {
        steps.push(RawStep {
            event: Some(e),
            ..Default::default()
        });
    }
    if let Some(f) = next.finalizers {
        steps.push(RawStep {
            finalizers: Some(f),
            ..Default::default()
        });
    }
    if !next.patches.is_empty() {
        for p in next.patches {
            steps.push(RawStep {
                patch: Some(p),
                ..Default::default()
            });
        }
    } else if let Some(t) = next.status_template {
        steps.push(RawStep {
            patch: Some(RawPatch {
                subresource: Some(next.status_subresource.unwrap_or_else(|| "status".into())),
                root: Some("status".into()),
                template: t,
                kind: None,
                impersonation: next.status_patch_as,
            }),
            ..Default::default()
        });
    }
    if next.delete {
        steps.push(RawStep {
            delete: true,
            ..Default::default()
        });
    }
    steps
}

fn compile_selector(s: RawSelector) -> Result<Selector, String> {
    let mut exprs = Vec::new();
    for r in s.match_expressions {
        if let Some(c) = r.cel {
            exprs.push(Requirement::Cel(Expr::compile(&c.expression)?));
            continue;
        }
        let (key, op, values) = match r.jq {
            Some(j) => (j.key, j.operator, j.values),
            None => (
                r.key.ok_or("a match expression needs jq, cel or key")?,
                r.operator.unwrap_or_default(),
                r.values,
            ),
        };
        let operator = match op.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => return Err(format!("unknown operator {other:?} for {key:?}")),
        };
        exprs.push(Requirement::Jq {
            key: Jq::compile(&key)?,
            operator,
            values,
        });
    }
    Ok(Selector {
        match_labels: s.match_labels,
        match_annotations: s.match_annotations,
        match_expressions: exprs,
    })
}

/// The program of an ExpressionFrom (jq, CEL or the deprecated
/// `expressionFrom` jq); an empty one is None.
fn compile_from(e: RawExpressionFrom) -> Result<Option<Expression>, String> {
    if let Some(c) = e.cel.filter(|c| !c.expression.trim().is_empty()) {
        return Expr::compile(&c.expression).map(|x| Some(Expression::Cel(x)));
    }
    match e.jq.map(|j| j.expression).or(e.expression_from) {
        Some(src) if !src.trim().is_empty() => Jq::compile(&src).map(|j| Some(Expression::Jq(j))),
        _ => Ok(None),
    }
}

fn compile_delay(d: RawDelay) -> Result<Delay, String> {
    let ms = d.duration_milliseconds.unwrap_or(0);
    if ms < 0 || d.jitter_duration_milliseconds.is_some_and(|j| j < 0) {
        return Err("delay durations must not be negative".into());
    }
    Ok(Delay {
        duration_ms: ms,
        duration_from: d.duration_from.map(compile_from).transpose()?.flatten(),
        jitter_ms: d.jitter_duration_milliseconds,
        // kwok reads only the jq form of jitterDurationFrom; a CEL one is
        // compiled (so a typo is still reported) and then ignored.
        jitter_from: d
            .jitter_duration_from
            .map(compile_from)
            .transpose()?
            .flatten()
            .filter(|e| matches!(e, Expression::Jq(_))),
    })
}

fn template(src: &str) -> Result<Template, String> {
    Template::parse(src).map_err(|e| e.to_string())
}

fn compile_step(s: RawStep, out: &mut Vec<Step>) -> Result<(), String> {
    if let Some(e) = s.event {
        out.push(Step::Event(e));
    }
    if let Some(f) = s.finalizers {
        out.push(Step::Finalizers {
            add: f.add.into_iter().map(|i| i.value).collect(),
            remove: f.remove.into_iter().map(|i| i.value).collect(),
            empty: f.empty,
        });
    }
    if let Some(p) = s.patch {
        if p.impersonation.is_some() {
            tracing::debug!("stage patch impersonation is ignored: the emulator acts as itself");
        }
        let kind = match p.kind.as_deref() {
            None | Some("") => None,
            Some("json") => Some(PatchKind::Json),
            Some("merge") => Some(PatchKind::Merge),
            Some("strategic") => Some(PatchKind::Strategic),
            Some(other) => return Err(format!("unknown patch type {other:?}")),
        };
        out.push(Step::Patch(Patch {
            subresource: p.subresource.filter(|s| !s.is_empty()),
            root: p.root.filter(|s| !s.is_empty()),
            template: template(&p.template)?,
            kind,
        }));
    }
    if let Some(a) = s.apply {
        let kind = a.kind.unwrap_or_else(|| "apply".into());
        if !matches!(kind.as_str(), "apply" | "merge" | "strategic") {
            return Err(format!("unknown apply type {kind:?}"));
        }
        out.push(Step::Apply(Apply {
            template: template(&a.template)?,
            subresource: a.subresource.filter(|s| !s.is_empty()),
            kind,
        }));
    }
    if s.delete {
        out.push(Step::Delete);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use super::super::jq::Input;

    #[test]
    fn next_becomes_event_finalizers_patch_delete() {
        let s = Stage::from_object(&json!({
            "kind": "Stage", "metadata": {"name": "s"},
            "spec": {"resourceRef": {"kind": "Pod"}, "selector": {},
                "next": {"event": {"type": "Normal", "reason": "R", "message": "m"},
                    "finalizers": {"add": [{"value": "f"}]},
                    "statusTemplate": "phase: Running", "delete": true}}}))
        .unwrap();
        assert_eq!(s.api_version, "v1");
        assert!(matches!(&s.steps[0], Step::Event(e) if e.reason == "R"));
        assert!(matches!(&s.steps[1], Step::Finalizers { add, .. } if add == &["f"]));
        assert!(
            matches!(&s.steps[2], Step::Patch(p) if p.root.as_deref() == Some("status")
                && p.subresource.as_deref() == Some("status") && p.kind.is_none())
        );
        assert!(matches!(s.steps[3], Step::Delete));
    }

    #[test]
    fn flat_and_jq_requirements_and_errors() {
        let s = Stage::from_object(&json!({
            "metadata": {"name": "s"},
            "spec": {"resourceRef": {"apiGroup": "apps/v1", "kind": "Deployment"},
                "selector": {"matchExpressions": [
                    {"key": ".a", "operator": "Exists"},
                    {"jq": {"key": ".b", "operator": "In", "values": ["x"]}}]},
                "weightFrom": {"expressionFrom": ".w"},
                "delay": {"durationMilliseconds": 5, "jitterDurationFrom": {"jq": {"expression": ".j"}}}}}))
        .unwrap();
        assert_eq!(s.selector.match_expressions.len(), 2);
        assert!(matches!(
            s.selector.match_expressions[1],
            Requirement::Jq {
                operator: Operator::In,
                ..
            }
        ));
        assert!(s.weight_from.is_some() && s.delay.jitter_from.is_some());
        let err = |spec: Value| {
            Stage::from_object(&json!({"metadata": {"name": "bad"}, "spec": spec})).unwrap_err()
        };
        assert!(err(json!({"selector": {}})).contains("resourceRef"));
        assert!(err(json!({"resourceRef": {"kind": "Pod"}})).contains("selector"));
        assert!(err(
            json!({"resourceRef": {"kind": "Pod"}, "selector": {"matchExpressions": [
            {"key": ".a", "operator": "Near"}]}})
        )
        .contains("Near"));
        assert!(err(
            json!({"resourceRef": {"kind": "Pod"}, "selector": {"matchExpressions": [
            {"cel": {"expression": "self.status.phase =="}}]}})
        )
        .contains("cannot parse CEL"));
    }

    #[test]
    fn cel_selectors_and_expressions_read_the_object_as_self() {
        let s = Stage::from_object(&json!({
            "metadata": {"name": "s"},
            "spec": {"resourceRef": {"kind": "PersistentVolume"},
                "selector": {"matchExpressions": [
                    {"cel": {"expression": "self.spec.storageClassName == 'kwok-volume'"}},
                    {"cel": {"expression": "!has(self.metadata.deletionTimestamp)"}},
                    {"cel": {"expression": "!(self.status.phase in ['Bound', 'Failed'])"}}]},
                "weightFrom": {"cel": {"expression": "self.spec.capacity.size * 2"}},
                "delay": {"durationFrom": {"cel": {"expression": "self.metadata.annotations['wait']"}},
                    "jitterDurationFrom": {"cel": {"expression": "'9s'"}}}}}))
        .unwrap();
        let pv = |class: &str, phase: &str, deleting: bool| {
            let mut md = json!({"name": "pv", "annotations": {"wait": "3s"}});
            if deleting {
                md["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            json!({"metadata": md, "spec": {"storageClassName": class, "capacity": {"size": 21}},
                "status": {"phase": phase}})
        };
        let holds = |o: &Value| s.selector.matches(o, &Input::new(o));
        assert!(holds(&pv("kwok-volume", "Pending", false)));
        assert!(!holds(&pv("other", "Pending", false)));
        assert!(!holds(&pv("kwok-volume", "Bound", false)));
        assert!(!holds(&pv("kwok-volume", "Pending", true)));
        // No status at all: `self.status.phase` fails, so no match (as a
        // CEL error is in kwok).
        let mut bare = pv("kwok-volume", "Pending", false);
        bare.as_object_mut().unwrap().remove("status");
        assert!(!holds(&bare));
        let o = pv("kwok-volume", "Pending", false);
        let input = Input::new(&o);
        assert_eq!(
            s.weight_from.as_ref().unwrap().first(&input),
            Some(json!(42))
        );
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        // kwok reads only a jq jitterDurationFrom, so the CEL one is not used.
        assert_eq!(s.delay.bounds(&input, now), (3000, None));
    }
}
