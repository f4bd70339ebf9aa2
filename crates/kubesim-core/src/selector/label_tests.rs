use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn sel(s: &str) -> LabelSelector {
    match LabelSelector::parse(s) {
        Ok(sel) => sel,
        Err(e) => panic!("{s:?} should parse: {e}"),
    }
}

fn err(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(sel) => panic!("{s:?} should fail, got {sel:?}"),
        Err(e) => {
            assert_eq!(e.code, 400);
            assert_eq!(e.reason, "BadRequest");
            e.message
        }
    }
}

#[test]
fn empty_selects_everything() {
    for s in ["", "   ", "\t\n"] {
        let s = sel(s);
        assert!(s.is_empty());
        assert!(s.matches_map(&labels(&[])));
        assert_eq!(s.to_string(), "");
    }
    assert!(LabelSelector::everything().matches_map(&labels(&[("a", "b")])));
}

#[test]
fn equality_forms() {
    let l = labels(&[("app", "web"), ("tier", "front")]);
    assert!(sel("app=web").matches_map(&l));
    assert!(sel("app==web").matches_map(&l));
    assert!(!sel("app=db").matches_map(&l));
    assert!(!sel("missing=web").matches_map(&l));
    assert!(sel("app!=db").matches_map(&l));
    assert!(!sel("app!=web").matches_map(&l));
    assert!(sel("missing!=x").matches_map(&l));
    assert!(sel("app=web,tier=front").matches_map(&l));
    assert!(!sel("app=web,tier=back").matches_map(&l));
}

#[test]
fn empty_exact_value() {
    let s = sel("a=");
    assert_eq!(s.requirements()[0].values(), [""]);
    assert!(s.matches_map(&labels(&[("a", "")])));
    assert!(!s.matches_map(&labels(&[])));
    assert_eq!(sel("a=,b").to_string(), "a=,b");
    assert!(sel("a!=").matches_map(&labels(&[])));
}

#[test]
fn set_forms() {
    let l = labels(&[("env", "prod")]);
    assert!(sel("env in (prod,dev)").matches_map(&l));
    assert!(!sel("env in (qa,dev)").matches_map(&l));
    assert!(!sel("x in (prod)").matches_map(&l));
    assert!(sel("env notin (qa)").matches_map(&l));
    assert!(!sel("env notin (prod, qa)").matches_map(&l));
    assert!(sel("x notin (prod)").matches_map(&l));
    // Keywords are plain words where a key or value is expected.
    let kw = labels(&[("in", "notin")]);
    assert!(sel("in in (notin)").matches_map(&kw));
    assert!(sel("in=notin").matches_map(&kw));
    assert!(sel("in").matches_map(&kw));
}

#[test]
fn set_edge_cases() {
    assert_eq!(sel("a in ()").requirements()[0].values(), [""]);
    assert_eq!(sel("a in (,)").requirements()[0].values(), [""]);
    assert_eq!(sel("a in (,b)").requirements()[0].values(), ["", "b"]);
    assert_eq!(sel("a in (b,)").requirements()[0].values(), ["", "b"]);
    assert_eq!(
        sel("a in (b,,c)").requirements()[0].values(),
        ["", "b", "c"]
    );
    assert_eq!(sel("a in (c,b,c)").requirements()[0].values(), ["b", "c"]);
    assert_eq!(sel("a in (c,b,c)").to_string(), "a in (b,c)");
    assert_eq!(sel("a in (,b)").to_string(), "a in (,b)");
}

#[test]
fn existence() {
    let l = labels(&[("a", "1")]);
    assert!(sel("a").matches_map(&l));
    assert!(!sel("b").matches_map(&l));
    assert!(sel("!b").matches_map(&l));
    assert!(!sel("!a").matches_map(&l));
    assert!(sel(" ! b ").matches_map(&l));
    assert_eq!(sel("!b,a").to_string(), "a,!b");
}

#[test]
fn numeric() {
    let l = labels(&[("n", "7"), ("s", "x"), ("neg", "-3")]);
    assert!(sel("n>5").matches_map(&l));
    assert!(!sel("n>7").matches_map(&l));
    assert!(sel("n<8").matches_map(&l));
    assert!(!sel("n<7").matches_map(&l));
    assert!(!sel("s>1").matches_map(&l));
    assert!(!sel("missing<1").matches_map(&l));
    assert!(sel("neg<0").matches_map(&l));
    assert_eq!(sel("n > 5").to_string(), "n>5");
}

#[test]
fn whitespace_tolerant() {
    let a = sel("  app = web ,\ttier in ( a , b )\n, !x ,  y  ");
    assert_eq!(a.to_string(), "app=web,tier in (a,b),!x,y");
}

#[test]
fn canonical_string_sorts_by_key() {
    let s = sel("z=1,a in (b,a),m!=2,c notin (x),!d,e,f>3,g<4,h==5");
    assert_eq!(
        s.to_string(),
        "a in (a,b),c notin (x),!d,e,f>3,g<4,h==5,m!=2,z=1"
    );
    let keys: Vec<&str> = s.requirements().iter().map(|r| r.key()).collect();
    assert_eq!(keys, ["a", "c", "d", "e", "f", "g", "h", "m", "z"]);
}

