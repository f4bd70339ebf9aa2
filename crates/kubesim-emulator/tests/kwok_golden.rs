//! kwok's own stage files against kwok's golden fixtures: for each input
//! object, the same stages match, with the same weights and delay ranges,
//! and their templates render the same patches (template functions stand
//! in with the fixtures' placeholders, `<Now>`, `<0 of NodeIPsWith(...)>`).
//!
//! The fixtures record status patches as merge patches; kubesim sends them
//! as strategic merges for Pods and Nodes (so conditions other writers set
//! survive), which is why the patch type is not compared.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kubesim_emulator::stage::{explain, stage_objects_from_yaml, Stage};
use kubesim_gocompat::template::Funcs;
use serde_json::{json, Value};

fn stage_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kwok/kustomize/stage")
}

fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Go's %q / %v of a template argument, as the placeholders show them.
fn go_arg(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

struct Placeholders;

impl Funcs for Placeholders {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let call = format!(
            "{name}({})",
            args.iter().map(go_arg).collect::<Vec<_>>().join(", ")
        );
        let plural = |call: &str| json!([format!("<0 of {call}>"), format!("<1 of {call}>")]);
        Some(Ok(match name {
            "Now" | "Version" | "NodeIP" | "NodeName" | "NodePort" | "StartTime" => {
                json!(format!("<{name}>"))
            }
            "NodeIPWith" | "PodIPWith" => json!(format!("<{call}>")),
            "NodeIPsWith" | "PodIPsWith" => plural(&call),
            "Quote" => {
                let v = args.first().cloned().unwrap_or(Value::Null);
                let text = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                json!(Value::String(text).to_string())
            }
            _ => return None,
        }))
    }
}

/// Kubesim's own functions fill in the rest (YAML, NodeConditions).
struct WithReal<'a>(&'a dyn Funcs);

impl Funcs for WithReal<'_> {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        Placeholders
            .call(name, args)
            .or_else(|| self.0.call(name, args))
    }
}

fn stages_in(dir: &Path) -> Vec<Arc<Stage>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("yaml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        // The volume stages ship with the StorageClass they serve.
        .filter(|text| text.contains("kind: Stage"))
        .flat_map(|text| stage_objects_from_yaml(&text).unwrap())
        .map(|o| Arc::new(Stage::from_object(&o).unwrap()))
        .collect()
}

fn check_dir(rel: &str) -> usize {
    let dir = stage_root().join(rel);
    let stages = stages_in(&dir);
    let ctx = kubesim_emulator::stage::funcs::FuncContext::new(
        kubesim_runtime::Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap()),
        String::new(),
        Arc::new(kubesim_runtime::Cache::default()),
    );
    let real = kubesim_emulator::stage::funcs::KwokFuncs {
        ctx: &ctx,
        node: "",
    };
    let funcs = WithReal(&real);
    let mut checked = 0;
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(dir.join("testdata"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".input.yaml"))
        .collect();
    inputs.sort();
    for input in inputs {
        let output = PathBuf::from(
            input
                .to_string_lossy()
                .replace(".input.yaml", ".output.yaml"),
        );
        let obj = yaml(&input);
        let want = yaml(&output);
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        // The engine hands each kind only the stages for it.
        let for_kind: Vec<Arc<Stage>> = stages
            .iter()
            .filter(|s| obj["kind"] == s.kind.as_str())
            .cloned()
            .collect();
        let got = explain(&for_kind, &obj, &funcs, now).unwrap();
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        let want_stages = want["stages"].as_array().cloned().unwrap_or_default();
        let names = |v: &[Value]| {
            v.iter()
                .map(|s| s["stage"].as_str().unwrap_or("").to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            got.iter().map(|p| p.stage.clone()).collect::<Vec<_>>(),
            names(&want_stages),
            "{name}: matching stages"
        );
        for (p, w) in got.iter().zip(&want_stages) {
            assert_eq!(p.weight, w["weight"].as_i64(), "{name}/{}: weight", p.stage);
            // No delay is recorded as none at all.
            let delay: Vec<i64> = match w["delay"].as_array() {
                Some(d) => d.iter().map(|d| d.as_i64().unwrap() / 1_000_000).collect(),
                None => vec![0],
            };
            let ours = match p.delay {
                (d, None) => vec![d],
                (lo, Some(hi)) => vec![lo, hi],
            };
            assert_eq!(ours, delay, "{name}/{}: delay (ms)", p.stage);
            let next = w["next"].as_array().cloned().unwrap_or_default();
            assert_eq!(
                p.steps.len(),
                next.len(),
                "{name}/{}: steps {:#?}",
                p.stage,
                p.steps
            );
            for (s, n) in p.steps.iter().zip(&next) {
                assert_eq!(s["kind"], n["kind"], "{name}/{}", p.stage);
                if n["kind"] == "patch" {
                    assert_eq!(s["data"], n["data"], "{name}/{}: patch", p.stage);
                    assert_eq!(s["subresource"], n["subresource"], "{name}/{}", p.stage);
                }
                if n["kind"] == "event" {
                    let want =
                        json!({"type": n["type"], "reason": n["reason"], "message": n["message"]});
                    assert_eq!(s["event"], want, "{name}/{}: event", p.stage);
                }
            }
        }
        checked += 1;
    }
    checked
}

#[test]
fn node_fast() {
    assert_eq!(check_dir("node/fast"), 1);
}

#[test]
fn node_chaos() {
    assert_eq!(check_dir("node/chaos"), 1);
}

#[test]
fn pod_fast() {
    assert_eq!(check_dir("pod/fast"), 3);
}

#[test]
fn pod_general() {
    assert_eq!(check_dir("pod/general"), 7);
}

#[test]
fn volume_fast() {
    assert_eq!(check_dir("volume/fast"), 4);
}
