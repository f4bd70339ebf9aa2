//! The few shapes of jq program kwok's Stage selectors are written in,
//! evaluated directly on the object: converting a pod for jaq costs far
//! more than reading the three fields such a program looks at.
//!
//! Recognised: a path (`.a.b`, `.a["k"]`), a select over an iterated path
//! (`.a.b.[] | select(.type == "Ready") | .status`), and comparisons of a
//! path with a literal or `any(.a[]?; .kind == "Job")` joined by `or`.
//! Evaluation answers only on the shapes of data where jq's result is
//! plain (objects where fields are read, arrays where elements are
//! iterated, strings, booleans and null as literals); on anything else
//! (a field of a string, iterating an object, a float in the output) it
//! answers None and the caller runs the program in jaq, so the values are
//! always the ones jaq gives.

use serde_json::Value;

/// A recognised program.
#[derive(Debug, Clone, PartialEq)]
pub enum Native {
    /// A path's value.
    Path(Vec<String>),
    /// `AT[] | select(KEY OP LIT) | OUT`: OUT of each element of AT whose
    /// KEY compares so with LIT.
    Select {
        at: Vec<String>,
        /// `[]?` rather than `[]`: iterating null yields nothing.
        optional: bool,
        test: Test,
        out: Vec<String>,
    },
    /// `C or C or ...`: one boolean.
    Or(Vec<Cond>),
}

/// `PATH == LIT` or `PATH != LIT`.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    path: Vec<String>,
    equal: bool,
    lit: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    Test(Test),
    /// `any(AT[]?; TEST)` (or `AT[]`).
    Any {
        at: Vec<String>,
        optional: bool,
        test: Test,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Dot,
    Ident(String),
    Str(String),
    LBrack,
    RBrack,
    LParen,
    RParen,
    Pipe,
    Semi,
    Question,
    EqEq,
    NotEq,
}

/// The tokens of `src`, each with whether blank space came before it.
fn tokens(src: &str) -> Option<(Vec<Tok>, Vec<bool>)> {
    let mut out = Vec::new();
    let mut spaced = Vec::new();
    let b = src.as_bytes();
    let mut i = 0;
    let mut blank = false;
    while i < b.len() {
        let c = b[i];
        if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            spaced.resize(out.len(), false);
            spaced.push(blank);
            blank = false;
        }
        match c {
            b' ' | b'\t' | b'\n' | b'\r' => (blank = true, i += 1).1,
            b'.' => {
                // `..` is recursion, not two dots.
                if b.get(i + 1) == Some(&b'.') {
                    return None;
                }
                out.push(Tok::Dot);
                i += 1;
            }
            b'[' => (out.push(Tok::LBrack), i += 1).1,
            b']' => (out.push(Tok::RBrack), i += 1).1,
            b'(' => (out.push(Tok::LParen), i += 1).1,
            b')' => (out.push(Tok::RParen), i += 1).1,
            b';' => (out.push(Tok::Semi), i += 1).1,
            b'?' => {
                // `?//` is the alternative destructuring operator.
                if b.get(i + 1) == Some(&b'/') {
                    return None;
                }
                out.push(Tok::Question);
                i += 1;
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'=') {
                    return None;
                }
                out.push(Tok::Pipe);
                i += 1;
            }
            b'=' if b.get(i + 1) == Some(&b'=') => (out.push(Tok::EqEq), i += 2).1,
            b'!' if b.get(i + 1) == Some(&b'=') => (out.push(Tok::NotEq), i += 2).1,
            b'"' => {
                let end = src[i + 1..].find('"')? + i + 1;
                let s = &src[i + 1..end];
                // Escapes and interpolation are left to jaq.
                if s.contains('\\') {
                    return None;
                }
                out.push(Tok::Str(s.to_string()));
                i = end + 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                // `$__loc__`, `::` and the like never follow an identifier
                // in the shapes recognised; the parser rejects the rest.
                out.push(Tok::Ident(src[start..i].to_string()));
            }
            _ => return None,
        }
    }
    spaced.truncate(out.len());
    Some((out, spaced))
}

