//! Whole templates, with outputs worked out from Go's rules.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn render(src: &str, data: Value) -> String {
    Template::parse(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .render(&data, &NoFuncs)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
}

#[test]
fn fields_variables_and_pipelines() {
    let d = json!({"a": {"b": "x"}, "n": 3, "l": ["p", "q"]});
    assert_eq!(
        render(
            "{{ .a.b }}-{{ .missing }}-{{ .a.missing.deeper }}",
            d.clone()
        ),
        "x-<no value>-<no value>"
    );
    assert_eq!(
        render("{{ $x := .n }}{{ $x }}{{ $x = 5 }}{{ $x }}", d.clone()),
        "35"
    );
    assert_eq!(render("{{ .a.b | printf \"%s!\" }}", d.clone()), "x!");
    assert_eq!(
        render("{{ (index .l 1) }} {{ (.a).b }} {{ $.n }}", d.clone()),
        "q x 3"
    );
    assert_eq!(
        render("{{ len .l | printf \"%d items\" }}", d.clone()),
        "2 items"
    );
    // Assignment reaches the variable declared outside the range.
    assert_eq!(
        render("{{ $seen := false }}{{ range .l }}{{ if eq . \"q\" }}{{ $seen = true }}{{ end }}{{ end }}{{ $seen }}", d.clone()),
        "true"
    );
    // A declaration inside a block ends with it.
    assert!(
        Template::parse("{{ if true }}{{ $y := 1 }}{{ end }}{{ $y }}")
            .unwrap()
            .render(&d, &NoFuncs)
            .unwrap_err()
            .0
            .contains("undefined variable")
    );
}

#[test]
fn control_structures() {
    let d = json!({"l": [1, 2, 3], "m": {"b": 2, "a": 1}, "e": [], "t": true, "s": ""});
    assert_eq!(render("{{ if .t }}y{{ else }}n{{ end }}", d.clone()), "y");
    assert_eq!(
        render(
            "{{ if .s }}1{{ else if .t }}2{{ else }}3{{ end }}",
            d.clone()
        ),
        "2"
    );
    assert_eq!(
        render("{{ with .m.a }}{{ . }}{{ else }}none{{ end }}", d.clone()),
        "1"
    );
    assert_eq!(
        render(
            "{{ with .s }}{{ . }}{{ else with .m.b }}b={{ . }}{{ end }}",
            d.clone()
        ),
        "b=2"
    );
    assert_eq!(
        render(
            "{{ range $i, $v := .l }}{{ $i }}:{{ $v }} {{ end }}",
            d.clone()
        ),
        "0:1 1:2 2:3 "
    );
    assert_eq!(
        render(
            "{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}",
            d.clone()
        ),
        "a=1;b=2;"
    );
    assert_eq!(
        render("{{ range .e }}x{{ else }}empty{{ end }}", d.clone()),
        "empty"
    );
    assert_eq!(render("{{ range .l }}{{ if eq . 2 }}{{ continue }}{{ end }}{{ if eq . 3 }}{{ break }}{{ end }}{{ . }}{{ end }}", d.clone()), "1");
    assert_eq!(render("{{ range 3 }}{{ . }}{{ end }}", d.clone()), "012");
    assert_eq!(
        render(
            "{{ define \"t\" }}<{{ . }}>{{ end }}{{ template \"t\" .m.a }}",
            d.clone()
        ),
        "<1>"
    );
}

#[test]
fn trimming_whitespace() {
    let d = json!({"l": ["a", "b"]});
    assert_eq!(
        render("x:\n{{- range .l }}\n- {{ . }}\n{{- end }}\n", d),
        "x:\n- a\n- b\n"
    );
}

#[test]
fn and_or_return_operands() {
    let d = json!({"a": "", "b": "B", "n": null});
    assert_eq!(
        render(
            "{{ or .a .b }}|{{ and .b .a }}|{{ or .n \"d\" }}|{{ and .b 1 }}",
            d
        ),
        "B||d|1"
    );
}

#[test]
fn errors_are_reported_not_panicked() {
    let t = |s: &str| Template::parse(s).and_then(|t| t.render(&json!({"l": [1]}), &NoFuncs));
    assert!(t("{{ nope 1 }}")
        .unwrap_err()
        .0
        .contains("\"nope\" not defined"));
    assert!(t("{{ index .l 5 }}")
        .unwrap_err()
        .0
        .contains("out of range"));
    assert!(t("{{ .l 1 }}").unwrap_err().0.contains("non-function"));
    assert!(t("{{ template \"x\" }}").is_err());
    assert!(t("{{ range 1.5 }}{{ end }}").is_err());
    assert!(t("{{ define \"r\" }}{{ template \"r\" }}{{ end }}{{ template \"r\" }}").is_err());
}

struct Caller;

impl Funcs for Caller {
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        match name {
            "Twice" => Some(Ok(json!(
                args.first().and_then(Value::as_i64).unwrap_or(0) * 2
            ))),
            // Overrides the built-in.
            "len" => Some(Ok(json!(42))),
            _ => None,
        }
    }
}

#[test]
fn caller_functions_come_first() {
    let t = Template::parse("{{ Twice 4 }} {{ len .x }} {{ .n | Twice }}").unwrap();
    assert_eq!(
        t.render(&json!({"x": [], "n": 5}), &Caller).unwrap(),
        "8 42 10"
    );
}

