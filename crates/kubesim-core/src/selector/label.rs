//! Label selectors: the full `labels.Parse` grammar and `metav1.LabelSelector`.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::error::ApiError;

use super::validate::{invalid, label_value_errors, qualified_name_errors};

/// A requirement operator; `Equals` and `DoubleEquals` match alike but are
/// kept apart so the string form survives a round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LabelOp {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One clause of a selector. `values` is sorted and free of duplicates:
/// upstream keeps parsed values in a set, and a canonical order makes
/// equality and the string form independent of how the selector was written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LabelRequirement {
    key: String,
    op: LabelOp,
    values: Vec<String>,
}

impl LabelRequirement {
    /// Validates like `labels.NewRequirement`.
    pub fn new(key: &str, op: LabelOp, values: Vec<String>) -> Result<Self, ApiError> {
        new_requirement(key, op, values).map_err(ApiError::bad_request)
    }
    pub fn key(&self) -> &str {
        &self.key
    }
    pub fn op(&self) -> LabelOp {
        self.op
    }
    pub fn values(&self) -> &[String] {
        &self.values
    }
    pub fn matches<'a>(&self, get: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        let has = |v: &str| self.values.binary_search_by(|x| x.as_str().cmp(v)).is_ok();
        match self.op {
            LabelOp::In | LabelOp::Equals | LabelOp::DoubleEquals => {
                get(&self.key).is_some_and(has)
            }
            LabelOp::NotIn | LabelOp::NotEquals => !get(&self.key).is_some_and(has),
            LabelOp::Exists => get(&self.key).is_some(),
            LabelOp::DoesNotExist => get(&self.key).is_none(),
            LabelOp::GreaterThan | LabelOp::LessThan => {
                let Some(actual) = get(&self.key).and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [wanted] = self.values.as_slice() else {
                    return false;
                };
                let Ok(wanted) = wanted.parse::<i64>() else {
                    return false;
                };
                if self.op == LabelOp::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }
}

impl fmt::Display for LabelRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == LabelOp::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.op {
            LabelOp::Exists | LabelOp::DoesNotExist => return Ok(()),
            LabelOp::Equals => "=",
            LabelOp::DoubleEquals => "==",
            LabelOp::NotEquals => "!=",
            LabelOp::In => " in ",
            LabelOp::NotIn => " notin ",
            LabelOp::GreaterThan => ">",
            LabelOp::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.op, LabelOp::In | LabelOp::NotIn);
        if set {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// The checks of `labels.NewRequirement`, returning the message upstream
/// would (a single error as is, several as `[a, b]`).
fn new_requirement(
    key: &str,
    op: LabelOp,
    mut values: Vec<String>,
) -> Result<LabelRequirement, String> {
    let mut errs = Vec::new();
    let key_errs = qualified_name_errors(key);
    if !key_errs.is_empty() {
        errs.push(invalid("key", key, &key_errs.join("; ")));
    }
    match op {
        LabelOp::In | LabelOp::NotIn => {
            if values.is_empty() {
                errs.push(format!(
                    "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                    go_list(&values)
                ));
            }
        }
        LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::NotEquals => {
            if values.len() != 1 {
                errs.push(format!(
                    "values: Invalid value: {}: exact-match compatibility requires one single value",
                    go_list(&values)
                ));
            }
        }
        LabelOp::Exists | LabelOp::DoesNotExist => {
            if !values.is_empty() {
                errs.push(format!(
                    "values: Invalid value: {}: values set must be empty for exists and does not exist",
                    go_list(&values)
                ));
            }
        }
        LabelOp::GreaterThan | LabelOp::LessThan => {
            if values.len() != 1 {
                errs.push(format!(
                    "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                    go_list(&values)
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(invalid(
                        &format!("values[{i}]"),
                        v,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let v_errs = label_value_errors(v);
        if !v_errs.is_empty() {
            errs.push(invalid(
                &format!("values[{i}][{key}]"),
                v,
                &v_errs.join("; "),
            ));
        }
    }
    match errs.len() {
        0 => {
            values.sort();
            values.dedup();
            Ok(LabelRequirement {
                key: key.to_string(),
                op,
                values,
            })
        }
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// Go's `%v` of a `[]string`, as it appears in Invalid-value messages.
fn go_list(values: &[String]) -> String {
    format!(
        "[]string{{{}}}",
        values
            .iter()
            .map(|v| super::validate::go_quote(v))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

impl LabelSelector {
    pub fn everything() -> Self {
        LabelSelector::default()
    }
    /// Parses the string form (`app=web,tier in (a,b),!x`); 400 on bad input.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        let tokens = lex(s);
        let mut p = Parser { tokens, pos: 0 };
        let requirements = p.parse().map_err(ApiError::bad_request)?;
        Ok(LabelSelector::from_requirements(requirements))
    }
    /// Converts a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`).
    /// A null or absent selector is treated like `{}` and selects everything.
    pub fn from_json(v: &Value) -> Result<Self, ApiError> {
        let obj = match v {
            Value::Null => return Ok(LabelSelector::everything()),
            Value::Object(o) => o,
            other => {
                return Err(ApiError::bad_request(format!(
                    "label selector must be an object, got {other}"
                )))
            }
        };
        let mut reqs = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (k, v) in m {
                    let Some(v) = v.as_str() else {
                        return Err(ApiError::bad_request(format!(
                            "matchLabels[{k}]: value must be a string"
                        )));
                    };
                    reqs.push(LabelRequirement::new(
                        k,
                        LabelOp::Equals,
                        vec![v.to_string()],
                    )?);
                }
            }
            Some(_) => return Err(ApiError::bad_request("matchLabels must be an object")),
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for (i, e) in exprs.iter().enumerate() {
                    reqs.push(expression(i, e)?);
                }
            }
            Some(_) => return Err(ApiError::bad_request("matchExpressions must be an array")),
        }
        Ok(LabelSelector::from_requirements(reqs))
    }
    /// Builds a selector from already validated requirements, ordering them
    /// by key as upstream does (stable, so same-key clauses keep their order).
    pub fn from_requirements(mut requirements: Vec<LabelRequirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector { requirements }
    }
    /// A selector of `key=value` clauses, one per entry.
    pub fn from_map(labels: &BTreeMap<String, String>) -> Result<Self, ApiError> {
        let reqs = labels
            .iter()
            .map(|(k, v)| LabelRequirement::new(k, LabelOp::Equals, vec![v.clone()]))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LabelSelector::from_requirements(reqs))
    }
    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
    pub fn matches<'a>(&self, get: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(get))
    }
    pub fn matches_map(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches(&|k| labels.get(k).map(String::as_str))
    }
    /// The value of `key=value` (or `key==value`, `key in (value)`) when the
    /// selector pins `key` to exactly one value; lets callers use an index.
    pub fn exact(&self, key: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| {
                r.key == key
                    && matches!(r.op, LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::In)
                    && r.values.len() == 1
            })
            .map(|r| r.values[0].as_str())
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

fn expression(i: usize, e: &Value) -> Result<LabelRequirement, ApiError> {
    let key = e.get("key").and_then(Value::as_str).unwrap_or("");
    let op = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
        "In" => LabelOp::In,
        "NotIn" => LabelOp::NotIn,
        "Exists" => LabelOp::Exists,
        "DoesNotExist" => LabelOp::DoesNotExist,
        other => {
            return Err(ApiError::bad_request(format!(
                "\"{other}\" is not a valid label selector operator"
            )))
        }
    };
    let values = match e.get("values") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vs)) => vs
            .iter()
            .map(|v| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "matchExpressions[{i}].values: values must be strings"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "matchExpressions[{i}].values must be an array"
            )))
        }
    };
    LabelRequirement::new(key, op, values)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Ident,
    Not,
    Comma,
    Eq,
    DoubleEq,
    NotEq,
    In,
    NotIn,
    Open,
    Close,
    Gt,
    Lt,
    End,
}

