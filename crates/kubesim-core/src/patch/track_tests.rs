//! Update tracking pinned to the algorithm it replaced, which parsed every
//! entry and wrote every entry back: whatever the stored and sent lists,
//! the managedFields written must be the same, byte for byte.

use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::apply::{Comparison, Walker};
use super::managed_fields::{self, ManagedEntry};
use super::*;
use crate::resource::Registry;

const T0: &str = "2024-01-01T00:00:00Z";
const T1: &str = "2024-01-01T00:00:01Z";
const T2: &str = "2024-01-01T00:00:02Z";

/// The previous update tracking, kept as the reference.
fn reference(
    resource: &ResourceInfo,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: Option<&str>,
    now: &str,
) {
    if !new.is_object() {
        return;
    }
    let sent = managed_fields::raw(new).cloned();
    let stored = old.and_then(managed_fields::raw).cloned();
    let mut entries = match (&sent, old) {
        (Some(s), _) if Some(s) != stored.as_ref() => managed_fields::read(new),
        (_, Some(o)) => managed_fields::read(o),
        _ => Vec::new(),
    };
    let w = Walker::new(resource);
    let mut cmp = Comparison::default();
    let empty = Value::Object(Map::new());
    w.compare(
        &mut Vec::new(),
        Some(old.unwrap_or(&empty)),
        Some(new),
        &mut Vec::new(),
        &mut cmp,
    );
    let removed = cmp.removed.paths();
    for e in entries.iter_mut() {
        e.fields.difference(&cmp.changed);
        for p in &removed {
            e.fields.remove_tree(p);
        }
        e.fields.prune();
    }
    if !cmp.changed.is_empty() {
        let api_version = resource.api_version();
        match entries
            .iter_mut()
            .find(|e| e.is(manager, "Update", subresource))
        {
            Some(e) => {
                e.fields.union(&cmp.changed);
                e.time = Some(now.to_string());
                e.api_version = api_version;
            }
            None => entries.push(ManagedEntry {
                manager: manager.to_string(),
                operation: "Update".into(),
                api_version,
                time: Some(now.to_string()),
                subresource: subresource.map(str::to_string),
                fields: cmp.changed,
            }),
        }
    }
    managed_fields::write(new, entries);
}

fn pods() -> ResourceInfo {
    Registry::new()
        .get("", "v1", "pods")
        .map(|r| (*r).clone())
        .expect("pods")
}

/// Runs both trackings (and the update path's "only if changed" one) on
/// the same write, asserts they store the same bytes, and returns the
/// result.
fn both(
    r: &ResourceInfo,
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    sub: Option<&str>,
    now: &str,
) -> Value {
    let mut expected = new.clone();
    reference(r, old, &mut expected, manager, sub, now);
    let mut got = new.clone();
    track_update(r, old, &mut got, manager, sub, now);
    // serde_json's map equality ignores key order; the bytes do not.
    assert_eq!(got.to_string(), expected.to_string());
    if let Some(old) = old {
        let mut expected = new.clone();
        if new != old {
            reference(r, Some(old), &mut expected, manager, sub, now);
        }
        let mut got = new.clone();
        track_update_if_changed(r, old, None, &mut got, manager, sub, now);
        assert_eq!(got.to_string(), expected.to_string());
        // The same write on objects decoded with the stored list apart.
        if let Some(got) = apart(r, old, new, manager, sub, now) {
            assert_eq!(got, expected.to_string());
        }
    }
    got
}

