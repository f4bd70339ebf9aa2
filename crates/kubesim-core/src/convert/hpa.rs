//! HorizontalPodAutoscaler: autoscaling/v2 (the storage version) and
//! autoscaling/v1.
//!
//! v1 only has a CPU utilization target. As upstream does, everything else
//! travels through v1 in annotations so that a read-modify-write through v1
//! loses nothing: the other metric specs (in v1's own MetricSpec shape, the
//! one of v2beta1), every current metric, the conditions and the behavior.
//! Reading through v1 writes those annotations; writing through v1 reads
//! them back and removes them, so they never reach storage.

use serde_json::{json, Map, Value};

use super::{copy, into_map};
use crate::ApiError;

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

fn obj(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

fn arr(v: Option<&Value>) -> Vec<Value> {
    v.and_then(Value::as_array).cloned().unwrap_or_default()
}

/// Whether a v2 metric spec is the one v1's targetCPUUtilizationPercentage
/// expresses.
fn cpu_utilization(metric: &Value) -> Option<&Value> {
    if metric.get("type").and_then(Value::as_str) != Some("Resource") {
        return None;
    }
    let r = metric.get("resource")?;
    if r.get("name").and_then(Value::as_str) != Some("cpu") {
        return None;
    }
    r.get("target")?.get("averageUtilization")
}

// ---- autoscaling/v2 -> autoscaling/v1 ----

pub(super) fn v2_to_v1(v2: Value) -> Value {
    let m = into_map(v2);
    let mut meta = obj(m.get("metadata"));
    let mut notes = obj(meta.get("annotations"));
    let spec = obj(m.get("spec"));
    let mut out_spec = Map::new();
    for k in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        copy(&spec, k, &mut out_spec, k);
    }
    let metrics = arr(spec.get("metrics"));
    if let Some(u) = metrics.iter().find_map(cpu_utilization) {
        out_spec.insert("targetCPUUtilizationPercentage".into(), u.clone());
    }
    let others: Vec<Value> = metrics
        .iter()
        .filter(|mt| cpu_utilization(mt).is_none())
        .map(|mt| metric_to_v1(mt, Side::Target))
        .collect();
    if !others.is_empty() {
        notes.insert(METRICS.into(), json_string(&others));
    }
    if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
        notes.insert(BEHAVIOR.into(), json_string(b));
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), "autoscaling/v1".into());
    out.insert("kind".into(), "HorizontalPodAutoscaler".into());
    if let Some(st) = m.get("status").and_then(Value::as_object) {
        let mut out_st = Map::new();
        for k in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            copy(st, k, &mut out_st, k);
        }
        let current = arr(st.get("currentMetrics"));
        let cpu = current.iter().find_map(|c| {
            let r = c.get("resource")?;
            (c.get("type").and_then(Value::as_str) == Some("Resource")
                && r.get("name").and_then(Value::as_str) == Some("cpu"))
            .then(|| r.get("current")?.get("averageUtilization").cloned())
            .flatten()
        });
        if let Some(u) = cpu {
            out_st.insert("currentCPUUtilizationPercentage".into(), u);
        }
        // All of them, the CPU one included, so its other fields survive.
        if !current.is_empty() {
            let v1: Vec<Value> = current
                .iter()
                .map(|c| metric_to_v1(c, Side::Current))
                .collect();
            notes.insert(CURRENT_METRICS.into(), json_string(&v1));
        }
        let conditions = arr(st.get("conditions"));
        if !conditions.is_empty() {
            notes.insert(CONDITIONS.into(), json_string(&conditions));
        }
        out.insert("status".into(), Value::Object(out_st));
    }
    if !notes.is_empty() {
        meta.insert("annotations".into(), Value::Object(notes));
    }
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), Value::Object(out_spec));
    // Keep status last, where the real server puts it.
    if let Some(st) = out.remove("status") {
        out.insert("status".into(), st);
    }
    Value::Object(out)
}

fn json_string(v: &impl serde::Serialize) -> Value {
    Value::String(serde_json::to_string(v).unwrap_or_default())
}

