//! CEL as kwok's ResourceUsage and Metric objects use it: the standard
//! library plus kwok's functions, over the variables `pod`, `node` and
//! `container` (the objects as JSON, absent ones null).
//!
//! kwok's functions, each callable as `F(x, ...)` or `x.F(...)`:
//!
//! | function | result |
//! |---|---|
//! | `Quantity("100m")` | the quantity as a number (0.1; `"1Mi"` is 1048576) |
//! | `Now()` | the clock's time, in Unix seconds |
//! | `Rand()` | a number in [0, 1) from the cluster's seeded RNG |
//! | `SinceSecond(obj)` | seconds since the object started (a pod's `status.startTime`, else its creation) |
//! | `UnixSecond(t)` | an RFC 3339 time (or a number) in Unix seconds |
//! | `Usage(pod\|node, "cpu"\|"memory"[, container])` | cores or bytes in use now |
//! | `CumulativeUsage(...)` | the same summed over emulated time (core-seconds) |
//!
//! Times are numbers rather than CEL timestamps: the CEL crate's
//! timestamps need its chrono feature (and a time-zone database), and
//! every kwok expression turns times into seconds anyway.

use std::sync::{Arc, OnceLock};

use cel::common::value::CowVal;
use cel::objects::{KeyRef, Map};
use cel::{Context, Env, ExecutionError, FunctionContext, Program, Value as Cel};
use kubesim_core::quantity::Quantity;
// JSON as CEL sees a Kubernetes object: integers are `int` (as the Go
// types' int32/int64 fields are), which CEL compares with `int` literals.
use kubesim_core::structural::json_to_cel as to_cel;
use serde_json::Value;

/// How deep `Usage()` may call back into usage expressions that call
/// `Usage()` again, so an expression naming its own pod ends in an error
/// rather than a stack overflow.
pub const MAX_DEPTH: u8 = 4;

/// The two resources usage is emulated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    Cpu,
    Memory,
}

impl Resource {
    pub fn parse(s: &str) -> Result<Resource, String> {
        match s {
            "cpu" => Ok(Resource::Cpu),
            "memory" => Ok(Resource::Memory),
            other => Err(format!("unknown resource {other:?} (want cpu or memory)")),
        }
    }
}

/// An object `Usage()` is asked about, named by what identifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Pod { namespace: String, name: String },
    Node { name: String },
}

/// What expressions read beyond their variables: time, randomness and
/// the emulated usage of other objects.
pub trait Host: Send + Sync {
    /// Unix seconds now, from the cluster's clock.
    fn now(&self) -> f64;
    /// A number in [0, 1) from the cluster's seeded RNG.
    fn rand(&self) -> f64;
    /// Cores or bytes `target` (one container of it, if named) uses now.
    fn usage(
        &self,
        target: &Target,
        resource: Resource,
        container: Option<&str>,
        depth: u8,
    ) -> Result<f64, String>;
    /// Core-seconds (or byte-seconds) `target` has used since it started.
    fn cumulative(
        &self,
        target: &Target,
        resource: Resource,
        container: Option<&str>,
        depth: u8,
    ) -> Result<f64, String>;
}

/// A compiled expression with its source, for error messages.
#[derive(Clone)]
pub struct Expr {
    pub source: String,
    program: Arc<Program>,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expr({:?})", self.source)
    }
}

impl Expr {
    pub fn compile(source: &str) -> Result<Expr, String> {
        let program = env()
            .compile(source)
            .map_err(|e| format!("cannot parse CEL {:?}: {e}", source.trim()))?;
        Ok(Expr {
            source: source.to_string(),
            program: Arc::new(program),
        })
    }
}

/// The variables of one evaluation.
#[derive(Default, Clone, Copy)]
pub struct Scope<'a> {
    pub pod: Option<&'a Value>,
    pub node: Option<&'a Value>,
    pub container: Option<&'a Value>,
}

fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib())).clone()
}

/// Evaluates `expr` in `scope`.
pub fn eval(expr: &Expr, scope: Scope, host: &Arc<dyn Host>, depth: u8) -> Result<Cel, String> {
    let mut ctx = Context::with_env(env());
    for (name, v) in [
        ("pod", scope.pod),
        ("node", scope.node),
        ("container", scope.container),
    ] {
        let v = match v {
            Some(v) => object_value(v),
            None => Cel::Null,
        };
        ctx.add_variable_from_value(name, v);
    }
    register(&mut ctx, host, depth)?;
    expr.program
        .execute(&ctx)
        .map_err(|e| format!("CEL {:?} failed: {e}", expr.source.trim()))
}

