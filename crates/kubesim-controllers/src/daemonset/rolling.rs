//! Rolling a DaemonSet's pods to the current template (revision `hash`),
//! in one of upstream's two ways:
//!
//! - **maxUnavailable** (maxSurge 0): old pods are deleted while at most
//!   maxUnavailable nodes lack an available pod, and the manage pass
//!   creates their replacements; a node is briefly without its daemon.
//! - **maxSurge**: on at most maxSurge nodes at a time a new pod starts
//!   beside the old one, and the old one is deleted once the new one is
//!   available (Ready for `minReadySeconds`), so no node ever lacks a
//!   working daemon. An old pod that is unavailable anyway gets its
//!   replacement at once, outside the budget.
//!
//! Pods being deleted are not counted here (the caller leaves them out),
//! so an update progresses while nodes drain. Every function sees each
//! node's live pods oldest first, as upstream sorts them.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::{meta, ApiError};
use serde_json::Value;

use super::REVISION_LABEL;
use crate::{intstr, pods};

/// How far an update may go at once, in pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub max_surge: i64,
    pub max_unavailable: i64,
}

impl Budget {
    /// `spec.updateStrategy.rollingUpdate` against the `desired` number of
    /// nodes, percentages rounded up (both, as upstream). OnDelete sets
    /// never surge. A set allowing neither (refused by validation, but it
    /// may have been stored before) may have one node unavailable, as
    /// upstream falls back to.
    pub fn of(ds: &Value, desired: i64) -> Result<Budget, ApiError> {
        let rolling = ds
            .pointer("/spec/updateStrategy/type")
            .and_then(Value::as_str)
            != Some("OnDelete");
        let ru = |k: &str| ds.pointer(&format!("/spec/updateStrategy/rollingUpdate/{k}"));
        let max_surge = if rolling {
            intstr::scaled(ru("maxSurge"), desired, true, 0)?.max(0)
        } else {
            0
        };
        let mut max_unavailable = intstr::scaled(ru("maxUnavailable"), desired, true, 1)?.max(0);
        if desired > 0 && max_surge == 0 && max_unavailable == 0 {
            max_unavailable = 1;
        }
        Ok(Budget {
            max_surge,
            max_unavailable,
        })
    }

    /// Whether a node may run an old and a new pod side by side.
    pub fn surging(&self) -> bool {
        self.max_surge > 0
    }
}

/// When availability is judged: `minReadySeconds` and the clock's now.
#[derive(Debug, Clone, Copy)]
pub struct Availability {
    pub min_ready_seconds: i64,
    pub now: jiff::Timestamp,
}

impl Availability {
    fn of(&self, p: &Value) -> bool {
        pods::is_available(p, self.min_ready_seconds, self.now)
    }
}

pub fn is_updated(p: &Value, hash: &str) -> bool {
    meta::labels(p).get(REVISION_LABEL).map(String::as_str) == Some(hash)
}

/// Which of a node's live pods (two or more, oldest first) go. Without
/// surge all but the oldest. With surge the oldest new and the oldest old
/// pod may stay together, but only while the old one is ready and the new
/// one not yet available; either way the others go.
pub fn excess_on_node(
    alive: &[Arc<Value>],
    hash: &str,
    surging: bool,
    at: Availability,
) -> Vec<Arc<Value>> {
    if !surging {
        return alive.iter().skip(1).cloned().collect();
    }
    let mut newest: Option<&Arc<Value>> = None;
    let mut oldest: Option<&Arc<Value>> = None;
    let mut excess = Vec::new();
    for p in alive {
        let slot = if is_updated(p, hash) {
            &mut newest
        } else {
            &mut oldest
        };
        match slot {
            None => *slot = Some(p),
            Some(_) => excess.push(p.clone()),
        }
    }
    if let (Some(new), Some(old)) = (newest, oldest) {
        if !pods::is_ready(old) || at.of(new) {
            excess.push(old.clone());
        }
    }
    excess
}