#[test]
fn prefixed_keys() {
    let l = labels(&[("app.kubernetes.io/name", "web")]);
    assert!(sel("app.kubernetes.io/name=web").matches_map(&l));
    assert!(sel("app.kubernetes.io/name").matches_map(&l));
}

#[test]
fn syntax_errors() {
    assert_eq!(
        err("(a)"),
        "found '(', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
    assert_eq!(err("a=b,"), "found '', expected: identifier after ','");
    assert_eq!(err("a=b,,c"), "found ',', expected: identifier after ','");
    assert_eq!(
        err(",a"),
        "found ',', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        err("!"),
        "unable to parse requirement: found '', expected: identifier"
    );
    assert_eq!(
        err("!=a"),
        "found '!=', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        err("! =a"),
        "unable to parse requirement: found '=', expected: identifier"
    );
    assert_eq!(
        err("a b"),
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    );
    assert_eq!(
        err("a in b"),
        "unable to parse requirement: found 'b' expected: '('"
    );
    assert_eq!(
        err("a in (b"),
        "unable to parse requirement: found '', expected: ',' or ')'"
    );
    assert_eq!(
        err("a in (b c)"),
        "unable to parse requirement: found 'c', expected: ',' or ')'"
    );
    assert_eq!(
        err("a in (="),
        "unable to parse requirement: found '=', expected: ',', ')' or identifier"
    );
    assert_eq!(
        err("a in (,="),
        "unable to parse requirement: found '=', expected: ',', or identifier"
    );
    assert_eq!(
        err("a=(b)"),
        "unable to parse requirement: found '(', expected: identifier"
    );
    assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
    assert_eq!(err("a=b=c"), "found '=', expected: ',' or 'end of string'");
}

#[test]
fn invalid_keys() {
    let m = err("a$b=c");
    assert!(
        m.starts_with("unable to parse requirement: <nil>: Invalid value: \"a$b\": name part must consist of alphanumeric characters"),
        "{m}"
    );
    assert!(
        m.ends_with("regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        "{m}"
    );
    let m = err("a/b/c");
    assert!(
        m.contains("\"a/b/c\": a qualified name must consist"),
        "{m}"
    );
    let m = err("Upper.io/x");
    assert!(
        m.contains("prefix part a lowercase RFC 1123 subdomain"),
        "{m}"
    );
    let m = err(&"k".repeat(64));
    assert!(
        m.contains("name part must be no more than 63 characters"),
        "{m}"
    );
    let m = err("x/");
    assert!(m.contains("name part must be non-empty"), "{m}");
    let m = err("/x");
    assert!(m.contains("prefix part must be non-empty"), "{m}");
}

#[test]
fn invalid_values() {
    let m = err("a=-b");
    assert_eq!(
        m,
        "unable to parse requirement: values[0][a]: Invalid value: \"-b\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    );
    let m = err(&format!("a={}", "v".repeat(64)));
    assert!(m.contains("must be no more than 63 characters"), "{m}");
    let m = err("a in (ok,b$)");
    assert!(m.contains("values[1][a]: Invalid value: \"b$\""), "{m}");
}

#[test]
fn numeric_value_errors() {
    assert_eq!(
        err("a>b"),
        "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
    // Negative bounds fail label value syntax, as upstream.
    let m = err("a<-1");
    assert!(m.contains("values[0][a]: Invalid value: \"-1\""), "{m}");
    let m = err("a>");
    assert!(
        m.contains("values[0]: Invalid value: \"\": for 'Gt', 'Lt'"),
        "{m}"
    );
}

#[test]
fn nul_ends_input() {
    assert_eq!(sel("a=b\0junk((").to_string(), "a=b");
}

#[test]
fn exact_lookup() {
    let s = sel("a=1,b in (2),c in (3,4),d!=5");
    assert_eq!(s.exact("a"), Some("1"));
    assert_eq!(s.exact("b"), Some("2"));
    assert_eq!(s.exact("c"), None);
    assert_eq!(s.exact("d"), None);
}

#[test]
fn requirement_constructor_checks() {
    assert!(LabelRequirement::new("a", LabelOp::In, vec![]).is_err());
    assert!(LabelRequirement::new("a", LabelOp::Equals, vec![]).is_err());
    assert!(LabelRequirement::new("a", LabelOp::Exists, vec!["x".into()]).is_err());
    assert!(
        LabelRequirement::new("a", LabelOp::GreaterThan, vec!["1".into(), "2".into()]).is_err()
    );
    let e = LabelRequirement::new("a$", LabelOp::In, vec![]).unwrap_err();
    assert!(
        e.message.starts_with("[key: Invalid value: \"a$\""),
        "{}",
        e.message
    );
    assert!(e.message.contains(", values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty]"), "{}", e.message);
}

#[test]
fn from_json_forms() {
    assert!(LabelSelector::from_json(&json!(null)).unwrap().is_empty());
    assert!(LabelSelector::from_json(&json!({})).unwrap().is_empty());
    assert!(
        LabelSelector::from_json(&json!({"matchLabels": {}, "matchExpressions": []}))
            .unwrap()
            .is_empty()
    );
    let s = LabelSelector::from_json(&json!({
        "matchLabels": {"app": "web", "a": "b"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "dev"]},
            {"key": "tier", "operator": "NotIn", "values": ["db"]},
            {"key": "x", "operator": "Exists"},
            {"key": "y", "operator": "DoesNotExist", "values": []},
        ]
    }))
    .unwrap();
    assert_eq!(
        s.to_string(),
        "a=b,app=web,env in (dev,prod),tier notin (db),x,!y"
    );
    let l = labels(&[("a", "b"), ("app", "web"), ("env", "dev"), ("x", "")]);
    assert!(s.matches_map(&l));
    assert_eq!(LabelSelector::parse(&s.to_string()).unwrap(), s);
}

#[test]
fn from_json_errors() {
    let bad = [
        json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
        json!({"matchExpressions": [{"key": "a", "operator": "In"}]}),
        json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
        json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
        json!({"matchExpressions": [{"key": "a$", "operator": "Exists"}]}),
        json!({"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]}),
        json!({"matchExpressions": {}}),
        json!({"matchLabels": {"a": "-x"}}),
        json!({"matchLabels": {"a": 1}}),
        json!({"matchLabels": []}),
        json!("a=b"),
    ];
    for b in bad {
        let e = LabelSelector::from_json(&b).unwrap_err();
        assert_eq!(e.code, 400, "{b}");
    }
    let e = LabelSelector::from_json(
        &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
    )
    .unwrap_err();
    assert_eq!(e.message, "\"Gt\" is not a valid label selector operator");
}

#[test]
fn from_map() {
    let s = LabelSelector::from_map(&labels(&[("b", "2"), ("a", "1")])).unwrap();
    assert_eq!(s.to_string(), "a=1,b=2");
}

// Generators for the property tests: keys and values drawn from the valid
// alphabet, including the keywords that need context to parse.
fn name_part() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,8}[a-zA-Z0-9])?",
        Just("in".to_string()),
        Just("notin".to_string()),
    ]
}

