//! The JSONPath dialect of Kubernetes (`kubectl -o jsonpath`, CRD
//! `additionalPrinterColumns`), reduced to what selects values: fields,
//! quoted keys (`['app.kubernetes.io/name']`), indexes and slices,
//! wildcards, recursive descent and filters such as
//! `[?(@.type=="Ready")]`. Templates with text, ranges or unions are not
//! needed by printer columns and are rejected.
//!
//! As in Kubernetes, a path that meets a missing key yields no result
//! rather than an error, and a field step does not reach into arrays (that
//! takes `[*]`).

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid JSONPath {path:?}: {reason}")]
pub struct ParseError {
    pub path: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Segment {
    Field(String),
    Wildcard,
    /// Every value below (and including) the current one, optionally then
    /// narrowed to one field.
    Descend(Option<String>),
    Index(i64),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Vec<Segment>,
    test: Option<(Op, Operand)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Literal(Value),
    Path(Vec<Segment>),
}

/// A parsed path, ready to run against objects.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    segments: Vec<Segment>,
}

impl JsonPath {
    /// Parses `.spec.replicas`, `{.spec.replicas}` or `$.spec.replicas`.
    pub fn parse(path: &str) -> Result<Self, ParseError> {
        let err = |reason: &str| ParseError {
            path: path.to_string(),
            reason: reason.to_string(),
        };
        let mut p = path.trim();
        if let Some(inner) = p.strip_prefix('{') {
            p = inner
                .strip_suffix('}')
                .ok_or_else(|| err("unclosed '{'"))?
                .trim();
        }
        let p = p.strip_prefix('$').unwrap_or(p);
        let segments = Parser { src: p, pos: 0 }
            .segments(true)
            .map_err(|r| err(&r))?;
        Ok(JsonPath { segments })
    }

    /// Every value the path selects, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        eval(&self.segments, vec![root])
    }

    /// The first value selected, if any: what a printer column shows.
    pub fn first<'a>(&self, root: &'a Value) -> Option<&'a Value> {
        self.find(root).into_iter().next()
    }
}

struct Parser<'s> {
    src: &'s str,
    pos: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self, n: usize) {
        self.pos += n;
    }

    fn segments(&mut self, top: bool) -> Result<Vec<Segment>, String> {
        let mut out = Vec::new();
        let mut first = true;
        while let Some(c) = self.peek() {
            match c {
                '.' if self.rest().starts_with("..") => {
                    self.bump(2);
                    match self.peek() {
                        Some('*') => {
                            self.bump(1);
                            out.push(Segment::Descend(None));
                        }
                        Some('[') => out.push(Segment::Descend(None)),
                        _ => {
                            let name = self.name();
                            if name.is_empty() {
                                return Err("expected a field name after '..'".into());
                            }
                            out.push(Segment::Descend(Some(name)));
                        }
                    }
                }
                '.' => {
                    self.bump(1);
                    if self.peek() == Some('*') {
                        self.bump(1);
                        out.push(Segment::Wildcard);
                        continue;
                    }
                    let name = self.name();
                    if name.is_empty() {
                        // A lone "." is the current object.
                        if self.peek().is_none() {
                            break;
                        }
                        return Err(format!("unexpected {:?}", self.peek().unwrap_or(' ')));
                    }
                    out.push(Segment::Field(name));
                }
                '[' => {
                    self.bump(1);
                    out.push(self.bracket()?);
                }
                // Tolerate a path written without its leading dot.
                _ if first && top && is_name_char(c) => {
                    let name = self.name();
                    out.push(Segment::Field(name));
                }
                _ if !top => break,
                other => return Err(format!("unexpected {other:?}")),
            }
            first = false;
        }
        Ok(out)
    }

    fn name(&mut self) -> String {
        let len: usize = self
            .rest()
            .chars()
            .take_while(|c| is_name_char(*c))
            .map(char::len_utf8)
            .sum();
        let name = self.rest()[..len].to_string();
        self.bump(len);
        name
    }

    fn bracket(&mut self) -> Result<Segment, String> {
        let rest = self.rest();
        if rest.starts_with("*]") {
            self.bump(2);
            return Ok(Segment::Wildcard);
        }
        if rest.starts_with('\'') || rest.starts_with('"') {
            let (key, used) = quoted(rest)?;
            self.bump(used);
            if self.peek() != Some(']') {
                return Err("expected ']' after quoted key".into());
            }
            self.bump(1);
            return Ok(Segment::Field(key));
        }
        if rest.starts_with("?(") {
            let close = matching_paren(rest, 1).ok_or("unclosed filter")?;
            let inner = &rest[2..close];
            let filter = parse_filter(inner)?;
            self.bump(close + 1);
            if self.peek() != Some(']') {
                return Err("expected ']' after filter".into());
            }
            self.bump(1);
            return Ok(Segment::Filter(Box::new(filter)));
        }
        let end = rest.find(']').ok_or("unclosed '['")?;
        let inner = rest[..end].trim().to_string();
        let inner = inner.as_str();
        self.bump(end + 1);
        let num = |s: &str| -> Result<Option<i64>, String> {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                s.parse::<i64>()
                    .map(Some)
                    .map_err(|_| format!("invalid array index {s:?}"))
            }
        };
        if inner.contains(':') {
            let parts: Vec<&str> = inner.split(':').collect();
            if parts.len() > 3 {
                return Err(format!("invalid slice {inner:?}"));
            }
            let start = num(parts[0])?;
            let end = num(parts[1])?;
            let step = match parts.get(2) {
                Some(s) => num(s)?,
                None => None,
            };
            return Ok(Segment::Slice(start, end, step));
        }
        match num(inner)? {
            Some(i) => Ok(Segment::Index(i)),
            None => Err("empty brackets".into()),
        }
    }
}

