//! DefaultPreemption on hand-built snapshots: which node is nominated and
//! which pods are evicted, with the reasoning in the comments. The filters
//! are a CPU fit check (plus, where said, InterPodAffinity or
//! VolumeRestrictions).

mod plugin_fixtures;

use std::collections::BTreeMap;

use kubesim_runtime::ObjectKey;
use kubesim_scheduler::framework::{
    Code, Filters, Nomination, PodInfo, PostFilter, Snapshot, Status,
};
use kubesim_scheduler::plugins::interpod_affinity::InterPodAffinity;
use kubesim_scheduler::plugins::volume_restrictions::VolumeRestrictions;
use kubesim_scheduler::preemption::DefaultPreemption;
use plugin_fixtures::{node, pod_with, snapshot, TestFilters};
use serde_json::{json, Value};

/// A pod with `app` label, priority and CPU request.
fn p(name: &str, app: &str, priority: i32, milli_cpu: i64) -> PodInfo {
    pod_with(
        "default",
        name,
        &[("app", app)],
        json!({}),
        json!({}),
        priority,
        milli_cpu,
    )
}

fn started(name: &str, priority: i32, milli_cpu: i64, at: &str) -> PodInfo {
    pod_with(
        "default",
        name,
        &[("app", "x")],
        json!({}),
        json!({"status": {"startTime": at}}),
        priority,
        milli_cpu,
    )
}

fn cpu_only() -> TestFilters {
    TestFilters {
        plugins: Vec::new(),
    }
}

/// The Filter verdict of every node, as the cycle hands it to PostFilter.
fn statuses(filters: &dyn Filters, pod: &PodInfo, snap: &Snapshot) -> BTreeMap<String, Status> {
    let state = match filters.pre_filter(pod, snap) {
        Ok(s) => s,
        Err(s) => {
            return snap
                .nodes
                .iter()
                .map(|n| (n.name.clone(), s.clone()))
                .collect()
        }
    };
    snap.nodes
        .iter()
        .map(|n| (n.name.clone(), filters.filter(&state, pod, n)))
        .collect()
}

fn preempt(filters: &dyn Filters, pod: &PodInfo, snap: &Snapshot) -> Option<Nomination> {
    let dp = DefaultPreemption::new(&Value::Null).unwrap();
    let st = statuses(filters, pod, snap);
    dp.post_filter(filters, pod, snap, &st)
}

fn names(n: &Nomination) -> Vec<String> {
    n.victims.iter().map(|v| v.key.name.clone()).collect()
}

#[test]
fn picks_the_node_with_the_lowest_priority_victims() {
    // Both nodes are full (3000 of 4000m used); the pod needs 2000m. Either
    // node works by evicting its one pod; n2's victim has priority 5 against
    // n1's 10, so n2 wins on "lowest highest-victim priority".
    let snap = snapshot(vec![
        node("n1", &[], 4000, vec![p("a", "x", 10, 3000)]),
        node("n2", &[], 4000, vec![p("b", "x", 5, 3000)]),
    ]);
    let incoming = p("new", "web", 100, 2000);
    let n = preempt(&cpu_only(), &incoming, &snap).unwrap();
    assert_eq!(n.node, "n2");
    assert_eq!(names(&n), vec!["b"]);
}

#[test]
fn reprieve_keeps_pods_that_need_not_go() {
    // n1 (4000m) holds low1 (prio 1, 1000m), low2 (prio 2, 1000m), low3
    // (prio 3, 2000m); the pod needs 2000m. With all three gone it fits.
    // Giving back from the most important: low3 back -> 2000m used, 2000m
    // free: fits, low3 stays. low2 back -> 3000m used: no, low2 goes. low1
    // back -> 3000m used: no, low1 goes. Victims, most important first:
    // low2, low1.
    let snap = snapshot(vec![node(
        "n1",
        &[],
        4000,
        vec![
            p("low1", "x", 1, 1000),
            p("low2", "x", 2, 1000),
            p("low3", "x", 3, 2000),
        ],
    )]);
    let n = preempt(&cpu_only(), &p("new", "web", 10, 2000), &snap).unwrap();
    assert_eq!(n.node, "n1");
    assert_eq!(names(&n), vec!["low2", "low1"]);
}

#[test]
fn pods_of_equal_or_higher_priority_are_never_victims() {
    // The only pod has the incoming pod's own priority: nothing to evict.
    let snap = snapshot(vec![node("n1", &[], 1000, vec![p("peer", "x", 10, 1000)])]);
    assert!(preempt(&cpu_only(), &p("new", "web", 10, 1000), &snap).is_none());
}

