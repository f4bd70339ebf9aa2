//! Evaluating the syntax tree over a JSON value, with Go's rules for
//! truth, variable scope and pipelines.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use super::builtins;
use super::parse::{Arg, Node, Pipeline};
use super::{Funcs, TemplateError};

/// How a list of nodes ended.
enum Flow {
    Normal,
    Break,
    Continue,
}

/// Go's truth: false, 0, "", nil and empty collections are false.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Depth limit for `template` calls, so a recursive define cannot loop.
const MAX_DEPTH: usize = 100;

pub struct Exec<'a> {
    pub funcs: &'a dyn Funcs,
    pub defines: &'a BTreeMap<String, Vec<Node>>,
    pub out: String,
    /// Variables in scope, innermost last; `$` is the first, borrowed: it
    /// is the whole object a template renders (a pod), and most
    /// templates read only a few fields of it.
    vars: Vec<(String, Cow<'a, Value>)>,
    depth: usize,
}

fn err(line: usize, msg: impl std::fmt::Display) -> TemplateError {
    TemplateError(format!("line {line}: {msg}"))
}

/// A value met while rendering: borrowed from the data rendered (fields
/// of the pod, the items of its lists) or made by the template (function
/// results). Borrowing matters: `range .spec.containers` used to copy
/// every container, twice, to print two of its fields.
pub type Val<'a> = Cow<'a, Value>;

static NULL: Value = Value::Null;

/// The value at `path` under `v`. Only objects have fields: anything else
/// gives null.
fn field_ref<'v>(v: &'v Value, path: &[String]) -> &'v Value {
    let mut at = v;
    for f in path {
        match at.get(f.as_str()) {
            Some(next) => at = next,
            None => return &NULL,
        }
    }
    at
}

/// [`field_ref`] of a value that may be borrowed: borrowed again, else
/// only what is reached is copied.
fn fields_of<'a>(v: &Val<'a>, path: &[String]) -> Val<'a> {
    match v {
        Cow::Borrowed(r) => Cow::Borrowed(field_ref(r, path)),
        Cow::Owned(o) => Cow::Owned(field_ref(o, path).clone()),
    }
}

/// [`fields_of`] of a value no longer needed: what is reached is moved out.
fn take_fields<'a>(v: Val<'a>, path: &[String]) -> Val<'a> {
    match v {
        Cow::Borrowed(r) => Cow::Borrowed(field_ref(r, path)),
        Cow::Owned(mut o) => {
            let mut at = &mut o;
            for f in path {
                match at.get_mut(f.as_str()) {
                    Some(next) => at = next,
                    None => return Cow::Borrowed(&NULL),
                }
            }
            Cow::Owned(at.take())
        }
    }
}

impl<'a> Exec<'a> {
    pub fn new(
        funcs: &'a dyn Funcs,
        defines: &'a BTreeMap<String, Vec<Node>>,
        root: &'a Value,
    ) -> Self {
        Exec {
            funcs,
            defines,
            out: String::new(),
            vars: vec![(String::new(), Cow::Borrowed(root))],
            depth: 0,
        }
    }

    pub fn run(&mut self, nodes: &[Node], dot: &'a Value) -> Result<(), TemplateError> {
        self.list(nodes, &Cow::Borrowed(dot)).map(|_| ())
    }