/// [`track_update_if_changed`] on `old` decoded with its managedFields
/// apart as text (a `null` in their place), and on `new` holding the same
/// placeholder when it proposes the stored list; returns the object
/// written, the stored list put back where the placeholder stayed, as
/// JSON. None where the server compares decoded lists instead: `old` has
/// none, or `new` sends another.
fn apart(
    r: &ResourceInfo,
    old: &Value,
    new: &Value,
    manager: &str,
    sub: Option<&str>,
    now: &str,
) -> Option<String> {
    let stored = &old["metadata"]["managedFields"];
    let list = stored.as_array()?;
    let text = RawValue::from_string(Value::Array(list.clone()).to_string()).unwrap();
    let placeholder = |v: &Value| {
        let mut v = v.clone();
        v["metadata"]["managedFields"] = Value::Null;
        v
    };
    let proposed = &new["metadata"]["managedFields"];
    // A list proposed as stored, key order included, is what a write
    // derived from the decoded object holds: the placeholder. (Compared
    // as text: value equality ignores key order.)
    let text_of = |v: &Value| v.to_string();
    let mut got = if text_of(proposed) == text_of(stored) {
        placeholder(new)
    } else if proposed.is_array() {
        return None;
    } else {
        new.clone()
    };
    let old = placeholder(old);
    track_update_if_changed(r, &old, Some(&text), &mut got, manager, sub, now);
    if got["metadata"].get("managedFields") == Some(&Value::Null) {
        got["metadata"]["managedFields"] = serde_json::from_str(text.get()).unwrap();
    }
    Some(got.to_string())
}

fn mf(obj: &Value) -> &Value {
    &obj["metadata"]["managedFields"]
}

fn pod() -> Value {
    json!({"apiVersion":"v1","kind":"Pod",
        "metadata":{"name":"p","namespace":"default","labels":{"app":"web"}},
        "spec":{"containers":[{"name":"c","image":"nginx"}],"schedulerName":"default-scheduler"}})
}

/// A created, bound pod: one entry for the creator, one for the binder.
fn stored_pod() -> Value {
    let r = pods();
    let created = both(&r, None, &pod(), "kubectl-create", None, T0);
    let mut bound = created.clone();
    bound["spec"]["nodeName"] = json!("n1");
    both(&r, Some(&created), &bound, "kube-scheduler", None, T0)
}

#[test]
fn status_by_a_new_manager() {
    let r = pods();
    let cur = stored_pod();
    let mut new = cur.clone();
    new["status"] =
        json!({"phase":"Pending","conditions":[{"type":"PodScheduled","status":"True"}]});
    let out = both(&r, Some(&cur), &new, "kubelet", Some("status"), T1);
    // The earlier entries are untouched; the kubelet's comes last.
    assert_eq!(mf(&out)[0], mf(&cur)[0]);
    assert_eq!(mf(&out)[1], mf(&cur)[1]);
    assert_eq!(
        mf(&out)[2],
        json!({"manager":"kubelet","operation":"Update","apiVersion":"v1","time":T1,
            "fieldsType":"FieldsV1","fieldsV1":{"f:status":{
                "f:conditions":{"k:{\"type\":\"PodScheduled\"}":{".":{},"f:status":{},"f:type":{}}},
                "f:phase":{}}},"subresource":"status"})
    );
}

#[test]
fn status_by_an_existing_manager() {
    let r = pods();
    let cur = stored_pod();
    let mut first = cur.clone();
    first["status"] = json!({"phase":"Pending"});
    let first = both(&r, Some(&cur), &first, "kubelet", Some("status"), T1);
    let mut second = first.clone();
    second["status"] = json!({"phase":"Running","podIP":"10.0.0.1"});
    let out = both(&r, Some(&first), &second, "kubelet", Some("status"), T2);
    let entries = mf(&out).as_array().unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[2]["time"], T2);
    assert_eq!(
        entries[2]["fieldsV1"],
        json!({"f:status":{"f:phase":{},"f:podIP":{}}})
    );
}

/// A pod's start and then its completion by the same status writer, as
/// the emulated kubelet's stages write them: the second write changes
/// fields the writer owns and adds some it lacks (the conditions'
/// reasons), so its entry gains those in place, in sorted order.
#[test]
fn a_status_writer_gains_fields() {
    let r = pods();
    let cur = stored_pod();
    let mut ready = cur.clone();
    ready["status"] = json!({"phase":"Running",
        "conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"True"}],
        "containerStatuses":[{"name":"c","state":{"running":{}}}]});
    let ready = both(&r, Some(&cur), &ready, "kwok", Some("status"), T1);
    let mut done = ready.clone();
    done["status"] = json!({"phase":"Succeeded",
        "conditions":[{"type":"Initialized","status":"True"},
            {"type":"Ready","status":"False","reason":"PodCompleted"}],
        "containerStatuses":[{"name":"c","state":{"terminated":{"exitCode":0}}}]});
    let out = both(&r, Some(&ready), &done, "kwok", Some("status"), T2);
    let entries = mf(&out).as_array().unwrap();
    let mine = entries.iter().find(|e| e["manager"] == "kwok").unwrap();
    assert_eq!(mine["time"], T2);
    assert_eq!(
        mine["fieldsV1"].to_string(),
        json!({"f:status":{"f:conditions":{
            "k:{\"type\":\"Initialized\"}":{".":{},"f:status":{},"f:type":{}},
            "k:{\"type\":\"Ready\"}":{".":{},"f:reason":{},"f:status":{},"f:type":{}}},
            "f:containerStatuses":{},"f:phase":{}}})
        .to_string()
    );
}

