//! kwok's Metric kind: Prometheus endpoints a kubelet would serve (such
//! as `/metrics/nodes/{nodeName}/metrics/resource`, which metrics-server
//! scrapes), each series a CEL expression over the node, its running pods
//! or their containers. Rendered in the Prometheus text format.
//!
//! Histograms: each bucket's CEL gives its cumulative count; `+Inf` and
//! `_count` repeat the last bucket's, and `_sum` is the metric's `value`
//! (0 when absent). Hidden buckets count towards nothing shown.

use std::fmt::Write as _;
use std::sync::Arc;

use kubesim_core::meta;
use serde_json::Value;

use super::cel::{self, Expr, Scope};
use super::model::{containers, Model};

const NODE_NAME: &str = "{nodeName}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dimension {
    Node,
    Pod,
    Container,
}

#[derive(Debug, Clone)]
struct Bucket {
    le: f64,
    value: Expr,
    hidden: bool,
}

#[derive(Debug, Clone)]
struct Series {
    name: String,
    help: String,
    kind: Kind,
    dimension: Dimension,
    labels: Vec<(String, Expr)>,
    value: Option<Expr>,
    buckets: Vec<Bucket>,
}

/// One compiled Metric object.
#[derive(Debug, Clone)]
pub struct MetricSet {
    pub object: Arc<Value>,
    pub id: String,
    path: String,
    series: Vec<Series>,
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A CEL field that may be written as a bare number (`value: 0`).
fn expr_field(v: &Value, key: &str, at: &str) -> Result<Option<Expr>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Expr::compile(s)
            .map(Some)
            .map_err(|e| format!("{at}.{key}: {e}")),
        Some(Value::Number(n)) => Expr::compile(&n.to_string()).map(Some),
        Some(_) => Err(format!("{at}.{key} must be a CEL expression")),
    }
}

