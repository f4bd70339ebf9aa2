//! The pod lifecycle of the cluster `kubesim load` starts in process:
//! kubesim's default Stages, except that a Job's pod finishes when its
//! container's command would, as the ClusterLoader2 configs expect.
//!
//! The default Stages finish every Job pod at once. ClusterLoader2's
//! configs use three kinds of Job pods: the `sleep` image of perf-tests,
//! whose first argument is how long it runs (batch's `CL2_JOB_RUNNING_TIME`);
//! perf-tests' `request-benchmark` image running its `informer`
//! subcommand, which syncs informers until its `--timeout` elapses and
//! then exits with success (watch-list's Job); and `pause`, which never
//! exits (load's Jobs, which WaitForControlledPodsRunning expects to keep
//! `parallelism` pods running). Here a Job pod whose first container runs
//! `sleep` finishes after its first argument, one running the benchmark's
//! `informer` with a `--timeout=<duration>` argument after that duration
//! (the last one, as Go's flag parsing keeps the last), and other Job pods
//! run until deleted. The `kubesim.io/run-duration` annotation still sets
//! the run time of any pod.

use std::path::{Path, PathBuf};

use anyhow::Context;

const POD_COMPLETE: &str = r#"
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: .metadata.deletionTimestamp
      operator: DoesNotExist
    - key: .status.phase
      operator: In
      values: [Running]
    # A Job's pod or one with a run time. This shape is evaluated without
    # jq, so the many pods of other owners never reach the next program.
    - key: '.metadata.annotations["kubesim.io/run-duration"] != null or any(.metadata.ownerReferences[]?; .kind == "Job")'
      operator: In
      values: ["true"]
    # Its run time is known: annotated, or a command that ends by itself.
    - key: >-
        .metadata.annotations["kubesim.io/run-duration"] != null
        or (.spec.containers[0]
            | (.image | contains("/sleep:"))
              or ((.image | contains("/request-benchmark:"))
                  and .args[0]? == "informer"
                  and any(.args[]; startswith("--timeout="))))
      operator: In
      values: ["true"]
  delay:
    durationMilliseconds: 0
    durationFrom:
      jq:
        expression: >-
          .metadata.annotations["kubesim.io/run-duration"]
          // (.spec.containers[0]
              | if .image | contains("/request-benchmark:")
                then [.args[] | select(startswith("--timeout=")) | ltrimstr("--timeout=")] | last
                else .args[0]
                end)
  steps:
  - patch:
      subresource: status
      root: status
      template: |
        {{- $now := Now }}
        {{- $started := or .status.startTime $now }}
        conditions:
        {{- range list "Ready" "ContainersReady" }}
        - type: {{ . }}
          status: "False"
          reason: PodCompleted
          lastTransitionTime: {{ $now | Quote }}
        {{- end }}
        containerStatuses:
        {{- range $c := .spec.containers }}
        - name: {{ $c.name | Quote }}
          image: {{ $c.image | Quote }}
          imageID: {{ printf "docker-pullable://%s" $c.image | Quote }}
          containerID: {{ printf "containerd://%s" $c.name | Quote }}
          ready: false
          started: false
          restartCount: 0
          state:
            terminated:
              exitCode: 0
              reason: Completed
              startedAt: {{ $started | Quote }}
              finishedAt: {{ $now | Quote }}
        {{- end }}
        phase: Succeeded
"#;

/// The Stages as one multi-document YAML text.
pub fn stages_yaml() -> String {
    let mut docs: Vec<String> = kubesim_emulator::stage::engine::DEFAULT_STAGES
        .iter()
        .filter(|y| {
            // Replaced below; matched by name so a reordering of the
            // defaults cannot drop another Stage.
            serde_saphyr::from_str::<serde_json::Value>(y)
                .ok()
                .and_then(|v| v.pointer("/metadata/name")?.as_str().map(str::to_owned))
                .as_deref()
                != Some("pod-complete")
        })
        .map(|y| y.to_string())
        .collect();
    docs.push(POD_COMPLETE.to_string());
    docs.join("\n---\n")
}