fn is_name_char(c: char) -> bool {
    !matches!(
        c,
        '.' | '['
            | ']'
            | '('
            | ')'
            | '{'
            | '}'
            | ' '
            | '\t'
            | '='
            | '!'
            | '<'
            | '>'
            | ','
            | '\''
            | '"'
            | '@'
            | '*'
    )
}

/// A quoted string at the start of `s`; returns it and the bytes consumed.
fn quoted(s: &str) -> Result<(String, usize), String> {
    let mut chars = s.char_indices();
    let (_, q) = chars.next().ok_or("expected a quote")?;
    let mut out = String::new();
    let mut escaped = false;
    for (i, c) in chars {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == q {
            return Ok((out, i + c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    Err("unterminated string".into())
}

/// Index of the ')' closing the '(' at byte `open`, skipping quoted text.
fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip_while(|(i, _)| *i < open) {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The comparison operator outside quotes, if any: (start, len, op).
fn find_op(s: &str) -> Option<(usize, usize, Op)> {
    let mut quote: Option<char> = None;
    let bytes = s.as_bytes();
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        let next = bytes.get(i + 1).copied();
        let op = match (c, next) {
            ('\'' | '"', _) => {
                quote = Some(c);
                continue;
            }
            ('=', Some(b'=')) => (2, Op::Eq),
            ('!', Some(b'=')) => (2, Op::Ne),
            ('<', Some(b'=')) => (2, Op::Le),
            ('>', Some(b'=')) => (2, Op::Ge),
            ('<', _) => (1, Op::Lt),
            ('>', _) => (1, Op::Gt),
            _ => continue,
        };
        return Some((i, op.0, op.1));
    }
    None
}

fn parse_relative(s: &str) -> Result<Vec<Segment>, String> {
    let s = s.trim();
    let rest = s
        .strip_prefix('@')
        .ok_or_else(|| format!("filter operand {s:?} must start with '@'"))?;
    let mut p = Parser { src: rest, pos: 0 };
    let segs = p.segments(false)?;
    if p.pos != rest.len() {
        return Err(format!("unexpected {:?} in filter", &rest[p.pos..]));
    }
    Ok(segs)
}

fn parse_filter(inner: &str) -> Result<Filter, String> {
    let Some((at, len, op)) = find_op(inner) else {
        return Ok(Filter {
            left: parse_relative(inner)?,
            test: None,
        });
    };
    let left = parse_relative(&inner[..at])?;
    let right = inner[at + len..].trim();
    let operand = if right.starts_with('@') {
        Operand::Path(parse_relative(right)?)
    } else if right.starts_with('\'') || right.starts_with('"') {
        let (s, used) = quoted(right)?;
        if used != right.len() {
            return Err(format!("unexpected text after {right:?}"));
        }
        Operand::Literal(Value::String(s))
    } else {
        let lit: Value = match right {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "nil" | "null" => Value::Null,
            n => serde_json::from_str::<serde_json::Number>(n)
                .map(Value::Number)
                .map_err(|_| format!("invalid literal {n:?}"))?,
        };
        Operand::Literal(lit)
    };
    Ok(Filter {
        left,
        test: Some((op, operand)),
    })
}

fn eval<'a>(segments: &[Segment], mut cur: Vec<&'a Value>) -> Vec<&'a Value> {
    for seg in segments {
        let mut next = Vec::new();
        for v in cur {
            step(seg, v, &mut next);
        }
        cur = next;
    }
    cur
}

fn step<'a>(seg: &Segment, v: &'a Value, out: &mut Vec<&'a Value>) {
    match seg {
        Segment::Field(name) => {
            if let Some(x) = v.as_object().and_then(|m| m.get(name)) {
                out.push(x);
            }
        }
        Segment::Wildcard => match v {
            Value::Object(m) => out.extend(m.values()),
            Value::Array(a) => out.extend(a.iter()),
            _ => {}
        },
        Segment::Descend(name) => {
            let mut all = Vec::new();
            descend(v, &mut all);
            match name {
                None => out.extend(all),
                Some(n) => out.extend(
                    all.into_iter()
                        .filter_map(|x| x.as_object().and_then(|m| m.get(n))),
                ),
            }
        }
        Segment::Index(i) => {
            if let Some(a) = v.as_array() {
                let len = a.len() as i64;
                let idx = if *i < 0 { len + i } else { *i };
                if (0..len).contains(&idx) {
                    out.push(&a[idx as usize]);
                }
            }
        }
        Segment::Slice(start, end, step) => {
            if let Some(a) = v.as_array() {
                let len = a.len() as i64;
                let clamp = |x: i64| if x < 0 { (len + x).max(0) } else { x.min(len) };
                let s = start.map_or(0, clamp);
                let e = end.map_or(len, clamp);
                let st = step.unwrap_or(1).max(1);
                let mut i = s;
                while i < e {
                    out.push(&a[i as usize]);
                    i = i.saturating_add(st);
                }
            }
        }
        Segment::Filter(f) => {
            if let Some(a) = v.as_array() {
                out.extend(a.iter().filter(|e| passes(f, e)));
            }
        }
    }
}

fn descend<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(v);
    match v {
        Value::Object(m) => m.values().for_each(|x| descend(x, out)),
        Value::Array(a) => a.iter().for_each(|x| descend(x, out)),
        _ => {}
    }
}