/// The old pods to delete under maxUnavailable: the unavailable ones, and
/// available ones while the number of nodes without an available pod stays
/// within the budget.
pub fn unavailable_step(
    eligible: &[&String],
    by_node: &BTreeMap<String, Vec<Arc<Value>>>,
    hash: &str,
    max_unavailable: i64,
    at: Availability,
) -> Vec<Arc<Value>> {
    let mut unavailable = 0;
    let mut delete = Vec::new();
    let mut old_available = Vec::new();
    for node in eligible {
        let Some(p) = by_node.get(*node).and_then(|ps| ps.first()) else {
            unavailable += 1;
            continue;
        };
        let old = !is_updated(p, hash);
        if !at.of(p) {
            unavailable += 1;
            if old {
                delete.push(p.clone());
            }
        } else if old {
            old_available.push(p.clone());
        }
    }
    let budget = (max_unavailable - unavailable).max(0) as usize;
    delete.extend(old_available.into_iter().take(budget));
    delete
}

/// What a surge step does: nodes to start a new pod on, old pods to delete.
#[derive(Debug, Default)]
pub struct SurgeStep {
    pub create: Vec<String>,
    pub delete: Vec<Arc<Value>>,
}

/// One step of a maxSurge update. Per node: an old pod alone is replaced
/// at once when unavailable, else it is a candidate; a new pod beside an
/// old one either is still coming up (it uses the budget) or is available
/// and its old pod goes. Candidates take what is left of maxSurge.
pub fn surge_step(
    eligible: &[&String],
    by_node: &BTreeMap<String, Vec<Arc<Value>>>,
    hash: &str,
    max_surge: i64,
    at: Availability,
) -> SurgeStep {
    let mut step = SurgeStep::default();
    let mut candidates = Vec::new();
    let mut surging = 0;
    for node in eligible {
        let ps = by_node.get(*node).map(Vec::as_slice).unwrap_or(&[]);
        let (new, old): (Vec<&Arc<Value>>, Vec<&Arc<Value>>) =
            ps.iter().partition(|p| is_updated(p, hash));
        if new.len() > 1 || old.len() > 1 {
            // The manage pass prunes such nodes first; count it as busy.
            surging += 1;
            continue;
        }
        match (new.first(), old.first()) {
            (_, None) => {}
            (None, Some(old)) => {
                if at.of(old) {
                    candidates.push((*node).clone());
                } else {
                    step.create.push((*node).clone());
                }
            }
            (Some(new), Some(old)) => {
                if at.of(new) {
                    step.delete.push((*old).clone());
                } else {
                    surging += 1;
                }
            }
        }
    }
    let room = (max_surge - surging).clamp(0, candidates.len() as i64) as usize;
    step.create.extend(candidates.into_iter().take(room));
    step
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const T0: &str = "2026-01-01T00:00:00Z";

    fn at(now: &str) -> Availability {
        Availability {
            min_ready_seconds: 10,
            now: now.parse().unwrap(),
        }
    }

    /// A pod of revision `rev`, Ready since T0 when `ready`.
    fn pod(name: &str, rev: &str, ready: bool) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": name, "labels": {REVISION_LABEL: rev}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready",
                "status": if ready {"True"} else {"False"}, "lastTransitionTime": T0}]}}),
        )
    }

    fn names(ps: &[Arc<Value>]) -> Vec<&str> {
        ps.iter().map(|p| meta::name(p)).collect()
    }

    fn ds(strategy: Value) -> Value {
        json!({"spec": {"updateStrategy": strategy}})
    }

    #[test]
    fn budgets_round_up_and_fall_back_to_one_unavailable() {
        let b = Budget::of(
            &ds(json!({"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}})),
            5,
        )
        .unwrap();
        assert_eq!(
            b,
            Budget {
                max_surge: 2,
                max_unavailable: 0
            }
        );
        assert!(b.surging());
        let none = ds(json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}));
        assert_eq!(Budget::of(&none, 3).unwrap().max_unavailable, 1);
        let on_delete = ds(json!({"type": "OnDelete", "rollingUpdate": {"maxSurge": 1}}));
        assert!(!Budget::of(&on_delete, 3).unwrap().surging());
        assert_eq!(Budget::of(&json!({}), 3).unwrap().max_unavailable, 1);
    }

    #[test]
    fn surge_keeps_old_and_new_only_while_the_new_one_comes_up() {
        let old = pod("old", "a", true);
        let new = pod("new", "b", true);
        let extra = pod("extra", "b", true);
        let both = [old.clone(), new.clone(), extra];
        // Ready since T0 but minReadySeconds (10) not yet over.
        assert_eq!(
            names(&excess_on_node(
                &both,
                "b",
                true,
                at("2026-01-01T00:00:05Z")
            )),
            ["extra"]
        );
        assert_eq!(
            names(&excess_on_node(
                &both,
                "b",
                true,
                at("2026-01-01T00:00:10Z")
            )),
            ["extra", "old"]
        );
        let tired = [pod("old", "a", false), pod("new", "b", false)];
        assert_eq!(names(&excess_on_node(&tired, "b", true, at(T0))), ["old"]);
        assert_eq!(
            names(&excess_on_node(&[old, new], "b", false, at(T0))),
            ["new"]
        );
    }

    #[test]
    fn surge_step_respects_the_budget() {
        let nodes: Vec<String> = ["n1", "n2", "n3", "n4", "n5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let eligible: Vec<&String> = nodes.iter().collect();
        let later = at("2026-01-01T00:01:00Z");
        let mut by_node = BTreeMap::new();
        // n1: surged, new pod available: its old pod goes.
        by_node.insert(
            "n1".into(),
            vec![pod("o1", "a", true), pod("x1", "b", true)],
        );
        // n2: surged, new pod not ready yet: uses the budget.
        by_node.insert(
            "n2".into(),
            vec![pod("o2", "a", true), pod("x2", "b", false)],
        );
        // n3 and n4: old and available: candidates.
        by_node.insert("n3".into(), vec![pod("o3", "a", true)]);
        by_node.insert("n4".into(), vec![pod("o4", "a", true)]);
        // n5: old and not ready: replaced at once.
        by_node.insert("n5".into(), vec![pod("o5", "a", false)]);
        let step = surge_step(&eligible, &by_node, "b", 2, later);
        assert_eq!(step.create, ["n5", "n3"]);
        assert_eq!(names(&step.delete), ["o1"]);
        let step = surge_step(&eligible, &by_node, "b", 1, later);
        assert_eq!(step.create, ["n5"]);
        // Nothing old left: nothing to do.
        let done: BTreeMap<String, Vec<Arc<Value>>> = nodes
            .iter()
            .map(|n| (n.clone(), vec![pod(n, "b", true)]))
            .collect();
        let step = surge_step(&eligible, &done, "b", 1, later);
        assert!(step.create.is_empty() && step.delete.is_empty());
    }

    #[test]
    fn unavailable_step_deletes_within_the_budget() {
        let nodes: Vec<String> = ["n1", "n2", "n3"].iter().map(|s| s.to_string()).collect();
        let eligible: Vec<&String> = nodes.iter().collect();
        let mut by_node = BTreeMap::new();
        by_node.insert("n1".into(), vec![pod("o1", "a", true)]);
        by_node.insert("n2".into(), vec![pod("o2", "a", true)]);
        by_node.insert("n3".into(), vec![pod("o3", "a", false)]);
        let later = at("2026-01-01T00:01:00Z");
        // n3 is down already, so one more may go with a budget of 2.
        let del = unavailable_step(&eligible, &by_node, "b", 2, later);
        assert_eq!(names(&del), ["o3", "o1"]);
        let del = unavailable_step(&eligible, &by_node, "b", 1, later);
        assert_eq!(names(&del), ["o3"]);
    }
}
