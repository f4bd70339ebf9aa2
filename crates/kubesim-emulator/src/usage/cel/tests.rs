use super::*;
use serde_json::json;

/// A host with fixed answers, to test the functions alone.
struct Fixed;

impl Host for Fixed {
    fn now(&self) -> f64 {
        1000.0
    }
    fn rand(&self) -> f64 {
        0.25
    }
    fn usage(
        &self,
        target: &Target,
        resource: Resource,
        container: Option<&str>,
        _depth: u8,
    ) -> Result<f64, String> {
        match (target, resource, container) {
            (Target::Pod { name, .. }, Resource::Cpu, None) if name == "p" => Ok(0.5),
            (Target::Pod { .. }, Resource::Memory, Some("c")) => Ok(1024.0),
            (Target::Node { name }, Resource::Memory, None) if name == "n" => Ok(4096.0),
            _ => Err("unexpected".into()),
        }
    }
    fn cumulative(
        &self,
        _target: &Target,
        _resource: Resource,
        _container: Option<&str>,
        _depth: u8,
    ) -> Result<f64, String> {
        Ok(42.0)
    }
}

fn host() -> Arc<dyn Host> {
    Arc::new(Fixed)
}

fn pod() -> Value {
    json!({"kind": "Pod", "metadata": {"name": "p", "namespace": "d",
        "creationTimestamp": "1970-01-01T00:10:00Z"},
        "spec": {"containers": [{"name": "c"}]},
        "status": {"startTime": "1970-01-01T00:15:00Z"}})
}

fn num(src: &str) -> Result<f64, String> {
    let p = pod();
    let node = json!({"kind": "Node", "metadata": {"name": "n"}});
    let c = json!({"name": "c"});
    let scope = Scope {
        pod: Some(&p),
        node: Some(&node),
        container: Some(&c),
    };
    eval_number(&Expr::compile(src)?, scope, &host(), 0)
}

