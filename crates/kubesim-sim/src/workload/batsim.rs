//! Batsim JSON workloads: v4 profiles (`delay`, with Batkube's `cpu`,
//! `memory` and `scheduler` extensions) and v5 (`DelayProfile`). Only
//! delay profiles can run here: the others model computation and
//! communication on a SimGrid platform, which pods do not.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::{cpu_millis, memory_bytes, ReadOptions, Skipped};
use crate::engine::SimJob;

#[derive(Deserialize)]
struct File {
    jobs: Vec<RawJob>,
    #[serde(default)]
    profiles: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct RawJob {
    id: Value,
    subtime: f64,
    #[serde(default)]
    walltime: Option<f64>,
    #[serde(default = "one")]
    res: u32,
    profile: String,
}

fn one() -> u32 {
    1
}

/// Reads a Batsim workload; `workload` names it in the outputs (`w0`).
/// Jobs whose profile cannot run as a pod are counted in `Skipped` by
/// profile type, not dropped silently.
pub fn read(
    text: &str,
    workload: &str,
    opts: &ReadOptions,
) -> Result<(Vec<SimJob>, Skipped), String> {
    let f: File = serde_json::from_str(text).map_err(|e| format!("not a Batsim workload: {e}"))?;
    let mut jobs = Vec::with_capacity(f.jobs.len());
    let mut skipped = Skipped::default();
    for j in f.jobs {
        let id = match &j.id {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => return Err(format!("job id {other} is neither a string nor a number")),
        };
        let p = f
            .profiles
            .get(&j.profile)
            .ok_or_else(|| format!("job {id}: no profile {:?}", j.profile))?;
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "delay" | "DelayProfile") {
            *skipped.unsupported.entry(kind.to_string()).or_default() += 1;
            continue;
        }
        let delay = p
            .get("delay")
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("job {id}: profile {:?} has no delay", j.profile))?;
        if !(j.subtime.is_finite() && j.subtime >= 0.0 && delay.is_finite() && delay >= 0.0) {
            return Err(format!("job {id}: times must be finite and not negative"));
        }
        if j.walltime.is_some_and(|w| !w.is_finite() || w < 0.0) {
            return Err(format!("job {id}: bad walltime"));
        }
        let cpu = match p.get("cpu") {
            Some(v) => cpu_millis(v).map_err(|e| format!("job {id}: cpu: {e}"))?,
            None => opts.cpu_per_resource_millis.saturating_mul(j.res as u64),
        };
        let memory = match p.get("memory") {
            Some(v) => memory_bytes(v).map_err(|e| format!("job {id}: memory: {e}"))?,
            None => opts.memory_per_job_bytes,
        };
        jobs.push(SimJob {
            id,
            workload: workload.to_string(),
            profile: j.profile.clone(),
            submit: j.subtime,
            res: j.res,
            walltime: j.walltime.filter(|w| *w > 0.0),
            run_time: delay,
            cpu_millis: cpu,
            memory_bytes: memory,
            scheduler: p.get("scheduler").and_then(Value::as_str).map(String::from),
            manifest: None,
        });
    }
    Ok((jobs, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_with_batkube_extensions_and_v5() {
        let v4 = r#"{"nb_res": 1, "jobs": [
            {"id": "1", "subtime": 0, "walltime": 100, "res": 1, "profile": "d"},
            {"id": 2, "subtime": 3.5, "res": 2, "profile": "e"}],
          "profiles": {"d": {"type": "delay", "delay": 10, "cpu": "1500m", "memory": "1Gi", "scheduler": "default"},
                       "e": {"type": "delay", "delay": 20, "cpu": 3.516}}}"#;
        let (jobs, _) = read(v4, "w0", &ReadOptions::default()).unwrap();
        assert_eq!(jobs[0].cpu_millis, 1500);
        assert_eq!(jobs[0].memory_bytes, 1 << 30);
        assert_eq!(jobs[0].walltime, Some(100.0));
        assert_eq!(jobs[0].scheduler.as_deref(), Some("default"));
        assert_eq!(
            (jobs[1].id.as_str(), jobs[1].submit, jobs[1].res),
            ("2", 3.5, 2)
        );
        assert_eq!(jobs[1].cpu_millis, 3516);
        let v5 = r#"{"jobs": [{"id": 0, "subtime": 0, "res": 4, "profile": "p"}],
                    "profiles": {"p": {"type": "DelayProfile", "delay": 5}}}"#;
        let (jobs, _) = read(v5, "w1", &ReadOptions::default()).unwrap();
        // No cpu in the profile: one core per requested resource.
        assert_eq!(
            (
                jobs[0].cpu_millis,
                jobs[0].run_time,
                jobs[0].workload.as_str()
            ),
            (4000, 5.0, "w1")
        );
    }

    #[test]
    fn unsupported_and_broken_inputs_say_why() {
        let par = r#"{"jobs": [{"id": 0, "subtime": 0, "res": 4, "profile": "p"},
                              {"id": 1, "subtime": 0, "res": 1, "profile": "d"}],
                     "profiles": {"p": {"type": "ParallelTaskProfile", "cpu": [1], "com": [1]},
                                  "d": {"type": "delay", "delay": 1}}}"#;
        let (jobs, skipped) = read(par, "w0", &ReadOptions::default()).unwrap();
        assert_eq!(jobs.len(), 1);
        assert_eq!(skipped.unsupported.get("ParallelTaskProfile"), Some(&1));
        let missing =
            r#"{"jobs": [{"id": 0, "subtime": 0, "res": 1, "profile": "x"}], "profiles": {}}"#;
        assert!(read(missing, "w0", &ReadOptions::default())
            .unwrap_err()
            .contains("no profile"));
        assert!(read("[]", "w0", &ReadOptions::default()).is_err());
        let neg = r#"{"jobs": [{"id": 0, "subtime": -1, "res": 1, "profile": "p"}],
                     "profiles": {"p": {"type": "delay", "delay": 1}}}"#;
        assert!(read(neg, "w0", &ReadOptions::default()).is_err());
    }
}
