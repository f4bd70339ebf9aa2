//! The pods a Job creates, and the completion indexes of Indexed Jobs.

use std::collections::BTreeSet;

use kubesim_core::meta;
use serde_json::{json, Value};

use super::TRACKING_FINALIZER;

/// The label naming a Job pod's Job (the older `job-name` is set too).
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
use crate::pods::from_template;

pub const INDEX_KEY: &str = "batch.kubernetes.io/job-completion-index";

/// A new pod for `job`; `index` is set for Indexed Jobs.
pub fn job_pod(job: &Value, index: Option<u32>) -> Value {
    let name = meta::name(job);
    let uid = meta::uid(job);
    let empty = json!({});
    let template = job.pointer("/spec/template").unwrap_or(&empty);
    let generate = match index {
        Some(i) => format!("{name}-{i}-"),
        None => format!("{name}-"),
    };
    let mut pod = from_template(template, job, &generate, None);
    let md = meta::metadata_mut(&mut pod);
    let labels = md
        .entry("labels")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    if let Some(labels) = labels {
        for k in ["batch.kubernetes.io/controller-uid", "controller-uid"] {
            labels.insert(k.into(), json!(uid));
        }
        for k in [JOB_NAME_LABEL, "job-name"] {
            labels.insert(k.into(), json!(name));
        }
        if let Some(i) = index {
            labels.insert(INDEX_KEY.into(), json!(i.to_string()));
        }
    }
    if let Some(i) = index {
        if let Some(a) = md
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut()
        {
            a.insert(INDEX_KEY.into(), json!(i.to_string()));
        }
    }
    let fins = md.entry("finalizers").or_insert_with(|| json!([]));
    if let Some(f) = fins.as_array_mut() {
        if !f.iter().any(|x| x == TRACKING_FINALIZER) {
            f.push(json!(TRACKING_FINALIZER));
        }
    }
    if let Some(i) = index {
        pod["spec"]["hostname"] = json!(format!("{name}-{i}"));
        // Containers learn their index from the annotation, as upstream's
        // JOB_COMPLETION_INDEX variable does.
        if let Some(cs) = pod["spec"]["containers"].as_array_mut() {
            for c in cs {
                if !c.get("env").is_some_and(Value::is_array) {
                    c["env"] = json!([]);
                }
                if let Some(env) = c["env"].as_array_mut() {
                    env.push(
                        json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "fieldPath": format!("metadata.annotations['{INDEX_KEY}']")}}}),
                    );
                }
            }
        }
    }
    pod
}

/// The completion index a pod carries, if it is a valid number.
pub fn pod_index(pod: &Value) -> Option<u32> {
    meta::annotations(pod).get(INDEX_KEY)?.parse().ok()
}

/// Parses `status.completedIndexes` (`1,3-5,7`); ignores malformed parts.
pub fn parse_indexes(s: &str) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    // Bounded by what a Job may ask for; a hostile range
                    // must not allocate without limit.
                    out.extend(a..=b.min(a.saturating_add(100_000)));
                }
            }
            None => {
                if let Ok(a) = part.parse() {
                    out.insert(a);
                }
            }
        }
    }
    out
}

/// Formats indexes compactly: consecutive runs of three or more as ranges
/// (`0-2,4`), pairs as two numbers, as upstream writes them.
pub fn format_indexes(set: &BTreeSet<u32>) -> String {
    let mut parts = Vec::new();
    let mut it = set.iter().copied().peekable();
    while let Some(start) = it.next() {
        let mut end = start;
        while it.peek() == Some(&(end + 1)) {
            end += 1;
            it.next();
        }
        match end - start {
            0 => parts.push(start.to_string()),
            1 => {
                parts.push(start.to_string());
                parts.push(end.to_string());
            }
            _ => parts.push(format!("{start}-{end}")),
        }
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_round_trip() {
        let s = parse_indexes("0-2,4,6,7");
        assert_eq!(
            s.iter().copied().collect::<Vec<_>>(),
            vec![0, 1, 2, 4, 6, 7]
        );
        assert_eq!(format_indexes(&s), "0-2,4,6,7");
        assert_eq!(format_indexes(&BTreeSet::new()), "");
        assert!(parse_indexes("x,-,3-").is_empty());
    }

    #[test]
    fn indexed_pods_carry_index_hostname_and_finalizer() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "ns", "uid": "u1"},
            "spec": {"template": {"metadata": {"labels": {"app": "pi"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        let p = job_pod(&job, Some(3));
        assert_eq!(p["metadata"]["generateName"], "pi-3-");
        assert_eq!(p["metadata"]["labels"][INDEX_KEY], "3");
        assert_eq!(p["metadata"]["labels"]["job-name"], "pi");
        assert_eq!(
            p["metadata"]["labels"]["batch.kubernetes.io/controller-uid"],
            "u1"
        );
        assert_eq!(p["metadata"]["annotations"][INDEX_KEY], "3");
        assert_eq!(p["metadata"]["finalizers"][0], TRACKING_FINALIZER);
        assert_eq!(p["spec"]["hostname"], "pi-3");
        assert_eq!(p["spec"]["restartPolicy"], "Never");
        assert_eq!(
            p["spec"]["containers"][0]["env"][0]["name"],
            "JOB_COMPLETION_INDEX"
        );
        assert_eq!(pod_index(&p), Some(3));
        let q = job_pod(&job, None);
        assert_eq!(q["metadata"]["generateName"], "pi-");
        assert!(q["spec"]["hostname"].is_null());
    }
}