struct Parser {
    toks: Vec<Tok>,
    spaced: Vec<bool>,
    at: usize,
}

/// A path and whether it ends in `[]` (Some(optional)).
type IterPath = (Vec<String>, Option<bool>);

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn peek_is(&self, off: usize, t: &Tok) -> bool {
        self.toks.get(self.at + off) == Some(t)
    }

    /// `.`, `.a.b`, `.a["k"].b`, `.["k"]`, each optionally followed by
    /// `[]`, `.[]` and then `?`.
    fn path(&mut self) -> Option<IterPath> {
        let start = self.at;
        let (fields, iter) = self.path_tokens()?;
        // Blank space inside a path is left to jaq, which may read it as
        // something else (`. a`, `.a []`).
        if self.spaced[start + 1..self.at].iter().any(|b| *b) {
            return None;
        }
        Some((fields, iter))
    }

    fn path_tokens(&mut self) -> Option<IterPath> {
        if !self.eat(&Tok::Dot) {
            return None;
        }
        let mut fields = Vec::new();
        // After the leading dot: an identifier, a `["k"]` or nothing.
        let mut first = true;
        loop {
            // `[` `]`: iteration ends the path.
            if self.peek_is(0, &Tok::LBrack) && self.peek_is(1, &Tok::RBrack) {
                self.at += 2;
                let optional = self.eat(&Tok::Question);
                return Some((fields, Some(optional)));
            }
            if self.peek_is(0, &Tok::LBrack) {
                let Some(Tok::Str(k)) = self.toks.get(self.at + 1).cloned() else {
                    return None;
                };
                if !self.peek_is(2, &Tok::RBrack) {
                    return None;
                }
                self.at += 3;
                fields.push(k);
                first = false;
                continue;
            }
            if first {
                if let Some(Tok::Ident(name)) = self.peek().cloned() {
                    if is_keyword(&name) {
                        return None;
                    }
                    self.at += 1;
                    fields.push(name);
                    first = false;
                    continue;
                }
                return Some((fields, None));
            }
            // A following `.ident`, `.["k"]` or `.[]`.
            if self.peek_is(0, &Tok::Dot) {
                match self.toks.get(self.at + 1) {
                    Some(Tok::Ident(name)) if !is_keyword(name) => {
                        fields.push(name.clone());
                        self.at += 2;
                        continue;
                    }
                    Some(Tok::LBrack) => {
                        self.at += 1;
                        continue;
                    }
                    _ => return None,
                }
            }
            // `?` after a plain path (`.a?`) is not one of the shapes.
            if self.peek_is(0, &Tok::Question) {
                return None;
            }
            return Some((fields, None));
        }
    }

    fn plain_path(&mut self) -> Option<Vec<String>> {
        match self.path()? {
            (p, None) => Some(p),
            _ => None,
        }
    }

    fn literal(&mut self) -> Option<Value> {
        let v = match self.peek()? {
            Tok::Str(s) => Value::String(s.clone()),
            Tok::Ident(k) if k == "null" => Value::Null,
            Tok::Ident(k) if k == "true" => Value::Bool(true),
            Tok::Ident(k) if k == "false" => Value::Bool(false),
            _ => return None,
        };
        self.at += 1;
        Some(v)
    }

    fn test(&mut self) -> Option<Test> {
        let path = self.plain_path()?;
        let equal = if self.eat(&Tok::EqEq) {
            true
        } else if self.eat(&Tok::NotEq) {
            false
        } else {
            return None;
        };
        let lit = self.literal()?;
        Some(Test { path, equal, lit })
    }

    fn cond(&mut self) -> Option<Cond> {
        if self.peek() == Some(&Tok::Ident("any".into())) {
            self.at += 1;
            if !self.eat(&Tok::LParen) {
                return None;
            }
            let (at, optional) = match self.path()? {
                (p, Some(o)) => (p, o),
                _ => return None,
            };
            if !self.eat(&Tok::Semi) {
                return None;
            }
            let test = self.test()?;
            if !self.eat(&Tok::RParen) {
                return None;
            }
            return Some(Cond::Any { at, optional, test });
        }
        self.test().map(Cond::Test)
    }

    fn program(&mut self) -> Option<Native> {
        let start = self.at;
        let Some((at, iter)) = self.path() else {
            self.at = start;
            return self.disjunction();
        };
        let Some(optional) = iter else {
            if self.at == self.toks.len() {
                return Some(Native::Path(at));
            }
            self.at = start;
            return self.disjunction();
        };
        if self.at == self.toks.len() {
            return None;
        }
        if !self.eat(&Tok::Pipe) || !self.eat(&Tok::Ident("select".into())) {
            return None;
        }
        if !self.eat(&Tok::LParen) {
            return None;
        }
        let test = self.test()?;
        if !self.eat(&Tok::RParen) {
            return None;
        }
        let out = if self.eat(&Tok::Pipe) {
            self.plain_path()?
        } else {
            Vec::new()
        };
        (self.at == self.toks.len()).then_some(Native::Select {
            at,
            optional,
            test,
            out,
        })
    }

    fn disjunction(&mut self) -> Option<Native> {
        let mut conds = vec![self.cond()?];
        while self.eat(&Tok::Ident("or".into())) {
            conds.push(self.cond()?);
        }
        (self.at == self.toks.len()).then_some(Native::Or(conds))
    }
}

