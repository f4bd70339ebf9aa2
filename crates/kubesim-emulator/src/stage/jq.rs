//! jq programs of Stage selectors, weights and delays, compiled once with
//! jaq. jaq 3 follows jq where kwok's programs depend on it: indexing null
//! yields null, and `.a.[]` (gojq's dotted index) parses.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{data, unwrap_valr, Compiler, Ctx, Vars};
use jaq_json::Val;
use serde::Deserialize;
use serde_json::Value;

use super::jq_native::Native;

/// A compiled jq program.
pub struct Jq {
    src: String,
    filter: Filter,
    /// The fields of a program that is a plain path such as
    /// `.metadata.deletionTimestamp` (most Stage selectors), which is
    /// answered from the object itself without converting it for jaq.
    path: Option<Vec<String>>,
    /// A program that only looks below a plain path (see [`focus`]): that
    /// path, and the rest of the program compiled to run on the value
    /// there, so only that value is converted for jaq.
    focused: Option<(Vec<String>, Filter)>,
    /// The program evaluated without jaq, when it has a shape kwok's
    /// selectors use (see [`Native`]).
    native: Option<Box<Native>>,
}

type Filter = jaq_core::compile::Filter<jaq_core::Native<data::JustLut<Val>>>;

impl std::fmt::Debug for Jq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Jq({:?})", self.src)
    }
}

/// An object as programs see it: converted for jaq once, and only if a
/// program needs more than a plain path; converted for CEL once, and only
/// if a CEL expression reads it.
pub struct Input<'a> {
    obj: &'a Value,
    val: std::cell::OnceCell<Val>,
    cel: std::cell::OnceCell<cel::Value>,
}

impl<'a> Input<'a> {
    pub fn new(obj: &'a Value) -> Self {
        Input {
            obj,
            val: std::cell::OnceCell::new(),
            cel: std::cell::OnceCell::new(),
        }
    }

    /// The object as CEL's `self`.
    pub fn cel(&self) -> &cel::Value {
        self.cel
            .get_or_init(|| crate::usage::cel::object_value(self.obj))
    }

    fn val(&self) -> &Val {
        self.val
            .get_or_init(|| Val::deserialize(self.obj).unwrap_or_default())
    }
}

/// `.a.b.c` with plain identifiers: its fields.
fn plain_path(src: &str) -> Option<Vec<String>> {
    let rest = src.trim().strip_prefix('.')?;
    let fields: Vec<String> = rest.split('.').map(String::from).collect();
    let ident = |f: &String| {
        let mut cs = f.chars();
        cs.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && cs.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    fields.iter().all(ident).then_some(fields)
}

/// `PATH.[] | REST`, `PATH[] | REST` or `PATH["key"] | REST` (REST
/// optional) with PATH a plain path: PATH's fields and the program
/// `.[] | REST` (or `.["key"] | REST`) that gives the same values when run
/// on the value at PATH, as jq's pipes associate. Kwok's selectors on
/// conditions and annotations have this form.
fn focus(src: &str) -> Option<(Vec<String>, String)> {
    let mut rest = src.trim();
    let mut fields = Vec::new();
    loop {
        let after = rest.strip_prefix('.')?;
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let field = &after[..end];
        if field.is_empty() {
            break;
        }
        if !field.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return None;
        }
        fields.push(field.to_string());
        rest = &after[end..];
        if !rest.starts_with('.') {
            break;
        }
    }
    if fields.is_empty() {
        return None;
    }
    let (postfix, after) = if let Some(a) = rest.strip_prefix(".[]") {
        (".[]".to_string(), a)
    } else if let Some(a) = rest.strip_prefix("[]") {
        (".[]".to_string(), a)
    } else {
        let body = rest.strip_prefix("[\"")?;
        let close = body.find('"')?;
        let key = &body[..close];
        if key.contains('\\') {
            return None;
        }
        let a = body[close + 1..].strip_prefix(']')?;
        (format!(".[\"{key}\"]"), a)
    };
    let after = after.trim_start();
    if after.is_empty() {
        return Some((fields, postfix));
    }
    // Only a pipe may follow (not `|=`, nor any operator that would take
    // the path's value as its left operand).
    let tail = after.strip_prefix('|')?;
    if tail.starts_with('=') {
        return None;
    }
    Some((fields, format!("{postfix} |{tail}")))
}

