//! The part of the sprig function library that stage files and load-test
//! configurations use: defaults, strings, lists, dicts and integer math.

use serde_json::{Map, Value};

use super::builtins::{kind, show};
use super::exec::truthy;

fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .unwrap_or(0),
        Value::String(s) => s
            .trim()
            .parse::<i64>()
            .ok()
            .or_else(|| s.trim().parse::<f64>().ok().map(|f| f as i64))
            .unwrap_or(0),
        Value::Bool(b) => i64::from(*b),
        _ => 0,
    }
}

fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::String(s) => s.trim().parse().unwrap_or(0.0),
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => 0.0,
    }
}

/// sprig's `toString`: strings as they are, nil as empty... as Go's `%v`.
fn to_string(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => show(other),
    }
}

fn list_of(v: &Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a.clone(),
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    }
}

fn strs(args: &[Value]) -> Vec<String> {
    args.iter().map(to_string).collect()
}

/// Calls a sprig function; None: not one of those provided.
pub fn call(name: &str, args: &[Value]) -> Option<Result<Value, String>> {
    let arity = |n: usize| -> Result<(), String> {
        if args.len() >= n {
            Ok(())
        } else {
            Err(format!(
                "wrong number of args for {name}: want {n} got {}",
                args.len()
            ))
        }
    };
    let s = |i: usize| args.get(i).map(to_string).unwrap_or_default();
    let r = match name {
        "default" => arity(1).map(|_| {
            // `default d v`: v unless it is empty.
            match args.get(1) {
                Some(v) if truthy(v) => v.clone(),
                _ => args[0].clone(),
            }
        }),
        "empty" => arity(1).map(|_| Value::Bool(!truthy(&args[0]))),
        "coalesce" => Ok(args
            .iter()
            .find(|v| truthy(v))
            .cloned()
            .unwrap_or(Value::Null)),
        "ternary" => arity(3).map(|_| {
            if truthy(&args[2]) {
                args[0].clone()
            } else {
                args[1].clone()
            }
        }),
        "toString" => arity(1).map(|_| Value::String(s(0))),
        "toJson" => arity(1).map(|_| Value::String(args[0].to_string())),
        "quote" => Ok(Value::String(
            strs(args)
                .iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join(" "),
        )),
        "squote" => Ok(Value::String(
            strs(args)
                .iter()
                .map(|x| format!("'{x}'"))
                .collect::<Vec<_>>()
                .join(" "),
        )),
        "upper" => arity(1).map(|_| Value::String(s(0).to_uppercase())),
        "lower" => arity(1).map(|_| Value::String(s(0).to_lowercase())),
        "title" => arity(1).map(|_| {
            Value::String(
                s(0).split(' ')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next()
                            .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
            )
        }),
        "trim" => arity(1).map(|_| Value::String(s(0).trim().to_string())),
        "trimPrefix" => arity(2).map(|_| {
            Value::String(
                s(1).strip_prefix(&s(0))
                    .map(String::from)
                    .unwrap_or_else(|| s(1)),
            )
        }),
        "trimSuffix" => arity(2).map(|_| {
            Value::String(
                s(1).strip_suffix(&s(0))
                    .map(String::from)
                    .unwrap_or_else(|| s(1)),
            )
        }),
        "contains" => arity(2).map(|_| Value::Bool(s(1).contains(&s(0)))),
        "hasPrefix" => arity(2).map(|_| Value::Bool(s(1).starts_with(&s(0)))),
        "hasSuffix" => arity(2).map(|_| Value::Bool(s(1).ends_with(&s(0)))),
        "replace" => arity(3).map(|_| Value::String(s(2).replace(&s(0), &s(1)))),
        "repeat" => arity(2)
            .map(|_| Value::String(s(1).repeat(to_i64(&args[0]).clamp(0, 1 << 20) as usize))),
        "splitList" => arity(2)
            .map(|_| Value::Array(s(1).split(&s(0)).map(|p| Value::String(p.into())).collect())),
        "split" => arity(2).map(|_| {
            let mut m = Map::new();
            for (i, p) in s(1).split(&s(0)).enumerate() {
                m.insert(format!("_{i}"), Value::String(p.into()));
            }
            Value::Object(m)
        }),
        "join" => arity(2).map(|_| {
            Value::String(
                list_of(&args[1])
                    .iter()
                    .map(to_string)
                    .collect::<Vec<_>>()
                    .join(&s(0)),
            )
        }),
        "list" => Ok(Value::Array(args.to_vec())),
        "append" | "mustAppend" => arity(2).map(|_| {
            let mut l = list_of(&args[0]);
            l.push(args[1].clone());
            Value::Array(l)
        }),
        "first" => arity(1).map(|_| list_of(&args[0]).first().cloned().unwrap_or(Value::Null)),
        "last" => arity(1).map(|_| list_of(&args[0]).last().cloned().unwrap_or(Value::Null)),
        "has" => arity(2).map(|_| Value::Bool(list_of(&args[1]).contains(&args[0]))),
        "dict" => {
            let mut m = Map::new();
            for pair in args.chunks(2) {
                m.insert(
                    to_string(&pair[0]),
                    pair.get(1).cloned().unwrap_or(Value::Null),
                );
            }
            Ok(Value::Object(m))
        }
        "get" => arity(2).map(|_| match &args[0] {
            Value::Object(m) => m
                .get(&s(1))
                .cloned()
                .unwrap_or(Value::String(String::new())),
            _ => Value::String(String::new()),
        }),
        "set" => arity(3).and_then(|_| match &args[0] {
            Value::Object(m) => {
                let mut m = m.clone();
                m.insert(s(1), args[2].clone());
                Ok(Value::Object(m))
            }
            other => Err(format!("set on {}", kind(other))),
        }),
        "hasKey" => arity(2)
            .map(|_| Value::Bool(args[0].as_object().is_some_and(|m| m.contains_key(&s(1))))),
        "keys" => {
            let mut k: Vec<String> = args
                .iter()
                .filter_map(Value::as_object)
                .flat_map(|m| m.keys().cloned())
                .collect();
            k.sort();
            Ok(Value::Array(k.into_iter().map(Value::String).collect()))
        }
        "add" => Ok(Value::from(
            args.iter().map(to_i64).fold(0i64, i64::wrapping_add),
        )),
        "add1" => arity(1).map(|_| Value::from(to_i64(&args[0]).wrapping_add(1))),
        "sub" => arity(2).map(|_| Value::from(to_i64(&args[0]).wrapping_sub(to_i64(&args[1])))),
        "mul" => Ok(Value::from(
            args.iter().map(to_i64).fold(1i64, i64::wrapping_mul),
        )),
        "div" | "mod" => arity(2).and_then(|_| {
            let (a, b) = (to_i64(&args[0]), to_i64(&args[1]));
            if b == 0 {
                return Err("integer divide by zero".into());
            }
            Ok(Value::from(if name == "div" {
                a.wrapping_div(b)
            } else {
                a.wrapping_rem(b)
            }))
        }),
        "max" => arity(1).map(|_| Value::from(args.iter().map(to_i64).max().unwrap_or(0))),
        "min" => arity(1).map(|_| Value::from(args.iter().map(to_i64).min().unwrap_or(0))),
        "addf" => Ok(float(args.iter().map(to_f64).sum())),
        "mulf" => Ok(float(args.iter().map(to_f64).product())),
        "divf" => arity(2).map(|_| float(to_f64(&args[0]) / to_f64(&args[1]))),
        "floor" => arity(1).map(|_| float(to_f64(&args[0]).floor())),
        "ceil" => arity(1).map(|_| float(to_f64(&args[0]).ceil())),
        "int" | "int64" | "atoi" => arity(1).map(|_| Value::from(to_i64(&args[0]))),
        "float64" => arity(1).map(|_| float(to_f64(&args[0]))),
        "until" => arity(1).map(|_| {
            Value::Array(
                (0..to_i64(&args[0]).clamp(0, 1 << 20))
                    .map(Value::from)
                    .collect(),
            )
        }),
        "untilStep" => arity(3).and_then(|_| {
            let (start, stop, step) = (to_i64(&args[0]), to_i64(&args[1]), to_i64(&args[2]));
            if step == 0 {
                return Err("untilStep with a zero step".into());
            }
            let mut v = Vec::new();
            let mut i = start;
            while (step > 0 && i < stop) || (step < 0 && i > stop) {
                if v.len() >= 1 << 20 {
                    return Err("untilStep makes too long a list".into());
                }
                v.push(Value::from(i));
                i += step;
            }
            Ok(Value::Array(v))
        }),
        "fromJson" => arity(1).map(|_| serde_json::from_str(&s(0)).unwrap_or(Value::Null)),
        _ => return None,
    };
    Some(r)
}