fn is_keyword(s: &str) -> bool {
    matches!(
        s,
        "or" | "and"
            | "not"
            | "select"
            | "any"
            | "if"
            | "then"
            | "else"
            | "elif"
            | "end"
            | "as"
            | "def"
            | "reduce"
            | "foreach"
            | "try"
            | "catch"
            | "label"
            | "import"
            | "include"
            | "null"
            | "true"
            | "false"
    )
}

impl Native {
    /// The program as a native one, if it has a recognised shape.
    pub fn parse(src: &str) -> Option<Native> {
        let (toks, spaced) = tokens(src)?;
        let mut p = Parser {
            toks,
            spaced,
            at: 0,
        };
        p.program()
    }

    /// The program's values on `obj`, or None where jaq must answer.
    pub fn eval(&self, obj: &Value) -> Option<Vec<Value>> {
        match self {
            Native::Path(p) => {
                let v = walk(obj, p)?;
                plain(v).then(|| vec![v.clone()])
            }
            Native::Select {
                at,
                optional,
                test,
                out,
            } => {
                let mut values = Vec::new();
                for e in elements(obj, at, *optional)? {
                    if test.holds(e)? {
                        let v = walk(e, out)?;
                        if !plain(v) {
                            return None;
                        }
                        values.push(v.clone());
                    }
                }
                Some(values)
            }
            Native::Or(conds) => {
                // `or` stops at the first true operand, as jq's does.
                for c in conds {
                    if c.holds(obj)? {
                        return Some(vec![Value::Bool(true)]);
                    }
                }
                Some(vec![Value::Bool(false)])
            }
        }
    }
}

impl Test {
    fn holds(&self, v: &Value) -> Option<bool> {
        // The literal is a string, boolean or null, for which jq's
        // equality is JSON equality.
        Some((walk(v, &self.path)? == &self.lit) == self.equal)
    }
}

impl Cond {
    fn holds(&self, obj: &Value) -> Option<bool> {
        match self {
            Cond::Test(t) => t.holds(obj),
            Cond::Any { at, optional, test } => {
                // `any` stops at the first element that satisfies it.
                for e in elements(obj, at, *optional)? {
                    if test.holds(e)? {
                        return Some(true);
                    }
                }
                Some(false)
            }
        }
    }
}