/// A stored entry without a time, already owning what the write changes:
/// its set stays and the time goes right after apiVersion, as a rewrite
/// of the whole entry puts it.
#[test]
fn an_owned_rewrite_of_an_entry_without_time() {
    let r = pods();
    let mut cur = stored_pod();
    cur["status"] = json!({"phase":"Pending"});
    cur["metadata"]["managedFields"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"manager":"kubelet","operation":"Update","apiVersion":"v0",
            "fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:phase":{}}},"subresource":"status"}),
        );
    let mut new = cur.clone();
    new["status"]["phase"] = json!("Running");
    let out = both(&r, Some(&cur), &new, "kubelet", Some("status"), T2);
    let entries = mf(&out).as_array().unwrap();
    let mine = entries.iter().find(|e| e["manager"] == "kubelet").unwrap();
    let keys: Vec<&String> = mine.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "manager",
            "operation",
            "apiVersion",
            "time",
            "fieldsType",
            "fieldsV1",
            "subresource"
        ]
    );
    assert_eq!(mine["time"], T2);
    assert_eq!(mine["apiVersion"], "v1");
    assert_eq!(mine["fieldsV1"], json!({"f:status":{"f:phase":{}}}));
}

#[test]
fn main_update_takes_fields_from_another_manager() {
    let r = pods();
    let cur = stored_pod();
    let mut new = cur.clone();
    new["metadata"]["labels"]["app"] = json!("api");
    new["metadata"]["labels"]["tier"] = json!("x");
    let out = both(&r, Some(&cur), &new, "kubectl-label", None, T1);
    let entries = mf(&out).as_array().unwrap();
    // Same time: by manager name. The binder's entry did not hold the
    // label: kept as it was.
    assert_eq!(entries[0], mf(&cur)[0]);
    assert_eq!(entries[1]["manager"], "kubectl-create");
    assert!(entries[1]["fieldsV1"]["f:metadata"]["f:labels"]
        .get("f:app")
        .is_none());
    assert_eq!(
        entries[2]["fieldsV1"],
        json!({"f:metadata":{"f:labels":{"f:app":{},"f:tier":{}}}})
    );
}

#[test]
fn removal_of_a_field() {
    let r = pods();
    let cur = stored_pod();
    let mut new = cur.clone();
    new["metadata"].as_object_mut().unwrap().remove("labels");
    new["spec"].as_object_mut().unwrap().remove("nodeName");
    let out = both(&r, Some(&cur), &new, "editor", None, T1);
    // The binder held only nodeName: its entry went; nobody gained anything.
    let managers: Vec<&Value> = mf(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["manager"])
        .collect();
    assert_eq!(managers, vec!["kubectl-create"]);
    assert!(mf(&out)[0]["fieldsV1"].get("f:metadata").is_none());
}

#[test]
fn a_different_list_sent_by_the_client() {
    let r = pods();
    let cur = stored_pod();
    let mut new = cur.clone();
    new["metadata"]["managedFields"] = json!([
        {"fieldsV1":{"f:spec":{"f:schedulerName":{}}},"manager":"other","operation":"Update"},
        {"manager":"no-operation","fieldsV1":{"f:spec":{}}},
        "junk",
    ]);
    new["spec"]["activeDeadlineSeconds"] = json!(5);
    let out = both(&r, Some(&cur), &new, "kubectl", None, T1);
    let entries = mf(&out).as_array().unwrap();
    assert_eq!(entries.len(), 2);
    // The sent entry comes back in the form the server writes.
    assert_eq!(
        entries[0],
        json!({"manager":"other","operation":"Update","apiVersion":"","fieldsType":"FieldsV1",
            "fieldsV1":{"f:spec":{"f:schedulerName":{}}}})
    );
    assert_eq!(entries[1]["manager"], "kubectl");
}