fn compile_filter(src: &str) -> Result<Filter, String> {
    let defs = jaq_core::defs()
        .chain(jaq_std::defs())
        .chain(jaq_json::defs());
    let funs = jaq_core::funs()
        .chain(jaq_std::funs())
        .chain(jaq_json::funs());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    let modules = loader
        .load(
            &arena,
            File {
                code: src,
                path: (),
            },
        )
        .map_err(|errs| format!("jq {src:?}: cannot parse ({} error(s))", errs.len()))?;
    Compiler::default()
        .with_funs(funs)
        .compile(modules)
        .map_err(|errs| format!("jq {src:?}: cannot compile ({} error(s))", errs.len()))
}

impl Jq {
    pub fn compile(src: &str) -> Result<Jq, String> {
        let filter = compile_filter(src)?;
        // The whole program compiled, so its errors are reported as
        // written; the focused form is an optimisation only.
        let focused = focus(src).and_then(|(path, rest)| Some((path, compile_filter(&rest).ok()?)));
        Ok(Jq {
            src: src.to_string(),
            filter,
            path: plain_path(src),
            focused,
            native: Native::parse(src).map(Box::new),
        })
    }

    pub fn source(&self) -> &str {
        &self.src
    }

    /// Every value the program yields, stopping at the first runtime error
    /// (which, as in kwok, counts as "no value" from there on).
    pub fn run(&self, input: &Input) -> Vec<Value> {
        if let Some(values) = self.native.as_ref().and_then(|n| n.eval(input.obj)) {
            return values;
        }
        if let Some(fields) = &self.path {
            return match walk(input.obj, fields) {
                Some(at) => vec![at.clone()],
                None => self.run_jaq(input),
            };
        }
        if let Some((fields, filter)) = &self.focused {
            return match walk(input.obj, fields) {
                Some(at) => run_filter(filter, Val::deserialize(at).unwrap_or_default()),
                None => self.run_jaq(input),
            };
        }
        self.run_jaq(input)
    }

    pub(super) fn run_jaq(&self, input: &Input) -> Vec<Value> {
        run_filter(&self.filter, input.val().clone())
    }

    /// The first value, if any, that is not null.
    pub fn first(&self, input: &Input) -> Option<Value> {
        self.run(input).into_iter().find(|v| !v.is_null())
    }
}

/// The value at `fields` as jq reads it: a missing field or a null gives
/// null. None: a non-object is indexed, which is jq's error, left to jaq
/// to report.
fn walk<'v>(obj: &'v Value, fields: &[String]) -> Option<&'v Value> {
    let mut at = obj;
    for f in fields {
        match at {
            Value::Object(m) => at = m.get(f).unwrap_or(&Value::Null),
            Value::Null => break,
            _ => return None,
        }
    }
    Some(at)
}

