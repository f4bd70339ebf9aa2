//! The pod lifecycle of the cluster `kubesim load` starts in process:
//! kubesim's default Stages, except that a Job's pod finishes when its
//! container's command would, as the ClusterLoader2 configs expect.
//!
//! The default Stages finish every Job pod at once. ClusterLoader2's
//! configs use two kinds of Job pods: the `sleep` image of perf-tests,
//! whose first argument is how long it runs (batch's `CL2_JOB_RUNNING_TIME`),
//! and `pause`, which never exits (load's Jobs, which WaitForControlledPods
//! Running expects to keep `parallelism` pods running). Here a Job pod
//! whose first container runs a `sleep` image finishes after its first
//! argument; other Job pods run until deleted. The `kubesim.io/run-duration`
//! annotation still sets the run time of any pod.

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
    - key: '.metadata.annotations["kubesim.io/run-duration"] != null or (any(.metadata.ownerReferences[]?; .kind == "Job") and (.spec.containers[0].image | contains("/sleep:")))'
      operator: In
      values: ["true"]
  delay:
    durationMilliseconds: 0
    durationFrom:
      jq:
        expression: '.metadata.annotations["kubesim.io/run-duration"] // .spec.containers[0].args[0]'
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
}