/// `obj` as expressions read it (see `object_like_go` and `to_cel`).
pub fn object_value(obj: &Value) -> Cel {
    to_cel(&object_like_go(obj))
}

/// Evaluates `expr` with the variable `self` bound to `obj` (an
/// [`object_value`]), as kwok's Stage selectors and `*From` expressions do
/// (standard library only).
pub fn eval_self(expr: &Expr, obj: &Cel) -> Result<Cel, String> {
    let mut ctx = Context::with_env(env());
    ctx.add_variable_from_value("self", obj.clone());
    expr.program
        .execute(&ctx)
        .map_err(|e| format!("CEL {:?} failed: {e}", expr.source.trim()))
}

/// A scalar CEL result as JSON; None for lists, maps and other kinds.
pub fn scalar_json(v: &Cel) -> Option<Value> {
    Some(match v {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number)?,
        Cel::String(s) => Value::String(s.to_string()),
        _ => return None,
    })
}

/// Evaluates `expr` to a number (a `Quantity()` is one).
pub fn eval_number(
    expr: &Expr,
    scope: Scope,
    host: &Arc<dyn Host>,
    depth: u8,
) -> Result<f64, String> {
    match eval(expr, scope, host, depth)? {
        Cel::Int(i) => Ok(i as f64),
        Cel::UInt(u) => Ok(u as f64),
        Cel::Float(f) => Ok(f),
        Cel::String(s) => quantity(&s),
        other => Err(format!(
            "CEL {:?} gave {other:?}, not a number",
            expr.source.trim()
        )),
    }
}

/// Evaluates `expr` to a label value.
pub fn eval_string(
    expr: &Expr,
    scope: Scope,
    host: &Arc<dyn Host>,
    depth: u8,
) -> Result<String, String> {
    match eval(expr, scope, host, depth)? {
        Cel::String(s) => Ok(s.to_string()),
        Cel::Int(i) => Ok(i.to_string()),
        Cel::UInt(u) => Ok(u.to_string()),
        Cel::Float(f) => Ok(f.to_string()),
        Cel::Bool(b) => Ok(b.to_string()),
        Cel::Null => Ok(String::new()),
        other => Err(format!(
            "CEL {:?} gave {other:?}, not a string",
            expr.source.trim()
        )),
    }
}

/// kwok hands expressions typed Go objects, whose label and annotation
/// maps read as empty when unset; a JSON object simply lacks them, which
/// would make `"k" in pod.metadata.annotations` an error here.
fn object_like_go(v: &Value) -> std::borrow::Cow<'_, Value> {
    let meta = v.get("metadata").and_then(Value::as_object);
    let Some(meta) = meta else {
        return std::borrow::Cow::Borrowed(v);
    };
    if meta.contains_key("annotations") && meta.contains_key("labels") {
        return std::borrow::Cow::Borrowed(v);
    }
    let mut owned = v.clone();
    if let Some(m) = owned.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["annotations", "labels"] {
            m.entry(k)
                .or_insert_with(|| Value::Object(Default::default()));
        }
    }
    std::borrow::Cow::Owned(owned)
}

fn quantity(s: &str) -> Result<f64, String> {
    Quantity::parse(s.trim())
        .map(|q| q.milli() as f64 / 1000.0)
        .map_err(|_| format!("{s:?} is not a quantity"))
}

/// The receiver (if called as a method) followed by the arguments.
fn operands(ftx: &FunctionContext) -> Result<Vec<Cel>, ExecutionError> {
    let this = ftx.this.iter();
    this.chain(ftx.args.iter())
        .map(|v: &CowVal| Cel::try_from(v.as_ref()))
        .collect()
}

fn field<'a>(v: &'a Cel, path: &[&str]) -> Option<&'a Cel> {
    let mut cur = v;
    for p in path {
        match cur {
            Cel::Map(m) => cur = get(m, p)?,
            _ => return None,
        }
    }
    Some(cur)
}

fn get<'a>(m: &'a Map, key: &str) -> Option<&'a Cel> {
    m.get(&KeyRef::String(key))
}

