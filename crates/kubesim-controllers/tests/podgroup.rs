//! scheduler-plugins' PodGroup controller against the in-process server:
//! it waits for the PodGroup kind, then keeps each group's status from its
//! pods, whose kubelet the test plays.

mod support;

use kubesim_runtime::ResourceRef;
use serde_json::{json, Value};
use support::{start, Env};

const NS: &str = "default";

fn podgroups() -> ResourceRef {
    ResourceRef::new("scheduling.x-k8s.io", "v1alpha1", "podgroups")
}

/// The PodGroup kind, as a CRD with a status subresource (the fields the
/// controller writes need no schema of their own here).
fn definition() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "podgroups.scheduling.x-k8s.io"},
        "spec": {
            "group": "scheduling.x-k8s.io",
            "scope": "Namespaced",
            "names": {"kind": "PodGroup", "listKind": "PodGroupList",
                "plural": "podgroups", "singular": "podgroup"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    })
}

async fn group(env: &Env, name: &str, min_member: i64) {
    env.create(
        &podgroups(),
        NS,
        json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": {"minMember": min_member}}),
    )
    .await;
}

async fn member(env: &Env, group: &str, name: &str) {
    env.create(
        &support::pods(),
        NS,
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"scheduling.x-k8s.io/pod-group": group}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}),
    )
    .await;
}

/// Waits until the group's status is `want`, exactly.
async fn status_is(env: &Env, name: &str, want: Value) {
    env.wait_for(&format!("podgroup {name} status {want}"), || async {
        let g = env.get(&podgroups(), NS, name).await?;
        (g["status"] == want).then_some(())
    })
    .await
}

async fn define(env: &Env) {
    env.create(
        &ResourceRef::new("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
        "",
        definition(),
    )
    .await;
    // Served once the definition is accepted.
    env.wait_for("podgroups to be served", || async {
        env.api
            .list(&podgroups(), NS, &Default::default())
            .await
            .ok()
            .map(|_| ())
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_group_runs_and_finishes() {
    let env = start().await;
    // The controller is already running, before the kind exists.
    env.sleep(5).await;
    define(&env).await;
    group(&env, "g", 2).await;
    status_is(&env, "g", json!({"phase": "Pending"})).await;
    member(&env, "g", "g-0").await;
    env.sleep(1).await;
    status_is(&env, "g", json!({"phase": "Pending"})).await;
    member(&env, "g", "g-1").await;
    status_is(&env, "g", json!({"phase": "Scheduling"})).await;
    env.run_pod(NS, "g-0").await;
    status_is(&env, "g", json!({"phase": "Scheduling", "running": 1})).await;
    env.run_pod(NS, "g-1").await;
    status_is(&env, "g", json!({"phase": "Running", "running": 2})).await;
    env.finish_pod(NS, "g-0", true).await;
    status_is(
        &env,
        "g",
        json!({"phase": "Running", "running": 1, "succeeded": 1}),
    )
    .await;
    env.finish_pod(NS, "g-1", true).await;
    status_is(&env, "g", json!({"phase": "Finished", "succeeded": 2})).await;
}

#[tokio::test(start_paused = true)]
async fn a_failed_member_fails_the_group_for_good() {
    let env = start().await;
    define(&env).await;
    // Members made before their group are counted once it exists.
    member(&env, "h", "h-0").await;
    member(&env, "h", "h-1").await;
    env.run_pod(NS, "h-0").await;
    env.run_pod(NS, "h-1").await;
    group(&env, "h", 2).await;
    status_is(&env, "h", json!({"phase": "Running", "running": 2})).await;
    env.finish_pod(NS, "h-1", false).await;
    status_is(
        &env,
        "h",
        json!({"phase": "Failed", "running": 1, "failed": 1}),
    )
    .await;
    // Final: the other member finishing changes nothing.
    env.finish_pod(NS, "h-0", true).await;
    env.sleep(5).await;
    status_is(
        &env,
        "h",
        json!({"phase": "Failed", "running": 1, "failed": 1}),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_member_that_moves_or_goes_leaves_its_group() {
    use kubesim_core::patch::PatchType;
    use kubesim_runtime::{DeleteOptions, WriteOptions};
    let env = start().await;
    define(&env).await;
    group(&env, "a", 2).await;
    group(&env, "b", 1).await;
    member(&env, "a", "m-0").await;
    member(&env, "a", "m-1").await;
    status_is(&env, "a", json!({"phase": "Scheduling"})).await;
    // Relabelled into b: a has one pod left, b its one.
    let relabel = json!({"metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "b"}}});
    env.api
        .patch_value(
            &support::pods(),
            NS,
            "m-1",
            PatchType::Merge,
            relabel,
            None,
            &WriteOptions::default(),
        )
        .await
        .expect("relabel");
    status_is(&env, "a", json!({"phase": "Pending"})).await;
    status_is(&env, "b", json!({"phase": "Scheduling"})).await;
    env.run_pod(NS, "m-1").await;
    status_is(&env, "b", json!({"phase": "Running", "running": 1})).await;
    // Deleted: b has no pod left.
    env.api
        .delete(&support::pods(), NS, "m-1", &DeleteOptions::default())
        .await
        .expect("delete");
    status_is(&env, "b", json!({"phase": "Pending"})).await;
}