impl MetricSet {
    /// Compiles a Metric; an error names the object and the field.
    pub fn from_object(obj: Arc<Value>) -> Result<MetricSet, String> {
        let id = format!("Metric {}", meta::name(&obj));
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let path = text(&spec, "path").unwrap_or("");
        if !path.starts_with("/metrics") {
            return Err(format!("{id}: spec.path must start with /metrics"));
        }
        if path.matches(NODE_NAME).count() > 1 {
            return Err(format!("{id}: spec.path may name {NODE_NAME} once"));
        }
        let list = match spec.get("metrics") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => return Err(format!("{id}: spec.metrics must be a list")),
        };
        let mut series = Vec::new();
        for (i, m) in list.iter().enumerate() {
            let at = format!("spec.metrics[{i}]");
            series.push(Self::series(m, &at).map_err(|e| format!("{id}: {e}"))?);
        }
        Ok(MetricSet {
            object: obj,
            id,
            path: path.to_string(),
            series,
        })
    }

    fn series(m: &Value, at: &str) -> Result<Series, String> {
        let name = text(m, "name").unwrap_or("");
        if !valid_name(name) {
            return Err(format!(
                "{at}.name {name:?} is not a Prometheus metric name"
            ));
        }
        let kind = match text(m, "kind") {
            Some("counter") => Kind::Counter,
            Some("gauge") => Kind::Gauge,
            Some("histogram") => Kind::Histogram,
            other => {
                return Err(format!(
                    "{at}.kind {other:?}: want counter, gauge or histogram"
                ))
            }
        };
        let dimension = match text(m, "dimension") {
            Some("node") => Dimension::Node,
            Some("pod") => Dimension::Pod,
            Some("container") => Dimension::Container,
            other => {
                return Err(format!(
                    "{at}.dimension {other:?}: want node, pod or container"
                ))
            }
        };
        let mut labels = Vec::new();
        for (j, l) in m
            .get("labels")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let lat = format!("{at}.labels[{j}]");
            let lname = text(l, "name").unwrap_or("");
            if !valid_name(lname) || lname.contains(':') {
                return Err(format!("{lat}.name {lname:?} is not a label name"));
            }
            let value =
                expr_field(l, "value", &lat)?.ok_or_else(|| format!("{lat}.value is required"))?;
            labels.push((lname.to_string(), value));
        }
        let value = expr_field(m, "value", at)?;
        let mut buckets = Vec::new();
        for (j, b) in m
            .get("buckets")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .iter()
            .enumerate()
        {
            let bat = format!("{at}.buckets[{j}]");
            let le = b
                .get("le")
                .and_then(Value::as_f64)
                .ok_or_else(|| format!("{bat}.le must be a number"))?;
            let bvalue =
                expr_field(b, "value", &bat)?.ok_or_else(|| format!("{bat}.value is required"))?;
            buckets.push(Bucket {
                le,
                value: bvalue,
                hidden: b.get("hidden").and_then(Value::as_bool).unwrap_or(false),
            });
        }
        if kind != Kind::Histogram && value.is_none() {
            return Err(format!("{at}.value is required"));
        }
        if kind == Kind::Histogram && buckets.is_empty() {
            return Err(format!("{at}.buckets: a histogram needs buckets"));
        }
        buckets.sort_by(|a, b| a.le.total_cmp(&b.le));
        Ok(Series {
            name: name.to_string(),
            help: m
                .get("help")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .to_string(),
            kind,
            dimension,
            labels,
            value,
            buckets,
        })
    }

    /// Whether this Metric serves `path`: `Some(node)` with the node the
    /// path names (None when its path names no node).
    pub fn matches(&self, path: &str) -> Option<Option<String>> {
        match self.path.split_once(NODE_NAME) {
            None => (self.path == path).then_some(None),
            Some((pre, post)) => {
                let node = path.strip_prefix(pre)?.strip_suffix(post)?;
                (!node.is_empty() && !node.contains('/')).then(|| Some(node.to_string()))
            }
        }
    }

    /// Appends this Metric's series for `nodes` to `out`.
    pub fn render(&self, model: &Arc<Model>, nodes: &[Arc<Value>], out: &mut String) {
        let host = model.host();
        for s in &self.series {
            let mut samples = String::new();
            for node in nodes {
                let pods = match s.dimension {
                    Dimension::Node => vec![],
                    _ => model.running_pods(meta::name(node)),
                };
                let mut scopes: Vec<Scope> = Vec::new();
                match s.dimension {
                    Dimension::Node => scopes.push(Scope {
                        node: Some(node),
                        ..Scope::default()
                    }),
                    Dimension::Pod => scopes.extend(pods.iter().map(|p| Scope {
                        node: Some(node),
                        pod: Some(p),
                        container: None,
                    })),
                    Dimension::Container => {
                        for p in &pods {
                            scopes.extend(containers(p).iter().map(|c| Scope {
                                node: Some(node),
                                pod: Some(p),
                                container: Some(c),
                            }))
                        }
                    }
                }
                for scope in scopes {
                    if let Err(e) = self.sample(s, scope, &host, &mut samples) {
                        model.report(&self.object, &self.id, &format!("{}: {e}", s.name));
                    }
                }
            }
            if !s.help.is_empty() {
                let help = s.help.replace('\\', "\\\\").replace('\n', "\\n");
                let _ = writeln!(out, "# HELP {} {help}", s.name);
            }
            let kind = match s.kind {
                Kind::Counter => "counter",
                Kind::Gauge => "gauge",
                Kind::Histogram => "histogram",
            };
            let _ = writeln!(out, "# TYPE {} {kind}", s.name);
            out.push_str(&samples);
        }
    }

    /// One sample (or a histogram's lines), written only when every
    /// expression of it evaluates.
    fn sample(
        &self,
        s: &Series,
        scope: Scope,
        host: &Arc<dyn cel::Host>,
        out: &mut String,
    ) -> Result<(), String> {
        let mut labels = Vec::new();
        for (name, e) in &s.labels {
            labels.push((name.as_str(), cel::eval_string(e, scope, host, 0)?));
        }
        if s.kind != Kind::Histogram {
            let v = match &s.value {
                Some(e) => cel::eval_number(e, scope, host, 0)?,
                None => 0.0,
            };
            let _ = writeln!(out, "{}{} {}", s.name, label_text(&labels, None), number(v));
            return Ok(());
        }
        let mut lines = String::new();
        let mut last = 0.0;
        for b in &s.buckets {
            let v = cel::eval_number(&b.value, scope, host, 0)?;
            last = v;
            if !b.hidden {
                let le = number(b.le);
                let _ = writeln!(
                    lines,
                    "{}_bucket{} {}",
                    s.name,
                    label_text(&labels, Some(&le)),
                    number(v)
                );
            }
        }
        let sum = match &s.value {
            Some(e) => cel::eval_number(e, scope, host, 0)?,
            None => 0.0,
        };
        let plain = label_text(&labels, None);
        let _ = writeln!(
            lines,
            "{}_bucket{} {}",
            s.name,
            label_text(&labels, Some("+Inf")),
            number(last)
        );
        let _ = writeln!(lines, "{}_sum{plain} {}", s.name, number(sum));
        let _ = writeln!(lines, "{}_count{plain} {}", s.name, number(last));
        out.push_str(&lines);
        Ok(())
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn label_text(labels: &[(&str, String)], le: Option<&str>) -> String {
    let mut parts: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    if let Some(le) = le {
        parts.push(format!("le=\"{le}\""));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", parts.join(","))
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value as Prometheus reads it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// The text served at `path` for emulated nodes, or None when no Metric
/// serves it (or it names a node that is not emulated).
pub fn serve(model: &Arc<Model>, path: &str) -> Option<String> {
    let sets = model.metrics();
    let mut out = String::new();
    let mut served = false;
    for set in sets.iter() {
        let Some(named) = set.matches(path) else {
            continue;
        };
        let nodes: Vec<Arc<Value>> = match named {
            Some(n) => model
                .nodes
                .get("", &n)
                .filter(|node| model.selector.manages(node))
                .into_iter()
                .collect(),
            // The cache lists nodes in name order.
            None => model
                .nodes
                .list()
                .into_iter()
                .filter(|n| model.selector.manages(n))
                .collect(),
        };
        if nodes.is_empty() {
            continue;
        }
        served = true;
        set.render(model, &nodes, &mut out);
    }
    served.then_some(out)
}

#[cfg(test)]
mod tests;
