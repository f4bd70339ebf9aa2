use super::*;
use serde_json::json;

fn r() -> Renderer {
    Renderer::new(Rng::seeded(7), Path::new("."))
}

fn render(src: &str, mapping: Value) -> Result<String, String> {
    r().render_str(src, &mapping)
}

fn ok(src: &str) -> String {
    render(src, json!({})).expect(src)
}

#[test]
fn default_param_takes_the_default_only_for_missing_values() {
    assert_eq!(ok("{{DefaultParam .X 5}}"), "5");
    assert_eq!(
        render("{{DefaultParam .X 5}}", json!({"X": 0})).unwrap(),
        "0"
    );
    assert_eq!(
        render("{{DefaultParam .CL2_A \"s\"}}", json!({"CL2_A": "v"})).unwrap(),
        "v"
    );
}

#[test]
fn integer_arithmetic_truncates_as_go_int() {
    assert_eq!(ok("{{AddInt 1 2 3}}"), "6");
    assert_eq!(ok("{{SubtractInt 10 \"3\"}}"), "7");
    assert_eq!(ok("{{MultiplyInt 2 2.6}}"), "5");
    assert_eq!(ok("{{DivideInt 7 2}}"), "3");
    assert_eq!(ok("{{DivideInt -7 2}}"), "-3");
    assert_eq!(ok("{{Mod 7 3}}"), "1");
    assert_eq!(ok("{{MaxInt 3 9 4}}"), "9");
    assert_eq!(ok("{{MinInt 3 9 4}}"), "3");
    assert!(render("{{DivideInt 1 0}}", json!({})).is_err());
    assert!(render("{{Mod 1 0}}", json!({})).is_err());
    assert!(render("{{AddInt 1 \"x\"}}", json!({})).is_err());
    assert!(render("{{AddInt 1 .Missing}}", json!({})).is_err());
}

#[test]
fn float_arithmetic() {
    assert_eq!(ok("{{AddFloat 1.5 2}}"), "3.5");
    assert_eq!(ok("{{SubtractFloat 1 0.25}}"), "0.75");
    assert_eq!(ok("{{MultiplyFloat 0.5 3}}"), "1.5");
    assert_eq!(ok("{{DivideFloat 1 4}}"), "0.25");
    assert_eq!(ok("{{MaxFloat 0.5 0.25}}"), "0.5");
    assert_eq!(ok("{{MinFloat 0.5 0.25}}"), "0.25");
    assert_eq!(ok("{{Ceil 2.1}}"), "3");
}

#[test]
fn random_values_stay_in_range_and_repeat_with_the_seed() {
    for _ in 0..50 {
        let v: i64 = ok("{{RandInt 3}}").parse().unwrap();
        assert!((0..=3).contains(&v));
        let w: i64 = ok("{{RandIntRange 5 7}}").parse().unwrap();
        assert!((5..=7).contains(&w));
    }
    assert_eq!(ok("{{RandIntRange 9 2}}"), "9");
    let d = ok("{{RandData 12}}");
    assert_eq!(d.len(), 12);
    assert!(d.chars().all(|c| c.is_ascii_alphanumeric()));
    assert_eq!(ok("{{RandData 12}}"), d, "one seed, one sequence");
    assert_eq!(
        ok("{{RandDataWithSeed 8 \"abc\"}}"),
        ok("{{RandDataWithSeed 8 \"abc\"}}")
    );
    assert_ne!(
        ok("{{RandDataWithSeed 8 \"abc\"}}"),
        ok("{{RandDataWithSeed 8 \"abd\"}}")
    );
}

#[test]
fn control_and_list_functions() {
    assert_eq!(ok("{{IfThenElse true 1 2}}"), "1");
    assert_eq!(ok("{{IfThenElse false 1 2}}"), "2");
    assert!(render("{{IfThenElse 1 1 2}}", json!({})).is_err());
    assert_eq!(ok("{{range Loop 3}}[{{.}}]{{end}}"), "[0][1][2]");
    assert_eq!(ok("{{range $i, $_ := Seq 2}}{{$i}}{{end}}"), "01");
    assert_eq!(ok("{{len (SliceOfZeros 4)}}"), "4");
    assert_eq!(ok("{{range StringSplit \"a,b\"}}<{{.}}>{{end}}"), "<a><b>");
    assert_eq!(ok("{{Concat \"a\" \"b\" \"c\"}}"), "abc");
    assert_eq!(ok("{{Lowercase \"AbC\"}}"), "abc");
}

#[test]
fn yaml_quote_keeps_structure() {
    assert_eq!(ok("{{YamlQuote \"a: b\" 0}}"), "\"a: b\"");
    assert_eq!(yaml_quote("x\ny", 1), "|-\n    x\n    y");
    let doc = format!("key: {}\n", yaml_quote("line1\nline2: v", 0));
    let v: Value = serde_saphyr::from_str(&doc).unwrap();
    assert_eq!(v["key"], "line1\nline2: v");
}

#[test]
fn include_file_reads_relative_to_the_base_dir() {
    let dir = std::env::temp_dir().join(format!("kubesim-load-inc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("part.txt"), "hello").unwrap();
    let rr = Renderer::new(Rng::seeded(1), &dir);
    let m = json!({});
    assert_eq!(
        rr.render_str("{{IncludeFile \"part.txt\"}}", &m).unwrap(),
        "hello"
    );
    let err = rr
        .render_str("{{IncludeEmbedFile \"nope.txt\"}}", &m)
        .unwrap_err();
    assert!(err.contains("nope.txt"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mapping_merges_overrides_nodes_and_env() {
    let dir = std::env::temp_dir().join(format!("kubesim-load-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("a.yaml");
    let b = dir.join("b.yaml");
    std::fs::write(&a, "X: 1\nCL2_Q: 5\n").unwrap();
    std::fs::write(&b, "X: 2\n").unwrap();
    let env = vec![
        ("CL2_Q".to_string(), "5".to_string()),
        ("CL2_F".to_string(), "0.5".to_string()),
        ("CL2_B".to_string(), "true".to_string()),
        ("CL2_S".to_string(), "abc".to_string()),
        ("HOME".to_string(), "/x".to_string()),
    ];
    let m = build_mapping(&[&a, &b], env, 100).unwrap();
    assert_eq!(m["X"], 2);
    assert_eq!(m["Nodes"], 100);
    assert_eq!(m["ImageRegistry"], "registry.k8s.io");
    assert_eq!(m["CL2_Q"], 5);
    assert_eq!(m["CL2_F"], 0.5);
    assert_eq!(m["CL2_B"], true);
    assert_eq!(m["CL2_S"], "abc");
    assert!(!m.contains_key("HOME"));
    let conflict = build_mapping(&[&a], vec![("CL2_Q".into(), "6".into())], 1).unwrap_err();
    assert!(conflict.0.contains("merge conflict"), "{conflict}");
    std::fs::remove_dir_all(&dir).ok();
}