#[test]
fn an_empty_list_resets() {
    let r = pods();
    let cur = stored_pod();
    let mut new = cur.clone();
    new["metadata"]["managedFields"] = json!([]);
    let out = both(&r, Some(&cur), &new, "kubectl", None, T1);
    assert!(out["metadata"].get("managedFields").is_none());
    new["metadata"]["labels"]["x"] = json!("1");
    let out = both(&r, Some(&cur), &new, "kubectl", None, T1);
    assert_eq!(mf(&out).as_array().unwrap().len(), 1);
}

#[test]
fn stored_entries_not_in_canonical_form_are_rewritten() {
    let r = pods();
    let mut cur = stored_pod();
    // Members out of order, an unknown member, an unsorted field set.
    cur["metadata"]["managedFields"] = json!([
        {"operation":"Update","manager":"kubectl-create","apiVersion":"v1","time":T0,
            "fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:containers":{}}}},
        {"manager":"x","operation":"Update","apiVersion":"v1","time":T0,"fieldsType":"FieldsV1",
            "fieldsV1":{"f:spec":{"f:schedulerName":{}}},"extra":1},
        {"manager":"y","operation":"Update","apiVersion":"v1","time":T0,"fieldsType":"FieldsV1",
            "fieldsV1":{"f:spec":{"f:schedulerName":{},"f:containers":{}}},"subresource":""},
    ]);
    let mut new = cur.clone();
    new["status"] = json!({"phase":"Pending"});
    let out = both(&r, Some(&cur), &new, "kubelet", Some("status"), T1);
    assert_eq!(mf(&out)[0]["manager"], "kubectl-create");
    assert_eq!(
        mf(&out)[0].as_object().unwrap().keys().next().unwrap(),
        "manager"
    );
    assert!(mf(&out)[1].get("extra").is_none());
    assert!(mf(&out)[2].get("subresource").is_none());
    // Sent back unchanged, the same list reads the same way.
    let mut none_sent = new.clone();
    none_sent["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    both(&r, Some(&cur), &none_sent, "kubelet", Some("status"), T1);
}

#[test]
fn nothing_changed() {
    let r = pods();
    let cur = stored_pod();
    let out = both(&r, Some(&cur), &cur, "kubelet", Some("status"), T1);
    assert_eq!(out, cur);
    // Only the managedFields differ: the update path still rewrites them.
    let mut new = cur.clone();
    new["metadata"]["managedFields"][0]["time"] = json!(T2);
    let mut got = new.clone();
    track_update_if_changed(&r, &cur, None, &mut got, "kubelet", None, T1);
    assert!(mf(&got).as_array().unwrap().iter().any(|e| e["time"] == T2));
}

// ---- the two against each other on generated writes -----------------------

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = Value> {
    prop::sample::select(options).prop_map(Value::from)
}

