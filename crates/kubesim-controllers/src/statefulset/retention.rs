//! `spec.persistentVolumeClaimRetentionPolicy`: whether a set's claims go
//! when the set is deleted (`whenDeleted`) or when their ordinal is scaled
//! away (`whenScaled`). The controller deletes no claim itself; it gives
//! claims owner references and lets the garbage collector act, as
//! upstream does:
//!
//! | whenScaled | whenDeleted | claim of a kept ordinal | of a scaled-down one |
//! |---|---|---|---|
//! | Retain | Retain | no reference | no reference |
//! | Retain | Delete | the set | the set |
//! | Delete | Retain | no reference | its pod |
//! | Delete | Delete | the set | its pod |
//!
//! References are told apart by apiVersion, kind and name; one whose uid
//! is not the live object's is stale (left by a deleted namesake) and the
//! claim is then left alone, as is a claim another controller controls.

use kubesim_core::meta;
use serde_json::{json, Value};

/// The policy; anything but `Delete` retains, as upstream treats unknown
/// values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    pub delete_with_set: bool,
    pub delete_on_scale_down: bool,
}

impl Policy {
    pub fn of(set: &Value) -> Policy {
        let delete = |k: &str| {
            set.pointer(&format!("/spec/persistentVolumeClaimRetentionPolicy/{k}"))
                .and_then(Value::as_str)
                == Some("Delete")
        };
        Policy {
            delete_with_set: delete("whenDeleted"),
            delete_on_scale_down: delete("whenScaled"),
        }
    }

    fn retains_all(self) -> bool {
        !self.delete_with_set && !self.delete_on_scale_down
    }
}

/// An object a claim may reference: the set or one of its pods. A pod not
/// created yet has an empty uid.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub name: &'a str,
    pub uid: &'a str,
}

impl<'a> Owner<'a> {
    pub fn set(set: &'a Value) -> Self {
        Owner {
            api_version: "apps/v1",
            kind: "StatefulSet",
            name: meta::name(set),
            uid: meta::uid(set),
        }
    }

    pub fn pod(name: &'a str, uid: &'a str) -> Self {
        Owner {
            api_version: "v1",
            kind: "Pod",
            name,
            uid,
        }
    }

    fn controller_ref(&self) -> Value {
        json!({"apiVersion": self.api_version, "kind": self.kind, "name": self.name,
            "uid": self.uid, "controller": true, "blockOwnerDeletion": true})
    }
}

fn refs(claim: &Value) -> &[Value] {
    claim
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn field<'a>(r: &'a Value, k: &str) -> &'a str {
    r.get(k).and_then(Value::as_str).unwrap_or("")
}

fn is_controller(r: &Value) -> bool {
    r.get("controller").and_then(Value::as_bool) == Some(true)
}

/// Whether `r` names `o` (by apiVersion, kind and name, not uid).
fn names(r: &Value, o: &Owner) -> bool {
    field(r, "apiVersion") == o.api_version
        && field(r, "kind") == o.kind
        && field(r, "name") == o.name
}

fn has_ref(claim: &Value, o: &Owner) -> bool {
    !o.uid.is_empty() && refs(claim).iter().any(|r| field(r, "uid") == o.uid)
}

/// The claim's first reference naming `o` carries another uid.
fn has_stale_ref(claim: &Value, o: &Owner) -> bool {
    refs(claim)
        .iter()
        .find(|r| names(r, o))
        .is_some_and(|r| field(r, "uid") != o.uid)
}

/// Another controller (or a stale reference to ours) manages the claim.
/// Under Retain/Retain nothing of ours would be added, so it does not
/// matter.
fn has_unexpected_controller(claim: &Value, set: &Owner, pod: &Owner, policy: Policy) -> bool {
    if policy.retains_all() {
        return false;
    }
    refs(claim).iter().any(|r| {
        for o in [set, pod] {
            if names(r, o) {
                return field(r, "uid") != o.uid;
            }
        }
        is_controller(r)
    })
}

/// The set or the pod is an owner without being the controller.
fn has_non_controller_owner(claim: &Value, set: &Owner, pod: &Owner) -> bool {
    refs(claim).iter().any(|r| {
        let uid = field(r, "uid");
        !uid.is_empty() && (uid == set.uid || uid == pod.uid) && !is_controller(r)
    })
}

/// Whether the claim's references already say what the policy asks for
/// the pod's claims; `scaled_down` tells whether the pod's ordinal is
/// beyond the wanted replicas.
pub fn up_to_date(
    claim: &Value,
    set: &Owner,
    pod: &Owner,
    policy: Policy,
    scaled_down: bool,
) -> bool {
    if has_stale_ref(claim, set) || has_stale_ref(claim, pod) {
        return true;
    }
    let (to_set, to_pod) = (has_ref(claim, set), has_ref(claim, pod));
    if has_unexpected_controller(claim, set, pod, policy) {
        // Ours must go; nothing is added on top of another controller.
        return !to_set && !to_pod;
    }
    if has_non_controller_owner(claim, set, pod) {
        return false;
    }
    let (want_set, want_pod) = wanted(policy, scaled_down);
    to_set == want_set && to_pod == want_pod
}

/// Which of (set, pod) the claim should reference.
fn wanted(policy: Policy, scaled_down: bool) -> (bool, bool) {
    let to_pod = policy.delete_on_scale_down && scaled_down;
    let to_set = policy.delete_with_set && !to_pod;
    (to_set, to_pod)
}