/// The elements `PATH[]` iterates: an array's; none for null under `[]?`.
/// None for anything else (objects, errors), left to jaq.
fn elements<'v>(obj: &'v Value, at: &[String], optional: bool) -> Option<&'v [Value]> {
    match walk(obj, at)? {
        Value::Array(items) => Some(items),
        Value::Null if optional => Some(&[]),
        _ => None,
    }
}

/// The value at `fields`: a missing field or null gives null. None: a
/// field of something other than an object or null (jq's error).
fn walk<'v>(obj: &'v Value, fields: &[String]) -> Option<&'v Value> {
    const NULL: &Value = &Value::Null;
    let mut at = obj;
    for f in fields {
        at = match at {
            Value::Object(m) => m.get(f).unwrap_or(NULL),
            Value::Null => NULL,
            _ => return None,
        };
    }
    Some(at)
}

/// Whether a value comes back from jaq as it went in: numbers other than
/// 64-bit integers may be printed and read back otherwise.
fn plain(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_i64(),
        Value::Array(a) => a.iter().all(plain),
        Value::Object(m) => m.values().all(plain),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::jq::{Input, Jq};
    use proptest::prelude::*;
    use serde_json::json;

    /// Programs of every recognised shape, kwok's own among them.
    const PROGRAMS: &[&str] = &[
        ".status.phase",
        ".metadata.deletionTimestamp",
        ".",
        r#".metadata.annotations["kubesim.io/run-duration"]"#,
        r#".["status"].phase"#,
        r#".status.conditions.[] | select(.type == "Ready") | .status"#,
        r#".status.conditions.[] | select( .type == "Ready" ) | .status"#,
        r#".status.conditions[] | select(.type != "Ready") | .status"#,
        r#".status.conditions[]? | select(.type == "Ready")"#,
        ".status.conditions.[] | select(.status == true) | .type",
        ".status.conditions.[] | select(.type == null)",
        r#".metadata.annotations["kubesim.io/run-duration"] != null or any(.metadata.ownerReferences[]?; .kind == "Job")"#,
        r#"any(.metadata.ownerReferences[]; .kind == "Job")"#,
        r#".status.phase == "Running" or .metadata.deletionTimestamp != null"#,
        r#".status.phase == "Running""#,
    ];

    #[test]
    fn kwoks_selectors_are_recognised() {
        for src in PROGRAMS {
            assert!(Native::parse(src).is_some(), "{src}");
        }
        assert_eq!(
            Native::parse(r#".metadata.annotations["a"].b"#),
            Some(Native::Path(vec![
                "metadata".into(),
                "annotations".into(),
                "a".into(),
                "b".into()
            ]))
        );
        for src in [
            ". status",
            ".status []",
            ".status.conditions[] | .type",
            "..a",
            ".a?",
            ".a[0]",
            ".a | .b",
            ".a == 1",
            ".a or .b",
            ".a.b // 1",
            r#".a["x\"y"]"#,
            ".a.and",
            ".a |= 1",
            ".a[] | select(.b == \"x\") | .c | .d",
            ".a[] | select(.b == \"x\") | .c[]",
            "any(.a; .b == \"x\")",
            ".a[]",
            "$x",
            "\"x\"",
        ] {
            assert!(Native::parse(src).is_none(), "{src}");
        }
    }

    #[test]
    fn answers_kwoks_selectors_on_pods() {
        let pod = json!({"metadata": {"annotations": {"kubesim.io/run-duration": "5s"},
            "ownerReferences": [{"kind": "Job"}]},
            "status": {"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "False"}]}});
        let run = |src: &str, v: &Value| Native::parse(src).unwrap().eval(v);
        assert_eq!(
            run(PROGRAMS[5], &pod),
            Some(vec![json!("False")]),
            "the Ready condition's status"
        );
        assert_eq!(run(PROGRAMS[11], &pod), Some(vec![json!(true)]));
        let bare = json!({"metadata": {}, "status": {"phase": "Pending"}});
        assert_eq!(run(PROGRAMS[11], &bare), Some(vec![json!(false)]));
        assert_eq!(run(PROGRAMS[1], &bare), Some(vec![Value::Null]));
        // A field of a string is jq's error: jaq answers.
        assert_eq!(run(PROGRAMS[0], &json!({"status": "x"})), None);
        // A float may not come back from jaq as it went in.
        assert_eq!(run(PROGRAMS[0], &json!({"status": {"phase": 1.5}})), None);
    }

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-3i64..3).prop_map(|n| json!(n)),
            Just(json!(1.5)),
            Just(json!(u64::MAX)),
            prop::sample::select(vec![
                "Ready", "True", "False", "Job", "Running", "Pending", "", "5s"
            ])
            .prop_map(|s| json!(s)),
        ]
    }

    /// Any JSON, with the field names the programs read.
    fn any_json() -> impl Strategy<Value = Value> {
        let keys = prop::sample::select(vec![
            "metadata",
            "annotations",
            "kubesim.io/run-duration",
            "ownerReferences",
            "kind",
            "status",
            "phase",
            "conditions",
            "type",
            "deletionTimestamp",
        ]);
        leaf().prop_recursive(3, 24, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((keys.clone(), inner), 0..4).prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    /// Objects shaped like pods most of the time, anything at any level
    /// some of the time.
    fn pod() -> impl Strategy<Value = Value> {
        let or_any = |s: BoxedStrategy<Value>| prop_oneof![3 => s, 1 => any_json()].boxed();
        let condition = or_any(
            (
                prop::option::of(or_any(leaf().boxed())),
                prop::option::of(or_any(leaf().boxed())),
            )
                .prop_map(|(t, s)| {
                    let mut c = serde_json::Map::new();
                    if let Some(t) = t {
                        c.insert("type".into(), t);
                    }
                    if let Some(s) = s {
                        c.insert("status".into(), s);
                    }
                    Value::Object(c)
                })
                .boxed(),
        );
        let owner = or_any(leaf().prop_map(|k| json!({"kind": k})).boxed());
        let list = |e: BoxedStrategy<Value>| {
            or_any(
                prop::collection::vec(e, 0..4)
                    .prop_map(Value::Array)
                    .boxed(),
            )
        };
        let annotations = or_any(
            prop::option::of(leaf())
                .prop_map(|d| match d {
                    Some(d) => json!({"x": "y", "kubesim.io/run-duration": d}),
                    None => json!({"x": "y"}),
                })
                .boxed(),
        );
        (
            annotations,
            list(owner),
            or_any(leaf().boxed()),
            or_any(leaf().boxed()),
            list(condition),
        )
            .prop_map(|(a, o, d, p, c)| {
                json!({"metadata": {"annotations": a, "ownerReferences": o, "deletionTimestamp": d},
                    "status": {"phase": p, "conditions": c}})
            })
            .prop_flat_map(|p| prop_oneof![4 => Just(p), 1 => any_json()])
    }

    /// Wherever the native evaluation answers, jaq gives the same values
    /// for the whole program; and it answers for most pod-shaped objects.
    #[test]
    fn native_answers_are_jaqs() {
        let programs: Vec<(Native, Jq)> = PROGRAMS
            .iter()
            .map(|src| (Native::parse(src).unwrap(), Jq::compile(src).unwrap()))
            .collect();
        let answered = std::cell::Cell::new(0usize);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(3000));
        runner
            .run(&pod(), |obj| {
                let input = Input::new(&obj);
                for (native, jq) in &programs {
                    let jaq = jq.run_jaq(&input);
                    if let Some(values) = native.eval(&obj) {
                        answered.set(answered.get() + 1);
                        prop_assert_eq!(&values, &jaq, "{} on {}", jq.source(), obj);
                    }
                    prop_assert_eq!(jq.run(&input), jaq, "{} on {}", jq.source(), obj);
                }
                Ok(())
            })
            .unwrap();
        let asked = 3000 * programs.len();
        assert!(answered.get() * 3 > asked, "{} of {asked}", answered.get());
    }
}