fn pod_like() -> impl Strategy<Value = Value> {
    let labels = prop::collection::btree_map(
        prop::sample::select(vec!["a", "b", "c"]).prop_map(str::to_string),
        pick(&["x", "y"]),
        0..3,
    );
    let port = (prop::sample::select(vec![80, 443]), pick(&["TCP", "UDP"]))
        .prop_map(|(p, proto)| json!({"containerPort": p, "protocol": proto}));
    let container = (
        pick(&["c1", "c2", "c3"]),
        pick(&["img1", "img2"]),
        prop::option::of(prop::collection::vec(port, 0..3)),
    )
        .prop_map(|(name, image, ports)| {
            let mut c = json!({"name": name, "image": image});
            if let Some(p) = ports {
                c["ports"] = Value::Array(p);
            }
            c
        });
    let condition = (
        pick(&["Ready", "PodScheduled", "Initialized"]),
        pick(&["True", "False"]),
    )
        .prop_map(|(t, s)| json!({"type": t, "status": s}));
    let extra = prop_oneof![
        Just(Value::Null),
        pick(&["x", "y"]),
        Just(json!({})),
        Just(json!([])),
        Just(json!({"k": [1, 2]})),
        Just(json!([{"a": 1}, {"a": 1}])),
    ];
    (
        prop::option::of(labels),
        prop::collection::vec(container, 0..3),
        prop::option::of(pick(&["n1", "n2"])),
        prop::option::of(pick(&["Pending", "Running"])),
        prop::collection::vec(condition, 0..3),
        extra,
        any::<bool>(),
    )
        .prop_map(
            |(labels, containers, node, phase, conditions, extra, status)| {
                let mut meta = json!({"name": "p", "namespace": "default"});
                if let Some(l) = labels {
                    meta["labels"] = Value::Object(l.into_iter().collect());
                }
                let mut spec = json!({"containers": containers});
                if let Some(n) = node {
                    spec["nodeName"] = n;
                }
                if !extra.is_null() {
                    spec["extra"] = extra;
                }
                let mut obj =
                    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
                if status {
                    let mut st = json!({"conditions": conditions});
                    if let Some(p) = phase {
                        st["phase"] = p;
                    }
                    obj["status"] = st;
                }
                obj
            },
        )
}

/// What a write sends as managedFields, made from the stored list.
#[derive(Debug, Clone, Copy)]
enum Sent {
    Same,
    Nothing,
    Empty,
    Reversed,
    /// The first entry with its members in another order (equal as a map).
    Reordered,
    /// Extra entries: unreadable, and readable but not canonical.
    Extra,
    /// The first entry's field set not in canonical form.
    Unsorted,
}

fn sent() -> impl Strategy<Value = Sent> {
    prop::sample::select(vec![
        Sent::Same,
        Sent::Same,
        Sent::Same,
        Sent::Nothing,
        Sent::Empty,
        Sent::Reversed,
        Sent::Reordered,
        Sent::Extra,
        Sent::Unsorted,
    ])
}

fn reordered(entry: &Value) -> Value {
    let mut m: Vec<(String, Value)> = entry
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    m.reverse();
    Value::Object(m.into_iter().collect())
}

fn make_sent(stored: &Value, how: Sent) -> Option<Value> {
    let list = managed_fields::raw(stored).cloned().unwrap_or_default();
    let list = match how {
        Sent::Same => list,
        Sent::Nothing => return None,
        Sent::Empty => Vec::new(),
        Sent::Reversed => list.into_iter().rev().collect(),
        Sent::Reordered => {
            let mut list = list;
            if let Some(first) = list.first_mut() {
                *first = reordered(first);
            }
            list
        }
        Sent::Extra => {
            let mut list = list;
            list.push(json!({"manager": "m1"}));
            list.push(json!({"manager":"m2","operation":"Update",
                "fieldsV1":{"f:spec":{"f:containers":{},"f:nodeName":{}}}}));
            list
        }
        Sent::Unsorted => {
            let mut list = list;
            if let Some(first) = list.first_mut() {
                first["fieldsV1"] = reordered(&first["fieldsV1"]);
                if let Some(m) = first["fieldsV1"].as_object_mut() {
                    m.insert("f:zz".into(), json!({".": {}}));
                }
            }
            list
        }
    };
    Some(Value::Array(list))
}

fn with_sent(obj: &Value, list: Option<Value>) -> Value {
    let mut out = obj.clone();
    let meta = out["metadata"].as_object_mut().expect("metadata");
    match list {
        Some(l) => {
            meta.insert("managedFields".into(), l);
        }
        None => {
            meta.remove("managedFields");
        }
    }
    out
}