#[test]
fn quantities_are_numbers() {
    assert_eq!(num(r#"Quantity("100m")"#), Ok(0.1));
    assert_eq!(num(r#"Quantity("1Mi")"#), Ok(1048576.0));
    assert_eq!(num(r#"Quantity("1Mi") * 2.0"#), Ok(2097152.0));
    assert!(num(r#"Quantity("lots")"#)
        .unwrap_err()
        .contains("not a quantity"));
}

#[test]
fn time_and_randomness_come_from_the_host() {
    assert_eq!(num("Now()"), Ok(1000.0));
    assert_eq!(num("Rand()"), Ok(0.25));
    assert_eq!(num(r#"UnixSecond("1970-01-01T00:01:00Z")"#), Ok(60.0));
    // status.startTime wins over the creation time.
    assert_eq!(num("SinceSecond(pod)"), Ok(100.0));
    assert_eq!(num("pod.SinceSecond()"), Ok(100.0));
}

#[test]
fn usage_in_call_and_receiver_style() {
    assert_eq!(num(r#"Usage(pod, "cpu")"#), Ok(0.5));
    assert_eq!(num(r#"pod.Usage("cpu")"#), Ok(0.5));
    assert_eq!(num(r#"pod.Usage("memory", container.name)"#), Ok(1024.0));
    assert_eq!(num(r#"node.Usage("memory")"#), Ok(4096.0));
    assert_eq!(num(r#"node.CumulativeUsage("cpu")"#), Ok(42.0));
    assert_eq!(num(r#"CumulativeUsage(pod, "cpu", "c")"#), Ok(42.0));
}

#[test]
fn the_annotation_fixture_expression() {
    let src = r#""kwok.x-k8s.io/usage-cpu" in pod.metadata.annotations
          ? Quantity(pod.metadata.annotations["kwok.x-k8s.io/usage-cpu"])
          : Quantity("1m")"#;
    let expr = Expr::compile(src).unwrap();
    // No annotations at all: kwok's typed objects read them as empty.
    let bare = json!({"metadata": {"name": "p"}});
    let scope = Scope {
        pod: Some(&bare),
        ..Scope::default()
    };
    assert_eq!(eval_number(&expr, scope, &host(), 0), Ok(0.001));
    let annotated =
        json!({"metadata": {"name": "p", "annotations": {"kwok.x-k8s.io/usage-cpu": "250m"}}});
    let scope = Scope {
        pod: Some(&annotated),
        ..Scope::default()
    };
    assert_eq!(eval_number(&expr, scope, &host(), 0), Ok(0.25));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    assert!(Expr::compile("pod.Usage(")
        .unwrap_err()
        .contains("cannot parse CEL"));
    assert!(num(r#"Usage(pod, "disk")"#)
        .unwrap_err()
        .contains("unknown resource"));
    assert!(num(r#"Usage(pod)"#).unwrap_err().contains("operands"));
    assert!(num(r#"Usage("x", "cpu")"#).is_err());
    assert!(num("pod.nothing.here").is_err());
    assert!(num(r#""text""#).unwrap_err().contains("not a quantity"));
    assert!(num("[1, 2]").unwrap_err().contains("not a number"));
    // Without a node the variable is null, and asking it for usage fails.
    let p = pod();
    let scope = Scope {
        pod: Some(&p),
        ..Scope::default()
    };
    let e = Expr::compile(r#"node.Usage("cpu")"#).unwrap();
    assert!(eval_number(&e, scope, &host(), 0).is_err());
}

#[test]
fn nesting_is_bounded() {
    let e = Expr::compile(r#"Usage(pod, "cpu")"#).unwrap();
    let p = pod();
    let scope = Scope {
        pod: Some(&p),
        ..Scope::default()
    };
    assert!(eval_number(&e, scope, &host(), MAX_DEPTH)
        .unwrap_err()
        .contains("deep"));
}

#[test]
fn labels_are_strings() {
    let p = pod();
    let c = json!({"name": "c"});
    let scope = Scope {
        pod: Some(&p),
        container: Some(&c),
        ..Scope::default()
    };
    let e = Expr::compile("container.name").unwrap();
    assert_eq!(eval_string(&e, scope, &host(), 0), Ok("c".to_string()));
    let e = Expr::compile("pod.metadata.namespace").unwrap();
    assert_eq!(eval_string(&e, scope, &host(), 0), Ok("d".to_string()));
}

proptest::proptest! {
    /// Whatever a user writes, compiling and evaluating returns (an
    /// error at worst) rather than panicking.
    #[test]
    fn any_text_is_refused_or_evaluated(src in "[ -~]{0,40}") {
        if let Ok(e) = Expr::compile(&src) {
            let p = pod();
            let scope = Scope { pod: Some(&p), ..Scope::default() };
            let _ = eval_number(&e, scope, &host(), 0);
            let _ = eval_string(&e, scope, &host(), 0);
        }
    }

    /// Expressions built from kwok's functions and odd operands.
    #[test]
    fn kwok_calls_with_any_operands(
        f in proptest::sample::select(vec!["Quantity", "Usage", "CumulativeUsage", "SinceSecond", "UnixSecond", "Now", "Rand"]),
        args in proptest::collection::vec(proptest::sample::select(vec!["pod", "node", "container", "\"cpu\"", "\"1Mi\"", "1", "null", "[]", "{}"]), 0..4),
        receiver in proptest::bool::ANY,
    ) {
        let src = match (receiver, args.split_first()) {
            (true, Some((first, rest))) => format!("{first}.{f}({})", rest.join(", ")),
            _ => format!("{f}({})", args.join(", ")),
        };
        let e = Expr::compile(&src).unwrap();
        let p = pod();
        let c = json!({"name": "c"});
        let scope = Scope { pod: Some(&p), container: Some(&c), ..Scope::default() };
        let _ = eval_number(&e, scope, &host(), 0);
    }
}