fn with_pdb(mut snap: Snapshot, app: &str, allowed: i64) -> Snapshot {
    snap.pdbs.push(std::sync::Arc::new(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"namespace": "default", "name": format!("pdb-{app}")},
        "spec": {"selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": allowed}
    })));
    snap
}

#[test]
fn prefers_the_node_without_pdb_violations() {
    // n1's victim (prio 1) is guarded by a PDB allowing no disruption; n2's
    // victim has a higher priority (5) but no budget. Fewest violations
    // comes first: n2.
    let snap = snapshot(vec![
        node("n1", &[], 2000, vec![p("g", "guarded", 1, 2000)]),
        node("n2", &[], 2000, vec![p("f", "free", 5, 2000)]),
    ]);
    let snap = with_pdb(snap, "guarded", 0);
    let n = preempt(&cpu_only(), &p("new", "web", 10, 2000), &snap).unwrap();
    assert_eq!(n.node, "n2");
    assert_eq!(names(&n), vec!["f"]);

    // With one disruption allowed, g's eviction violates nothing and n1
    // wins on the lower victim priority.
    let snap = snapshot(vec![
        node("n1", &[], 2000, vec![p("g", "guarded", 1, 2000)]),
        node("n2", &[], 2000, vec![p("f", "free", 5, 2000)]),
    ]);
    let n = preempt(
        &cpu_only(),
        &p("new", "web", 10, 2000),
        &with_pdb(snap, "guarded", 1),
    )
    .unwrap();
    assert_eq!(n.node, "n1");
}

#[test]
fn pdb_guarded_pods_are_reprieved_first() {
    // n1 (4000m): g (prio 1, PDB allows 0) and f (prio 2, no PDB), 2000m
    // each; the pod needs 2000m, so one must go. Budget-violating pods are
    // given back first: g back -> fits, g stays; f back -> does not fit,
    // f goes. Without the PDB, f (more important) would be given back first
    // and g would go.
    let pods = || vec![p("g", "guarded", 1, 2000), p("f", "free", 2, 2000)];
    let incoming = p("new", "web", 10, 2000);
    let guarded = with_pdb(snapshot(vec![node("n1", &[], 4000, pods())]), "guarded", 0);
    let n = preempt(&cpu_only(), &incoming, &guarded).unwrap();
    assert_eq!(names(&n), vec!["f"]);
    let plain = snapshot(vec![node("n1", &[], 4000, pods())]);
    let n = preempt(&cpu_only(), &incoming, &plain).unwrap();
    assert_eq!(names(&n), vec!["g"]);
}

#[test]
fn preemption_policy_never_does_not_preempt() {
    let snap = snapshot(vec![node("n1", &[], 1000, vec![p("low", "x", 1, 1000)])]);
    let never = pod_with(
        "default",
        "new",
        &[],
        json!({"preemptionPolicy": "Never"}),
        json!({}),
        100,
        1000,
    );
    assert!(preempt(&cpu_only(), &never, &snap).is_none());
    // The same pod with the default policy evicts `low`.
    let n = preempt(&cpu_only(), &p("new", "web", 100, 1000), &snap).unwrap();
    assert_eq!(names(&n), vec!["low"]);
}

#[test]
fn unresolvable_nodes_are_not_candidates() {
    let snap = snapshot(vec![node("n1", &[], 1000, vec![p("low", "x", 1, 1000)])]);
    let incoming = p("new", "web", 100, 1000);
    let mut st = statuses(&cpu_only(), &incoming, &snap);
    st.insert(
        "n1".into(),
        Status::unresolvable("node(s) had untolerated taint"),
    );
    let dp = DefaultPreemption::new(&json!({})).unwrap();
    assert!(dp.post_filter(&cpu_only(), &incoming, &snap, &st).is_none());
}

#[test]
fn ties_break_on_priority_sum_count_then_start_time() {
    // All candidates' most important victim has priority 3.
    // n1: victims 3 and 3; n2: victims 3 and 1 -> n2 has the smaller sum.
    let snap = snapshot(vec![
        node(
            "n1",
            &[],
            2000,
            vec![p("a1", "x", 3, 1000), p("a2", "x", 3, 1000)],
        ),
        node(
            "n2",
            &[],
            2000,
            vec![p("b1", "x", 3, 1000), p("b2", "x", 1, 1000)],
        ),
    ]);
    let n = preempt(&cpu_only(), &p("new", "web", 10, 2000), &snap).unwrap();
    assert_eq!(n.node, "n2");

    // Equal priorities and counts: the node whose top-priority victim
    // started most recently wins (less work lost): n2 (started 12:00).
    let snap = snapshot(vec![
        node(
            "n1",
            &[],
            1000,
            vec![started("old", 3, 1000, "2024-01-01T10:00:00Z")],
        ),
        node(
            "n2",
            &[],
            1000,
            vec![started("young", 3, 1000, "2024-01-01T12:00:00Z")],
        ),
    ]);
    let n = preempt(&cpu_only(), &p("new", "web", 10, 1000), &snap).unwrap();
    assert_eq!(n.node, "n2");
    assert_eq!(names(&n), vec!["young"]);
}

