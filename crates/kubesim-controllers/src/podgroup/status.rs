//! A PodGroup's status from its pods, by the rules of scheduler-plugins'
//! PodGroup controller (v1alpha1, since the `Scheduled` phase and count
//! were removed):
//!
//! - no phase yet: `Pending`;
//! - `Pending`: `Scheduling` once the group has `minMember` pods, and
//!   `occupiedBy` names the owners of its first pod (`<ns>/<owner>`,
//!   sorted, comma-separated); the counts are left as they are;
//! - otherwise the counts are those of its pods' phases, and the phase is
//!   `Pending` with fewer than `minMember` pods, else `Scheduling` while
//!   fewer than `minMember` run or succeeded, else `Running`; `Failed`
//!   once one failed and failed, running and succeeded reach
//!   `minMember`; `Finished` once `minMember` succeeded.
//! - `Finished` and `Failed` are final: the status is never written again.
//!
//! Upstream also skips groups whose `scheduleStartTime` is more than 48
//! hours after their creation; nothing upstream writes that field any
//! more, so the check can never hold and is left out.

use serde_json::{json, Map, Value};

/// The status fields this controller decides (a zero count or an empty
/// `occupiedBy` is left out, as Go's `omitempty` does).
pub const OWNED: &[&str] = &["phase", "occupiedBy", "running", "succeeded", "failed"];

/// Whether the phase in `status` is one the controller never leaves.
pub fn is_final(status: &Value) -> bool {
    matches!(
        status.get("phase").and_then(Value::as_str),
        Some("Finished" | "Failed")
    )
}

/// The owned fields of a status, as the controller reads them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Fields {
    phase: String,
    occupied_by: String,
    running: i64,
    succeeded: i64,
    failed: i64,
}

impl Fields {
    fn of(status: &Value) -> Fields {
        let s = |k: &str| status.get(k).and_then(Value::as_str).unwrap_or("");
        let n = |k: &str| status.get(k).and_then(Value::as_i64).unwrap_or(0);
        Fields {
            phase: s("phase").to_string(),
            occupied_by: s("occupiedBy").to_string(),
            running: n("running"),
            succeeded: n("succeeded"),
            failed: n("failed"),
        }
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        if !self.phase.is_empty() {
            m.insert("phase".into(), json!(self.phase));
        }
        if !self.occupied_by.is_empty() {
            m.insert("occupiedBy".into(), json!(self.occupied_by));
        }
        for (k, v) in [
            ("running", self.running),
            ("succeeded", self.succeeded),
            ("failed", self.failed),
        ] {
            if v != 0 {
                m.insert(k.into(), json!(v));
            }
        }
        Value::Object(m)
    }
}

/// What the rules read of one member pod, kept as its events arrive so
/// that a reconcile parses no pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub phase: String,
    /// `<namespace>/<owner name>` of each of the pod's owners, sorted and
    /// joined; None when it has no owner (upstream then leaves the field).
    pub occupied_by: Option<String>,
}

impl Member {
    pub fn of(pod: &Value) -> Member {
        let ns = kubesim_core::meta::namespace(pod);
        let occupied_by = pod
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .map(|owners| {
                let mut refs: Vec<String> = owners
                    .iter()
                    .map(|o| format!("{ns}/{}", o["name"].as_str().unwrap_or("")))
                    .collect();
                refs.sort();
                refs.join(",")
            });
        Member {
            phase: pod
                .pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            occupied_by,
        }
    }
}

/// One reconcile of upstream's controller.
fn step(f: &Fields, min_member: i64, pods: &[Member]) -> Fields {
    let mut next = f.clone();
    let count = pods.len() as i64;
    match f.phase.as_str() {
        "" => next.phase = "Pending".into(),
        "Pending" => {
            if count >= min_member {
                next.phase = "Scheduling".into();
                if let Some(o) = pods.first().and_then(|p| p.occupied_by.clone()) {
                    next.occupied_by = o;
                }
            }
        }
        _ => {
            let of = |want: &str| pods.iter().filter(|p| p.phase == want).count() as i64;
            next.running = of("Running");
            next.succeeded = of("Succeeded");
            next.failed = of("Failed");
            let (r, s, x) = (next.running, next.succeeded, next.failed);
            // Upstream sets these one after another; the last that holds
            // wins, so they are tried here in the reverse order.
            next.phase = if count < min_member {
                "Pending"
            } else if s >= min_member {
                "Finished"
            } else if x != 0 && x + r + s >= min_member {
                "Failed"
            } else if s + r >= min_member {
                "Running"
            } else {
                "Scheduling"
            }
            .into();
        }
    }
    next
}