/// A metric's name and selector (`{"name", "selector"}` in v2).
fn identifier(
    m: &Map<String, Value>,
    name_key: &str,
    selector_key: &str,
    to: &mut Map<String, Value>,
) {
    let id = obj(m.get("metric"));
    copy(&id, "name", to, name_key);
    copy(&id, "selector", to, selector_key);
}

/// Which half of a metric is converted: a spec's `target` or a status's
/// `current`. v1 (v2beta1's shape) flattens it into the source with the
/// half's name as prefix (`targetAverageValue`, `currentValue`, ...).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Target,
    Current,
}

impl Side {
    fn member(self) -> &'static str {
        match self {
            Side::Target => "target",
            Side::Current => "current",
        }
    }
}

/// The value fields of v2's MetricTarget / MetricValueStatus.
const VALUE_FIELDS: [&str; 3] = ["averageUtilization", "averageValue", "value"];

/// v1's name for v2 value field `field` of a metric of type `ty`, if v1
/// has one. (Object's average value is unprefixed in v1.)
fn v1_value_name(ty: &str, field: &str, side: Side) -> Option<String> {
    let p = side.member();
    match (ty, field) {
        ("Resource" | "ContainerResource", "averageUtilization") => {
            Some(format!("{p}AverageUtilization"))
        }
        ("Object", "averageValue") => Some("averageValue".into()),
        ("Resource" | "ContainerResource" | "Pods" | "External", "averageValue") => {
            Some(format!("{p}AverageValue"))
        }
        ("Object" | "External", "value") => Some(format!("{p}Value")),
        _ => None,
    }
}

/// v1's names for the metric name and selector of a custom metric type.
fn v1_identifier(ty: &str) -> Option<(&'static str, &'static str)> {
    match ty {
        "Pods" | "Object" => Some(("metricName", "selector")),
        "External" => Some(("metricName", "metricSelector")),
        _ => None,
    }
}

fn is_resource(ty: &str) -> bool {
    matches!(ty, "Resource" | "ContainerResource")
}

/// A v2 metric spec or status in v1's shape.
fn metric_to_v1(metric: &Value, side: Side) -> Value {
    let ty = metric.get("type").and_then(Value::as_str).unwrap_or("");
    let key = source_key(ty);
    let src = obj(metric.get(key));
    let values = obj(src.get(side.member()));
    let mut out = Map::new();
    if is_resource(ty) {
        copy(&src, "name", &mut out, "name");
        copy(&src, "container", &mut out, "container");
    }
    if ty == "Object" {
        copy(&src, "describedObject", &mut out, "target");
    }
    if let Some((name, selector)) = v1_identifier(ty) {
        identifier(&src, name, selector, &mut out);
    }
    for f in VALUE_FIELDS {
        if let Some(n) = v1_value_name(ty, f, side) {
            copy(&values, f, &mut out, &n);
        }
    }
    json!({"type": ty, key: out})
}

/// The member holding a metric's source: `resource`, `pods`, `object`,
/// `external`, `containerResource`.
fn source_key(ty: &str) -> &'static str {
    match ty {
        "Resource" => "resource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => "resource",
    }
}

// ---- autoscaling/v1 -> autoscaling/v2 ----

fn annotation(notes: &mut Map<String, Value>, key: &str) -> Result<Option<Value>, ApiError> {
    match notes.remove(key) {
        Some(Value::String(s)) => serde_json::from_str(&s)
            .map(Some)
            .map_err(|e| ApiError::bad_request(format!("annotation {key} is not valid JSON: {e}"))),
        Some(_) => Err(ApiError::bad_request(format!(
            "annotation {key} must be a string"
        ))),
        None => Ok(None),
    }
}