/// Every value `filter` yields on `input`, up to the first error.
fn run_filter(filter: &Filter, input: Val) -> Vec<Value> {
    let ctx = Ctx::<data::JustLut<Val>>::new(&filter.lut, Vars::new([]));
    let mut values = Vec::new();
    for v in filter.id.run((ctx, input)).map(unwrap_valr) {
        match v {
            // Val prints as JSON; outputs are small scalars in practice.
            Ok(v) => values.push(serde_json::from_str(&v.to_string()).unwrap_or(Value::Null)),
            Err(_) => break,
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, v: Value) -> Vec<Value> {
        Jq::compile(src).unwrap().run(&Input::new(&v))
    }

    #[test]
    fn kwok_dot_bracket_paths() {
        let pod = json!({"status": {"conditions": [
            {"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}});
        assert_eq!(
            run(
                r#".status.conditions.[] | select( .type == "Ready" ) | .status"#,
                pod.clone()
            ),
            vec![json!("False")]
        );
        assert_eq!(
            run(".status.conditions.[].type", pod),
            vec![json!("Ready"), json!("PodScheduled")]
        );
        assert_eq!(run(".[0]", json!([7])), vec![json!(7)]);
    }

    #[test]
    fn missing_paths_and_errors() {
        assert_eq!(
            run(".metadata.deletionTimestamp", json!({})),
            vec![Value::Null]
        );
        assert_eq!(
            run(".metadata.annotations[\"a\"] // 3", json!({})),
            vec![json!(3)]
        );
        // Indexing a string is an error: no values from there on.
        assert!(run(".a.b", json!({"a": "x"})).is_empty());
        assert!(Jq::compile(".a | | b").is_err());
    }

    #[test]
    fn plain_paths_answer_as_jaq_does() {
        let objs = [
            json!({"metadata": {"deletionTimestamp": "t", "n": null}}),
            json!({"metadata": "x"}),
            json!({"metadata": [1]}),
            json!({}),
            json!(null),
            json!(3),
        ];
        for src in [
            ".metadata.deletionTimestamp",
            ".metadata",
            ".metadata.n.x",
            ".a_1.b",
        ] {
            let jq = Jq::compile(src).unwrap();
            assert!(jq.path.is_some(), "{src} is a plain path");
            agrees_with_jaq(&jq, &objs);
        }
        for src in [".a[0]", ".a | .b", ".", ".a.\"b c\"", "..a", ".a.b // 1"] {
            assert!(plain_path(src).is_none(), "{src}");
        }
    }

    /// The shortcut `run` takes gives what the whole program gives in jaq.
    fn agrees_with_jaq(jq: &Jq, objs: &[Value]) {
        for o in objs {
            assert_eq!(
                jq.run(&Input::new(o)),
                jq.run_jaq(&Input::new(o)),
                "{} on {o}",
                jq.source()
            );
        }
    }

    #[test]
    fn focused_programs_answer_as_jaq_does() {
        let objs = [
            json!({"status": {"conditions": [{"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "True"}]},
                "metadata": {"annotations": {"kubesim.io/run-duration": "5s", "b": 1}}}),
            json!({"status": {"conditions": {"x": {"type": "Ready", "status": "T"}}},
                "metadata": {"annotations": null}}),
            json!({"status": {"conditions": "text"}, "metadata": "x"}),
            json!({"status": null, "metadata": {"annotations": [1]}}),
            json!({"status": 3}),
            json!({}),
            json!(null),
        ];
        for src in [
            r#".status.conditions.[] | select( .type == "Ready" ) | .status"#,
            r#".status.conditions[] | .type"#,
            ".status.conditions.[]",
            r#".metadata.annotations["kubesim.io/run-duration"]"#,
            r#".metadata.annotations["b"]|tostring"#,
        ] {
            let jq = Jq::compile(src).unwrap();
            assert!(jq.focused.is_some(), "{src} is focused");
            agrees_with_jaq(&jq, &objs);
        }
        for src in [
            r#".metadata.annotations["a"] // 3"#,
            ".a.b[] |= 1",
            ".a.b[0]",
            ".a.[].b",
            r#".a["x\"y"]"#,
            ".[]",
            ".a.b",
        ] {
            assert!(focus(src).is_none(), "{src}");
        }
    }

    #[test]
    fn std_functions_are_available() {
        assert_eq!(
            run(r#".metadata.annotations["x"] // "d""#, json!({})),
            vec![json!("d")]
        );
        assert_eq!(
            run("[.[] | tostring] | join(\",\")", json!([1, 2])),
            vec![json!("1,2")]
        );
    }
}