/// Writes the Stages into `dir` for `kubesim up --stages`.
pub fn write(dir: &Path) -> anyhow::Result<PathBuf> {
    let path = dir.join("load-stages.yaml");
    std::fs::write(&path, stages_yaml())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubesim_emulator::stage::jq::Input;
    use kubesim_emulator::stage::Stage;
    use serde_json::{json, Value};

    #[test]
    fn the_defaults_with_pod_complete_replaced() {
        let stages = kubesim_emulator::stage::stage_objects_from_yaml(&stages_yaml()).unwrap();
        let names: Vec<&str> = stages
            .iter()
            .filter_map(|s| s.pointer("/metadata/name")?.as_str())
            .collect();
        assert_eq!(
            names.len(),
            kubesim_emulator::stage::engine::DEFAULT_STAGES.len()
        );
        assert_eq!(names.iter().filter(|n| **n == "pod-complete").count(), 1);
        let complete = stages
            .iter()
            .find(|s| s.pointer("/metadata/name").and_then(|n| n.as_str()) == Some("pod-complete"))
            .unwrap();
        assert!(complete.to_string().contains("/sleep:"));
    }

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

    /// When pod-complete would finish `obj`: None if it does not match,
    /// else its delay in milliseconds.
    fn finishes_after(obj: &Value) -> Option<i64> {
        let stages = kubesim_emulator::stage::stage_objects_from_yaml(&stages_yaml()).unwrap();
        let complete = stages
            .iter()
            .find(|s| s.pointer("/metadata/name").and_then(|n| n.as_str()) == Some("pod-complete"))
            .unwrap();
        let stage = Stage::from_object(complete).unwrap();
        let input = Input::new(obj);
        if !stage.selector.matches(obj, &input) {
            return None;
        }
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        match stage.delay.bounds(&input, now) {
            (ms, None) => Some(ms),
            (low, Some(high)) => panic!("a fixed run time, not [{low}, {high})"),
        }
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
            finishes_after(&pod("Job", informer(&watch_list), none.clone())),
            Some(300_000)
        );
        // Go's flags keep the last value given.
        assert_eq!(
            finishes_after(&pod(
                "Job",
                informer(&["informer", "--timeout=5m", "--timeout=90s"]),
                none.clone()
            )),
            Some(90_000)
        );
        // Without the argument, or another subcommand (which has no
        // --timeout), or outside a Job: it runs until deleted.
        for args in [&["informer", "--count=1"][..], &["http", "--timeout=5m"]] {
            assert_eq!(
                finishes_after(&pod("Job", informer(args), none.clone())),
                None
            );
        }
        assert_eq!(
            finishes_after(&pod("ReplicaSet", informer(&watch_list), none.clone())),
            None
        );
        // The annotation still decides when present.
        assert_eq!(
            finishes_after(&pod(
                "Job",
                informer(&watch_list),
                json!({"kubesim.io/run-duration": "7s"})
            )),
            Some(7_000)
        );
    }

    #[test]
    fn sleep_runs_for_its_argument_and_pause_until_deleted() {
        let none = json!({});
        let sleep = json!({"name": "c", "image": "gcr.io/k8s-staging-perf-tests/sleep:v0.0.3", "args": ["30s"]});
        assert_eq!(
            finishes_after(&pod("Job", sleep.clone(), none.clone())),
            Some(30_000)
        );
        assert_eq!(
            finishes_after(&pod("ReplicaSet", sleep, none.clone())),
            None
        );
        let pause = json!({"name": "c", "image": "registry.k8s.io/pause:3.10"});
        assert_eq!(finishes_after(&pod("Job", pause, none)), None);
        // Any pod with the annotation, Job or not.
        let annotated = json!({"kubesim.io/run-duration": "2s"});
        let pause = json!({"name": "c", "image": "registry.k8s.io/pause:3.10"});
        assert_eq!(
            finishes_after(&pod("ReplicaSet", pause, annotated)),
            Some(2_000)
        );
    }
}