fn float(f: f64) -> Value {
    serde_json::Number::from_f64(f)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(name: &str, args: &[Value]) -> Value {
        call(name, args).unwrap().unwrap()
    }

    #[test]
    fn defaults_strings_lists_and_math() {
        assert_eq!(c("default", &[json!("d"), json!("")]), json!("d"));
        assert_eq!(c("default", &[json!("d"), json!("v")]), json!("v"));
        assert_eq!(c("default", &[json!("d")]), json!("d"));
        assert_eq!(
            c("coalesce", &[json!(null), json!(0), json!("x")]),
            json!("x")
        );
        assert_eq!(
            c("ternary", &[json!("a"), json!("b"), json!(false)]),
            json!("b")
        );
        assert_eq!(c("quote", &[json!("a\"b")]), json!("\"a\\\"b\""));
        assert_eq!(c("trimSuffix", &[json!("-x"), json!("a-x")]), json!("a"));
        assert_eq!(c("join", &[json!(","), json!(["a", 1])]), json!("a,1"));
        assert_eq!(
            c("splitList", &[json!("/"), json!("a/b")]),
            json!(["a", "b"])
        );
        assert_eq!(
            c("split", &[json!("/"), json!("a/b")]),
            json!({"_0": "a", "_1": "b"})
        );
        assert_eq!(c("dict", &[json!("a"), json!(1)]), json!({"a": 1}));
        assert_eq!(c("keys", &[json!({"b": 1, "a": 2})]), json!(["a", "b"]));
        assert_eq!(c("add", &[json!(1), json!("2"), json!(3)]), json!(6));
        assert_eq!(c("div", &[json!(7), json!(2)]), json!(3));
        assert!(call("div", &[json!(7), json!(0)]).unwrap().is_err());
        assert_eq!(c("until", &[json!(3)]), json!([0, 1, 2]));
        assert_eq!(c("max", &[json!(3), json!(9), json!(4)]), json!(9));
        assert!(call("nope", &[]).is_none());
    }
}
