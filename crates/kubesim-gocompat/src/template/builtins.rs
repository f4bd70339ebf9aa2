//! Go's predefined template functions and its way of printing values.

use serde_json::Value;

use super::exec::truthy;

/// A number as Go prints it: integers without a point, floats in their
/// shortest form (`%v`).
pub fn number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        // Go's %v of float64(3) is "3".
        format!("{f:.0}")
    } else if f.abs() >= 1e21 || (f != 0.0 && f.abs() < 1e-4) {
        let s = format!("{f:e}");
        // Go writes the exponent with a sign and two digits: 1e+21.
        match s.split_once('e') {
            Some((m, e)) => {
                let (sign, digits) = match e.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', e),
                };
                format!("{m}e{sign}{digits:0>2}")
            }
            None => s,
        }
    } else {
        f.to_string()
    }
}

/// The text of a value as `{{ . }}` prints it.
pub fn show(v: &Value) -> String {
    let mut s = String::new();
    print_into(&mut s, v);
    s
}

pub fn print_into(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<no value>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                nested(out, x);
            }
            out.push(']');
        }
        Value::Object(o) => {
            out.push_str("map[");
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                nested(out, &o[k]);
            }
            out.push(']');
        }
    }
}

/// Inside a collection Go prints nil as `<nil>`.
fn nested(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        other => print_into(out, other),
    }
}

pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// Equality as `eq` sees it: numbers by value, everything else as JSON.
pub fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

fn compare(a: &Value, b: &Value) -> Result<std::cmp::Ordering, String> {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => {
            let (x, y) = (as_f64(a).unwrap_or(0.0), as_f64(b).unwrap_or(0.0));
            x.partial_cmp(&y)
                .ok_or_else(|| "cannot compare NaN".to_string())
        }
        (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
        _ => Err(format!(
            "incompatible types for comparison: {} and {}",
            kind(a),
            kind(b)
        )),
    }
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "slice",
        Value::Object(_) => "map",
    }
}

fn int_arg(v: &Value) -> Result<i64, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .ok_or_else(|| format!("cannot index with {n}")),
        other => Err(format!("cannot index with {}", kind(other))),
    }
}

fn index(args: &[Value]) -> Result<Value, String> {
    let Some((first, keys)) = args.split_first() else {
        return Err("wrong number of args for index: want at least 1 got 0".into());
    };
    let mut v = first.clone();
    for k in keys {
        v = match (&v, k) {
            (Value::Object(m), Value::String(s)) => m.get(s).cloned().unwrap_or(Value::Null),
            (Value::Array(a), _) => {
                let i = int_arg(k)?;
                if i < 0 || i as usize >= a.len() {
                    return Err(format!("index out of range: {i}"));
                }
                a[i as usize].clone()
            }
            (Value::String(s), _) => {
                let i = int_arg(k)?;
                let b = s.as_bytes();
                if i < 0 || i as usize >= b.len() {
                    return Err(format!("index out of range: {i}"));
                }
                Value::from(b[i as usize])
            }
            (Value::Null, _) => return Err("index of untyped nil".into()),
            (other, _) => return Err(format!("can't index item of type {}", kind(other))),
        };
    }
    Ok(v)
}

fn slice(args: &[Value]) -> Result<Value, String> {
    let Some((first, bounds)) = args.split_first() else {
        return Err("wrong number of args for slice".into());
    };
    let b: Vec<i64> = bounds.iter().map(int_arg).collect::<Result<_, _>>()?;
    let len = match first {
        Value::Array(a) => a.len(),
        Value::String(s) => s.len(),
        other => return Err(format!("can't slice item of type {}", kind(other))),
    } as i64;
    let lo = b.first().copied().unwrap_or(0);
    let hi = b.get(1).copied().unwrap_or(len);
    if lo < 0 || hi < lo || hi > len {
        return Err(format!("slice bounds out of range [{lo}:{hi}]"));
    }
    Ok(match first {
        Value::Array(a) => Value::Array(a[lo as usize..hi as usize].to_vec()),
        Value::String(s) => Value::String(
            s.get(lo as usize..hi as usize)
                .ok_or("slice splits a character")?
                .to_string(),
        ),
        _ => Value::Null,
    })
}

