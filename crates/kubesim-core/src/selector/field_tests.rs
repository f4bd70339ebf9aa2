use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::resource::ResourceInfo;
use crate::Registry;

fn res(group: &str, version: &str, plural: &str) -> Arc<ResourceInfo> {
    match Registry::new().get(group, version, plural) {
        Some(r) => r,
        None => panic!("{group}/{version}/{plural} is registered"),
    }
}

fn sel(s: &str) -> FieldSelector {
    match FieldSelector::parse(s) {
        Ok(s) => s,
        Err(e) => panic!("{s:?} should parse: {e}"),
    }
}

fn err(s: &str) -> String {
    match FieldSelector::parse(s) {
        Ok(sel) => panic!("{s:?} should fail, got {sel:?}"),
        Err(e) => {
            assert_eq!(e.code, 400);
            e.message
        }
    }
}

fn req(field: &str, op: FieldOp, value: &str) -> FieldRequirement {
    FieldRequirement {
        field: field.into(),
        op,
        value: value.into(),
    }
}

#[test]
fn parse_forms() {
    assert!(sel("").is_empty());
    assert!(sel(",").is_empty());
    assert_eq!(
        sel("b!=2,a==1,c=3").requirements,
        vec![
            req("a", FieldOp::Eq, "1"),
            req("b", FieldOp::NotEq, "2"),
            req("c", FieldOp::Eq, "3"),
        ]
    );
    assert_eq!(sel("a=").requirements, vec![req("a", FieldOp::Eq, "")]);
    assert_eq!(sel("a=1,,").requirements.len(), 1);
    // Field names are taken verbatim, spaces and all.
    assert_eq!(
        sel(" a =1").requirements,
        vec![req(" a ", FieldOp::Eq, "1")]
    );
    assert_eq!(sel("=x").requirements, vec![req("", FieldOp::Eq, "x")]);
}

#[test]
fn escapes() {
    assert_eq!(
        sel(r"a=x\,y\=z\\w").requirements,
        vec![req("a", FieldOp::Eq, r"x,y=z\w")]
    );
    assert_eq!(
        sel(r"a=x\,y,b=2").requirements,
        vec![req("a", FieldOp::Eq, "x,y"), req("b", FieldOp::Eq, "2")]
    );
    assert_eq!(escape_value(r"x,y=z\w"), r"x\,y\=z\\w");
    assert_eq!(sel(r"a=x\,y").to_string(), r"a=x\,y");
}

