//! Kubernetes manifests with arrival times: every Pod or Job document is a
//! job submitted at its `kubesim.io/arrival` (a Go duration from the
//! start) and running for its `kubesim.io/run-duration`; other kinds
//! (Deployments, Services, ...) are created at their arrival time too.

use serde_json::Value;

use crate::engine::SimJob;

pub const ARRIVAL: &str = "kubesim.io/arrival";
pub const RUN_DURATION: &str = "kubesim.io/run-duration";

fn annotation<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

fn seconds(text: &str, what: &str, name: &str) -> Result<f64, String> {
    let ns = kubesim_gocompat::duration::parse(text).map_err(|e| format!("{name}: {what}: {e}"))?;
    if ns < 0 {
        return Err(format!("{name}: {what} must not be negative"));
    }
    Ok(ns as f64 / 1e9)
}

pub fn read(text: &str, workload: &str) -> Result<Vec<SimJob>, String> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| format!("cannot parse manifests: {e}"))?;
    let mut jobs = Vec::new();
    for doc in docs.into_iter().filter(|d| !d.is_null()) {
        let kind = doc
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let name = doc
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("a {kind} without metadata.name"))?
            .to_string();
        let submit = match annotation(&doc, ARRIVAL) {
            Some(a) => seconds(a, ARRIVAL, &name)?,
            None => 0.0,
        };
        // A Job's pods carry the run duration on their template.
        let holder = if kind == "Job" {
            doc.pointer("/spec/template")
                .cloned()
                .unwrap_or(Value::Null)
        } else {
            doc.clone()
        };
        let run_time = match annotation(&holder, RUN_DURATION).or(annotation(&doc, RUN_DURATION)) {
            Some(r) => seconds(r, RUN_DURATION, &name)?,
            None => 0.0,
        };
        jobs.push(SimJob {
            id: name,
            workload: workload.to_string(),
            profile: kind.to_ascii_lowercase(),
            submit,
            res: 1,
            walltime: None,
            run_time,
            hosts: 1,
            cpu_millis: 0,
            memory_bytes: 0,
            scheduler: None,
            manifest: Some(doc),
            work: None,
        });
    }
    jobs.sort_by(|a, b| a.submit.total_cmp(&b.submit));
    Ok(jobs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_and_durations() {
        let text = "apiVersion: v1
kind: Pod
metadata: {name: late, annotations: {kubesim.io/arrival: 1m30s, kubesim.io/run-duration: 10s}}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: early}
spec:
  template:
    metadata: {annotations: {kubesim.io/run-duration: 2s}}
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
";
        let jobs = read(text, "w0").unwrap();
        assert_eq!(jobs[0].id, "early");
        assert_eq!((jobs[0].submit, jobs[0].run_time), (0.0, 2.0));
        assert_eq!(
            (jobs[1].submit, jobs[1].run_time, jobs[1].profile.as_str()),
            (90.0, 10.0, "pod")
        );
        assert!(read("kind: Pod\nmetadata: {}", "w0").is_err());
        assert!(read(
            "kind: Pod\nmetadata: {name: x, annotations: {kubesim.io/arrival: soon}}",
            "w0"
        )
        .is_err());
    }
}