/// Whether `in`/`notin` are keywords (after a key) or plain words (as keys
/// and values), as in upstream's parser contexts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn symbol(s: &[u8]) -> Option<Tok> {
    Some(match s {
        b"!" => Tok::Not,
        b"!=" => Tok::NotEq,
        b"=" => Tok::Eq,
        b"==" => Tok::DoubleEq,
        b"(" => Tok::Open,
        b")" => Tok::Close,
        b"," => Tok::Comma,
        b">" => Tok::Gt,
        b"<" => Tok::Lt,
        _ => return None,
    })
}

/// Splits the whole input up front. Upstream reads a NUL byte as the end of
/// input, so this does too: the same query string then selects the same way.
fn lex(s: &str) -> Vec<(Tok, String)> {
    let b = s.as_bytes();
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < end && is_space(b[i]) {
            i += 1;
        }
        if i >= end {
            out.push((Tok::End, String::new()));
            return out;
        }
        let start = i;
        if is_special(b[i]) {
            // Longest match among the known symbols; every single special
            // byte is one, so this always yields a token.
            let mut best = (Tok::End, start);
            while i < end && is_special(b[i]) {
                match symbol(&b[start..=i]) {
                    Some(t) => best = (t, i + 1),
                    None => break,
                }
                i += 1;
            }
            i = best.1;
            out.push((best.0, String::from_utf8_lossy(&b[start..i]).into_owned()));
        } else {
            while i < end && !is_space(b[i]) && !is_special(b[i]) {
                i += 1;
            }
            // Specials and spaces are ASCII, so `start..i` is on char boundaries.
            let word = s.get(start..i).unwrap_or_default().to_string();
            let tok = match word.as_str() {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            };
            out.push((tok, word));
        }
    }
}