#[test]
fn parse_errors() {
    assert_eq!(err("x"), "invalid selector: 'x'; can't understand 'x'");
    assert_eq!(
        err("a=1,bogus"),
        "invalid selector: 'a=1,bogus'; can't understand 'bogus'"
    );
    assert_eq!(
        err("a=b=c"),
        "invalid field selector: unescaped character in value: 61"
    );
    assert_eq!(
        err(r"a=b\x"),
        r"invalid field selector: invalid escape sequence: \x"
    );
    assert_eq!(
        err(r"a=b\"),
        r"invalid field selector: invalid escape sequence: \"
    );
    // Escapes only count in values: the first `=` ends the field name.
    assert_eq!(
        sel(r"a\=b").requirements,
        vec![req(r"a\", FieldOp::Eq, "b")]
    );
}

#[test]
fn matching() {
    let fields: BTreeMap<&str, &str> = [("spec.nodeName", "n1"), ("status.phase", "Running")]
        .into_iter()
        .collect();
    let get = |k: &str| fields.get(k).copied();
    assert!(sel("spec.nodeName=n1").matches(&get));
    assert!(sel("spec.nodeName==n1,status.phase!=Failed").matches(&get));
    assert!(!sel("spec.nodeName=n2").matches(&get));
    assert!(!sel("status.phase!=Running").matches(&get));
    // Missing fields read as "".
    assert!(sel("missing=").matches(&get));
    assert!(!sel("missing!=").matches(&get));
    assert!(sel("missing!=x").matches(&get));
    assert!(FieldSelector::default().matches(&get));
}

#[test]
fn exact_lookup() {
    let s = sel("spec.nodeName=n1,status.phase!=Failed");
    assert_eq!(s.exact("spec.nodeName"), Some("n1"));
    assert_eq!(s.exact("status.phase"), None);
}

#[test]
fn supported_fields() {
    let pods = res("", "v1", "pods");
    let cms = res("", "v1", "configmaps");
    assert!(
        sel("metadata.name=a,metadata.namespace=b,spec.nodeName=n,status.podIPs=x")
            .check_supported(&pods)
            .is_ok()
    );
    let e = sel("spec.nodeName=n").check_supported(&cms).unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(e.message, "field label not supported: spec.nodeName");
    let e = sel("metadata.labels=x").check_supported(&pods).unwrap_err();
    assert_eq!(e.message, "field label not supported: metadata.labels");

    let cases: &[(&str, &str, &str, &str)] = &[
        ("", "v1", "events", "involvedObject.uid"),
        ("", "v1", "events", "source"),
        ("events.k8s.io", "v1", "events", "regarding.name"),
        ("events.k8s.io", "v1", "events", "involvedObject.name"),
        ("", "v1", "nodes", "spec.unschedulable"),
        ("", "v1", "namespaces", "status.phase"),
        ("", "v1", "secrets", "type"),
        ("apps", "v1", "replicasets", "status.replicas"),
        ("", "v1", "replicationcontrollers", "status.replicas"),
        ("batch", "v1", "jobs", "status.successful"),
    ];
    for (g, v, p, f) in cases {
        let r = res(g, v, p);
        assert!(
            sel(&format!("{f}=x")).check_supported(&r).is_ok(),
            "{p}: {f}"
        );
        assert!(sel(&format!("{f}=x")).check_supported(&cms).is_err(), "{f}");
    }
    assert!(sel("regarding.name=x")
        .check_supported(&res("", "v1", "events"))
        .is_err());
}

fn values(r: &ResourceInfo, obj: &Value) -> Vec<(&'static str, String)> {
    field_values(r, obj)
        .into_iter()
        .map(|(f, v)| (f, v.into_owned()))
        .collect()
}

fn owned(pairs: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

#[test]
fn pod_values() {
    let pods = res("", "v1", "pods");
    let pod = json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                 "serviceAccountName": "sa", "hostNetwork": true},
        "status": {"phase": "Running", "podIP": "10.0.0.9",
                   "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}], "nominatedNodeName": "n2"}
    });
    assert_eq!(
        values(&pods, &pod),
        owned(&[
            ("metadata.name", "p"),
            ("metadata.namespace", "ns"),
            ("spec.nodeName", "n1"),
            ("spec.restartPolicy", "Always"),
            ("spec.schedulerName", "default-scheduler"),
            ("spec.serviceAccountName", "sa"),
            ("spec.hostNetwork", "true"),
            ("status.phase", "Running"),
            ("status.podIP", "10.0.0.1"),
            ("status.podIPs", "10.0.0.1"),
            ("status.nominatedNodeName", "n2"),
        ])
    );
    let bare = json!({"metadata": {"name": "p"}, "status": {"podIP": "10.1.1.1"}});
    assert_eq!(
        values(&pods, &bare),
        owned(&[
            ("metadata.name", "p"),
            ("metadata.namespace", ""),
            ("spec.nodeName", ""),
            ("spec.restartPolicy", ""),
            ("spec.schedulerName", ""),
            ("spec.serviceAccountName", ""),
            ("spec.hostNetwork", "false"),
            ("status.phase", ""),
            ("status.podIP", "10.1.1.1"),
            ("status.podIPs", "10.1.1.1"),
            ("status.nominatedNodeName", ""),
        ])
    );
    let s = sel("spec.nodeName=n1,status.phase!=Failed,status.phase!=Succeeded");
    assert!(s.matches_object(&pods, &pod));
    assert!(!s.matches_object(&pods, &bare));
    let vals = values(&pods, &pod);
    assert!(s.matches(&|k| vals.iter().find(|(f, _)| *f == k).map(|(_, v)| v.as_str())));
}

#[test]
fn event_values() {
    let core = res("", "v1", "events");
    let ev = json!({
        "metadata": {"name": "e", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p1", "uid": "u1",
                           "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{c}"},
        "reason": "Scheduled", "type": "Normal", "source": {"component": "default-scheduler"},
        "reportingComponent": "sched"
    });
    let indexed = values(&core, &ev);
    // Both APIs select from the one storage: the events.k8s.io names
    // read the slots of the core fields of the same value.
    let v1 = res("events.k8s.io", "v1", "events");
    for r in [&core, &v1] {
        for (a, b) in [
            ("regarding.name", "involvedObject.name"),
            ("regarding.fieldPath", "involvedObject.fieldPath"),
            ("reportingController", "reportingComponent"),
        ] {
            let slot = indexed_slot(r, a);
            assert!(slot.is_some(), "{a}");
            assert_eq!(slot, indexed_slot(r, b), "{a}");
        }
        assert_eq!(indexed_slot(r, "regarding.nothing"), None);
        assert_eq!(indexed_slot(r, "spec.nodeName"), None);
    }
    assert_eq!(values(&v1, &ev), indexed);
    assert_eq!(
        indexed,
        owned(&[
            ("metadata.name", "e"),
            ("metadata.namespace", "default"),
            ("involvedObject.kind", "Pod"),
            ("involvedObject.namespace", "default"),
            ("involvedObject.name", "p1"),
            ("involvedObject.uid", "u1"),
            ("involvedObject.apiVersion", "v1"),
            ("involvedObject.resourceVersion", "7"),
            ("involvedObject.fieldPath", "spec.containers{c}"),
            ("reason", "Scheduled"),
            ("reportingComponent", "sched"),
            ("source", "default-scheduler"),
            ("type", "Normal"),
        ])
    );
    let s = sel("involvedObject.name=p1,involvedObject.namespace=default,involvedObject.uid=u1");
    assert!(s.matches_object(&core, &ev));
    // Without source.component the reporting controller stands in.
    let no_source = json!({"reportingComponent": "kubelet"});
    assert_eq!(
        field_value(&core, &no_source, "source").as_deref(),
        Some("kubelet")
    );

    let v1 = res("events.k8s.io", "v1", "events");
    let ev1 = json!({
        "metadata": {"name": "e", "namespace": "default"},
        "regarding": {"kind": "Node", "name": "n1"},
        "reportingController": "kubelet", "deprecatedSource": {"component": "kubelet-n1"},
        "reason": "Ready", "type": "Normal"
    });
    let vals = values(&v1, &ev1);
    let get = |f: &str| indexed_slot(&v1, f).map(|i| vals[i].1.clone());
    assert_eq!(get("regarding.kind").as_deref(), Some("Node"));
    assert_eq!(get("involvedObject.kind").as_deref(), Some("Node"));
    assert_eq!(get("regarding.namespace").as_deref(), Some(""));
    assert_eq!(get("reportingController").as_deref(), Some("kubelet"));
    assert_eq!(get("reportingComponent").as_deref(), Some("kubelet"));
    assert_eq!(get("source").as_deref(), Some("kubelet-n1"));
    assert!(sel("regarding.name=n1,reason=Ready").matches_object(&v1, &ev1));
    // A core-shaped object served through events.k8s.io still answers.
    assert_eq!(
        field_value(&v1, &ev, "regarding.uid").as_deref(),
        Some("u1")
    );
}

#[test]
fn other_kind_values() {
    let node = res("", "v1", "nodes");
    assert_eq!(
        values(&node, &json!({"metadata": {"name": "n"}})),
        owned(&[
            ("metadata.name", "n"),
            ("metadata.namespace", ""),
            ("spec.unschedulable", "false")
        ])
    );
    assert_eq!(
        field_value(
            &node,
            &json!({"spec": {"unschedulable": true}}),
            "spec.unschedulable"
        )
        .as_deref(),
        Some("true")
    );
    let ns = res("", "v1", "namespaces");
    assert_eq!(
        field_value(
            &ns,
            &json!({"status": {"phase": "Terminating"}}),
            "status.phase"
        )
        .as_deref(),
        Some("Terminating")
    );
    let secret = res("", "v1", "secrets");
    assert_eq!(
        field_value(&secret, &json!({"type": "Opaque"}), "type").as_deref(),
        Some("Opaque")
    );
    let rs = res("apps", "v1", "replicasets");
    assert_eq!(
        field_value(&rs, &json!({}), "status.replicas").as_deref(),
        Some("0")
    );
    assert_eq!(
        field_value(&rs, &json!({"status": {"replicas": 3}}), "status.replicas").as_deref(),
        Some("3")
    );
    let rc = res("", "v1", "replicationcontrollers");
    assert_eq!(
        field_value(&rc, &json!({"status": {"replicas": 2}}), "status.replicas").as_deref(),
        Some("2")
    );
    let job = res("batch", "v1", "jobs");
    assert_eq!(
        field_value(
            &job,
            &json!({"status": {"succeeded": 4}}),
            "status.successful"
        )
        .as_deref(),
        Some("4")
    );
    assert!(sel("status.successful=0").matches_object(&job, &json!({})));
    let cm = res("", "v1", "configmaps");
    assert_eq!(
        values(&cm, &json!({"metadata": {"name": "c", "namespace": "d"}})),
        owned(&[("metadata.name", "c"), ("metadata.namespace", "d")])
    );
    assert_eq!(field_value(&cm, &json!({}), "data"), None);
}

proptest! {
    #[test]
    fn parse_never_panics(s in "\\PC{0,40}") {
        let _ = FieldSelector::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_selector_alphabet(s in "[ab=!,\\\\ ]{0,20}") {
        if let Ok(sel) = FieldSelector::parse(&s) {
            prop_assert_eq!(FieldSelector::parse(&sel.to_string()).ok(), Some(sel));
        }
    }

    #[test]
    fn escaping_round_trips(v in "\\PC{0,20}") {
        let escaped = escape_value(&v);
        prop_assert_eq!(unescape_value(&escaped), Ok(v.clone()));
        let s = FieldSelector::parse(&format!("metadata.name={escaped}"));
        prop_assert_eq!(
            s.map(|s| s.requirements),
            Ok(vec![req("metadata.name", FieldOp::Eq, &v)])
        );
    }

    #[test]
    fn selector_round_trips(
        reqs in proptest::collection::vec(
            ("[a-z][a-z.]{0,6}", any::<bool>(), "\\PC{0,8}"),
            0..5,
        )
    ) {
        let mut requirements: Vec<FieldRequirement> = reqs
            .into_iter()
            .map(|(f, eq, v)| req(&f, if eq { FieldOp::Eq } else { FieldOp::NotEq }, &v))
            .collect();
        // Parsing orders terms by their canonical text.
        requirements.sort_by_key(|r| r.to_string());
        let s = FieldSelector { requirements };
        let text = s.to_string();
        prop_assert_eq!(FieldSelector::parse(&text), Ok(s), "{}", text);
    }
}
