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
