//! ClusterLoader2's template functions (`DefaultParam`, `AddInt`, `Loop`,
//! `YamlQuote`, ...) over JSON values. Numeric arguments are read as Go's
//! `toFloat64` does: any number or numeric string; anything else is an
//! error (ClusterLoader2 panics there).

use std::path::PathBuf;

use serde_json::{Number, Value};

use super::Funcs;

/// The random source of `RandInt`, `RandData` and the like: the caller's,
/// so that a run draws from its one seeded sequence.
pub trait Draws {
    /// Uniform in [0, n).
    fn below(&self, n: u64) -> u64;
    /// A source of its own whose draws depend on `seed` alone.
    fn seeded(seed: u64) -> Self;
}

const ALPHANUM: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// The functions, with what some of them need: a random source and the
/// directory `IncludeFile`/`IncludeEmbedFile` paths are relative to.
pub struct ClusterLoader2Funcs<R> {
    pub rng: R,
    pub base_dir: PathBuf,
}

fn num(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n} is not a number")),
        Value::String(s) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("{s:?} is not a number")),
        other => Err(format!("cannot use {} as a number", short(other))),
    }
}

fn short(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        other => {
            let s = other.to_string();
            if s.len() > 40 {
                format!("{}...", &s[..40])
            } else {
                s
            }
        }
    }
}

fn nums(args: &[Value]) -> Result<Vec<f64>, String> {
    args.iter().map(num).collect()
}

fn int(f: f64) -> Value {
    // Go's int(f) truncates toward zero.
    Value::from(f.trunc() as i64)
}

fn float(f: f64) -> Result<Value, String> {
    Number::from_f64(f)
        .map(Value::Number)
        .ok_or_else(|| format!("{f} is not a finite number"))
}

fn arity(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() != n {
        return Err(format!("{name} takes {n} argument(s), got {}", args.len()));
    }
    Ok(())
}

fn at_least(name: &str, args: &[Value], n: usize) -> Result<(), String> {
    if args.len() < n {
        return Err(format!(
            "{name} takes at least {n} argument(s), got {}",
            args.len()
        ));
    }
    Ok(())
}

fn string_arg(name: &str, v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!("{name}: {} is not a string", short(other))),
    }
}

impl<R: Draws> ClusterLoader2Funcs<R> {
    fn rand_data(&self, n: usize, rng: &R) -> Value {
        let s: String = (0..n)
            .map(|_| ALPHANUM[rng.below(ALPHANUM.len() as u64) as usize] as char)
            .collect();
        Value::String(s)
    }