    fn list(&mut self, nodes: &[Node], dot: &Val<'a>) -> Result<Flow, TemplateError> {
        for n in nodes {
            match n {
                Node::Text(t) => self.out.push_str(t),
                Node::Output(p) => {
                    let v = self.pipeline(p, dot)?;
                    if p.vars.is_empty() {
                        builtins::print_into(&mut self.out, &v);
                    }
                }
                Node::If {
                    branches,
                    otherwise,
                }
                | Node::With {
                    branches,
                    otherwise,
                } => {
                    let with = matches!(n, Node::With { .. });
                    let mark = self.vars.len();
                    let mut taken = None;
                    for (p, body) in branches {
                        let v = self.pipeline(p, dot)?;
                        if truthy(&v) {
                            taken = Some((body, v));
                            break;
                        }
                    }
                    let flow = match taken {
                        Some((body, v)) if with => self.list(body, &v)?,
                        Some((body, _)) => self.list(body, dot)?,
                        None => self.list(otherwise, dot)?,
                    };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let v = self.eval_cmds(&pipe.cmds, dot, pipe.line)?;
                    let items: Vec<(Value, Val<'a>)> = match v {
                        Cow::Borrowed(Value::Array(a)) => a
                            .iter()
                            .enumerate()
                            .map(|(i, x)| (Value::from(i), Cow::Borrowed(x)))
                            .collect(),
                        Cow::Owned(Value::Array(a)) => a
                            .into_iter()
                            .enumerate()
                            .map(|(i, x)| (Value::from(i), Cow::Owned(x)))
                            .collect(),
                        Cow::Borrowed(Value::Object(o)) => {
                            let mut kv: Vec<(&String, &Value)> = o.iter().collect();
                            kv.sort_by(|a, b| a.0.cmp(b.0));
                            kv.into_iter()
                                .map(|(k, x)| (Value::String(k.clone()), Cow::Borrowed(x)))
                                .collect()
                        }
                        Cow::Owned(Value::Object(o)) => {
                            let mut kv: Vec<(String, Value)> = o.into_iter().collect();
                            kv.sort_by(|a, b| a.0.cmp(&b.0));
                            kv.into_iter()
                                .map(|(k, x)| (Value::String(k), Cow::Owned(x)))
                                .collect()
                        }
                        v => match &*v {
                            Value::Number(n) if n.as_i64().is_some() => {
                                (0..n.as_i64().unwrap_or(0))
                                    .map(|i| (Value::from(i), Cow::Owned(Value::from(i))))
                                    .collect()
                            }
                            Value::Null => Vec::new(),
                            other => {
                                return Err(err(
                                    pipe.line,
                                    format!("range can't iterate over {}", builtins::show(other)),
                                ))
                            }
                        },
                    };
                    if items.is_empty() {
                        let flow = self.list(otherwise, dot)?;
                        self.vars.truncate(mark);
                        if !matches!(flow, Flow::Normal) {
                            return Ok(flow);
                        }
                        continue;
                    }
                    for (k, x) in items {
                        let inner = self.vars.len();
                        match pipe.vars.as_slice() {
                            [v] => self.vars.push((v.clone(), x.clone())),
                            [i, v] => {
                                self.vars.push((i.clone(), Cow::Owned(k)));
                                self.vars.push((v.clone(), x.clone()));
                            }
                            _ => {}
                        }
                        let flow = self.list(body, &x)?;
                        self.vars.truncate(inner);
                        if matches!(flow, Flow::Break) {
                            break;
                        }
                    }
                    self.vars.truncate(mark);
                }
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
                Node::Template(name, pipe, line) => {
                    let body = self
                        .defines
                        .get(name)
                        .ok_or_else(|| err(*line, format!("no such template {name:?}")))?;
                    let d = match pipe {
                        Some(p) => self.pipeline(p, dot)?,
                        None => Cow::Borrowed(&NULL),
                    };
                    if self.depth >= MAX_DEPTH {
                        return Err(err(*line, "template calls nest too deeply"));
                    }
                    self.depth += 1;
                    // A template sees only its own `$`.
                    let saved = std::mem::replace(&mut self.vars, vec![(String::new(), d.clone())]);
                    let r = self.list(body, &d);
                    self.vars = saved;
                    self.depth -= 1;
                    r?;
                }
            }
        }
        Ok(Flow::Normal)
    }

