//! jq programs of Stage selectors, weights and delays, compiled once with
//! jaq. jaq 3 follows jq where kwok's programs depend on it: indexing null
//! yields null, and `.a.[]` (gojq's dotted index) parses.

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{data, unwrap_valr, Compiler, Ctx, Vars};
use jaq_json::Val;
use serde::Deserialize;
use serde_json::Value;

/// A compiled jq program.
pub struct Jq {
    src: String,
    filter: jaq_core::compile::Filter<jaq_core::Native<data::JustLut<Val>>>,
    /// The fields of a program that is a plain path such as
    /// `.metadata.deletionTimestamp` (most Stage selectors), which is
    /// answered from the object itself without converting it for jaq.
    path: Option<Vec<String>>,
}
impl std::fmt::Debug for Jq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Jq({:?})", self.src)
    }
}

/// An object as programs see it: converted for jaq once, and only if a
/// program needs more than a plain path.
pub struct Input<'a> {
    obj: &'a Value,
    val: std::cell::OnceCell<Val>,
}

impl<'a> Input<'a> {
    pub fn new(obj: &'a Value) -> Self {
        Input {
            obj,
            val: std::cell::OnceCell::new(),
        }
    }

    /// The object itself.
    pub fn object(&self) -> &'a Value {
        self.obj
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

impl Jq {
    pub fn compile(src: &str) -> Result<Jq, String> {
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
        let filter = Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errs| format!("jq {src:?}: cannot compile ({} error(s))", errs.len()))?;
        Ok(Jq {
            src: src.to_string(),
            filter,
            path: plain_path(src),
        })
    }

    pub fn source(&self) -> &str {
        &self.src
    }

    /// Every value the program yields, stopping at the first runtime error
    /// (which, as in kwok, counts as "no value" from there on).
    pub fn run(&self, input: &Input) -> Vec<Value> {
        if let Some(fields) = &self.path {
            // As jq: a missing field or a null gives null. Indexing any
            // other non-object is jq's error, left to jaq to report.
            let mut at = input.obj;
            for f in fields {
                match at {
                    Value::Object(m) => at = m.get(f).unwrap_or(&Value::Null),
                    Value::Null => break,
                    _ => return self.run_jaq(input),
                }
            }
            return vec![at.clone()];
        }
        self.run_jaq(input)
    }

    fn run_jaq(&self, input: &Input) -> Vec<Value> {
        let ctx = Ctx::<data::JustLut<Val>>::new(&self.filter.lut, Vars::new([]));
        let mut values = Vec::new();
        for v in self
            .filter
            .id
            .run((ctx, input.val().clone()))
            .map(unwrap_valr)
        {
            match v {
                // Val prints as JSON; outputs are small scalars in practice.
                Ok(v) => values.push(serde_json::from_str(&v.to_string()).unwrap_or(Value::Null)),
                Err(_) => break,
            }
        }
        values
    }

    /// The first value, if any, that is not null.
    pub fn first(&self, input: &Input) -> Option<Value> {
        self.run(input).into_iter().find(|v| !v.is_null())
    }
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
            for o in &objs {
                assert_eq!(
                    jq.run(&Input::new(o)),
                    jq.run_jaq(&Input::new(o)),
                    "{src} on {o}"
                );
            }
        }
        for src in [".a[0]", ".a | .b", ".", ".a.\"b c\"", "..a", ".a.b // 1"] {
            assert!(plain_path(src).is_none(), "{src}");
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
