use std::path::PathBuf;

use kubesim_runtime::Rng;
use serde_json::json;

use super::*;

/// A directory with the given files, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(files: &[(&str, &str)]) -> Dir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("kubesim-load-cfg-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        for (name, text) in files {
            std::fs::write(d.join(name), text).unwrap();
        }
        Dir(d)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

fn compile_in(d: &Dir, validation: Validation) -> Result<Compiled, ConfigError> {
    let mapping = json!({"Nodes": 3, "ImageRegistry": "registry.k8s.io"});
    let mapping = mapping.as_object().unwrap();
    let r = Renderer::new(Rng::seeded(1), &d.0);
    compile(
        &d.path("config.yaml"),
        &r,
        &CompileOptions {
            validation,
            mapping,
            namespace_prefix: "test-abc",
        },
    )
}

const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{.Name}}\n  labels:\n    group: {{.Group}}\nspec:\n  containers:\n  - name: c\n    image: {{.ImageRegistry}}/pause:3.9\n";

fn good(steps: &str) -> String {
    format!(
        "name: t\nnamespace:\n  number: 2\ntuningSets:\n- name: Uniform\n  qpsLoad:\n    qps: 10\nsteps:\n{steps}"
    )
}

const CREATE: &str = "- name: create\n  phases:\n  - namespaceRange:\n      min: 1\n      max: 2\n    replicasPerNamespace: 3\n    tuningSet: Uniform\n    objectBundle:\n    - basename: pod\n      objectTemplatePath: pod.yaml\n      templateFillMap:\n        Group: g\n";

#[test]
fn decodes_keys_case_insensitively_with_defaults() {
    let cfg = good(&format!(
        "{CREATE}- name: measure\n  measurements:\n  - identifier: W\n    method: Sleep\n    params:\n      duration: 1s\n"
    ))
    .replace("qpsLoad", "QPSLoad");
    let d = Dir::new(&[("config.yaml", &cfg), ("pod.yaml", POD)]);
    let c = compile_in(&d, Validation::Strict).expect("compiles").config;
    assert_eq!(c.name, "t");
    assert_eq!(c.namespace.number, 2);
    assert!(c.namespace.delete_automanaged_namespaces);
    assert_eq!(c.tuning_sets[0].load, Load::Qps { qps: 10.0 });
    assert_eq!(c.steps.len(), 2);
    assert_eq!(c.steps[0].phases[0].replicas_per_namespace, 3);
    assert_eq!(c.steps[1].measurements[0].method, "Sleep");
    assert_eq!(c.steps[1].measurements[0].params["duration"], "1s");
}