fn key() -> impl Strategy<Value = String> {
    (
        proptest::option::of("[a-z0-9]([-a-z0-9]{0,5}[a-z0-9])?(\\.[a-z0-9]{1,4}){0,2}"),
        name_part(),
    )
        .prop_map(|(p, n)| match p {
            Some(p) => format!("{p}/{n}"),
            None => n,
        })
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), name_part(), "[0-9]{1,5}"]
}

fn requirement() -> impl Strategy<Value = LabelRequirement> {
    let op = prop_oneof![
        Just(LabelOp::In),
        Just(LabelOp::NotIn),
        Just(LabelOp::Equals),
        Just(LabelOp::DoubleEquals),
        Just(LabelOp::NotEquals),
        Just(LabelOp::Exists),
        Just(LabelOp::DoesNotExist),
        Just(LabelOp::GreaterThan),
        Just(LabelOp::LessThan),
    ];
    (
        key(),
        op,
        proptest::collection::vec(value(), 1..4),
        0u32..1000,
    )
        .prop_map(|(k, op, vs, n)| {
            let values = match op {
                LabelOp::In | LabelOp::NotIn => vs,
                LabelOp::Exists | LabelOp::DoesNotExist => vec![],
                LabelOp::GreaterThan | LabelOp::LessThan => vec![n.to_string()],
                _ => vec![vs[0].clone()],
            };
            match LabelRequirement::new(&k, op, values) {
                Ok(r) => r,
                Err(e) => panic!("generator made an invalid requirement: {e}"),
            }
        })
}

fn label_set() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(
        prop_oneof![key(), Just("in".to_string()), Just("a".to_string())],
        value(),
        0..5,
    )
}

proptest! {
    #[test]
    fn parse_never_panics(s in "\\PC{0,40}") {
        let _ = LabelSelector::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_selector_alphabet(s in "[a-c !=(),<>0-9inot/.\\-_\t]{0,30}") {
        if let Ok(sel) = LabelSelector::parse(&s) {
            // Whatever parses prints to something that parses back the same.
            prop_assert_eq!(LabelSelector::parse(&sel.to_string()).ok(), Some(sel));
        }
    }

    #[test]
    fn string_form_round_trips(
        reqs in proptest::collection::vec(requirement(), 0..5),
        l in label_set(),
    ) {
        let sel = LabelSelector::from_requirements(reqs);
        let text = sel.to_string();
        let back = match LabelSelector::parse(&text) {
            Ok(b) => b,
            Err(e) => return Err(TestCaseError::fail(format!("{text:?}: {e}"))),
        };
        prop_assert_eq!(&back, &sel);
        prop_assert_eq!(back.to_string(), text);
        prop_assert_eq!(back.matches_map(&l), sel.matches_map(&l));
        prop_assert_eq!(
            sel.matches_map(&l),
            sel.requirements().iter().all(|r| r.matches(&|k| l.get(k).map(String::as_str)))
        );
    }
}