fn passes(f: &Filter, elem: &Value) -> bool {
    let lefts = eval(&f.left, vec![elem]);
    let Some((op, operand)) = &f.test else {
        return !lefts.is_empty();
    };
    let right: Option<&Value> = match operand {
        Operand::Literal(v) => Some(v),
        Operand::Path(p) => eval(p, vec![elem]).into_iter().next(),
    };
    let Some(right) = right else {
        return false;
    };
    lefts.iter().any(|l| compare(l, *op, right))
}

fn compare(l: &Value, op: Op, r: &Value) -> bool {
    use std::cmp::Ordering;
    let ord: Option<Ordering> = match (l, r) {
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(x, y)| x.partial_cmp(&y)),
        },
        (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => Some(a.cmp(b)),
        (Value::Null, Value::Null) => Some(Ordering::Equal),
        _ => None,
    };
    let Some(ord) = ord else {
        return false;
    };
    match op {
        Op::Eq => ord == Ordering::Equal,
        Op::Ne => ord != Ordering::Equal,
        Op::Lt => ord == Ordering::Less,
        Op::Le => ord != Ordering::Greater,
        Op::Gt => ord == Ordering::Greater,
        Op::Ge => ord != Ordering::Less,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "metadata": {"name": "db", "labels": {"app.kubernetes.io/name": "pg", "tier": "data"}},
            "spec": {"replicas": 3, "ratio": 0.5, "enabled": true, "tags": ["a", "b", "c", "d"]},
            "status": {"conditions": [
                {"type": "Synced", "status": "False", "priority": 2},
                {"type": "Ready", "status": "True", "priority": 1},
                {"type": "Ready", "status": "Unknown", "priority": 3}
            ]}
        })
    }

    fn find(path: &str) -> Vec<Value> {
        let d = doc();
        JsonPath::parse(path)
            .unwrap_or_else(|e| panic!("{e}"))
            .find(&d)
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn fields_and_keys() {
        assert_eq!(find(".spec.replicas"), vec![json!(3)]);
        assert_eq!(find("{.spec.replicas}"), vec![json!(3)]);
        assert_eq!(find("$.spec.replicas"), vec![json!(3)]);
        assert_eq!(find("spec.replicas"), vec![json!(3)]);
        assert_eq!(find(".metadata.labels.tier"), vec![json!("data")]);
        assert_eq!(
            find(".metadata.labels['app.kubernetes.io/name']"),
            vec![json!("pg")]
        );
        assert_eq!(
            find(".metadata.labels[\"app.kubernetes.io/name\"]"),
            vec![json!("pg")]
        );
        assert!(find(".spec.missing.deeper").is_empty());
        // A field step does not reach into arrays.
        assert!(find(".status.conditions.type").is_empty());
    }

    #[test]
    fn indexes_slices_wildcards() {
        assert_eq!(find(".spec.tags[0]"), vec![json!("a")]);
        assert_eq!(find(".spec.tags[-1]"), vec![json!("d")]);
        assert!(find(".spec.tags[9]").is_empty());
        assert_eq!(find(".spec.tags[1:3]"), vec![json!("b"), json!("c")]);
        assert_eq!(find(".spec.tags[::2]"), vec![json!("a"), json!("c")]);
        assert_eq!(find(".status.conditions[*].type").len(), 3);
        assert_eq!(find(".metadata.labels.*").len(), 2);
        assert_eq!(find("..priority"), vec![json!(2), json!(1), json!(3)]);
    }

    #[test]
    fn filters() {
        assert_eq!(
            find(".status.conditions[?(@.type==\"Ready\")].status"),
            vec![json!("True"), json!("Unknown")]
        );
        assert_eq!(
            find(".status.conditions[?(@.type == 'Synced')].status"),
            vec![json!("False")]
        );
        assert_eq!(
            find(".status.conditions[?(@.priority > 1)].type"),
            vec![json!("Synced"), json!("Ready")]
        );
        assert_eq!(
            find(".status.conditions[?(@.priority<=1)].type"),
            vec![json!("Ready")]
        );
        assert_eq!(
            find(".status.conditions[?(@.type!=\"Ready\")].type"),
            vec![json!("Synced")]
        );
        assert_eq!(find(".status.conditions[?(@.priority)].type").len(), 3);
        assert!(find(".status.conditions[?(@.nothing)].type").is_empty());
        let first = JsonPath::parse(".status.conditions[?(@.type==\"Ready\")].status").unwrap();
        assert_eq!(first.first(&doc()), Some(&json!("True")));
    }

    proptest::proptest! {
        #[test]
        fn never_panics(path in "[.\\[\\]()?@='\"*:a-c0-9 <>!-]{0,24}") {
            if let Ok(p) = JsonPath::parse(&path) {
                let _ = p.find(&doc());
            }
        }
    }

    #[test]
    fn huge_slice_steps_stop() {
        assert_eq!(find(".spec.tags[1::9223372036854775807]"), vec![json!("b")]);
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "{.spec",
            ".spec[",
            ".spec[abc]",
            ".spec[?(@.a==)]",
            ".a[?(x)]",
            ".a b",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }
}