/// `v` with the keys of every map in reverse order (equal as a value).
fn reversed_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .rev()
                .map(|(k, v)| (k.clone(), reversed_keys(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(reversed_keys).collect()),
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The comparison walks maps side by side while their key orders
    /// agree and by lookup where they part: the entries written must not
    /// depend on either object's key order.
    #[test]
    fn managed_fields_do_not_depend_on_key_order(
        first in pod_like(),
        second in pod_like(),
        status in any::<bool>(),
    ) {
        let r = pods();
        let stored = both(&r, None, &first, "kubectl-create", None, T0);
        let sub = status.then_some("status");
        let mut expected = second.clone();
        track_update_if_changed(&r, &stored, None, &mut expected, "kubelet", sub, T1);
        for (old, new) in [
            (reversed_keys(&stored), second.clone()),
            (stored.clone(), reversed_keys(&second)),
            (reversed_keys(&stored), reversed_keys(&second)),
        ] {
            let mut got = new;
            track_update_if_changed(&r, &old, None, &mut got, "kubelet", sub, T1);
            prop_assert_eq!(mf(&got).to_string(), mf(&expected).to_string());
        }
    }

    #[test]
    fn same_bytes_as_the_reference(
        first in pod_like(),
        steps in prop::collection::vec(
            (pod_like(), 0usize..3, any::<bool>(), sent(), sent()), 1..6),
    ) {
        let r = pods();
        let managers = ["kubectl", "kubelet", "kube-scheduler"];
        let times = [T0, T1, T2];
        let mut cur = both(&r, None, &first, "kubectl-create", None, T0);
        for (i, (obj, m, status, how, stored_how)) in steps.into_iter().enumerate() {
            // The stored list too may come in forms the server does not write.
            let stored = with_sent(&cur, make_sent(&cur, stored_how));
            let sub = status.then_some("status");
            let new = with_sent(&obj, make_sent(&stored, how));
            cur = both(&r, Some(&stored), &new, managers[m], sub, times[i % 3]);
            // A status-only write of the object as stored.
            let mut st = stored.clone();
            st["status"] = obj.get("status").cloned().unwrap_or(json!({"phase": "Unknown"}));
            both(&r, Some(&stored), &st, "kubelet", Some("status"), T2);
        }
    }

    /// One manager writing the same few fields again and again, the case
    /// where its entry is only restamped: each write must match the
    /// reference, and once the writer owns what a write changes, its set
    /// must come out as it went in.
    #[test]
    fn rewrites_by_one_manager(
        first in pod_like(),
        steps in prop::collection::vec((pod_like(), any::<bool>(), sent()), 1..8),
    ) {
        let r = pods();
        let times = [T0, T1, T2];
        let mut cur = both(&r, None, &first, "kubectl-create", None, T0);
        for (i, (obj, status, how)) in steps.into_iter().enumerate() {
            let sub = status.then_some("status");
            // The write keeps the stored spec and metadata, so that mostly
            // the status moves, as a controller's status writes do.
            let mut new = cur.clone();
            match obj.get("status") {
                Some(st) => new["status"] = st.clone(),
                None => {
                    new.as_object_mut().map(|o| o.remove("status"));
                }
            }
            let new = with_sent(&new, make_sent(&cur, how));
            let before = mf(&cur).as_array().and_then(|l| {
                l.iter()
                    .find(|e| e["manager"] == "kubelet" && e.get("subresource").and_then(Value::as_str) == sub)
                    .map(|e| e["fieldsV1"].clone())
            });
            let next = both(&r, Some(&cur), &new, "kubelet", sub, times[i % 3]);
            if matches!(how, Sent::Same | Sent::Nothing) && before.is_some() {
                let w = Walker::new(&r);
                let mut cmp = Comparison::default();
                w.compare(&mut Vec::new(), Some(&cur), Some(&new), &mut Vec::new(), &mut cmp);
                let owned = before.as_ref().map(FieldSet::from_fields_v1).unwrap_or_default();
                let covered = cmp.changed.paths().iter().all(|p| owned.contains(p))
                    && cmp.removed.paths().iter().all(|p| owned.node(p).is_none());
                if covered && !cmp.changed.is_empty() {
                    let after = mf(&next).as_array().and_then(|l| {
                        l.iter()
                            .find(|e| e["manager"] == "kubelet" && e.get("subresource").and_then(Value::as_str) == sub)
                            .map(|e| (e["fieldsV1"].to_string(), e["time"].clone()))
                    });
                    let before = before.as_ref().map(Value::to_string);
                    prop_assert_eq!(after.as_ref().map(|a| &a.0), before.as_ref());
                    prop_assert_eq!(after.map(|a| a.1), Some(json!(times[i % 3])));
                }
            }
            cur = next;
        }
    }
}