fn list_annotation(
    notes: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<Vec<Value>>, ApiError> {
    match annotation(notes, key)? {
        None => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(ApiError::bad_request(format!(
            "annotation {key} must hold a JSON list"
        ))),
    }
}

pub(super) fn v1_to_v2(v1: Value) -> Result<Value, ApiError> {
    let m = into_map(v1);
    let mut meta = obj(m.get("metadata"));
    let mut notes = obj(meta.get("annotations"));
    let other_metrics = list_annotation(&mut notes, METRICS)?;
    let current_metrics = list_annotation(&mut notes, CURRENT_METRICS)?;
    let conditions = list_annotation(&mut notes, CONDITIONS)?;
    let behavior = annotation(&mut notes, BEHAVIOR)?;
    if meta.contains_key("annotations") {
        if notes.is_empty() {
            meta.remove("annotations");
        } else {
            meta.insert("annotations".into(), Value::Object(notes));
        }
    }
    let spec = obj(m.get("spec"));
    let mut out_spec = Map::new();
    for k in ["scaleTargetRef", "minReplicas", "maxReplicas"] {
        copy(&spec, k, &mut out_spec, k);
    }
    // The annotation's metrics first, then the CPU target, upstream's order.
    let mut metrics: Vec<Value> = other_metrics
        .unwrap_or_default()
        .iter()
        .map(|mt| metric_to_v2(mt, Side::Target))
        .collect();
    if let Some(u) = spec
        .get("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": u}}}));
    }
    if !metrics.is_empty() {
        out_spec.insert("metrics".into(), Value::Array(metrics));
    }
    if let Some(b) = behavior.filter(|b| !b.is_null()) {
        out_spec.insert("behavior".into(), b);
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), "autoscaling/v2".into());
    out.insert("kind".into(), "HorizontalPodAutoscaler".into());
    out.insert("metadata".into(), Value::Object(meta));
    out.insert("spec".into(), Value::Object(out_spec));
    if let Some(st) = m.get("status").and_then(Value::as_object) {
        let mut out_st = Map::new();
        for k in [
            "observedGeneration",
            "lastScaleTime",
            "currentReplicas",
            "desiredReplicas",
        ] {
            copy(st, k, &mut out_st, k);
        }
        // The annotation holds every current metric; without it only the
        // CPU utilization is known.
        let current = match current_metrics {
            Some(c) => c.iter().map(|m| metric_to_v2(m, Side::Current)).collect(),
            None => st
                .get("currentCPUUtilizationPercentage")
                .filter(|v| !v.is_null())
                .map(|u| {
                    vec![json!({"type": "Resource", "resource": {"name": "cpu",
                        "current": {"averageUtilization": u}}})]
                })
                .unwrap_or_default(),
        };
        if !current.is_empty() {
            out_st.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(c) = conditions.filter(|c| !c.is_empty()) {
            out_st.insert("conditions".into(), Value::Array(c));
        }
        out.insert("status".into(), Value::Object(out_st));
    }
    Ok(Value::Object(out))
}

/// `{"name", "selector"}` from v1's flat fields.
fn metric_identifier(src: &Map<String, Value>, name_key: &str, selector_key: &str) -> Value {
    let mut id = Map::new();
    copy(src, name_key, &mut id, "name");
    copy(src, selector_key, &mut id, "selector");
    Value::Object(id)
}

/// A v1 metric spec or status in v2's shape; a spec's target also gets
/// the type its values imply.
fn metric_to_v2(metric: &Value, side: Side) -> Value {
    let ty = metric.get("type").and_then(Value::as_str).unwrap_or("");
    let key = source_key(ty);
    let src = obj(metric.get(key));
    let present = |field: &str| {
        v1_value_name(ty, field, side)
            .and_then(|n| src.get(&n).cloned())
            .is_some_and(|v| !v.is_null())
    };
    let mut out = Map::new();
    if is_resource(ty) {
        copy(&src, "name", &mut out, "name");
        copy(&src, "container", &mut out, "container");
    }
    if ty == "Object" {
        copy(&src, "target", &mut out, "describedObject");
    }
    if let Some((name, selector)) = v1_identifier(ty) {
        out.insert("metric".into(), metric_identifier(&src, name, selector));
    }
    let mut values = Map::new();
    if side == Side::Target && (is_resource(ty) || v1_identifier(ty).is_some()) {
        let kind = if present("averageUtilization") {
            "Utilization"
        } else if present("averageValue") || v1_value_name(ty, "value", side).is_none() {
            "AverageValue"
        } else {
            "Value"
        };
        values.insert("type".into(), kind.into());
    }
    for f in VALUE_FIELDS {
        if let Some(n) = v1_value_name(ty, f, side) {
            copy(&src, &n, &mut values, f);
        }
    }
    out.insert(side.member().into(), Value::Object(values));
    json!({"type": ty, key: out})
}