#[test]
fn unknown_keys_fail_under_strict_with_file_and_line() {
    let cfg = good(CREATE).replace("    replicasPerNamespace: 3", "    replicasPerNamespac: 3");
    let d = Dir::new(&[("config.yaml", &cfg), ("pod.yaml", POD)]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert_eq!(e.line, Some(14), "{e}");
    assert!(
        e.to_string()
            .contains("config.yaml:14: steps[0].phases[0].replicasPerNamespac: unknown field"),
        "{e}"
    );
    let w = compile_in(&d, Validation::Warn).expect("warn goes on");
    assert_eq!(w.warnings.len(), 1);
    assert!(compile_in(&d, Validation::Ignore)
        .unwrap()
        .warnings
        .is_empty());
}

#[test]
fn template_errors_name_the_file() {
    let d = Dir::new(&[
        ("config.yaml", "name: t\n\nx: {{.X | bogus}}\n"),
        ("pod.yaml", POD),
    ]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert!(e.file.ends_with("config.yaml"), "{e}");
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.message.contains("bogus"), "{e}");
}

#[test]
fn yaml_errors_name_the_line() {
    let d = Dir::new(&[
        ("config.yaml", "name: t\nsteps:\n  - a: [\n"),
        ("pod.yaml", POD),
    ]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert!(e.line.is_some(), "{e}");
}

#[test]
fn missing_and_broken_object_templates_are_found_before_running() {
    let d = Dir::new(&[("config.yaml", &good(CREATE))]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert!(e.message.contains("does not exist"), "{e}");
    assert_eq!(e.line, Some(18), "{e}");
    let d = Dir::new(&[
        ("config.yaml", &good(CREATE)),
        (
            "pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{DivideInt 1 0}}\n",
        ),
    ]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert!(e.message.contains("division by zero"), "{e}");
    let d = Dir::new(&[
        ("config.yaml", &good(CREATE)),
        ("pod.yaml", "apiVersion: {{.V}}\nkind: Pod\n"),
    ]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert!(e.message.contains("literal apiVersion"), "{e}");
}

#[test]
fn structural_rules() {
    let cases: Vec<(String, &str)> = vec![
        ("name: t\nsteps: []\n".into(), "at least one step"),
        (good("- name: x\n"), "needs phases or measurements"),
        (
            good(&CREATE.replace("tuningSet: Uniform", "tuningSet: Other")),
            "not declared",
        ),
        (
            good(&CREATE.replace("basename: pod", "basename: Pod_X")),
            "DNS-1123",
        ),
        (
            good(&CREATE.replace("min: 1", "min: 3")),
            "min <= max",
        ),
        (
            good("- name: m\n  measurements:\n  - Identifier: x\n    Method: NetworkPerformanceMetrics\n"),
            "not implemented by kubesim",
        ),
        (
            good("- name: m\n  measurements:\n  - Method: Sleep\n"),
            "exactly one of Identifier and Instances",
        ),
        (
            good(CREATE).replace("qpsLoad:\n    qps: 10", "qpsLoad:\n    qps: 0"),
            "qps must be > 0",
        ),
        (
            good(CREATE).replace("  qpsLoad:\n    qps: 10", "  qpsLoad:\n    qps: 10\n  steppedLoad:\n    burstSize: 1"),
            "exactly 1 tuning set type",
        ),
        (
            format!("{}chaosMonkey:\n  nodeFailure:\n    failureRate: 0.1\n", good(CREATE)),
            "chaosMonkey",
        ),
    ];
    for (cfg, want) in cases {
        let d = Dir::new(&[("config.yaml", &cfg), ("pod.yaml", POD)]);
        let e = compile_in(&d, Validation::Strict).expect_err(want);
        assert!(e.to_string().contains(want), "want {want:?}, got {e}");
    }
}

#[test]
fn a_phase_may_not_change_replicas_and_template_at_once() {
    let second = CREATE
        .replace("name: create", "name: grow")
        .replace("replicasPerNamespace: 3", "replicasPerNamespace: 5")
        .replace("Group: g", "Group: h");
    let d = Dir::new(&[
        ("config.yaml", &good(&format!("{CREATE}{second}"))),
        ("pod.yaml", POD),
    ]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert!(e.message.contains("both the replicas"), "{e}");
    // Scaling alone, changing the template alone, or deleting are fine.
    for other in [
        CREATE.replace("replicasPerNamespace: 3", "replicasPerNamespace: 5"),
        CREATE.replace("Group: g", "Group: h"),
        CREATE
            .replace("replicasPerNamespace: 3", "replicasPerNamespace: 0")
            .replace("Group: g", "Group: h"),
    ] {
        let d = Dir::new(&[
            ("config.yaml", &good(&format!("{CREATE}{other}"))),
            ("pod.yaml", POD),
        ]);
        compile_in(&d, Validation::Strict).expect("allowed");
    }
}

#[test]
fn modules_are_flattened_with_their_params() {
    let module = "steps:\n- name: inner {{.Which}}\n  measurements:\n  - Identifier: S\n    Method: Sleep\n    Params:\n      duration: {{.D}}\n";
    let cfg = good("- module:\n    path: /mod.yaml\n    params:\n      Which: a\n      D: 2s\n- module:\n    path: mod.yaml\n    params:\n      Which: b\n      D: 3s\n");
    let d = Dir::new(&[("config.yaml", &cfg), ("mod.yaml", module)]);
    let c = compile_in(&d, Validation::Strict).unwrap().config;
    let names: Vec<_> = c.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["inner a", "inner b"]);
    assert_eq!(c.steps[1].measurements[0].params["duration"], "3s");
    assert!(c.steps[0].file.ends_with("mod.yaml"));
    // A module that includes itself is a cycle.
    let d = Dir::new(&[
        ("config.yaml", &good("- module:\n    path: loop.yaml\n")),
        ("loop.yaml", "steps:\n- module:\n    path: loop.yaml\n"),
    ]);
    let e = compile_in(&d, Validation::Strict).unwrap_err();
    assert!(e.message.contains("cycle"), "{e}");
}
