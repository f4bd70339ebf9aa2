use super::*;
use crate::measurement::test_support::*;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{Api, WriteOptions};
use serde_json::json;

fn params(v: Value) -> Params {
    v.as_object().cloned().unwrap_or_default()
}

fn replica_sets() -> ResourceRef {
    ResourceRef::new("apps", "v1", "replicasets")
}

fn template(name: &str) -> Value {
    json!({"metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

fn replica_set(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "labels": {"group": "load"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": template(name)}})
}

fn start(kind: &str, api_version: &str, extra: Value) -> Params {
    let mut p = params(
        json!({"action": "start", "apiVersion": api_version, "kind": kind,
        "namespace": "default"}),
    );
    if let Some(e) = extra.as_object() {
        p.extend(e.clone());
    }
    p
}

fn gather() -> Params {
    params(json!({"action": "gather"}))
}

/// A ReplicaSet and `n` pods of it, none running yet.
async fn rs_with_pods(api: &Arc<dyn Api>, name: &str, replicas: i64, n: usize) -> Value {
    let rs = create(api, &replica_sets(), "default", replica_set(name, replicas)).await;
    for i in 0..n {
        create_owned_pod(api, "default", &format!("{name}-{i}"), &rs).await;
    }
    rs
}

#[tokio::test(start_paused = true)]
async fn waits_until_the_pods_of_each_object_run() {
    let (ctx, api) = ctx().await;
    let mut m = WaitForControlledPodsRunning::default();
    m.execute(&ctx, "w", &start("ReplicaSet", "apps/v1", json!({})))
        .await
        .expect("start");
    rs_with_pods(&api, "r", 2, 2).await;
    let (clock, api2) = (ctx.clock.clone(), api.clone());
    tokio::spawn(async move {
        clock.sleep(Duration::from_millis(3500)).await;
        start_pod(&api2, "default", "r-0", &clock).await;
        start_pod(&api2, "default", "r-1", &clock).await;
    });
    let t0 = ctx.clock.instant();
    let out = m.execute(&ctx, "w", &gather()).await.expect("running");
    assert!(out.is_empty(), "no summary on success");
    // Checked every second: done at the first check after 3.5 s.
    assert_eq!(ctx.clock.instant() - t0, Duration::from_secs(4));
}

#[tokio::test(start_paused = true)]
async fn reports_timed_out_objects_and_their_pods() {
    let (ctx, api) = ctx().await;
    let mut m = WaitForControlledPodsRunning::default();
    let p = start("ReplicaSet", "apps/v1", json!({"operationTimeout": "20s"}));
    m.execute(&ctx, "ident", &p).await.expect("start");
    let t0 = ctx.clock.instant();
    rs_with_pods(&api, "ok", 1, 1).await;
    rs_with_pods(&api, "slow", 2, 2).await;
    start_pod(&api, "default", "ok-0", &ctx.clock).await;
    start_pod(&api, "default", "slow-0", &ctx.clock).await;
    bind(&api, "default", "slow-1", "n1").await;

    let err = m.execute(&ctx, "ident", &gather()).await.unwrap_err();
    assert_eq!(ctx.clock.instant() - t0, Duration::from_secs(20));
    assert_eq!(err.kind, ErrorKind::Failed);
    assert_eq!(
        err.message,
        "1 objects timed out: ReplicaSets: default/slow"
    );
    assert_eq!(err.summaries.len(), 1);
    let s = &err.summaries[0];
    assert_eq!(s.name, "WaitForControlledPodsRunning_ident_failedpods");
    let failed: Value = serde_json::from_str(&s.content).expect("json");
    assert_eq!(
        failed,
        json!([{"namespace": "default", "controlledBy": "slow", "name": "slow-1",
            "host": "n1", "status": "Pending"}])
    );
}

#[tokio::test(start_paused = true)]
async fn deployments_own_pods_through_replica_sets() {
    let (ctx, api) = ctx().await;
    let mut m = WaitForControlledPodsRunning::default();
    let p = start("Deployment", "apps/v1", json!({"operationTimeout": "30s"}));
    m.execute(&ctx, "d", &p).await.expect("start");
    let deployments = ResourceRef::new("apps", "v1", "deployments");
    let d = create(
        &api,
        &deployments,
        "default",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}},
                "template": template("d")}}),
    )
    .await;
    let mut rs = replica_set("d-1", 2);
    rs["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "Deployment",
        "name": "d", "uid": meta::uid(&d), "controller": true}]);
    rs["spec"]["template"]["metadata"]["labels"] = json!({"app": "d"});
    rs["spec"]["selector"] = json!({"matchLabels": {"app": "d"}});
    let rs = create(&api, &replica_sets(), "default", rs).await;
    for name in ["d-1-a", "d-1-b"] {
        create_owned_pod(&api, "default", name, &rs).await;
        start_pod(&api, "default", name, &ctx.clock).await;
    }
    m.execute(&ctx, "d", &gather())
        .await
        .expect("deployment runs");

    // Scaling up starts the wait over: one more pod is needed.
    api.patch(
        &deployments,
        "default",
        "d",
        PatchType::Merge,
        json!({"spec": {"replicas": 3}}).to_string().into_bytes(),
        None,
        &WriteOptions::default(),
    )
    .await
    .expect("scale");
    let err = m.execute(&ctx, "d", &gather()).await.unwrap_err();
    assert_eq!(err.message, "1 objects timed out: Deployments: default/d");
}