    fn var(&self, name: &str, line: usize) -> Result<&Val<'a>, TemplateError> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .ok_or_else(|| err(line, format!("undefined variable \"${name}\"")))
    }

    fn pipeline(&mut self, p: &Pipeline, dot: &Val<'a>) -> Result<Val<'a>, TemplateError> {
        let v = self.eval_cmds(&p.cmds, dot, p.line)?;
        if let Some(name) = p.vars.first() {
            if p.assign {
                let slot = self
                    .vars
                    .iter_mut()
                    .rev()
                    .find(|(n, _)| n == name)
                    .ok_or_else(|| err(p.line, format!("undefined variable \"${name}\"")))?;
                slot.1 = v.clone();
            } else {
                self.vars.push((name.clone(), v.clone()));
            }
        }
        Ok(v)
    }

    fn eval_cmds(
        &mut self,
        cmds: &[Vec<Arg>],
        dot: &Val<'a>,
        line: usize,
    ) -> Result<Val<'a>, TemplateError> {
        let mut piped: Option<Val<'a>> = None;
        for cmd in cmds {
            piped = Some(self.command(cmd, dot, piped, line)?);
        }
        Ok(piped.unwrap_or(Cow::Borrowed(&NULL)))
    }

    fn command(
        &mut self,
        cmd: &[Arg],
        dot: &Val<'a>,
        piped: Option<Val<'a>>,
        line: usize,
    ) -> Result<Val<'a>, TemplateError> {
        let Some(first) = cmd.first() else {
            return Err(err(line, "empty command"));
        };
        if let Arg::Func(name) = first {
            return self.call(name, &cmd[1..], dot, piped, line);
        }
        if cmd.len() > 1 || piped.is_some() {
            return Err(err(
                line,
                format!("can't give argument to non-function {}", describe(first)),
            ));
        }
        self.arg(first, dot, line)
    }

    fn arg(&mut self, a: &Arg, dot: &Val<'a>, line: usize) -> Result<Val<'a>, TemplateError> {
        Ok(match a {
            Arg::Field(path) => fields_of(dot, path),
            Arg::Var(name, path) => fields_of(self.var(name, line)?, path),
            Arg::Func(name) => self.call(name, &[], dot, None, line)?,
            Arg::Str(s) => Cow::Owned(Value::String(s.clone())),
            Arg::Int(i) => Cow::Owned(Value::from(*i)),
            Arg::Float(f) => Cow::Owned(
                serde_json::Number::from_f64(*f)
                    .map(Value::Number)
                    .unwrap_or(Value::Null),
            ),
            Arg::Bool(b) => Cow::Owned(Value::Bool(*b)),
            Arg::Nil => Cow::Borrowed(&NULL),
            Arg::Sub(p, path) => {
                let v = self.eval_cmds(&p.cmds, dot, line)?;
                take_fields(v, path)
            }
        })
    }

    fn call(
        &mut self,
        name: &str,
        args: &[Arg],
        dot: &Val<'a>,
        piped: Option<Val<'a>>,
        line: usize,
    ) -> Result<Val<'a>, TemplateError> {
        // `and` and `or` stop at the first operand that decides them.
        if name == "and" || name == "or" {
            let mut last = Cow::Borrowed(&NULL);
            let n = args.len() + usize::from(piped.is_some());
            if n == 0 {
                return Err(err(
                    line,
                    format!("wrong number of args for {name}: want at least 1 got 0"),
                ));
            }
            for a in args {
                last = self.arg(a, dot, line)?;
                if truthy(&last) == (name == "or") {
                    return Ok(last);
                }
            }
            if let Some(p) = piped {
                last = p;
            }
            return Ok(last);
        }
        let mut vals = Vec::with_capacity(args.len() + 1);
        for a in args {
            vals.push(self.arg(a, dot, line)?.into_owned());
        }
        if let Some(p) = piped {
            vals.push(p.into_owned());
        }
        let found = self
            .funcs
            .call(name, &vals)
            .or_else(|| builtins::call(name, &vals))
            .or_else(|| super::sprig::call(name, &vals));
        match found {
            Some(Ok(v)) => Ok(Cow::Owned(v)),
            Some(Err(e)) => Err(err(line, format!("error calling {name}: {e}"))),
            None => Err(err(line, format!("function {name:?} not defined"))),
        }
    }
}

fn describe(a: &Arg) -> String {
    match a {
        Arg::Field(p) => format!(".{}", p.join(".")),
        Arg::Var(n, _) => format!("${n}"),
        Arg::Str(s) => format!("{s:?}"),
        Arg::Int(i) => i.to_string(),
        Arg::Float(f) => f.to_string(),
        Arg::Bool(b) => b.to_string(),
        Arg::Nil => "nil".into(),
        Arg::Func(f) => f.clone(),
        Arg::Sub(..) => "(...)".into(),
    }
}
