//! The evaluator as it was before it borrowed the values it reads (it
//! copied every field and list item it reached), kept to check that the
//! borrowing one renders exactly what it did.

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

use super::exec::truthy;

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

/// The value at `path` under `v`, cloning only what is reached (a field
/// of a whole pod is read far more often than the pod is copied).
fn fields_of(v: &Value, path: &[String]) -> Value {
    let mut at = v;
    for f in path {
        // Only objects have fields: anything else gives null, as before.
        let Some(next) = at.get(f.as_str()) else {
            return Value::Null;
        };
        at = next;
    }
    at.clone()
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

    pub fn run(&mut self, nodes: &[Node], dot: &Value) -> Result<(), TemplateError> {
        self.list(nodes, dot).map(|_| ())
    }

    fn list(&mut self, nodes: &[Node], dot: &Value) -> Result<Flow, TemplateError> {
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
                    let items: Vec<(Value, Value)> = match v {
                        Value::Array(a) => a
                            .into_iter()
                            .enumerate()
                            .map(|(i, x)| (Value::from(i), x))
                            .collect(),
                        Value::Object(o) => {
                            let mut kv: Vec<(String, Value)> = o.into_iter().collect();
                            kv.sort_by(|a, b| a.0.cmp(&b.0));
                            kv.into_iter().map(|(k, x)| (Value::String(k), x)).collect()
                        }
                        Value::Number(n) if n.as_i64().is_some() => (0..n.as_i64().unwrap_or(0))
                            .map(|i| (Value::from(i), Value::from(i)))
                            .collect(),
                        Value::Null => Vec::new(),
                        other => {
                            return Err(err(
                                pipe.line,
                                format!("range can't iterate over {}", builtins::show(&other)),
                            ))
                        }
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
                            [v] => self.vars.push((v.clone(), Cow::Owned(x.clone()))),
                            [i, v] => {
                                self.vars.push((i.clone(), Cow::Owned(k)));
                                self.vars.push((v.clone(), Cow::Owned(x.clone())));
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
                        None => Value::Null,
                    };
                    if self.depth >= MAX_DEPTH {
                        return Err(err(*line, "template calls nest too deeply"));
                    }
                    self.depth += 1;
                    // A template sees only its own `$`.
                    let saved = std::mem::replace(
                        &mut self.vars,
                        vec![(String::new(), Cow::Owned(d.clone()))],
                    );
                    let r = self.list(body, &d);
                    self.vars = saved;
                    self.depth -= 1;
                    r?;
                }
            }
        }
        Ok(Flow::Normal)
    }

    fn var(&self, name: &str, line: usize) -> Result<&Value, TemplateError> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_ref())
            .ok_or_else(|| err(line, format!("undefined variable \"${name}\"")))
    }

    fn pipeline(&mut self, p: &Pipeline, dot: &Value) -> Result<Value, TemplateError> {
        let v = self.eval_cmds(&p.cmds, dot, p.line)?;
        if let Some(name) = p.vars.first() {
            if p.assign {
                let slot = self
                    .vars
                    .iter_mut()
                    .rev()
                    .find(|(n, _)| n == name)
                    .ok_or_else(|| err(p.line, format!("undefined variable \"${name}\"")))?;
                slot.1 = Cow::Owned(v.clone());
            } else {
                self.vars.push((name.clone(), Cow::Owned(v.clone())));
            }
        }
        Ok(v)
    }

    fn eval_cmds(
        &mut self,
        cmds: &[Vec<Arg>],
        dot: &Value,
        line: usize,
    ) -> Result<Value, TemplateError> {
        let mut piped: Option<Value> = None;
        for cmd in cmds {
            piped = Some(self.command(cmd, dot, piped, line)?);
        }
        Ok(piped.unwrap_or(Value::Null))
    }

    fn command(
        &mut self,
        cmd: &[Arg],
        dot: &Value,
        piped: Option<Value>,
        line: usize,
    ) -> Result<Value, TemplateError> {
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

    fn arg(&mut self, a: &Arg, dot: &Value, line: usize) -> Result<Value, TemplateError> {
        Ok(match a {
            Arg::Field(path) => fields_of(dot, path),
            Arg::Var(name, path) => fields_of(self.var(name, line)?, path),
            Arg::Func(name) => self.call(name, &[], dot, None, line)?,
            Arg::Str(s) => Value::String(s.clone()),
            Arg::Int(i) => Value::from(*i),
            Arg::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Arg::Bool(b) => Value::Bool(*b),
            Arg::Nil => Value::Null,
            Arg::Sub(p, path) => {
                let v = self.eval_cmds(&p.cmds, dot, line)?;
                fields_of(&v, path)
            }
        })
    }

    fn call(
        &mut self,
        name: &str,
        args: &[Arg],
        dot: &Value,
        piped: Option<Value>,
        line: usize,
    ) -> Result<Value, TemplateError> {
        // `and` and `or` stop at the first operand that decides them.
        if name == "and" || name == "or" {
            let mut last = Value::Null;
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
            vals.push(self.arg(a, dot, line)?);
        }
        if let Some(p) = piped {
            vals.push(p);
        }
        let found = self
            .funcs
            .call(name, &vals)
            .or_else(|| builtins::call(name, &vals))
            .or_else(|| super::sprig::call(name, &vals));
        match found {
            Some(Ok(v)) => Ok(v),
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