/// Go's `fmt.Sprint`: spaces between operands when neither is a string.
fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !a.is_string() && !args[i - 1].is_string() {
            out.push(' ');
        }
        nested_print(&mut out, a);
    }
    out
}

fn nested_print(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        other => print_into(out, other),
    }
}

/// `printf` with Go's common verbs, flags, width and precision.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut flags = String::new();
        while let Some(&f) = chars.peek() {
            if "+-# 0".contains(f) {
                flags.push(f);
                chars.next();
            } else {
                break;
            }
        }
        let mut width = String::new();
        while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(d);
            chars.next();
        }
        let mut precision: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut p = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                p.push(d);
                chars.next();
            }
            precision = Some(p.parse().unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.next() else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        let text = match verb {
            'v' | 's' => match (verb, arg) {
                ('s', Value::Null) => "%!s(<nil>)".to_string(),
                (_, Value::Null) => "<nil>".to_string(),
                _ => {
                    let s = show(arg);
                    match precision {
                        Some(p) if verb == 's' => s.chars().take(p).collect(),
                        _ => s,
                    }
                }
            },
            'q' => match arg {
                Value::String(s) => Value::String(s.clone()).to_string(),
                other => format!("%!q({})", show(other)),
            },
            'd' => match arg {
                Value::Number(n) if n.as_i64().is_some() => {
                    let i = n.as_i64().unwrap_or(0);
                    if flags.contains('+') && i >= 0 {
                        format!("+{i}")
                    } else {
                        i.to_string()
                    }
                }
                other => format!("%!d({} {})", kind(other), show(other)),
            },
            'f' | 'F' | 'e' | 'g' => match as_f64(arg) {
                Some(f) => match verb {
                    'e' => format!("{:.*e}", precision.unwrap_or(6), f),
                    'g' => match precision {
                        Some(p) => format!("{:.*}", p, f),
                        None => number(&serde_json::Number::from_f64(f).unwrap_or(0.into())),
                    },
                    _ => format!("{:.*}", precision.unwrap_or(6), f),
                },
                None => format!("%!{verb}({} {})", kind(arg), show(arg)),
            },
            't' => match arg {
                Value::Bool(b) => b.to_string(),
                other => format!("%!t({} {})", kind(other), show(other)),
            },
            'x' | 'X' => {
                let s = match arg {
                    Value::Number(n) if n.as_i64().is_some() => {
                        format!("{:x}", n.as_i64().unwrap_or(0))
                    }
                    Value::String(s) => s.bytes().map(|b| format!("{b:02x}")).collect(),
                    other => format!("%!x({})", show(other)),
                };
                if verb == 'X' {
                    s.to_uppercase()
                } else {
                    s
                }
            }
            'c' => match arg.as_i64().and_then(|i| char::from_u32(i as u32)) {
                Some(ch) => ch.to_string(),
                None => format!("%!c({})", show(arg)),
            },
            other => format!("%!{other}({})", show(arg)),
        };
        let w: usize = width.parse().unwrap_or(0);
        let n = text.chars().count();
        if n < w {
            let pad = w - n;
            if flags.contains('-') {
                out.push_str(&text);
                out.extend(std::iter::repeat_n(' ', pad));
            } else if flags.contains('0') && !matches!(verb, 's' | 'v' | 'q') {
                let (sign, digits) = match text.strip_prefix('-') {
                    Some(d) => ("-", d),
                    None => ("", text.as_str()),
                };
                out.push_str(sign);
                out.extend(std::iter::repeat_n('0', pad));
                out.push_str(digits);
            } else {
                out.extend(std::iter::repeat_n(' ', pad));
                out.push_str(&text);
            }
        } else {
            out.push_str(&text);
        }
    }
    let extra: Vec<&Value> = args.collect();
    if !extra.is_empty() {
        out.push_str("%!(EXTRA ");
        let parts: Vec<String> = extra
            .iter()
            .map(|v| format!("{}={}", kind(v), show(v)))
            .collect();
        out.push_str(&parts.join(", "));
        out.push(')');
    }
    out
}