#[test]
fn eviction_can_cure_anti_affinity() {
    // The pod has hostname anti-affinity to app=web; a low-priority web pod
    // sits on the only node. InterPodAffinity says Unschedulable there;
    // with the web pod removed PreFilter, re-run on the reduced snapshot,
    // no longer sees it, so evicting it is the answer.
    let snap = snapshot(vec![node("n1", &[], 4000, vec![p("w", "web", 1, 100)])]);
    let incoming = pod_with(
        "default",
        "new",
        &[("app", "api")],
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
        json!({}),
        10,
        100,
    );
    let filters = TestFilters {
        plugins: vec![Box::new(InterPodAffinity::new(&Value::Null).unwrap())],
    };
    let st = statuses(&filters, &incoming, &snap);
    assert_eq!(
        st["n1"].code,
        kubesim_scheduler::framework::Code::Unschedulable
    );
    let n = preempt(&filters, &incoming, &snap).unwrap();
    assert_eq!(n.node, "n1");
    assert_eq!(names(&n), vec!["w"]);
}

/// A pod of priority `priority` using `volumes`.
fn with_volumes(name: &str, priority: i32, volumes: Value) -> PodInfo {
    pod_with(
        "default",
        name,
        &[("app", "x")],
        json!({"volumes": volumes}),
        json!({}),
        priority,
        100,
    )
}

fn volume_restrictions() -> TestFilters {
    TestFilters {
        plugins: vec![Box::new(VolumeRestrictions)],
    }
}

#[test]
fn eviction_can_free_a_disk() {
    // n1 holds the disk read-write (low priority) beside another low pod;
    // n2 holds the disk too, but at the pod's own priority. Only n1 is a
    // candidate, and only the disk's user needs to go: with "other" given
    // back the disk is still free.
    let disk = json!([{"name": "d", "gcePersistentDisk": {"pdName": "pd"}}]);
    let snap = snapshot(vec![
        node(
            "n1",
            &[],
            4000,
            vec![
                with_volumes("user", 1, disk.clone()),
                p("other", "x", 1, 100),
            ],
        ),
        node(
            "n2",
            &[],
            4000,
            vec![with_volumes("peer", 10, disk.clone())],
        ),
    ]);
    let incoming = with_volumes("new", 10, disk);
    let n = preempt(&volume_restrictions(), &incoming, &snap).unwrap();
    assert_eq!(n.node, "n1");
    assert_eq!(names(&n), vec!["user"]);
}

#[test]
fn eviction_can_free_a_read_write_once_pod_claim() {
    // The claim's user runs on n2. Every node refuses the pod (the claim is
    // taken cluster-wide), but evicting n1's pods would not free it: PreFilter,
    // re-run without them, still finds the user on n2. On n2 the user is
    // the one victim; "bystander" is given back.
    let claim = json!([{"name": "d", "persistentVolumeClaim": {"claimName": "solo"}}]);
    let mut snap = snapshot(vec![
        node("n1", &[], 4000, vec![p("low", "x", 1, 100)]),
        node(
            "n2",
            &[],
            4000,
            vec![
                with_volumes("user", 1, claim.clone()),
                p("bystander", "x", 1, 100),
            ],
        ),
    ]);
    snap.rwop_claims = std::sync::Arc::new([ObjectKey::new("default", "solo")].into());
    let incoming = with_volumes("new", 10, claim);
    let st = statuses(&volume_restrictions(), &incoming, &snap);
    assert!(st.values().all(|s| s.code == Code::Unschedulable));
    let n = preempt(&volume_restrictions(), &incoming, &snap).unwrap();
    assert_eq!(n.node, "n2");
    assert_eq!(names(&n), vec!["user"]);
}

#[test]
fn bad_args_are_rejected() {
    assert!(DefaultPreemption::new(&json!({"minCandidateNodesPercentage": 101})).is_err());
    assert!(DefaultPreemption::new(&json!({"minCandidateNodesAbsolute": -1})).is_err());
    assert!(DefaultPreemption::new(
        &json!({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0})
    )
    .is_err());
}
