//! Jobs and CronJobs against the in-process server in simulated time; the
//! test plays kubelet by writing pod status.

mod support;

use kubesim_core::meta;
use kubesim_runtime::ResourceRef;
use serde_json::{json, Value};
use support::{condition, is_finished, start, Env};

fn jobs() -> ResourceRef {
    ResourceRef::new("batch", "v1", "jobs")
}

fn cronjobs() -> ResourceRef {
    ResourceRef::new("batch", "v1", "cronjobs")
}

const NS: &str = "default";

fn job(name: &str, spec: Value) -> Value {
    let mut spec = spec;
    spec["template"] = json!({"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}});
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec})
}

async fn active_pods(env: &Env, prefix: &str) -> Vec<Value> {
    env.pods_of(NS, prefix)
        .await
        .into_iter()
        .filter(|p| !is_finished(p) && !meta::is_deleting(p))
        .collect()
}

async fn job_with(env: &Env, name: &str, cond: &str) -> Value {
    env.wait_for(&format!("job {name} {cond}"), || async {
        env.get(&jobs(), NS, name)
            .await
            .filter(|j| condition(j, cond).is_some())
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn job_runs_four_completions_two_at_a_time() {
    let env = start().await;
    env.create(
        &jobs(),
        NS,
        job("work", json!({"parallelism": 2, "completions": 4})),
    )
    .await;
    let mut finished = 0;
    let mut max_active = 0;
    while finished < 4 {
        let active = env
            .wait_for("active pods", || async {
                let a = active_pods(&env, "work-").await;
                (!a.is_empty()).then_some(a)
            })
            .await;
        max_active = max_active.max(active.len());
        let p = &active[0];
        let labels = meta::labels(p);
        assert_eq!(labels["job-name"], "work");
        assert_eq!(labels["batch.kubernetes.io/job-name"], "work");
        assert!(labels.contains_key("batch.kubernetes.io/controller-uid"));
        assert!(labels.contains_key("controller-uid"));
        assert!(meta::finalizers(p).contains(&"batch.kubernetes.io/job-tracking".to_string()));
        env.run_pod(NS, meta::name(p)).await;
        env.finish_pod(NS, meta::name(p), true).await;
        finished += 1;
        env.sleep(1).await;
    }
    let j = job_with(&env, "work", "Complete").await;
    assert!(condition(&j, "SuccessCriteriaMet").is_some());
    assert_eq!(j["status"]["succeeded"], 4);
    assert_eq!(j["status"]["failed"], 0);
    assert_eq!(j["status"]["active"], 0);
    assert!(j["status"]["completionTime"].is_string());
    assert!(j["status"]["startTime"].is_string());
    assert_eq!(max_active, 2);
    let all = env.pods_of(NS, "work-").await;
    assert_eq!(all.len(), 4, "exactly four pods were created");
    for p in &all {
        assert!(meta::finalizers(p).is_empty(), "finalizer released");
    }
}

#[tokio::test(start_paused = true)]
async fn indexed_job_gives_each_pod_its_index() {
    let env = start().await;
    env.create(
        &jobs(),
        NS,
        job(
            "idx",
            json!({"parallelism": 3, "completions": 3, "completionMode": "Indexed"}),
        ),
    )
    .await;
    let pods = env
        .wait_for("three pods", || async {
            let a = active_pods(&env, "idx-").await;
            (a.len() == 3).then_some(a)
        })
        .await;
    let mut indexes = Vec::new();
    for p in &pods {
        let i = meta::annotations(p)["batch.kubernetes.io/job-completion-index"].clone();
        assert_eq!(
            meta::labels(p)["batch.kubernetes.io/job-completion-index"],
            i
        );
        assert_eq!(p["spec"]["hostname"], format!("idx-{i}"));
        assert!(meta::name(p).starts_with(&format!("idx-{i}-")));
        indexes.push(i);
    }
    indexes.sort();
    assert_eq!(indexes, ["0", "1", "2"]);
    let by_index = |i: &str| {
        pods.iter()
            .find(|p| meta::annotations(p)["batch.kubernetes.io/job-completion-index"] == i)
            .map(|p| meta::name(p).to_string())
            .unwrap()
    };
    env.finish_pod(NS, &by_index("1"), true).await;
    env.wait_for("index 1 completed", || async {
        let j = env.get(&jobs(), NS, "idx").await?;
        (j["status"]["completedIndexes"] == "1").then_some(())
    })
    .await;
    // A failed index is retried with a new pod for the same index.
    let failed = by_index("0");
    env.finish_pod(NS, &failed, false).await;
    let replacement = env
        .wait_for("replacement for index 0", || async {
            active_pods(&env, "idx-0-")
                .await
                .into_iter()
                .find(|p| meta::name(p) != failed)
        })
        .await;
    env.finish_pod(NS, meta::name(&replacement), true).await;
    env.finish_pod(NS, &by_index("2"), true).await;
    let j = job_with(&env, "idx", "Complete").await;
    assert_eq!(j["status"]["completedIndexes"], "0-2");
    assert_eq!(j["status"]["succeeded"], 3);
    assert_eq!(j["status"]["failed"], 1);
}

#[tokio::test(start_paused = true)]
async fn backoff_limit_fails_the_job_and_stops_its_pods() {
    let env = start().await;
    env.create(
        &jobs(),
        NS,
        job(
            "flaky",
            json!({"parallelism": 2, "completions": 4, "backoffLimit": 1}),
        ),
    )
    .await;
    // Two failures exceed a limit of one.
    for _ in 0..2 {
        let a = env
            .wait_for("two active pods", || async {
                let a = active_pods(&env, "flaky-").await;
                (a.len() == 2).then_some(a)
            })
            .await;
        env.finish_pod(NS, meta::name(&a[0]), false).await;
        env.sleep(1).await;
    }
    let j = job_with(&env, "flaky", "FailureTarget").await;
    assert_eq!(
        condition(&j, "FailureTarget").unwrap()["reason"],
        "BackoffLimitExceeded"
    );
    // The survivor is stopped; once it is gone the Job is Failed.
    env.wait_for("survivor stopped", || async {
        active_pods(&env, "flaky-").await.is_empty().then_some(())
    })
    .await;
    env.reap(NS).await;
    let j = job_with(&env, "flaky", "Failed").await;
    assert_eq!(
        condition(&j, "Failed").unwrap()["reason"],
        "BackoffLimitExceeded"
    );
    assert_eq!(
        j["status"]["failed"], 3,
        "two failures and the stopped survivor"
    );
    assert_eq!(j["status"]["active"], 0);
    assert!(active_pods(&env, "flaky-").await.is_empty());
}

#[tokio::test(start_paused = true)]
async fn active_deadline_ends_a_running_job() {
    let env = start().await;
    env.create(
        &jobs(),
        NS,
        job("slow", json!({"activeDeadlineSeconds": 30})),
    )
    .await;
    let p = env
        .wait_for("pod", || async { active_pods(&env, "slow-").await.pop() })
        .await;
    env.run_pod(NS, meta::name(&p)).await;
    env.sleep(20).await;
    assert!(condition(
        &env.get(&jobs(), NS, "slow").await.unwrap(),
        "FailureTarget"
    )
    .is_none());
    env.sleep(15).await;
    let j = job_with(&env, "slow", "FailureTarget").await;
    assert_eq!(
        condition(&j, "FailureTarget").unwrap()["reason"],
        "DeadlineExceeded"
    );
    env.reap(NS).await;
    let j = job_with(&env, "slow", "Failed").await;
    assert_eq!(
        condition(&j, "Failed").unwrap()["reason"],
        "DeadlineExceeded"
    );
}

#[tokio::test(start_paused = true)]
async fn finished_job_is_deleted_after_its_ttl() {
    let env = start().await;
    env.create(
        &jobs(),
        NS,
        job("brief", json!({"ttlSecondsAfterFinished": 60})),
    )
    .await;
    let p = env
        .wait_for("pod", || async { active_pods(&env, "brief-").await.pop() })
        .await;
    env.finish_pod(NS, meta::name(&p), true).await;
    let j = job_with(&env, "brief", "Complete").await;
    let done = condition(&j, "Complete").unwrap()["lastTransitionTime"]
        .as_str()
        .and_then(meta::parse_time)
        .unwrap();
    env.sleep(55).await;
    assert!(
        env.get(&jobs(), NS, "brief").await.is_some(),
        "kept until the TTL"
    );
    env.wait_for("job deleted", || async {
        env.get(&jobs(), NS, "brief").await.is_none().then_some(())
    })
    .await;
    let gone_at = env.clock.now();
    assert!(gone_at >= done + jiff::SignedDuration::from_secs(60));
    assert!(gone_at <= done + jiff::SignedDuration::from_secs(62));
    // Its pod goes with it (background propagation).
    env.wait_for("pod collected", || async {
        env.pods_of(NS, "brief-").await.is_empty().then_some(())
    })
    .await;
}

fn cronjob(name: &str, policy: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": "* * * * *", "concurrencyPolicy": policy,
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}}})
}