/// Go's predefined functions (`and`/`or` are evaluated lazily by the
/// executor). None: not one of them.
pub fn call(name: &str, args: &[Value]) -> Option<Result<Value, String>> {
    let want = |n: usize| -> Result<(), String> {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!(
                "wrong number of args for {name}: want {n} got {}",
                args.len()
            ))
        }
    };
    Some(match name {
        "not" => want(1).map(|_| Value::Bool(!truthy(&args[0]))),
        "len" => want(1).and_then(|_| match &args[0] {
            Value::String(s) => Ok(Value::from(s.len())),
            Value::Array(a) => Ok(Value::from(a.len())),
            Value::Object(o) => Ok(Value::from(o.len())),
            other => Err(format!("len of type {}", kind(other))),
        }),
        "index" => index(args),
        "slice" => slice(args),
        "print" => Ok(Value::String(sprint(args))),
        "println" => {
            let parts: Vec<String> = args
                .iter()
                .map(|a| {
                    let mut s = String::new();
                    nested_print(&mut s, a);
                    s
                })
                .collect();
            Ok(Value::String(parts.join(" ") + "\n"))
        }
        "printf" => match args.split_first() {
            Some((Value::String(f), rest)) => Ok(Value::String(sprintf(f, rest))),
            _ => Err("printf needs a format string".into()),
        },
        "eq" => match args.split_first() {
            Some((first, rest)) if !rest.is_empty() => {
                Ok(Value::Bool(rest.iter().any(|r| equal(first, r))))
            }
            _ => Err("missing argument for comparison".into()),
        },
        "ne" => want(2).map(|_| Value::Bool(!equal(&args[0], &args[1]))),
        "lt" | "le" | "gt" | "ge" => want(2).and_then(|_| {
            let o = compare(&args[0], &args[1])?;
            Ok(Value::Bool(match name {
                "lt" => o.is_lt(),
                "le" => o.is_le(),
                "gt" => o.is_gt(),
                _ => o.is_ge(),
            }))
        }),
        "urlquery" => Ok(Value::String(
            sprint(args)
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                        (b as char).to_string()
                    } else if b == b' ' {
                        "+".into()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect(),
        )),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printing_as_go_does() {
        assert_eq!(show(&json!(3)), "3");
        assert_eq!(show(&json!(2.5)), "2.5");
        assert_eq!(show(&json!(3.0)), "3");
        assert_eq!(show(&json!(null)), "<no value>");
        assert_eq!(show(&json!(["a", 1, null])), "[a 1 <nil>]");
        assert_eq!(show(&json!({"b": 1, "a": "x"})), "map[a:x b:1]");
    }

    #[test]
    fn printf_verbs() {
        assert_eq!(
            sprintf("%s-%d-%v", &[json!("a"), json!(5), json!(true)]),
            "a-5-true"
        );
        assert_eq!(
            sprintf(
                "%q %5.2f|%-4s|%03d %%",
                &[json!("x"), json!(1.23456), json!("ab"), json!(7)]
            ),
            "\"x\"  1.23|ab  |007 %"
        );
        assert_eq!(sprintf("%x %d", &[json!(255)]), "ff %!d(MISSING)");
        assert_eq!(sprintf("%d", &[json!(1), json!(2)]), "1%!(EXTRA int=2)");
    }

    #[test]
    fn comparisons_and_index() {
        assert_eq!(
            call("eq", &[json!(1), json!(2), json!(1.0)])
                .unwrap()
                .unwrap(),
            json!(true)
        );
        assert_eq!(
            call("lt", &[json!("a"), json!("b")]).unwrap().unwrap(),
            json!(true)
        );
        assert!(call("lt", &[json!("a"), json!(1)]).unwrap().is_err());
        assert_eq!(
            call("index", &[json!({"a": [1, 2]}), json!("a"), json!(1)])
                .unwrap()
                .unwrap(),
            json!(2)
        );
        assert!(call("index", &[json!([1]), json!(3)]).unwrap().is_err());
        assert_eq!(
            call("slice", &[json!("hello"), json!(1), json!(3)])
                .unwrap()
                .unwrap(),
            json!("el")
        );
        assert_eq!(call("len", &[json!({"a": 1})]).unwrap().unwrap(), json!(1));
        assert_eq!(
            call("print", &[json!(1), json!(2), json!("a"), json!(3)])
                .unwrap()
                .unwrap(),
            json!("1 2a3")
        );
        assert!(call("nope", &[]).is_none());
    }
}
