//! Tests of the patch engines with the payloads real clients send.

use serde_json::{json, Value};

use super::*;
use crate::resource::{CrdInfo, Registry};

fn res(group: &str, plural: &str) -> ResourceInfo {
    let reg = Registry::new();
    let version = if group == "autoscaling" { "v2" } else { "v1" };
    reg.get(group, version, plural)
        .map(|r| (*r).clone())
        .expect("built-in resource")
}

fn deployments() -> ResourceInfo {
    res("apps", "deployments")
}

fn custom() -> ResourceInfo {
    let mut r = deployments();
    r.group = "example.com".into();
    r.plural = "widgets".into();
    r.kind = "Widget".into();
    r.crd = Some(CrdInfo {
        printer_columns: vec![],
        schema: Some(
            json!({"type":"object","properties":{"spec":{"type":"object","properties":{
            "items":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["id"],
                "items":{"type":"object"}},
            "tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
            "sel":{"type":"object","x-kubernetes-map-type":"atomic"}}}}}),
        ),
        scale: None,
    });
    r
}

fn smp(r: &ResourceInfo, current: Value, patch: Value) -> Result<Value, ApiError> {
    apply_patch(
        PatchType::Strategic,
        r,
        &current,
        patch.to_string().as_bytes(),
    )
}

fn has_directive(v: &Value) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, c)| strategic::is_directive(k) || has_directive(c)),
        Value::Array(a) => a.iter().any(has_directive),
        _ => false,
    }
}

fn deploy(containers: Value) -> Value {
    json!({"apiVersion":"apps/v1","kind":"Deployment",
        "metadata":{"name":"web","namespace":"default","labels":{"app":"web"}},
        "spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},
            "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":containers}}}})
}

fn containers(v: &Value) -> &Value {
    &v["spec"]["template"]["spec"]["containers"]
}

// ---- strategy tables ----------------------------------------------------

#[test]
fn strategy_lookups() {
    let d = deployments();
    let c = ["spec", "template", "spec", "containers"];
    assert_eq!(list_strategy(&d, &c), ListStrategy::MergeByKey("name"));
    assert_eq!(
        list_strategy(&d, &["spec", "template", "spec", "containers", "ports"]),
        ListStrategy::MergeByKey("containerPort")
    );
    assert_eq!(
        list_strategy(&d, &["metadata", "finalizers"]),
        ListStrategy::MergePrimitive
    );
    assert_eq!(
        list_strategy(&d, &["spec", "template", "metadata", "finalizers"]),
        ListStrategy::MergePrimitive
    );
    assert_eq!(
        list_strategy(&d, &["spec", "template", "spec", "tolerations"]),
        ListStrategy::Replace
    );
    assert_eq!(
        list_map_keys(&d, &["spec", "template", "spec", "containers", "ports"]),
        vec!["containerPort", "protocol"]
    );
    assert_eq!(list_type(&d, &["metadata", "finalizers"]), ListType::Set);
    assert!(map_is_atomic(&d, &["spec", "selector"]));
    assert!(!map_is_atomic(
        &d,
        &["spec", "template", "metadata", "labels"]
    ));

    let cj = res("batch", "cronjobs");
    let path = [
        "spec",
        "jobTemplate",
        "spec",
        "template",
        "spec",
        "containers",
        "env",
    ];
    assert_eq!(patch_merge_key(&cj, &path), Some("name"));
    let svc = res("", "services");
    assert_eq!(
        list_map_keys(&svc, &["spec", "ports"]),
        vec!["port", "protocol"]
    );
    let node = res("", "nodes");
    assert_eq!(
        list_strategy(&node, &["spec", "podCIDRs"]),
        ListStrategy::MergePrimitive
    );
    assert_eq!(
        patch_merge_key(&node, &["status", "addresses"]),
        Some("type")
    );
    let pod = res("", "pods");
    assert_eq!(
        patch_merge_key(&pod, &["status", "conditions"]),
        Some("type")
    );
    assert_eq!(
        list_strategy(&pod, &["status", "containerStatuses"]),
        ListStrategy::Replace
    );
    assert_eq!(
        patch_merge_key(&res("apps", "statefulsets"), &["status", "conditions"]),
        Some("type")
    );

    let cr = custom();
    assert_eq!(list_map_keys(&cr, &["spec", "items"]), vec!["id"]);
    assert_eq!(list_type(&cr, &["spec", "tags"]), ListType::Set);
    assert!(map_is_atomic(&cr, &["spec", "sel"]));
    assert_eq!(list_strategy(&cr, &c), ListStrategy::Replace);
}