/// Job names carry the scheduled minute since the epoch; the test starts
/// at 2026-01-01T00:00:00Z = 29453760 minutes.
const MINUTE0: i64 = 29_453_760;

async fn cron_jobs(env: &Env, prefix: &str) -> Vec<Value> {
    env.list(&jobs(), NS)
        .await
        .into_iter()
        .filter(|j| meta::name(j).starts_with(prefix) && !meta::is_deleting(j))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn cronjob_fires_on_the_minute_and_forbid_waits() {
    let env = start().await;
    env.create(&cronjobs(), NS, cronjob("tick", "Forbid")).await;
    let first = env
        .wait_for("first job", || async {
            cron_jobs(&env, "tick-").await.pop()
        })
        .await;
    assert_eq!(meta::name(&first), format!("tick-{}", MINUTE0 + 1));
    assert_eq!(
        first["metadata"]["creationTimestamp"],
        "2026-01-01T00:01:00Z"
    );
    assert_eq!(
        first["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        "2026-01-01T00:01:00Z"
    );
    let cj = env.get(&cronjobs(), NS, "tick").await.unwrap();
    assert_eq!(cj["status"]["lastScheduleTime"], "2026-01-01T00:01:00Z");
    assert_eq!(cj["status"]["active"][0]["name"], meta::name(&first));
    // 00:02 passes while the first still runs: nothing new.
    env.sleep(80).await;
    assert_eq!(cron_jobs(&env, "tick-").await.len(), 1);
    assert!(!env.events(NS, "tick", "JobAlreadyActive").await.is_empty());
    // Once it completes the missed 00:02 run starts.
    let pod = env
        .wait_for("pod of first job", || async {
            active_pods(&env, meta::name(&first)).await.pop()
        })
        .await;
    env.finish_pod(NS, meta::name(&pod), true).await;
    let second = env
        .wait_for("second job", || async {
            cron_jobs(&env, "tick-")
                .await
                .into_iter()
                .find(|j| meta::name(j) != meta::name(&first))
        })
        .await;
    assert_eq!(meta::name(&second), format!("tick-{}", MINUTE0 + 2));
    let cj = env.get(&cronjobs(), NS, "tick").await.unwrap();
    assert!(cj["status"]["lastSuccessfulTime"].is_string());
}

#[tokio::test(start_paused = true)]
async fn cronjob_replace_swaps_the_running_job() {
    let env = start().await;
    env.create(&cronjobs(), NS, cronjob("swap", "Replace"))
        .await;
    let first = env
        .wait_for("first job", || async {
            cron_jobs(&env, "swap-").await.pop()
        })
        .await;
    assert_eq!(meta::name(&first), format!("swap-{}", MINUTE0 + 1));
    env.sleep(55).await;
    let second = env
        .wait_for("second job", || async {
            cron_jobs(&env, "swap-")
                .await
                .into_iter()
                .find(|j| meta::name(j) != meta::name(&first))
        })
        .await;
    assert_eq!(meta::name(&second), format!("swap-{}", MINUTE0 + 2));
    assert_eq!(
        second["metadata"]["creationTimestamp"],
        "2026-01-01T00:02:00Z"
    );
    let remaining = cron_jobs(&env, "swap-").await;
    assert_eq!(remaining.len(), 1, "the first job was replaced");
    assert!(!env.events(NS, "swap", "SuccessfulDelete").await.is_empty());
}

/// Fails pod `name` as a kubelet would report exit code `code` of its
/// container `c`.
async fn exit_pod(env: &Env, name: &str, code: i64) {
    env.patch_status(
        NS,
        name,
        json!({"phase": "Failed", "containerStatuses": [{"name": "c", "image": "busybox",
            "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": code, "reason": "Error"}}}]}),
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn pod_failure_policy_ignores_then_fails_the_job() {
    let env = start().await;
    let mut j = job(
        "policy",
        json!({"parallelism": 1, "completions": 1, "backoffLimit": 0}),
    );
    j["spec"]["podFailurePolicy"] = json!({"rules": [
        {"action": "Ignore", "onExitCodes": {"containerName": "c", "operator": "In", "values": [3]}},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
    ]});
    env.create(&jobs(), NS, j).await;
    // Exit code 3 is ignored: not counted against a backoffLimit of 0, and
    // the pod is replaced.
    let first = env
        .wait_for("a pod", || async {
            active_pods(&env, "policy-").await.into_iter().next()
        })
        .await;
    exit_pod(&env, meta::name(&first), 3).await;
    let second = env
        .wait_for("a replacement", || async {
            active_pods(&env, "policy-")
                .await
                .into_iter()
                .find(|p| meta::name(p) != meta::name(&first))
        })
        .await;
    let j = env.get(&jobs(), NS, "policy").await.unwrap();
    assert!(condition(&j, "FailureTarget").is_none(), "{j}");
    assert_eq!(j["status"]["failed"], 0);
    // Exit code 42 fails the Job at once, with upstream's reason and message.
    exit_pod(&env, meta::name(&second), 42).await;
    let j = job_with(&env, "policy", "Failed").await;
    let failed = condition(&j, "Failed").unwrap();
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert_eq!(
        failed["message"],
        format!(
            "Container c for pod {NS}/{} failed with exit code 42 matching FailJob rule at index 1",
            meta::name(&second)
        )
    );
    assert_eq!(j["status"]["failed"], 1, "only the counted failure");
}

#[tokio::test(start_paused = true)]
async fn pods_removed_by_a_lower_parallelism_are_not_failures() {
    // As upstream's deleteJobPods: the tracking finalizer goes before the
    // delete, so a scale-down never counts towards backoffLimit.
    let env = start().await;
    env.create(
        &jobs(),
        NS,
        job(
            "shrink",
            json!({"parallelism": 4, "completions": 8, "backoffLimit": 0}),
        ),
    )
    .await;
    env.wait_for("four active pods", || async {
        (active_pods(&env, "shrink-").await.len() == 4).then_some(())
    })
    .await;
    let body = json!({"spec": {"parallelism": 1}}).to_string().into_bytes();
    env.api
        .patch(
            &jobs(),
            NS,
            "shrink",
            kubesim_core::patch::PatchType::Merge,
            body,
            None,
            &Default::default(),
        )
        .await
        .unwrap();
    env.wait_for("one active pod", || async {
        (active_pods(&env, "shrink-").await.len() == 1).then_some(())
    })
    .await;
    env.reap(NS).await;
    env.sleep(5).await;
    let j = env.get(&jobs(), NS, "shrink").await.unwrap();
    assert_eq!(j["status"]["failed"], 0, "{j}");
    assert!(condition(&j, "Failed").is_none(), "{j}");
    assert!(condition(&j, "FailureTarget").is_none(), "{j}");
    assert_eq!(j["status"]["active"], 1, "{j}");
}
