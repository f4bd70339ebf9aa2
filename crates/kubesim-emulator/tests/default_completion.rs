//! Which of the default Stages finishes a running pod, and when: the
//! run-duration annotation for any pod, and for a Job's pod without it,
//! the run of its first container's program.

use kubesim_emulator::stage::engine::default_stage_objects;
use kubesim_emulator::stage::jq::Input;
use kubesim_emulator::stage::Stage;
use serde_json::{json, Value};

/// A Running pod owned by `owner`, whose first container is `container`.
fn pod(owner: &str, container: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "n",
            "annotations": annotations,
            "ownerReferences": [{"apiVersion": "v1", "kind": owner, "name": "o", "uid": "u"}],
        },
        "spec": {"containers": [container]},
        "status": {"phase": "Running"},
    })
}

/// watch-list's informer container (its job.yaml) with these args.
fn informer(args: &[&str]) -> Value {
    json!({
        "name": "watch-list-0",
        "image": "gcr.io/k8s-staging-perf-tests/perf-tests-util/request-benchmark:v0.0.12",
        "command": ["/benchmark"],
        "args": args,
    })
}

/// The default Stage that finishes `obj` and its delay in milliseconds,
/// or None if none does. At most one may match.
fn finishes(obj: &Value) -> Option<(String, i64)> {
    let input = Input::new(obj);
    let now = "2026-01-01T00:00:00Z".parse().unwrap();
    let found: Vec<(String, i64)> = default_stage_objects()
        .iter()
        .map(|o| Stage::from_object(o).unwrap())
        .filter(|s| s.name.ends_with("complete") && s.selector.matches(obj, &input))
        .map(|s| match s.delay.bounds(&input, now) {
            (ms, None) => (s.name.clone(), ms),
            (low, Some(high)) => panic!("a fixed run time, not [{low}, {high})"),
        })
        .collect();
    assert!(found.len() <= 1, "more than one Stage: {found:?}");
    found.into_iter().next()
}

fn after(stage: &str, ms: i64) -> Option<(String, i64)> {
    Some((stage.to_string(), ms))
}

#[test]
fn the_request_benchmark_informer_runs_for_its_timeout() {
    let watch_list = [
        "informer",
        "--alsologtostderr=true",
        "--v=4",
        "--timeout=5m",
        "--count=1",
        "--resource=pods",
        "--enableWatchListFeature=false",
    ];
    let none = json!({});
    assert_eq!(
        finishes(&pod("Job", informer(&watch_list), none.clone())),
        after("job-pod-complete", 300_000)
    );
    // Go's flags keep the last value given.
    assert_eq!(
        finishes(&pod(
            "Job",
            informer(&["informer", "--timeout=5m", "--timeout=90s"]),
            none.clone()
        )),
        after("job-pod-complete", 90_000)
    );
    // Without the argument, or another subcommand (which has no
    // --timeout), or outside a Job: it serves until deleted.
    for args in [&["informer", "--count=1"][..], &["http", "--timeout=5m"]] {
        assert_eq!(finishes(&pod("Job", informer(args), none.clone())), None);
    }
    assert_eq!(
        finishes(&pod("ReplicaSet", informer(&watch_list), none.clone())),
        None
    );
    // The annotation decides when present.
    assert_eq!(
        finishes(&pod(
            "Job",
            informer(&watch_list),
            json!({"kubesim.io/run-duration": "7s"})
        )),
        after("pod-complete", 7_000)
    );
}

#[test]
fn sleep_runs_for_its_argument_and_pause_until_deleted() {
    let none = json!({});
    let sleep = json!({"name": "c", "image": "gcr.io/k8s-staging-perf-tests/sleep:v0.0.3", "args": ["30s"]});
    assert_eq!(
        finishes(&pod("Job", sleep.clone(), none.clone())),
        after("job-pod-complete", 30_000)
    );
    assert_eq!(finishes(&pod("ReplicaSet", sleep, none.clone())), None);
    for image in [
        "registry.k8s.io/pause:3.10",
        "registry.local:5000/pause",
        "pause@sha256:0123",
    ] {
        let pause = json!({"name": "c", "image": image});
        assert_eq!(finishes(&pod("Job", pause, none.clone())), None, "{image}");
    }
    // Any pod with the annotation, Job or not.
    let pause = json!({"name": "c", "image": "registry.k8s.io/pause:3.10"});
    assert_eq!(
        finishes(&pod(
            "ReplicaSet",
            pause,
            json!({"kubesim.io/run-duration": "2s"})
        )),
        after("pod-complete", 2_000)
    );
}

#[test]
fn other_job_pods_finish_at_once_as_in_kwok() {
    let none = json!({});
    for container in [
        json!({"name": "pi", "image": "perl:5.34", "command": ["perl", "-e", "1"]}),
        json!({"name": "c", "image": "registry.local:5000/pausecheck:1"}),
        json!({"name": "no-image"}),
    ] {
        assert_eq!(
            finishes(&pod("Job", container.clone(), none.clone())),
            after("job-pod-complete", 0),
            "{container}"
        );
    }
    // Not a Job's pod and not annotated: it runs until deleted.
    let web = json!({"name": "web", "image": "nginx"});
    assert_eq!(finishes(&pod("ReplicaSet", web, none)), None);
}