// ---- strategic merge patch ----------------------------------------------

#[test]
fn kubectl_apply_set_element_order() {
    let cur = deploy(json!([
        {"name":"c","image":"nginx:1","ports":[{"containerPort":80}]},
        {"name":"injected","image":"proxy"}
    ]));
    let patch = json!({"spec":{"template":{"spec":{
        "$setElementOrder/containers":[{"name":"c"},{"name":"side"}],
        "containers":[{"name":"c","image":"nginx:2"},{"name":"side","image":"busybox"}]}}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    assert_eq!(
        containers(&out),
        &json!([
            {"name":"c","image":"nginx:2","ports":[{"containerPort":80}]},
            {"name":"injected","image":"proxy"},
            {"name":"side","image":"busybox"}
        ])
    );
    assert!(!has_directive(&out));
}

#[test]
fn set_element_order_reorders() {
    let cur = deploy(json!([{"name":"a"},{"name":"b"},{"name":"c"}]));
    let patch = json!({"spec":{"template":{"spec":{
        "$setElementOrder/containers":[{"name":"c"},{"name":"a"},{"name":"b"}]}}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    assert_eq!(
        containers(&out),
        &json!([{"name":"c"},{"name":"a"},{"name":"b"}])
    );
}

#[test]
fn nested_keyed_lists_merge() {
    let cur = deploy(json!([{"name":"c","image":"x",
        "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
        "ports":[{"containerPort":80,"name":"http"}],
        "volumeMounts":[{"mountPath":"/data","name":"d"}]}]));
    let patch = json!({"spec":{"template":{"spec":{"containers":[{"name":"c",
        "env":[{"name":"B","value":"3"},{"name":"C","value":"4"},{"name":"A","$patch":"delete"}],
        "ports":[{"containerPort":443,"name":"https"}],
        "volumeMounts":[{"mountPath":"/data","readOnly":true}]}]}}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    let c = &containers(&out)[0];
    assert_eq!(
        c["env"],
        json!([{"name":"B","value":"3"},{"name":"C","value":"4"}])
    );
    assert_eq!(
        c["ports"],
        json!([{"containerPort":80,"name":"http"},{"containerPort":443,"name":"https"}])
    );
    assert_eq!(
        c["volumeMounts"],
        json!([{"mountPath":"/data","name":"d","readOnly":true}])
    );
}

#[test]
fn list_replace_directive() {
    let cur = deploy(json!([{"name":"a","image":"1"},{"name":"b","image":"2"}]));
    let patch = json!({"spec":{"template":{"spec":{"containers":[
        {"$patch":"replace"},{"name":"z","image":"3"}]}}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    assert_eq!(containers(&out), &json!([{"name":"z","image":"3"}]));
}

#[test]
fn map_directives() {
    let cur = deploy(
        json!([{"name":"a","image":"1","resources":{"limits":{"cpu":"1"},"requests":{"cpu":"1"}}}]),
    );
    // $patch: replace on a map swaps the whole map.
    let patch = json!({"spec":{"template":{"spec":{"containers":[{"name":"a",
        "resources":{"$patch":"replace","limits":{"memory":"1Gi"}}}]}}}});
    let out = smp(&deployments(), cur.clone(), patch).unwrap();
    assert_eq!(
        containers(&out)[0]["resources"],
        json!({"limits":{"memory":"1Gi"}})
    );
    // $patch: delete on a map removes it.
    let patch = json!({"spec":{"template":{"spec":{"containers":[{"name":"a",
        "resources":{"$patch":"delete"}}]}}}});
    let out = smp(&deployments(), cur.clone(), patch).unwrap();
    assert!(containers(&out)[0].get("resources").is_none());
    // $patch: merge is the default behaviour.
    let patch = json!({"metadata":{"labels":{"$patch":"merge","tier":"fe"}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app":"web","tier":"fe"}));
}

#[test]
fn retain_keys_drops_unlisted() {
    let mut cur = deploy(json!([]));
    cur["spec"]["strategy"] =
        json!({"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%","maxUnavailable":"25%"}});
    // What kubectl apply sends when switching a Deployment to Recreate.
    let patch = json!({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate","rollingUpdate":null}}});
    let out = smp(&deployments(), cur.clone(), patch).unwrap();
    assert_eq!(out["spec"]["strategy"], json!({"type":"Recreate"}));
    let bad = json!({"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":{"maxSurge":1}}}});
    assert_eq!(smp(&deployments(), cur.clone(), bad).unwrap_err().code, 422);
    let bad = json!({"spec":{"strategy":{"$retainKeys":"type"}}});
    assert_eq!(smp(&deployments(), cur, bad).unwrap_err().code, 400);
}

#[test]
fn finalizers_are_a_merged_set() {
    let mut cur = deploy(json!([]));
    cur["metadata"]["finalizers"] = json!(["a", "b"]);
    let out = smp(
        &deployments(),
        cur.clone(),
        json!({"metadata":{"finalizers":["b","c"]}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let out = smp(
        &deployments(),
        cur.clone(),
        json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"]}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    let out = smp(
        &deployments(),
        cur,
        json!({"metadata":{"$setElementOrder/finalizers":["c","b","a"],"finalizers":["c"]}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["finalizers"], json!(["c", "b", "a"]));
}

#[test]
fn unkeyed_lists_replace_and_nulls_delete() {
    let mut cur = deploy(json!([{"name":"a","args":["x","y"]}]));
    cur["spec"]["template"]["spec"]["tolerations"] = json!([{"key":"k"}]);
    let patch = json!({"spec":{"replicas":null,"template":{"spec":{
        "tolerations":[{"key":"j"}],"containers":[{"name":"a","args":["z"]}]}}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    assert!(out["spec"].get("replicas").is_none());
    assert_eq!(
        out["spec"]["template"]["spec"]["tolerations"],
        json!([{"key":"j"}])
    );
    assert_eq!(containers(&out)[0]["args"], json!(["z"]));
}

#[test]
fn rollout_restart_and_status_conditions() {
    let cur = deploy(json!([{"name":"a"}]));
    let patch = json!({"spec":{"template":{"metadata":{"annotations":{
        "kubectl.kubernetes.io/restartedAt":"2026-01-01T00:00:00Z"}}}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    assert_eq!(
        out["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"],
        "2026-01-01T00:00:00Z"
    );
    let pod = json!({"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"PodScheduled","status":"True"}]}});
    let out = smp(
        &res("", "pods"),
        pod,
        json!({"status":{"conditions":[{"type":"Ready","status":"True"}]}}),
    )
    .unwrap();
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}])
    );
}

#[test]
fn new_elements_have_directives_processed() {
    let cur = deploy(json!([{"name":"a"}]));
    let patch = json!({"spec":{"template":{"spec":{"containers":[{"name":"b",
        "$setElementOrder/env":[{"name":"X"}],"env":[{"name":"X","value":"1"}],
        "resources":{"$patch":"replace","limits":{"cpu":"1"}}}]}}}});
    let out = smp(&deployments(), cur, patch).unwrap();
    assert_eq!(
        containers(&out)[1],
        json!({"name":"b","env":[{"name":"X","value":"1"}],"resources":{"limits":{"cpu":"1"}}})
    );
    assert!(!has_directive(&out));
}

#[test]
fn strategic_errors() {
    let cur = deploy(json!([{"name":"a"}]));
    let missing_key = json!({"spec":{"template":{"spec":{"containers":[{"image":"x"}]}}}});
    assert_eq!(
        smp(&deployments(), cur.clone(), missing_key)
            .unwrap_err()
            .code,
        400
    );
    let bad_directive = json!({"spec":{"$patch":"explode"}});
    assert_eq!(
        smp(&deployments(), cur.clone(), bad_directive)
            .unwrap_err()
            .code,
        400
    );
    assert_eq!(
        smp(&deployments(), cur.clone(), json!([1]))
            .unwrap_err()
            .code,
        400
    );
    let e = apply_patch(PatchType::Strategic, &deployments(), &cur, b"{nope").unwrap_err();
    assert_eq!(e.code, 400);
    let e = smp(&custom(), json!({}), json!({"spec":{}})).unwrap_err();
    assert_eq!(e.code, 415);
    assert_eq!(e.reason, "UnsupportedMediaType");
    // Merge patches stay available for custom resources.
    let out = apply_patch(
        PatchType::Merge,
        &custom(),
        &json!({"spec":{"a":1}}),
        br#"{"spec":{"b":2}}"#,
    )
    .unwrap();
    assert_eq!(out, json!({"spec":{"a":1,"b":2}}));
}

// ---- server-side apply ----------------------------------------------------

const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-01-01T00:01:00Z";
const T2: &str = "2026-01-01T00:02:00Z";

fn applied(replicas: i64, containers: Value) -> Value {
    let mut d = deploy(containers);
    d["spec"]["replicas"] = json!(replicas);
    d
}

fn mf(obj: &Value) -> &Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
}

#[test]
fn ssa_create_records_fields() {
    let cfg = applied(
        2,
        json!([{"name":"c","image":"nginx","ports":[{"containerPort":80}]}]),
    );
    let out = server_side_apply(&deployments(), None, &cfg, "kubectl", false, T0).unwrap();
    assert_eq!(out["spec"]["replicas"], 2);
    let entries = mf(&out);
    assert_eq!(entries.len(), 1);
    assert_eq!(
        entries[0],
        json!({"manager":"kubectl","operation":"Apply","apiVersion":"apps/v1","time":T0,
            "fieldsType":"FieldsV1","fieldsV1":{
                "f:metadata":{"f:labels":{"f:app":{}}},
                "f:spec":{"f:replicas":{},"f:selector":{},"f:template":{
                    "f:metadata":{"f:labels":{"f:app":{}}},
                    "f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{},
                        "f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}})
    );
}

#[test]
fn ssa_conflict_and_force() {
    let d = deployments();
    let cfg = applied(2, json!([{"name":"c","image":"nginx"}]));
    let live = server_side_apply(&d, None, &cfg, "kubectl", false, T0).unwrap();
    // Another client scales with an Update.
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(5);
    track_update(&d, Some(&live), &mut scaled, "kube-controller", None, T1);
    let entries = mf(&scaled);
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["manager"], "kube-controller");
    assert_eq!(entries[1]["fieldsV1"], json!({"f:spec":{"f:replicas":{}}}));
    // The applier no longer owns replicas.
    assert!(entries[0]["fieldsV1"]["f:spec"].get("f:replicas").is_none());

    // Re-applying the old value conflicts.
    let e = server_side_apply(&d, Some(&scaled), &cfg, "kubectl", false, T2).unwrap_err();
    assert_eq!(e.code, 409);
    assert_eq!(e.reason, "Conflict");
    assert_eq!(
        e.message,
        "Apply failed with 1 conflict: conflict with \"kube-controller\" using apps/v1: .spec.replicas"
    );
    let s = e.to_status();
    assert_eq!(
        s["details"]["causes"],
        json!([{"reason":"FieldManagerConflict","message":"conflict with \"kube-controller\" using apps/v1","field":".spec.replicas"}])
    );

    // Applying the live value is not a conflict: ownership is shared.
    let same = applied(5, json!([{"name":"c","image":"nginx"}]));
    let shared = server_side_apply(&d, Some(&scaled), &same, "kubectl", false, T2).unwrap();
    assert_eq!(mf(&shared).len(), 2);
    assert_eq!(
        mf(&shared)[1]["fieldsV1"],
        json!({"f:spec":{"f:replicas":{}}})
    );

    // Force moves ownership.
    let forced = server_side_apply(&d, Some(&scaled), &cfg, "kubectl", true, T2).unwrap();
    assert_eq!(forced["spec"]["replicas"], 2);
    let entries = mf(&forced);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["time"], T2);
}

#[test]
fn ssa_multiple_conflicts_message() {
    let d = deployments();
    let live = server_side_apply(
        &d,
        None,
        &applied(1, json!([{"name":"c","image":"a"}])),
        "one",
        false,
        T0,
    )
    .unwrap();
    let e = server_side_apply(
        &d,
        Some(&live),
        &applied(3, json!([{"name":"c","image":"b"}])),
        "two",
        false,
        T1,
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "Apply failed with 2 conflicts: conflicts with \"one\":\n- .spec.replicas\n- .spec.template.spec.containers[name=\"c\"].image"
    );
    assert_eq!(e.details.as_ref().unwrap().causes.len(), 2);
}

#[test]
fn ssa_removes_fields_no_longer_applied() {
    let d = deployments();
    let mut cfg = applied(
        1,
        json!([{"name":"c","image":"a"},{"name":"side","image":"b"}]),
    );
    cfg["metadata"]["labels"]["extra"] = json!("x");
    cfg["metadata"]["annotations"] = json!({"note":"n"});
    let live = server_side_apply(&d, None, &cfg, "kubectl", false, T0).unwrap();
    // Someone else sets an annotation the applier never set.
    let mut edited = live.clone();
    edited["metadata"]["annotations"]["other"] = json!("o");
    track_update(&d, Some(&live), &mut edited, "editor", None, T1);

    let cfg2 = applied(1, json!([{"name":"c","image":"a"}]));
    let out = server_side_apply(&d, Some(&edited), &cfg2, "kubectl", false, T2).unwrap();
    assert_eq!(containers(&out), &json!([{"name":"c","image":"a"}]));
    assert_eq!(out["metadata"]["labels"], json!({"app":"web"}));
    assert_eq!(out["metadata"]["annotations"], json!({"other":"o"}));
    // Fields only someone else owns stay.
    let mut live2 = out.clone();
    live2["spec"]["paused"] = json!(true);
    track_update(&d, Some(&out), &mut live2, "editor", None, T2);
    let out2 = server_side_apply(&d, Some(&live2), &cfg2, "kubectl", false, T2).unwrap();
    assert_eq!(out2["spec"]["paused"], true);
}

#[test]
fn ssa_keyed_merge_keeps_others_items() {
    let d = deployments();
    let live = server_side_apply(
        &d,
        None,
        &applied(1, json!([{"name":"c","image":"a"}])),
        "kubectl",
        false,
        T0,
    )
    .unwrap();
    let out = server_side_apply(&d, Some(&live), &json!({"apiVersion":"apps/v1","kind":"Deployment",
        "metadata":{"name":"web"},"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"s"}]}}}}),
        "injector", false, T1)
        .unwrap();
    assert_eq!(
        containers(&out),
        &json!([{"name":"c","image":"a"},{"name":"sidecar","image":"s"}])
    );
    assert_eq!(mf(&out).len(), 2);
    // Server-set metadata is not recorded and not overwritten.
    assert!(mf(&out)[1]["fieldsV1"]["f:metadata"].is_null());
}

#[test]
fn ssa_custom_resource_list_types() {
    let r = custom();
    let cfg = json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
        "spec":{"items":[{"id":"a","v":1}],"tags":["x"],"sel":{"a":"b"},"plain":[1,2]}});
    let out = server_side_apply(&r, None, &cfg, "m", false, T0).unwrap();
    assert_eq!(
        mf(&out)[0]["fieldsV1"],
        json!({"f:spec":{"f:items":{"k:{\"id\":\"a\"}":{".":{},"f:id":{},"f:v":{}}},
            "f:plain":{},"f:sel":{},"f:tags":{"v:\"x\"":{}}}})
    );
    let out2 = server_side_apply(
        &r,
        Some(&out),
        &json!({"spec":{"tags":["y"],"items":[{"id":"b"}]}}),
        "n",
        false,
        T1,
    )
    .unwrap();
    assert_eq!(out2["spec"]["tags"], json!(["x", "y"]));
    assert_eq!(out2["spec"]["items"], json!([{"id":"a","v":1},{"id":"b"}]));
}

#[test]
fn ssa_rejects_non_objects() {
    assert_eq!(
        server_side_apply(&deployments(), None, &json!([1]), "m", false, T0)
            .unwrap_err()
            .code,
        400
    );
}

// ---- update tracking -------------------------------------------------------

#[test]
fn track_create_shapes() {
    let d = deployments();
    let mut obj = deploy(json!([{"name":"c","image":"nginx"}]));
    obj["spec"]["strategy"] = json!({"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}});
    track_update(&d, None, &mut obj, "kubectl-create", None, T0);
    assert_eq!(
        mf(&obj)[0],
        json!({"manager":"kubectl-create","operation":"Update","apiVersion":"apps/v1","time":T0,
            "fieldsType":"FieldsV1","fieldsV1":{
                "f:metadata":{"f:labels":{".":{},"f:app":{}}},
                "f:spec":{"f:replicas":{},"f:selector":{},
                    "f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{}},"f:type":{}},
                    "f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},
                    "f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:name":{}}}}}}}})
    );
}

#[test]
fn track_updates_move_ownership() {
    let d = deployments();
    let mut obj = deploy(json!([{"name":"c","image":"nginx"}]));
    track_update(&d, None, &mut obj, "kubectl-create", None, T0);
    let mut edited = obj.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    edited["metadata"]["labels"] = json!({"app":"web","tier":"x"});
    track_update(&d, Some(&obj), &mut edited, "kubectl-edit", None, T1);
    let entries = mf(&edited);
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[1]["fieldsV1"],
        json!({"f:metadata":{"f:labels":{"f:tier":{}}},
            "f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{"f:image":{}}}}}}})
    );
    assert!(
        entries[0]["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
            ["k:{\"name\":\"c\"}"]
            .get("f:image")
            .is_none()
    );

    // Status writes carry the subresource; removed fields leave every set.
    let mut st = edited.clone();
    st["status"] = json!({"replicas":1,"conditions":[{"type":"Available","status":"True"}]});
    track_update(
        &d,
        Some(&edited),
        &mut st,
        "kube-controller-manager",
        Some("status"),
        T2,
    );
    let last = mf(&st).last().cloned().unwrap();
    assert_eq!(last["subresource"], "status");
    assert_eq!(
        last["fieldsV1"],
        json!({"f:status":{"f:conditions":{"k:{\"type\":\"Available\"}":{".":{},"f:status":{},"f:type":{}}},"f:replicas":{}}})
    );
    let mut unlabeled = st.clone();
    unlabeled["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("tier");
    track_update(&d, Some(&st), &mut unlabeled, "kubectl-label", None, T2);
    assert!(mf(&unlabeled)
        .iter()
        .all(|e| e["fieldsV1"]["f:metadata"]["f:labels"]
            .get("f:tier")
            .is_none()));
    // Nothing changed: no entry for this manager.
    let mut same = unlabeled.clone();
    track_update(&d, Some(&unlabeled), &mut same, "noop", None, T2);
    assert!(mf(&same).iter().all(|e| e["manager"] != "noop"));
}

#[test]
fn managed_fields_order_and_reset() {
    let d = deployments();
    let mut obj = deploy(json!([{"name":"c"}]));
    track_update(&d, None, &mut obj, "b-updater", None, T0);
    let applied_obj = server_side_apply(
        &d,
        Some(&obj),
        &json!({"metadata":{"annotations":{"x":"y"}}}),
        "z-applier",
        false,
        T1,
    )
    .unwrap();
    let names: Vec<&str> = mf(&applied_obj)
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["z-applier", "b-updater"]);
    // A client sending an empty list resets ownership.
    let mut reset = applied_obj.clone();
    reset["metadata"]["managedFields"] = json!([]);
    reset["metadata"]["labels"]["new"] = json!("1");
    track_update(&d, Some(&applied_obj), &mut reset, "kubectl", None, T2);
    let names: Vec<&str> = mf(&reset)
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["kubectl"]);
}

// ---- properties ------------------------------------------------------------

mod props {
    use super::*;
    use proptest::prelude::*;

    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "spec",
            "metadata",
            "template",
            "containers",
            "name",
            "env",
            "ports",
            "containerPort",
            "finalizers",
            "labels",
            "a",
            "b",
            "$patch",
            "$retainKeys",
            "$setElementOrder/containers",
            "$deleteFromPrimitiveList/finalizers",
            "$setElementOrder/finalizers",
            "status",
            "conditions",
            "type",
        ])
        .prop_map(str::to_string)
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..3).prop_map(Value::from),
            prop::sample::select(vec!["replace", "delete", "merge", "c", "x", "TCP"])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(5, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Objects of maps and scalars only, without nulls.
    fn plain_map() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<bool>().prop_map(Value::from),
            (-3i64..3).prop_map(Value::from),
            prop::sample::select(vec!["x", "y"]).prop_map(Value::from),
        ];
        let tree = leaf.prop_recursive(4, 32, 4, |inner| {
            prop::collection::btree_map(
                prop::sample::select(vec!["spec", "a", "b", "c", "labels"])
                    .prop_map(str::to_string),
                inner,
                0..4,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect()))
        });
        prop::collection::btree_map(
            prop::sample::select(vec!["spec", "metadata", "a"]).prop_map(str::to_string),
            tree,
            0..4,
        )
        .prop_map(|m| Value::Object(m.into_iter().collect()))
    }

    /// The merge patch turning `from` into `to`.
    fn diff(from: &Value, to: &Value) -> Value {
        match (from, to) {
            (Value::Object(f), Value::Object(t)) => {
                let mut out = serde_json::Map::new();
                for k in f.keys() {
                    if !t.contains_key(k) {
                        out.insert(k.clone(), Value::Null);
                    }
                }
                for (k, tv) in t {
                    match f.get(k) {
                        Some(fv) if fv == tv => {}
                        Some(fv) if fv.is_object() && tv.is_object() => {
                            out.insert(k.clone(), diff(fv, tv));
                        }
                        _ => {
                            out.insert(k.clone(), tv.clone());
                        }
                    }
                }
                Value::Object(out)
            }
            _ => to.clone(),
        }
    }

    proptest! {
        #[test]
        fn patches_never_panic(cur in json_value(), patch in json_value()) {
            let body = patch.to_string();
            for r in [deployments(), res("", "pods"), custom()] {
                for kind in [PatchType::Json, PatchType::Merge, PatchType::Strategic, PatchType::Apply] {
                    let out = apply_patch(kind, &r, &cur, body.as_bytes());
                    if kind == PatchType::Strategic {
                        if let Ok(v) = out {
                            // Only a current object that already held one may.
                            prop_assert!(has_directive(&cur) || !has_directive(&v), "directive leaked: {v}");
                        }
                    }
                }
            }
        }

        #[test]
        fn ssa_and_tracking_never_panic(cur in json_value(), cfg in json_value(), force in any::<bool>()) {
            for r in [deployments(), custom()] {
                let _ = server_side_apply(&r, Some(&cur), &cfg, "m", force, T0);
                if let Ok(v) = server_side_apply(&r, None, &cfg, "m", force, T0) {
                    let _ = server_side_apply(&r, Some(&v), &cur, "n", force, T1);
                }
                let mut new = cfg.clone();
                track_update(&r, Some(&cur), &mut new, "m", None, T0);
                let mut new = cfg.clone();
                track_update(&r, None, &mut new, "m", Some("status"), T0);
            }
        }

        #[test]
        fn diff_then_merge_reproduces_target(from in plain_map(), to in plain_map()) {
            let patch = diff(&from, &to);
            let body = patch.to_string();
            for kind in [PatchType::Merge, PatchType::Strategic] {
                let out = apply_patch(kind, &deployments(), &from, body.as_bytes()).unwrap();
                prop_assert_eq!(&out, &to);
            }
        }

        #[test]
        fn reapplying_is_idempotent(cfg in plain_map()) {
            let d = deployments();
            let once = server_side_apply(&d, None, &cfg, "m", false, T0).unwrap();
            let twice = server_side_apply(&d, Some(&once), &cfg, "m", false, T0).unwrap();
            prop_assert_eq!(once, twice);
        }
    }
}
