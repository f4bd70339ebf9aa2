//! The workload controllers beside a real kube-controller-manager: status
//! fields they do not model stay as written, and a pass that would change
//! nothing but spell a zero count where upstream leaves it out writes
//! nothing. Either failing made the two controllers undo each other's
//! writes forever.

mod support;

use kubesim_core::meta;
use kubesim_runtime::ResourceRef;
use serde_json::{json, Value};
use support::{start, Env};

const NS: &str = "default";

fn template(app: &str) -> Value {
    json!({"metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// Writes `status` as upstream's controller would (merge patch through
/// the status subresource), then lets the controller see it; returns the
/// resourceVersion of that write and the object a few seconds later.
async fn written_like_upstream(
    env: &Env,
    r: &ResourceRef,
    name: &str,
    status: Value,
) -> (String, Value) {
    env.patch_status_of(r, NS, name, status).await;
    let after_patch = env.get(r, NS, name).await.expect("object");
    env.sleep(5).await;
    let later = env.get(r, NS, name).await.expect("object");
    (meta::resource_version(&after_patch).to_string(), later)
}

#[tokio::test(start_paused = true)]
async fn replicaset_status_keeps_unmodelled_fields_and_skips_no_op_writes() {
    let env = start().await;
    let rs = ResourceRef::new("apps", "v1", "replicasets");
    env.create(
        &rs,
        NS,
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")}}),
    )
    .await;
    env.wait_for("the ReplicaSet's status", || async {
        env.get(&rs, NS, "web")
            .await
            .filter(|o| o["status"]["replicas"] == 2)
    })
    .await;
    // The pods are pending: upstream leaves the zero counts out and
    // reports its own terminatingReplicas.
    let (rv, later) = written_like_upstream(
        &env,
        &rs,
        "web",
        json!({"readyReplicas": null, "availableReplicas": null, "terminatingReplicas": 1}),
    )
    .await;
    assert_eq!(later["status"]["terminatingReplicas"], 1, "{later}");
    assert!(later["status"].get("readyReplicas").is_none(), "{later}");
    assert_eq!(
        meta::resource_version(&later),
        rv,
        "a write that changed nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn deployment_status_keeps_unmodelled_fields_and_skips_no_op_writes() {
    let env = start().await;
    let deployments = ResourceRef::new("apps", "v1", "deployments");
    env.create(
        &deployments,
        NS,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")}}),
    )
    .await;
    env.wait_for("the Deployment's status", || async {
        env.get(&deployments, NS, "web")
            .await
            .filter(|o| o["status"]["replicas"] == 1 && o["status"]["unavailableReplicas"] == 1)
    })
    .await;
    env.sleep(2).await;
    let (rv, later) = written_like_upstream(
        &env,
        &deployments,
        "web",
        json!({"readyReplicas": null, "availableReplicas": null, "terminatingReplicas": 1}),
    )
    .await;
    assert_eq!(later["status"]["terminatingReplicas"], 1, "{later}");
    assert!(
        later["status"].get("availableReplicas").is_none(),
        "{later}"
    );
    assert_eq!(
        meta::resource_version(&later),
        rv,
        "a write that changed nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn job_status_skips_writes_that_only_spell_out_zero_counts() {
    let env = start().await;
    let jobs = ResourceRef::new("batch", "v1", "jobs");
    env.create(
        &jobs,
        NS,
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    env.wait_for("the Job's status", || async {
        env.get(&jobs, NS, "work")
            .await
            .filter(|o| o["status"]["active"] == 1)
    })
    .await;
    env.sleep(2).await;
    // Upstream omits succeeded and failed while they are 0, and may
    // report indexes kubesim does not track.
    let (rv, later) = written_like_upstream(
        &env,
        &jobs,
        "work",
        json!({"succeeded": null, "failed": null, "failedIndexes": ""}),
    )
    .await;
    assert!(later["status"].get("succeeded").is_none(), "{later}");
    assert_eq!(later["status"]["failedIndexes"], "", "{later}");
    assert_eq!(
        meta::resource_version(&later),
        rv,
        "a write that changed nothing"
    );
}