#[tokio::test(start_paused = true)]
async fn a_gather_after_deletion_waits_for_the_pods_to_go() {
    let (ctx, api) = ctx().await;
    let mut m = WaitForControlledPodsRunning::default();
    let p = start("ReplicaSet", "apps/v1", json!({"operationTimeout": "10s"}));
    m.execute(&ctx, "w", &p).await.expect("start");
    rs_with_pods(&api, "r", 1, 1).await;
    start_pod(&api, "default", "r-0", &ctx.clock).await;
    m.execute(&ctx, "w", &gather()).await.expect("running");

    delete_now(&api, &replica_sets(), "default", "r").await;
    let (clock, api2) = (ctx.clock.clone(), api.clone());
    tokio::spawn(async move {
        clock.sleep(Duration::from_secs(5)).await;
        delete_now(&api2, &pods(), "default", "r-0").await;
    });
    let t0 = ctx.clock.instant();
    m.execute(&ctx, "w", &gather())
        .await
        .expect("deleted with its pods");
    let took = ctx.clock.instant() - t0;
    assert!(
        took >= Duration::from_secs(5) && took <= Duration::from_secs(6),
        "{took:?}"
    );

    // A deleted object whose pods stay times out after twice the
    // operation timeout.
    rs_with_pods(&api, "s", 1, 1).await;
    start_pod(&api, "default", "s-0", &ctx.clock).await;
    m.execute(&ctx, "w", &gather()).await.expect("running");
    delete_now(&api, &replica_sets(), "default", "s").await;
    let t0 = ctx.clock.instant();
    let err = m.execute(&ctx, "w", &gather()).await.unwrap_err();
    assert_eq!(err.message, "1 objects timed out: ReplicaSets: default/s");
    let took = ctx.clock.instant() - t0;
    assert!(
        took >= Duration::from_secs(19) && took <= Duration::from_secs(21),
        "{took:?}"
    );
    let failed: Value = serde_json::from_str(&err.summaries[0].content).expect("json");
    assert_eq!(failed[0]["name"], "s-0");
    assert_eq!(failed[0]["status"], "Running");
}

#[tokio::test(start_paused = true)]
async fn error_margin_and_stale_pods() {
    let (ctx, api) = ctx().await;
    let mut m = WaitForControlledPodsRunning::default();
    let p = start(
        "ReplicaSet",
        "apps/v1",
        json!({"operationTimeout": "10s", "countErrorMargin": 1}),
    );
    m.execute(&ctx, "w", &p).await.expect("start");
    // Two of three is within the margin.
    rs_with_pods(&api, "r", 3, 2).await;
    start_pod(&api, "default", "r-0", &ctx.clock).await;
    start_pod(&api, "default", "r-1", &ctx.clock).await;
    // A running pod from another template does not count, and blocks.
    let s = create(&api, &replica_sets(), "default", replica_set("s", 1)).await;
    let mut stale = pod("s-0", json!({}), Some(&s), json!({}));
    stale["spec"]["containers"][0]["image"] = json!("old");
    create(&api, &pods(), "default", stale).await;
    start_pod(&api, "default", "s-0", &ctx.clock).await;
    let err = m.execute(&ctx, "w", &gather()).await.unwrap_err();
    assert_eq!(err.message, "1 objects timed out: ReplicaSets: default/s");
}