struct Parser {
    tokens: Vec<(Tok, String)>,
    pos: usize,
}

type PResult<T> = Result<T, String>;

impl Parser {
    fn peek(&self, ctx: Ctx) -> (Tok, String) {
        let (t, lit) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        (contextual(t, ctx), lit)
    }

    fn next(&mut self, ctx: Ctx) -> (Tok, String) {
        let (t, lit) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        (contextual(t, ctx), lit)
    }

    fn parse(&mut self) -> PResult<Vec<LabelRequirement>> {
        let mut reqs = Vec::new();
        loop {
            let (t, lit) = self.peek(Ctx::Values);
            match t {
                Tok::Ident | Tok::Not => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, lit) = self.next(Ctx::Values);
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t, lit) = self.peek(Ctx::Values);
                            if t != Tok::Ident && t != Tok::Not {
                                return Err(format!(
                                    "found '{lit}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{lit}', expected: ',' or 'end of string'"))
                        }
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ))
                }
            }
        }
    }

    fn requirement(&mut self) -> PResult<LabelRequirement> {
        let (key, op) = self.key_and_inferred_op()?;
        if let Some(op) = op {
            return new_requirement(&key, op, Vec::new());
        }
        let op = self.operator()?;
        let values = match op {
            LabelOp::In | LabelOp::NotIn => self.value_set()?,
            _ => self.exact_value()?,
        };
        new_requirement(&key, op, values)
    }

    fn key_and_inferred_op(&mut self) -> PResult<(String, Option<LabelOp>)> {
        let mut op = None;
        let (mut t, mut lit) = self.next(Ctx::Values);
        if t == Tok::Not {
            op = Some(LabelOp::DoesNotExist);
            (t, lit) = self.next(Ctx::Values);
        }
        if t != Tok::Ident {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = qualified_name_errors(&lit);
        if !errs.is_empty() {
            return Err(invalid("<nil>", &lit, &errs.join("; ")));
        }
        let (next, _) = self.peek(Ctx::Values);
        if (next == Tok::End || next == Tok::Comma) && op.is_none() {
            op = Some(LabelOp::Exists);
        }
        Ok((lit, op))
    }

    fn operator(&mut self) -> PResult<LabelOp> {
        let (t, lit) = self.next(Ctx::KeyAndOperator);
        Ok(match t {
            Tok::In => LabelOp::In,
            Tok::NotIn => LabelOp::NotIn,
            Tok::Eq => LabelOp::Equals,
            Tok::DoubleEq => LabelOp::DoubleEquals,
            Tok::NotEq => LabelOp::NotEquals,
            Tok::Gt => LabelOp::GreaterThan,
            Tok::Lt => LabelOp::LessThan,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ))
            }
        })
    }

    fn value_set(&mut self) -> PResult<Vec<String>> {
        let (t, lit) = self.next(Ctx::Values);
        if t != Tok::Open {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (t, lit) = self.peek(Ctx::Values);
        match t {
            Tok::Ident | Tok::Comma => {
                let values = self.identifier_list()?;
                let (t, _) = self.next(Ctx::Values);
                if t != Tok::Close {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(values)
            }
            Tok::Close => {
                self.next(Ctx::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    /// Commas with nothing between them stand for the empty value, so
    /// `(,a)` is `{"", "a"}`.
    fn identifier_list(&mut self) -> PResult<Vec<String>> {
        let mut values: Vec<String> = Vec::new();
        loop {
            let (t, lit) = self.next(Ctx::Values);
            match t {
                Tok::Ident => {
                    values.push(lit);
                    let (t, lit) = self.peek(Ctx::Values);
                    match t {
                        Tok::Comma => continue,
                        Tok::Close => return Ok(values),
                        _ => return Err(format!("found '{lit}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if values.is_empty() {
                        values.push(String::new());
                    }
                    let (t, _) = self.peek(Ctx::Values);
                    if t == Tok::Close {
                        values.push(String::new());
                        return Ok(values);
                    }
                    if t == Tok::Comma {
                        self.next(Ctx::Values);
                        values.push(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> PResult<Vec<String>> {
        let (t, _) = self.peek(Ctx::Values);
        if t == Tok::End || t == Tok::Comma {
            return Ok(vec![String::new()]);
        }
        let (t, lit) = self.next(Ctx::Values);
        if t == Tok::Ident {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

fn contextual(t: Tok, ctx: Ctx) -> Tok {
    match (t, ctx) {
        (Tok::In | Tok::NotIn, Ctx::Values) => Tok::Ident,
        _ => t,
    }
}
#[cfg(test)]
#[path = "label_tests.rs"]
mod tests;