/// Rewrites the claim's references to the set and the pod as the policy
/// asks (see [`up_to_date`]); other owners are kept.
pub fn set_owners(claim: &mut Value, set: &Owner, pod: &Owner, policy: Policy, scaled_down: bool) {
    let unexpected = has_unexpected_controller(claim, set, pod, policy);
    let mut kept: Vec<Value> = refs(claim)
        .iter()
        .filter(|r| !names(r, set) && !names(r, pod))
        .cloned()
        .collect();
    if !unexpected {
        let (to_set, to_pod) = wanted(policy, scaled_down);
        if to_set {
            kept.push(set.controller_ref());
        }
        if to_pod {
            kept.push(pod.controller_ref());
        }
    }
    let m = meta::metadata_mut(claim);
    if kept.is_empty() {
        m.remove("ownerReferences");
    } else {
        m.insert("ownerReferences".into(), Value::Array(kept));
    }
}

/// Whether an existing claim must keep the pod `pod_name` (not created
/// yet) from being created: with `whenScaled: Delete`, a claim still
/// referencing an earlier pod of that name is about to be collected, and
/// a new pod must not start on it.
pub fn blocks_new_pod(claim: &Value, pod_name: &str, policy: Policy) -> bool {
    policy.delete_on_scale_down && has_stale_ref(claim, &Owner::pod(pod_name, ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> Value {
        json!({"metadata": {"name": "web", "uid": "s1"}})
    }

    fn claim(refs: Value) -> Value {
        json!({"metadata": {"name": "data-web-1", "ownerReferences": refs}})
    }

    fn policy(when_deleted: &str, when_scaled: &str) -> Policy {
        Policy::of(&json!({"spec": {"persistentVolumeClaimRetentionPolicy":
            {"whenDeleted": when_deleted, "whenScaled": when_scaled}}}))
    }

    fn uids(c: &Value) -> Vec<&str> {
        refs(c).iter().map(|r| field(r, "uid")).collect()
    }

    /// Applies the policy to a claim without references and returns the
    /// uids it ends up referencing.
    fn owners_after(p: Policy, scaled_down: bool) -> Vec<String> {
        let s = set();
        let (so, po) = (Owner::set(&s), Owner::pod("web-1", "p1"));
        let mut c = claim(json!([]));
        set_owners(&mut c, &so, &po, p, scaled_down);
        assert!(up_to_date(&c, &so, &po, p, scaled_down));
        uids(&c).into_iter().map(String::from).collect()
    }

    #[test]
    fn the_policy_table() {
        let none: Vec<String> = vec![];
        assert_eq!(owners_after(policy("Retain", "Retain"), false), none);
        assert_eq!(owners_after(policy("Retain", "Retain"), true), none);
        assert_eq!(owners_after(policy("Delete", "Retain"), false), ["s1"]);
        assert_eq!(owners_after(policy("Delete", "Retain"), true), ["s1"]);
        assert_eq!(owners_after(policy("Retain", "Delete"), false), none);
        assert_eq!(owners_after(policy("Retain", "Delete"), true), ["p1"]);
        assert_eq!(owners_after(policy("Delete", "Delete"), false), ["s1"]);
        assert_eq!(owners_after(policy("Delete", "Delete"), true), ["p1"]);
        assert_eq!(Policy::of(&json!({})), Policy::default());
    }

    #[test]
    fn scaling_down_moves_the_reference_from_set_to_pod() {
        let s = set();
        let (so, po) = (Owner::set(&s), Owner::pod("web-1", "p1"));
        let p = policy("Delete", "Delete");
        let mut c = claim(json!([so.controller_ref(),
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "c1"}]));
        assert!(up_to_date(&c, &so, &po, p, false));
        assert!(!up_to_date(&c, &so, &po, p, true));
        set_owners(&mut c, &so, &po, p, true);
        assert_eq!(uids(&c), ["c1", "p1"]);
        assert_eq!(refs(&c)[1]["controller"], true);
        // Back to Retain: our references go, others stay.
        let retain = Policy::default();
        assert!(!up_to_date(&c, &so, &po, retain, true));
        set_owners(&mut c, &so, &po, retain, true);
        assert_eq!(uids(&c), ["c1"]);
    }

    #[test]
    fn stale_references_and_other_controllers_are_respected() {
        let s = set();
        let (so, po) = (Owner::set(&s), Owner::pod("web-1", "p2"));
        let p = policy("Delete", "Delete");
        // A reference to an earlier pod web-1: left for the collector.
        let stale = claim(json!([Owner::pod("web-1", "p1").controller_ref()]));
        assert!(up_to_date(&stale, &so, &po, p, false));
        assert!(blocks_new_pod(&stale, "web-1", p));
        assert!(!blocks_new_pod(&stale, "web-1", policy("Delete", "Retain")));
        assert!(!blocks_new_pod(&claim(json!([])), "web-1", p));
        // Someone else's controller: nothing of ours is added.
        let other = json!({"apiVersion": "example.com/v1", "kind": "Backup", "name": "b",
            "uid": "b1", "controller": true});
        let mut c = claim(json!([other.clone()]));
        assert!(up_to_date(&c, &so, &po, p, false));
        c = claim(json!([other, so.controller_ref()]));
        assert!(!up_to_date(&c, &so, &po, p, false));
        set_owners(&mut c, &so, &po, p, false);
        assert_eq!(uids(&c), ["b1"]);
        // Our reference without `controller` is rewritten.
        let mut plain = claim(json!([{"apiVersion": "apps/v1", "kind": "StatefulSet",
            "name": "web", "uid": "s1"}]));
        assert!(!up_to_date(&plain, &so, &po, p, false));
        set_owners(&mut plain, &so, &po, p, false);
        assert_eq!(refs(&plain)[0]["controller"], true);
    }
}
