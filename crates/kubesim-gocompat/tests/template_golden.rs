//! Golden renders of Go templates: the cases under `testdata/gotpl/` (a
//! template, the name of its data in `data.json`, and what it renders to
//! or the error it stops with) must render exactly so.
//!
//! `actions.json` holds the actions that read borrowed fields and items,
//! and a few whose outputs were worked out by hand from text/template's
//! rules; `stages.json` the built-in Stage templates;
//! `clusterloader2.json` ClusterLoader2's functions; `random.json`
//! generated actions, most of them wrong in some way, so that errors are
//! pinned down as well as output. Run with UPDATE_GOLDEN=1 to rewrite the
//! expected outputs from the current evaluator, then read the diff.

use std::path::PathBuf;

use kubesim_gocompat::template::clusterloader2::{ClusterLoader2Funcs, Draws};
use kubesim_gocompat::template::{kwok, Funcs, Template};
use serde_json::{json, Map, Value};

fn dir() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "testdata", "gotpl"]
        .iter()
        .collect()
}

fn read(name: &str) -> Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The callers' functions: `Twice`, kwok's functions of their arguments
/// alone, and fixed answers for kwok's functions of the cluster and the
/// clock, so that a render depends on this crate alone.
struct Fixed;

impl Funcs for Fixed {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let first = args.first().unwrap_or(&Value::Null);
        Some(Ok(match name {
            "Twice" => json!(first.as_i64().unwrap_or(0) * 2),
            "Now" => json!("2026-01-01T00:00:05Z"),
            "Version" => json!("0.0.0"),
            "NodeName" => json!("n"),
            "NodePort" => json!(10250),
            "NodeIP" => json!("10.0.0.1"),
            "NodeIPsWith" => json!(["10.0.0.1"]),
            "PodIPsWith" => json!(["10.128.0.2"]),
            "NodeConditions" => kwok::node_conditions(),
            "Quote" => kwok::quote(first),
            "YAML" => return Some(kwok::yaml(args)),
            _ => return None,
        }))
    }
}

/// A random source that always draws the same number: the golden cases of
/// ClusterLoader2's random functions are those with one possible answer.
struct Same;

impl Draws for Same {
    fn below(&self, _n: u64) -> u64 {
        0
    }

    fn seeded(_seed: u64) -> Self {
        Same
    }
}

/// What a case renders to now: `output`, or `error` when rendering fails.
fn render(case: &Value, data: &Map<String, Value>, funcs: &dyn Funcs) -> (&'static str, String) {
    let src = case["template"].as_str().expect("template");
    let name = case["data"].as_str().expect("data");
    let data = data.get(name).unwrap_or_else(|| panic!("no data {name}"));
    match Template::parse(src).and_then(|t| t.render(data, funcs)) {
        Ok(out) => ("output", out),
        Err(e) => ("error", e.0),
    }
}

fn golden(file: &str, funcs: &dyn Funcs) {
    let data = read("data.json").as_object().cloned().expect("a map");
    let mut cases = read(file);
    let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    for case in cases.as_array_mut().expect("a list") {
        let (key, got) = render(case, &data, funcs);
        if update {
            let c = case.as_object_mut().expect("a case");
            c.remove("output");
            c.remove("error");
            c.insert(key.into(), Value::String(got));
            continue;
        }
        if case.get(key).and_then(Value::as_str) != Some(got.as_str()) {
            failures.push(format!(
                "{}: want {}, got {key} {got:?}",
                case["name"],
                case.get("output")
                    .map(|o| format!("output {o}"))
                    .or_else(|| case.get("error").map(|e| format!("error {e}")))
                    .unwrap_or_else(|| "nothing".into()),
            ));
        }
    }
    if update {
        let text = serde_json::to_string_pretty(&cases).expect("serialize") + "\n";
        std::fs::write(dir().join(file), text).expect("write");
        return;
    }
    assert!(
        failures.is_empty(),
        "{} of {file} differ (UPDATE_GOLDEN=1 rewrites them if intended):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn actions_render_as_recorded() {
    golden("actions.json", &Fixed);
}

#[test]
fn stage_templates_render_as_recorded() {
    golden("stages.json", &Fixed);
}

#[test]
fn generated_actions_render_as_recorded() {
    golden("random.json", &Fixed);
}

#[test]
fn clusterloader2_functions_render_as_recorded() {
    let funcs = ClusterLoader2Funcs {
        rng: Same,
        base_dir: dir(),
    };
    golden("clusterloader2.json", &funcs);
}