proptest! {
    #[test]
    fn arbitrary_templates_never_panic(src in "[ -~\\n]{0,80}") {
        if let Ok(t) = Template::parse(&src) {
            let _ = t.render(&json!({"a": [1, {"b": "c"}], "s": "x"}), &NoFuncs);
        }
    }

    #[test]
    fn arbitrary_actions_never_panic(body in "[a-z$.|()\"0-9 :=,\\-]{0,40}") {
        let src = format!("{{{{ {body} }}}}{{{{ if .a }}}}{{{{ {body} }}}}{{{{ end }}}}");
        if let Ok(t) = Template::parse(&src) {
            let _ = t.render(&json!({"a": [1, 2], "b": {"c": 1}}), &NoFuncs);
        }
    }
}

/// Data whose fields templates below read, borrowed or through functions.
fn rich_data() -> Value {
    json!({"a": [1, {"b": "c", "l": [true, null]}], "s": "x", "n": 3,
           "m": {"z": [1, 2], "y": {"k": "v"}, "e": ""},
           "spec": {"containers": [{"name": "c1", "image": "i1"}, {"name": "c2", "image": "i2"}]}})
}

/// The borrowing evaluator renders what the copying one did, errors
/// included.
fn as_before(src: &str, data: &Value) {
    let Ok(t) = Template::parse(src) else {
        return;
    };
    let now = t.render(data, &Caller).map_err(|e| e.0);
    let before = t.render_before(data, &Caller).map_err(|e| e.0);
    assert_eq!(now, before, "{src}");
}

#[test]
fn borrowing_renders_as_copying_did() {
    let d = rich_data();
    for src in [
        "{{ range .spec.containers }}- {{ .name }} {{ .image | printf \"%q\" }}\n{{ end }}",
        "{{ range $i, $c := .spec.containers }}{{ $i }}{{ $c.name }}{{ $.s }}{{ end }}",
        "{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}",
        "{{ range $k, $v := (dict \"b\" 1 \"a\" .m.y) }}{{ $k }}={{ $v }};{{ end }}",
        "{{ range (list .a .m) }}{{ . }}|{{ end }}",
        "{{ with .m.y }}{{ .k }}{{ $x := . }}{{ $x.k }}{{ end }}",
        "{{ with (index .a 1) }}{{ .b }}{{ .l }}{{ end }}",
        "{{ (index .a 1).b }} {{ (index .a 1).l }} {{ (index .a 1).missing.deeper }}",
        "{{ (dict \"q\" (dict \"r\" 5)).q.r }}",
        "{{ $v := .m.z }}{{ range .a }}{{ $v = . }}{{ end }}{{ $v }}",
        "{{ or .m.e .s }} {{ and .s .m.y }} {{ or .none .m.e }}",
        "{{ define \"t\" }}<{{ .k }}{{ $.k }}>{{ end }}{{ template \"t\" .m.y }}{{ template \"t\" (dict \"k\" 1) }}",
        "{{ range .s }}{{ end }}",
        "{{ range .n }}{{ . }}{{ end }}{{ range .none }}x{{ else }}e{{ end }}",
        "{{ len .spec.containers }} {{ Twice .n }} {{ .n | Twice | Twice }}",
        "{{ .spec.containers.name }} {{ .s.x }} {{ $.a }}",
        "{{ if .m.z }}{{ range $i, $x := .m.z }}{{ if eq $x 2 }}{{ break }}{{ end }}{{ $i }}{{ end }}{{ end }}",
    ] {
        as_before(src, &d);
    }
}

/// The built-in Stage templates over a pod and a node.
#[test]
fn stage_templates_render_as_before() {
    let pod = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u",
            "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"nodeName": "n", "containers": [
            {"name": "c", "image": "busybox:1", "resources": {"requests": {"cpu": "1"}}},
            {"name": "d", "image": "busybox:2"}],
            "initContainers": [{"name": "i", "image": "x", "restartPolicy": "Always"},
                               {"name": "j", "image": "y"}],
            "readinessGates": [{"conditionType": "g"}]},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:01Z",
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "allocatable": {"cpu": "16"}, "nodeInfo": {"architecture": "arm64"}}});
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../kubesim-emulator/stages");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let stage: Value = serde_saphyr::from_str(&text).unwrap();
        for step in stage["spec"]["steps"].as_array().unwrap() {
            if let Some(src) = step.pointer("/patch/template").and_then(Value::as_str) {
                as_before(src, &pod);
                seen += 1;
            }
        }
    }
    assert!(seen >= 4, "{seen} templates");
}

proptest! {
    #[test]
    fn random_actions_render_as_before(
        body in "[a-z$.|()\"0-9 :=,]{0,30}",
        wrap in 0usize..4,
    ) {
        let src = match wrap {
            0 => format!("{{{{ {body} }}}}"),
            1 => format!("{{{{ range $i, $v := .a }}}}{{{{ {body} }}}}{{{{ end }}}}"),
            2 => format!("{{{{ with .m }}}}{{{{ {body} }}}}{{{{ end }}}}"),
            _ => format!("{{{{ $x := .m.y }}}}{{{{ range .spec.containers }}}}{{{{ {body} }}}}{{{{ end }}}}"),
        };
        as_before(&src, &rich_data());
    }
}