/// The status upstream's controller settles on from `old` for a group of
/// `min_member` with `pods` (in the order whose first names `occupiedBy`):
/// its steps, taken until one changes nothing or the phase is final.
pub fn settle(old: &Value, min_member: i64, pods: &[Member]) -> Value {
    let mut f = Fields::of(old);
    // At most three steps change anything: no phase, Pending, then the
    // counted phases, which a further step leaves as they are.
    for _ in 0..4 {
        if is_final(&f.to_value()) {
            break;
        }
        let next = step(&f, min_member, pods);
        if next == f {
            break;
        }
        f = next;
    }
    f.to_value()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(phase: &str) -> Member {
        Member::of(
            &json!({"metadata": {"namespace": "ns", "name": "p"}, "status": {"phase": phase}}),
        )
    }

    #[test]
    fn a_group_goes_from_pending_to_finished() {
        let empty = json!({});
        // Fewer pods than minMember: Pending, and it stays so.
        let s = settle(&empty, 3, &[pod("Pending"), pod("Pending")]);
        assert_eq!(s, json!({"phase": "Pending"}));
        assert_eq!(settle(&s, 3, &[pod("Pending"), pod("Pending")]), s);
        // All three: bound or not, none running yet.
        let three = [pod("Pending"), pod("Pending"), pod("Pending")];
        let s = settle(&s, 3, &three);
        assert_eq!(s, json!({"phase": "Scheduling"}));
        let s = settle(&s, 3, &[pod("Running"), pod("Running"), pod("Pending")]);
        assert_eq!(s, json!({"phase": "Scheduling", "running": 2}));
        let s = settle(&s, 3, &[pod("Running"), pod("Running"), pod("Running")]);
        assert_eq!(s, json!({"phase": "Running", "running": 3}));
        // Succeeded members still count toward running ones.
        let s = settle(&s, 3, &[pod("Succeeded"), pod("Running"), pod("Running")]);
        assert_eq!(s, json!({"phase": "Running", "running": 2, "succeeded": 1}));
        let done = [pod("Succeeded"), pod("Succeeded"), pod("Succeeded")];
        let s = settle(&s, 3, &done);
        assert_eq!(s, json!({"phase": "Finished", "succeeded": 3}));
        assert!(is_final(&s));
        // Final: pods deleted afterwards change nothing.
        assert_eq!(settle(&s, 3, &[]), s);
    }

    #[test]
    fn a_group_with_all_pods_at_once_settles_in_one_write() {
        // Upstream writes Pending, then Scheduling, then Running, one
        // reconcile each; the settled status is the last of them.
        let run = [pod("Running"), pod("Running")];
        assert_eq!(
            settle(&json!({}), 2, &run),
            json!({"phase": "Running", "running": 2})
        );
    }

    #[test]
    fn one_failed_member_fails_the_group() {
        let s = json!({"phase": "Running", "running": 3});
        let s = settle(&s, 3, &[pod("Failed"), pod("Running"), pod("Running")]);
        assert_eq!(s, json!({"phase": "Failed", "running": 2, "failed": 1}));
        assert!(is_final(&s));
        // Not while the members that did not fail are too few to count.
        let s = json!({"phase": "Scheduling"});
        let s = settle(&s, 3, &[pod("Failed"), pod("Pending"), pod("Pending")]);
        assert_eq!(s, json!({"phase": "Scheduling", "failed": 1}));
    }

    #[test]
    fn occupied_by_names_the_first_pods_owners() {
        let owned = Member::of(&json!({"metadata": {"namespace": "ns", "name": "a",
            "ownerReferences": [{"name": "job-b"}, {"name": "job-a"}]}}));
        let s = settle(&json!({"phase": "Pending"}), 1, &[owned]);
        assert_eq!(s["occupiedBy"], "ns/job-a,ns/job-b");
        // Without owners it stays empty.
        let s = settle(&json!({"phase": "Pending"}), 1, &[pod("Pending")]);
        assert!(s.get("occupiedBy").is_none());
    }

    #[test]
    fn fewer_pods_than_min_member_is_pending_again() {
        let s = json!({"phase": "Running", "running": 2});
        let s = settle(&s, 2, &[pod("Running")]);
        assert_eq!(s, json!({"phase": "Pending", "running": 1}));
    }
}