#[tokio::test(start_paused = true)]
async fn objects_matching_the_selector_only() {
    let (ctx, api) = ctx().await;
    let mut m = WaitForControlledPodsRunning::default();
    let p = start(
        "ReplicaSet",
        "apps/v1",
        json!({"operationTimeout": "10s", "labelSelector": "group=load"}),
    );
    m.execute(&ctx, "w", &p).await.expect("start");
    let mut other = replica_set("other", 1);
    other["metadata"]["labels"] = json!({"group": "else"});
    create(&api, &replica_sets(), "default", other).await;
    rs_with_pods(&api, "r", 1, 1).await;
    start_pod(&api, "default", "r-0", &ctx.clock).await;
    m.execute(&ctx, "w", &gather())
        .await
        .expect("the unselected object is not waited for");
}

#[tokio::test(start_paused = true)]
async fn actions_and_parameters() {
    let (ctx, _api) = ctx().await;
    let mut m = WaitForControlledPodsRunning::default();
    let err = m.execute(&ctx, "w", &gather()).await.unwrap_err();
    assert!(err.message.contains("has not been started"));
    let err = m
        .execute(
            &ctx,
            "w",
            &params(json!({"action": "start", "apiVersion": "v1"})),
        )
        .await
        .unwrap_err();
    assert!(err.message.contains("kind"), "{}", err.message);
    let err = m
        .execute(&ctx, "w", &start("Nope", "v1", json!({})))
        .await
        .unwrap_err();
    assert!(err.message.contains("not served"), "{}", err.message);
    m.execute(&ctx, "w", &start("ReplicationController", "v1", json!({})))
        .await
        .expect("start");
    m.execute(&ctx, "w", &gather())
        .await
        .expect("nothing to wait for");
    m.execute(&ctx, "w", &params(json!({"action": "stop"})))
        .await
        .expect("stop");
    assert!(m.execute(&ctx, "w", &gather()).await.is_err());
}

#[test]
fn desired_counts_by_kind() {
    let o = |v: Value| v;
    assert_eq!(desired("Job", &o(json!({"spec": {}}))), Ok(Some(1)));
    assert_eq!(
        desired("Job", &o(json!({"spec": {"parallelism": 4}}))),
        Ok(Some(4))
    );
    assert_eq!(desired("DaemonSet", &o(json!({"spec": {}}))), Ok(None));
    assert_eq!(
        desired(
            "DaemonSet",
            &o(json!({"status": {"desiredNumberScheduled": 7}}))
        ),
        Ok(Some(7))
    );
    assert_eq!(
        desired("StatefulSet", &o(json!({"spec": {"replicas": 3}}))),
        Ok(Some(3))
    );
    assert_eq!(desired("Deployment", &o(json!({"spec": {}}))), Ok(Some(1)));
    assert_eq!(
        desired("Widget", &o(json!({"spec": {"replicas": 2}}))),
        Ok(Some(2))
    );
    assert!(desired("Widget", &o(json!({"spec": {}}))).is_err());
}

#[test]
fn derivative_pod_specs() {
    let tpl = json!({"containers": [{"name": "c", "image": "i", "ports": []}],
        "hostNetwork": false, "nodeSelector": {}});
    let pod = json!({"containers": [{"name": "c", "image": "i", "imagePullPolicy": "Always"}],
        "volumes": [{"name": "token"}], "nodeName": "n1"});
    assert!(is_derivative(&tpl, &pod));
    let other = json!({"containers": [{"name": "c", "image": "j"}]});
    assert!(!is_derivative(&tpl, &other));
    let two = json!({"containers": [{"name": "c", "image": "i"}, {"name": "d"}]});
    assert!(!is_derivative(&two, &pod));
    assert!(is_derivative(&json!({"priority": 0}), &json!({})));
    assert!(!is_derivative(
        &json!({"priority": 5}),
        &json!({"priority": 6})
    ));
}

#[test]
fn resource_versions_compare_as_numbers() {
    assert!(not_older("10", "9"));
    assert!(!not_older("9", "10"));
    assert!(not_older("abc", "abc"));
    assert!(!not_older("abc", "abd"));
}