fn text(v: Option<&Cel>) -> Option<&str> {
    match v {
        Some(Cel::String(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// Which object a `Usage()` operand is: its `kind` when it says, else a
/// pod if it has containers.
fn target(v: &Cel) -> Result<Target, String> {
    let name = text(field(v, &["metadata", "name"]))
        .unwrap_or("")
        .to_string();
    let namespace = text(field(v, &["metadata", "namespace"]))
        .unwrap_or("")
        .to_string();
    let is_pod = match text(field(v, &["kind"])) {
        Some(k) => k == "Pod",
        None => field(v, &["spec", "containers"]).is_some(),
    };
    if matches!(v, Cel::Null) || name.is_empty() {
        return Err("the first operand must be a pod or a node".into());
    }
    Ok(if is_pod {
        Target::Pod { namespace, name }
    } else {
        Target::Node { name }
    })
}

fn usage_call(
    name: &str,
    ftx: &FunctionContext,
    host: &Arc<dyn Host>,
    depth: u8,
    cumulative: bool,
) -> Result<Cel, ExecutionError> {
    let ops = operands(ftx)?;
    let fail = |m: String| ExecutionError::function_error(name, m);
    if !(2..=3).contains(&ops.len()) {
        return Err(fail(format!(
            "takes (pod|node, \"cpu\"|\"memory\"[, container]), got {} operands",
            ops.len()
        )));
    }
    let t = target(&ops[0]).map_err(fail)?;
    let resource = match &ops[1] {
        Cel::String(s) => Resource::parse(s).map_err(fail)?,
        _ => return Err(fail("the resource must be \"cpu\" or \"memory\"".into())),
    };
    let container = match ops.get(2) {
        None => None,
        Some(Cel::String(s)) => Some(s.as_str()),
        Some(_) => return Err(fail("the container must be a name".into())),
    };
    if depth >= MAX_DEPTH {
        return Err(fail(format!(
            "usage expressions call {name}() more than {MAX_DEPTH} deep"
        )));
    }
    let r = if cumulative {
        host.cumulative(&t, resource, container, depth + 1)
    } else {
        host.usage(&t, resource, container, depth + 1)
    };
    r.map(Cel::Float).map_err(fail)
}

fn register(ctx: &mut Context, host: &Arc<dyn Host>, depth: u8) -> Result<(), String> {
    let declare = |e: cel::DeclarationError| e.to_string();
    ctx.add_function(
        "Quantity",
        |ftx: &FunctionContext| -> Result<Cel, ExecutionError> {
            match operands(ftx)?.as_slice() {
                [Cel::String(s)] => quantity(s).map(Cel::Float).map_err(|e| ftx.error(e)),
                _ => Err(ftx.error("takes one string")),
            }
        },
    )
    .map_err(declare)?;
    let h = host.clone();
    ctx.add_function("Now", move |_: &FunctionContext| Cel::Float(h.now()))
        .map_err(declare)?;
    let h = host.clone();
    ctx.add_function("Rand", move |_: &FunctionContext| Cel::Float(h.rand()))
        .map_err(declare)?;
    let h = host.clone();
    ctx.add_function(
        "SinceSecond",
        move |ftx: &FunctionContext| -> Result<Cel, ExecutionError> {
            let ops = operands(ftx)?;
            let [obj] = ops.as_slice() else {
                return Err(ftx.error("takes one object"));
            };
            let started = text(field(obj, &["status", "startTime"]))
                .or_else(|| text(field(obj, &["metadata", "creationTimestamp"])))
                .ok_or_else(|| ftx.error("the object has no start or creation time"))?;
            let t = unix_seconds(started).map_err(|e| ftx.error(e))?;
            Ok(Cel::Float(h.now() - t))
        },
    )
    .map_err(declare)?;
    ctx.add_function(
        "UnixSecond",
        |ftx: &FunctionContext| -> Result<Cel, ExecutionError> {
            match operands(ftx)?.as_slice() {
                [Cel::String(s)] => unix_seconds(s).map(Cel::Float).map_err(|e| ftx.error(e)),
                [Cel::Float(f)] => Ok(Cel::Float(*f)),
                [Cel::Int(i)] => Ok(Cel::Float(*i as f64)),
                _ => Err(ftx.error("takes one time")),
            }
        },
    )
    .map_err(declare)?;
    let h = host.clone();
    ctx.add_function(
        "Usage",
        move |ftx: &FunctionContext| -> Result<Cel, ExecutionError> {
            usage_call("Usage", ftx, &h, depth, false)
        },
    )
    .map_err(declare)?;
    let h = host.clone();
    ctx.add_function(
        "CumulativeUsage",
        move |ftx: &FunctionContext| -> Result<Cel, ExecutionError> {
            usage_call("CumulativeUsage", ftx, &h, depth, true)
        },
    )
    .map_err(declare)?;
    Ok(())
}

fn unix_seconds(s: &str) -> Result<f64, String> {
    let t: jiff::Timestamp = s
        .parse()
        .map_err(|_| format!("{s:?} is not an RFC 3339 time"))?;
    Ok(t.as_nanosecond() as f64 / 1e9)
}

#[cfg(test)]
mod tests;