    fn eval(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        Some(match name {
            "DefaultParam" => arity(name, args, 2).map(|()| {
                if args[0].is_null() {
                    args[1].clone()
                } else {
                    args[0].clone()
                }
            }),
            "AddInt" | "AddFloat" | "MultiplyInt" | "MultiplyFloat" => (|| {
                at_least(name, args, 1)?;
                let v = nums(args)?;
                let r = if name.starts_with("Add") {
                    v.iter().sum()
                } else {
                    v.iter().product()
                };
                if name.ends_with("Int") {
                    Ok(int(r))
                } else {
                    float(r)
                }
            })(),
            "SubtractInt" | "SubtractFloat" | "DivideInt" | "DivideFloat" => (|| {
                arity(name, args, 2)?;
                let (a, b) = (num(&args[0])?, num(&args[1])?);
                let r = if name.starts_with("Subtract") {
                    a - b
                } else {
                    if b == 0.0 {
                        return Err(format!("{name}: division by zero"));
                    }
                    a / b
                };
                if name.ends_with("Int") {
                    Ok(int(r))
                } else {
                    float(r)
                }
            })(),
            "MaxInt" | "MinInt" | "MaxFloat" | "MinFloat" => (|| {
                at_least(name, args, 1)?;
                let v = nums(args)?;
                let r = if name.starts_with("Max") {
                    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                } else {
                    v.iter().copied().fold(f64::INFINITY, f64::min)
                };
                if name.ends_with("Int") {
                    Ok(int(r))
                } else {
                    float(r)
                }
            })(),
            "Mod" => (|| {
                arity(name, args, 2)?;
                let (a, b) = (num(&args[0])? as i64, num(&args[1])? as i64);
                if b == 0 {
                    return Err("Mod: division by zero".into());
                }
                Ok(Value::from(a % b))
            })(),
            "Ceil" => arity(name, args, 1).and_then(|()| float(num(&args[0])?.ceil())),
            "RandInt" => (|| {
                arity(name, args, 1)?;
                let n = num(&args[0])? as i64;
                if n < 0 {
                    return Err(format!("RandInt: {n} is negative"));
                }
                Ok(Value::from(self.rng.below(n as u64 + 1) as i64))
            })(),
            "RandIntRange" => (|| {
                arity(name, args, 2)?;
                let (a, b) = (num(&args[0])? as i64, num(&args[1])? as i64);
                if a >= b {
                    return Ok(Value::from(a));
                }
                Ok(Value::from(a + self.rng.below((b - a) as u64 + 1) as i64))
            })(),
            "RandData" => (|| {
                arity(name, args, 1)?;
                Ok(self.rand_data(num(&args[0])?.max(0.0) as usize, &self.rng))
            })(),
            "RandDataWithSeed" => (|| {
                arity(name, args, 2)?;
                let seed = match &args[1] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                // The same seed always gives the same data, as upstream's
                // sha256-seeded source does (not the same bytes as it).
                let rng = R::seeded(fnv1a(seed.as_bytes()));
                Ok(self.rand_data(num(&args[0])?.max(0.0) as usize, &rng))
            })(),
            "IfThenElse" => (|| {
                arity(name, args, 3)?;
                match &args[0] {
                    Value::Bool(true) => Ok(args[1].clone()),
                    Value::Bool(false) => Ok(args[2].clone()),
                    other => Err(format!("IfThenElse: {} is not a bool", short(other))),
                }
            })(),
            "Loop" | "SliceOfZeros" | "Seq" => (|| {
                arity(name, args, 1)?;
                let n = num(&args[0])?.max(0.0) as usize;
                if n > 1_000_000 {
                    return Err(format!("{name}: {n} is too many elements"));
                }
                if name == "Loop" {
                    Ok(Value::Array(
                        (0..n).map(|i| Value::from(i as i64)).collect(),
                    ))
                } else {
                    Ok(Value::Array(vec![Value::from(0); n]))
                }
            })(),
            "StringSplit" => arity(name, args, 1).and_then(|()| {
                let s = string_arg(name, &args[0])?;
                Ok(Value::Array(
                    s.split(',').map(|p| Value::String(p.into())).collect(),
                ))
            }),
            "Concat" => args
                .iter()
                .map(|a| string_arg(name, a))
                .collect::<Result<String, _>>()
                .map(Value::String),
            "Lowercase" => arity(name, args, 1)
                .and_then(|()| Ok(Value::String(string_arg(name, &args[0])?.to_lowercase()))),
            "YamlQuote" => (|| {
                arity(name, args, 2)?;
                let s = string_arg(name, &args[0])?;
                let indent = num(&args[1])?.max(0.0) as usize;
                Ok(Value::String(yaml_quote(&s, indent)))
            })(),
            "IncludeFile" | "IncludeEmbedFile" => (|| {
                arity(name, args, 1)?;
                let raw = string_arg(name, &args[0])?;
                let path = self.base_dir.join(expand_env(&raw));
                std::fs::read_to_string(&path)
                    .map(Value::String)
                    .map_err(|e| format!("{name}: cannot read {}: {e}", path.display()))
            })(),
            _ => return None,
        })
    }
}

impl<R: Draws> Funcs for ClusterLoader2Funcs<R> {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        self.eval(name, args)
    }
}

/// A string as a YAML scalar: double-quoted on one line, or a literal
/// block when it has several lines, whose continuation lines are indented
/// by `2 × indent` spaces so the value can be placed at that depth.
pub fn yaml_quote(s: &str, indent: usize) -> String {
    let pad = " ".repeat(indent * 2);
    if s.contains('\n') {
        let mut out = String::from("|-");
        for line in s.trim_end_matches('\n').split('\n') {
            out.push('\n');
            out.push_str(&pad);
            out.push_str("  ");
            out.push_str(line);
        }
        out
    } else {
        // A JSON string is a valid YAML double-quoted scalar.
        Value::String(s.to_string()).to_string()
    }
}

/// `$VAR` and `${VAR}` from the environment, as Go's os.ExpandEnv.
fn expand_env(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            match b.find('}') {
                Some(j) => (&b[..j], &b[j + 1..]),
                None => (b, ""),
            }
        } else {
            let j = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..j], &after[j..])
        };
        out.push_str(&std::env::var(name).unwrap_or_default());
        rest = tail;
    }
    out.push_str(rest);
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
