//! InterPodAffinity and PodTopologySpread on hand-built snapshots, with the
//! expected verdicts and scores worked out in the comments.

mod plugin_fixtures;

use kubesim_scheduler::framework::{Code, PodInfo, Snapshot, Status};
use kubesim_scheduler::plugins::interpod_affinity::{
    InterPodAffinity, REASON_AFFINITY, REASON_ANTI_AFFINITY, REASON_EXISTING_ANTI_AFFINITY,
};
use kubesim_scheduler::plugins::topology_spread::{
    PodTopologySpread, REASON_CONSTRAINTS, REASON_MISSING_LABEL,
};
use plugin_fixtures::{filter_all, labels, node, node_exact, pod, pod_with, scores, snapshot};
use serde_json::{json, Value};

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

fn affinity() -> InterPodAffinity {
    InterPodAffinity::new(&Value::Null).unwrap()
}

fn term(app: &str, key: &str) -> Value {
    json!({"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key})
}

fn codes(v: &[Status]) -> Vec<Code> {
    v.iter().map(|s| s.code).collect()
}

fn ok() -> Status {
    Status::success()
}

// --- InterPodAffinity: Filter -------------------------------------------

#[test]
fn affinity_requires_a_matching_pod_in_the_zone() {
    // db runs on a (zone z1). b shares z1 with it, c is in z2, d has no
    // zone label at all: only a and b satisfy "same zone as an app=db pod";
    // c and d cannot be fixed by evicting pods, hence unresolvable.
    let snap = snapshot(vec![
        node(
            "a",
            &[(ZONE, "z1")],
            1000,
            vec![pod("default", "db", &[("app", "db")], json!({}))],
        ),
        node("b", &[(ZONE, "z1")], 1000, vec![]),
        node("c", &[(ZONE, "z2")], 1000, vec![]),
        node("d", &[], 1000, vec![]),
    ]);
    let incoming = pod(
        "default",
        "web",
        &[("app", "web")],
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("db", ZONE)]}}}),
    );
    let (pre, v) = filter_all(&affinity(), &incoming, &snap);
    assert_eq!(pre, Code::Success);
    assert_eq!(v[0], ok());
    assert_eq!(v[1], ok());
    assert_eq!(v[2], Status::unresolvable(REASON_AFFINITY));
    assert_eq!(v[3], Status::unresolvable(REASON_AFFINITY));

    // The same pod in another namespace: the term defaults to the pod's
    // own namespace, where no db runs, and web does not match its own term.
    let other = pod(
        "other",
        "web",
        &[("app", "web")],
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("db", ZONE)]}}}),
    );
    let (_, v) = filter_all(&affinity(), &other, &snap);
    assert!(v
        .iter()
        .all(|s| s.reasons == vec![REASON_AFFINITY.to_string()]));
}

#[test]
fn affinity_namespace_selector_reaches_other_namespaces() {
    // The term selects namespaces labelled team=data; db runs in "data".
    let mut snap = snapshot(vec![
        node(
            "a",
            &[(ZONE, "z1")],
            1000,
            vec![pod("data", "db", &[("app", "db")], json!({}))],
        ),
        node("c", &[(ZONE, "z2")], 1000, vec![]),
    ]);
    snap.namespace_labels
        .insert("data".into(), labels(&[("team", "data")]));
    let t = json!({"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE,
                   "namespaceSelector": {"matchLabels": {"team": "data"}}});
    let incoming = pod(
        "default",
        "web",
        &[],
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [t]}}}),
    );
    let (_, v) = filter_all(&affinity(), &incoming, &snap);
    assert_eq!(
        codes(&v),
        vec![Code::Success, Code::UnschedulableAndUnresolvable]
    );
}

#[test]
fn anti_affinity_by_hostname_keeps_replicas_apart() {
    // web already runs on a; a second web with hostname anti-affinity to
    // app=web may go anywhere but a. Evicting could cure it: Unschedulable.
    let snap = snapshot(vec![
        node(
            "a",
            &[],
            1000,
            vec![pod("default", "web-1", &[("app", "web")], json!({}))],
        ),
        node("b", &[], 1000, vec![]),
        node("c", &[], 1000, vec![]),
    ]);
    let incoming = pod(
        "default",
        "web-2",
        &[("app", "web")],
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("web", HOST)]}}}),
    );
    let (_, v) = filter_all(&affinity(), &incoming, &snap);
    assert_eq!(v[0], Status::unschedulable(REASON_ANTI_AFFINITY));
    assert_eq!(v[1], ok());
    assert_eq!(v[2], ok());
}

#[test]
fn existing_pods_anti_affinity_blocks_its_zone() {
    // guard on a (z1) refuses app=web anywhere in its zone: a and b (z1)
    // are closed to web, c (z2) is open. A web in another namespace is not
    // selected (the guard's term defaults to its own namespace).
    let guard = pod(
        "default",
        "guard",
        &[("app", "guard")],
        json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("web", ZONE)]}}}),
    );
    let snap = snapshot(vec![
        node("a", &[(ZONE, "z1")], 1000, vec![guard]),
        node("b", &[(ZONE, "z1")], 1000, vec![]),
        node("c", &[(ZONE, "z2")], 1000, vec![]),
    ]);
    let web = pod("default", "web", &[("app", "web")], json!({}));
    let (pre, v) = filter_all(&affinity(), &web, &snap);
    assert_eq!(pre, Code::Success);
    assert_eq!(v[0], Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY));
    assert_eq!(v[1], Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY));
    assert_eq!(v[2], ok());

    let elsewhere = pod("other", "web", &[("app", "web")], json!({}));
    let (pre, _) = filter_all(&affinity(), &elsewhere, &snap);
    assert_eq!(pre, Code::Skip);
}

#[test]
fn first_pod_of_a_self_affine_group_may_start_it() {
    // No app=cache pod exists yet. A cache pod requiring zone affinity to
    // app=cache matches its own term, so it may go to any node that has a
    // zone label (d has none: still rejected).
    let snap = snapshot(vec![
        node(
            "a",
            &[(ZONE, "z1")],
            1000,
            vec![pod("default", "x", &[("app", "x")], json!({}))],
        ),
        node("b", &[(ZONE, "z2")], 1000, vec![]),
        node("d", &[], 1000, vec![]),
    ]);
    let spec = json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("cache", ZONE)]}}});
    let cache = pod("default", "cache-0", &[("app", "cache")], spec.clone());
    let (_, v) = filter_all(&affinity(), &cache, &snap);
    assert_eq!(
        codes(&v),
        vec![
            Code::Success,
            Code::Success,
            Code::UnschedulableAndUnresolvable
        ]
    );

    // A pod that does not match its own term gets no such exception.
    let stranger = pod("default", "s", &[("app", "other")], spec);
    let (_, v) = filter_all(&affinity(), &stranger, &snap);
    assert!(v
        .iter()
        .all(|s| s.code == Code::UnschedulableAndUnresolvable));
}

#[test]
fn no_affinity_anywhere_skips() {
    let snap = snapshot(vec![node(
        "a",
        &[],
        1000,
        vec![pod("default", "x", &[], json!({}))],
    )]);
    let (pre, _) = filter_all(&affinity(), &pod("default", "p", &[], json!({})), &snap);
    assert_eq!(pre, Code::Skip);
    assert!(scores(&affinity(), &pod("default", "p", &[], json!({})), &snap).is_none());
}

#[test]
fn bad_args_are_rejected() {
    assert!(InterPodAffinity::new(&json!({"hardPodAffinityWeight": 101})).is_err());
    assert!(InterPodAffinity::new(&json!({"hardPodAffinityWeight": 0})).is_ok());
    assert!(PodTopologySpread::new(&json!({"defaultingType": "Other"})).is_err());
    assert!(PodTopologySpread::new(&json!({
        "defaultingType": "System",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"}]
    }))
    .is_err());
}

// --- InterPodAffinity: Score --------------------------------------------

#[test]
fn affinity_scores_sum_per_zone_and_scale_min_max() {
    // Incoming: prefers zone with app=db (weight 10), avoids zone with
    // app=cache (weight 5). db on a (z1), cache on c (z2); d is z3.
    // Zone sums: z1 = +10, z2 = -5, z3 = 0 -> raw a=10 b=10 c=-5 d=0.
    // Normalized 100*(s-min)/(max-min) with min -5, max 10:
    // a=b=100*15/15=100, c=0, d=100*5/15=33 (truncated).
    let snap = snapshot(vec![
        node(
            "a",
            &[(ZONE, "z1")],
            1000,
            vec![pod("default", "db", &[("app", "db")], json!({}))],
        ),
        node("b", &[(ZONE, "z1")], 1000, vec![]),
        node(
            "c",
            &[(ZONE, "z2")],
            1000,
            vec![pod("default", "cache", &[("app", "cache")], json!({}))],
        ),
        node("d", &[(ZONE, "z3")], 1000, vec![]),
    ]);
    let incoming = pod(
        "default",
        "web",
        &[("app", "web")],
        json!({"affinity": {
            "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "podAffinityTerm": term("db", ZONE)}]},
            "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 5, "podAffinityTerm": term("cache", ZONE)}]}
        }}),
    );
    let (raw, norm) = scores(&affinity(), &incoming, &snap).unwrap();
    assert_eq!(raw, vec![10, 10, -5, 0]);
    assert_eq!(norm, vec![100, 100, 0, 33]);
}

#[test]
fn existing_pods_required_affinity_counts_with_hard_weight() {
    // A pod on c (z2) requires zone affinity to app=web. For an incoming
    // web pod, z2 gains hardPodAffinityWeight; with weight 1: raw a=0 b=0
    // c=1 -> 0, 0, 100. With weight 0 the term is ignored and nothing is
    // left to score (Skip). Its preferred anti-affinity (weight 4, by
    // hostname) toward web then subtracts 4 on c alone when the weight is 1:
    // checked in the second snapshot.
    let lover = pod(
        "default",
        "lover",
        &[("app", "lover")],
        json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("web", ZONE)]}}}),
    );
    let snap = snapshot(vec![
        node("a", &[(ZONE, "z1")], 1000, vec![]),
        node("b", &[(ZONE, "z1")], 1000, vec![]),
        node("c", &[(ZONE, "z2")], 1000, vec![lover]),
    ]);
    let web = pod("default", "web", &[("app", "web")], json!({}));
    let (raw, norm) = scores(&affinity(), &web, &snap).unwrap();
    assert_eq!(raw, vec![0, 0, 1]);
    assert_eq!(norm, vec![0, 0, 100]);
    let off = InterPodAffinity::new(&json!({"hardPodAffinityWeight": 0})).unwrap();
    assert!(scores(&off, &web, &snap).is_none());

    // Existing preferred anti-affinity by hostname, weight 4, on b:
    // raw a=0 b=-4 -> min -4 max 0: a=100, b=0.
    let hater = pod(
        "default",
        "hater",
        &[],
        json!({"affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 4, "podAffinityTerm": term("web", HOST)}]}}}),
    );
    let snap = snapshot(vec![
        node("a", &[(ZONE, "z1")], 1000, vec![]),
        node("b", &[(ZONE, "z1")], 1000, vec![hater]),
    ]);
    let (raw, norm) = scores(&affinity(), &web, &snap).unwrap();
    assert_eq!(raw, vec![0, -4]);
    assert_eq!(norm, vec![100, 0]);
    // Told to ignore existing pods' preferences when the incoming pod has
    // none of its own: Skip.
    let ignore =
        InterPodAffinity::new(&json!({"ignorePreferredTermsOfExistingPods": true})).unwrap();
    assert!(scores(&ignore, &web, &snap).is_none());
}

// --- PodTopologySpread: Filter --------------------------------------------

fn spread(key: &str, max_skew: i64, when: &str, extra: Value) -> Value {
    let mut c = json!({"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
                       "labelSelector": {"matchLabels": {"app": "web"}}});
    if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    c
}

fn web(name: &str) -> PodInfo {
    pod("default", name, &[("app", "web")], json!({}))
}

fn topology() -> PodTopologySpread {
    PodTopologySpread::new(&json!({})).unwrap()
}

/// z1 holds 2 web pods (a1), z2 holds 1 (b1), z3 none (c1). x lacks the
/// zone label; the web pod on it is in no domain.
fn three_zones() -> Snapshot {
    snapshot(vec![
        node(
            "a1",
            &[(ZONE, "z1"), ("disk", "ssd")],
            1000,
            vec![web("w1"), web("w2")],
        ),
        node("a2", &[(ZONE, "z1"), ("disk", "ssd")], 1000, vec![]),
        node(
            "b1",
            &[(ZONE, "z2"), ("disk", "ssd")],
            1000,
            vec![web("w3")],
        ),
        node("c1", &[(ZONE, "z3")], 1000, vec![]),
        node("x", &[("disk", "ssd")], 1000, vec![web("w4")]),
    ])
}

#[test]
fn spread_filter_skew_across_three_zones() {
    // Global minimum is z3's 0. The incoming web pod matches itself (+1):
    // z1: 2+1-0 = 3 > 1, z2: 1+1-0 = 2 > 1, z3: 0+1-0 = 1 <= 1.
    // x has no zone label: unresolvable with the "missing required label" reason.
    let snap = three_zones();
    let incoming = pod(
        "default",
        "new",
        &[("app", "web")],
        json!({"topologySpreadConstraints": [spread(ZONE, 1, "DoNotSchedule", json!({}))]}),
    );
    let (pre, v) = filter_all(&topology(), &incoming, &snap);
    assert_eq!(pre, Code::Success);
    assert_eq!(v[0], Status::unschedulable(REASON_CONSTRAINTS));
    assert_eq!(v[1], Status::unschedulable(REASON_CONSTRAINTS));
    assert_eq!(v[2], Status::unschedulable(REASON_CONSTRAINTS));
    assert_eq!(v[3], ok());
    assert_eq!(v[4], Status::unresolvable(REASON_MISSING_LABEL));

    // A pod that does not match the selector adds no +1: z2: 1-0 = 1 fits,
    // z1: 2-0 = 2 does not.
    let other = pod(
        "default",
        "new",
        &[("app", "api")],
        json!({"topologySpreadConstraints": [spread(ZONE, 1, "DoNotSchedule", json!({}))]}),
    );
    let (_, v) = filter_all(&topology(), &other, &snap);
    assert_eq!(
        codes(&v[..4]),
        vec![
            Code::Unschedulable,
            Code::Unschedulable,
            Code::Success,
            Code::Success
        ]
    );
}

#[test]
fn spread_filter_honours_node_affinity_policy() {
    // With nodeSelector disk=ssd, c1 (z3, no ssd) is not an eligible domain
    // under the default Honor policy: domains z1=2, z2=1, min 1.
    // z2: 1+1-1 = 1 fits; z1: 2+1-1 = 2 does not.
    let snap = three_zones();
    let with_policy = |policy: &str| {
        pod(
            "default",
            "new",
            &[("app", "web")],
            json!({"nodeSelector": {"disk": "ssd"},
                   "topologySpreadConstraints": [spread(ZONE, 1, "DoNotSchedule", json!({"nodeAffinityPolicy": policy}))]}),
        )
    };
    let (_, v) = filter_all(&topology(), &with_policy("Honor"), &snap);
    assert_eq!(
        codes(&v[..3]),
        vec![Code::Unschedulable, Code::Unschedulable, Code::Success]
    );
    // Ignore: z3 counts again, min 0, and z2 gives 2 > 1.
    let (_, v) = filter_all(&topology(), &with_policy("Ignore"), &snap);
    assert_eq!(
        codes(&v[..3]),
        vec![
            Code::Unschedulable,
            Code::Unschedulable,
            Code::Unschedulable
        ]
    );
}

#[test]
fn spread_filter_min_domains() {
    // Two zones with one web pod each. minDomains unset (1): min 1, and
    // each zone gives 1+1-1 = 1 <= 1. With minDomains 3 only 2 domains
    // exist, so the global minimum is taken as 0 and each gives 2 > 1.
    let snap = snapshot(vec![
        node("a", &[(ZONE, "z1")], 1000, vec![web("w1")]),
        node("b", &[(ZONE, "z2")], 1000, vec![web("w2")]),
    ]);
    let with = |extra: Value| {
        pod(
            "default",
            "new",
            &[("app", "web")],
            json!({"topologySpreadConstraints": [spread(ZONE, 1, "DoNotSchedule", extra)]}),
        )
    };
    let (_, v) = filter_all(&topology(), &with(json!({})), &snap);
    assert_eq!(codes(&v), vec![Code::Success, Code::Success]);
    let (_, v) = filter_all(&topology(), &with(json!({"minDomains": 3})), &snap);
    assert_eq!(codes(&v), vec![Code::Unschedulable, Code::Unschedulable]);
    // Soft constraints only: PreFilter has nothing to do.
    let soft = pod(
        "default",
        "new",
        &[("app", "web")],
        json!({"topologySpreadConstraints": [spread(ZONE, 1, "ScheduleAnyway", json!({}))]}),
    );
    let (pre, _) = filter_all(&topology(), &soft, &snap);
    assert_eq!(pre, Code::Skip);
}

#[test]
fn spread_filter_match_label_keys() {
    // matchLabelKeys [rev] narrows the selector to rev=2: only w2 counts.
    // z1 (w1, rev 1) counts 0, z2 (w2) counts 1, min 0:
    // z1: 0+1 = 1 fits, z2: 1+1 = 2 does not.
    let snap = snapshot(vec![
        node(
            "a",
            &[(ZONE, "z1")],
            1000,
            vec![pod(
                "default",
                "w1",
                &[("app", "web"), ("rev", "1")],
                json!({}),
            )],
        ),
        node(
            "b",
            &[(ZONE, "z2")],
            1000,
            vec![pod(
                "default",
                "w2",
                &[("app", "web"), ("rev", "2")],
                json!({}),
            )],
        ),
    ]);
    let incoming = pod(
        "default",
        "new",
        &[("app", "web"), ("rev", "2")],
        json!({"topologySpreadConstraints": [spread(ZONE, 1, "DoNotSchedule", json!({"matchLabelKeys": ["rev"]}))]}),
    );
    let (_, v) = filter_all(&topology(), &incoming, &snap);
    assert_eq!(codes(&v), vec![Code::Success, Code::Unschedulable]);
}

// --- PodTopologySpread: Score -------------------------------------------

#[test]
fn spread_scores_prefer_emptier_domains() {
    // Zone constraint (maxSkew 1) over a, b (z1) and c (z2): 2 domains,
    // weight ln(2+2) = 1.3863. Web pods: 2 on a, 1 on c -> z1=2, z2=1.
    // raw = round(count * weight + (maxSkew-1)): a=b=round(2.77)=3, c=round(1.39)=1.
    // Normalized 100*(max+min-s)/max with min 1, max 3: a=b=100*1/3=33, c=100.
    let snap = snapshot(vec![
        node("a", &[(ZONE, "z1")], 1000, vec![web("w1"), web("w2")]),
        node("b", &[(ZONE, "z1")], 1000, vec![]),
        node("c", &[(ZONE, "z2")], 1000, vec![web("w3")]),
    ]);
    let zone_only = pod(
        "default",
        "new",
        &[("app", "web")],
        json!({"topologySpreadConstraints": [spread(ZONE, 1, "ScheduleAnyway", json!({}))]}),
    );
    let (raw, norm) = scores(&topology(), &zone_only, &snap).unwrap();
    assert_eq!(raw, vec![3, 3, 1]);
    assert_eq!(norm, vec![33, 33, 100]);

    // Adding a hostname constraint (maxSkew 2): 3 host domains, weight
    // ln(5) = 1.6094; per-host counts a=2, b=0, c=1.
    // a = 2*1.3863 + 2*1.6094 + 1 = 6.99 -> 7
    // b = 2*1.3863 + 0        + 1 = 3.77 -> 4
    // c = 1*1.3863 + 1*1.6094 + 1 = 4.00 -> 4
    // min 4, max 7: a = 100*4/7 = 57, b = c = 100*7/7 = 100.
    let both = pod(
        "default",
        "new",
        &[("app", "web")],
        json!({"topologySpreadConstraints": [
            spread(ZONE, 1, "ScheduleAnyway", json!({})),
            spread(HOST, 2, "ScheduleAnyway", json!({}))]}),
    );
    let (raw, norm) = scores(&topology(), &both, &snap).unwrap();
    assert_eq!(raw, vec![7, 4, 4]);
    assert_eq!(norm, vec![57, 100, 100]);
}

#[test]
fn spread_scores_ignore_nodes_without_the_key() {
    // d has no zone label and the pod's own constraint needs it: d scores
    // 0 after normalization and takes no part in min/max. a: z1=1 -> raw
    // round(1*ln(4)) = 1; c: z2=0 -> 0. min 0, max 1: a = 100*0/1 = 0,
    // c = 100*1/1 = 100.
    let snap = snapshot(vec![
        node("a", &[(ZONE, "z1")], 1000, vec![web("w1")]),
        node("c", &[(ZONE, "z2")], 1000, vec![]),
        node_exact("d", labels(&[]), 1000, vec![]),
    ]);
    let incoming = pod(
        "default",
        "new",
        &[("app", "web")],
        json!({"topologySpreadConstraints": [spread(ZONE, 1, "ScheduleAnyway", json!({}))]}),
    );
    let (raw, norm) = scores(&topology(), &incoming, &snap).unwrap();
    assert_eq!(raw, vec![1, 0, 0]);
    assert_eq!(norm, vec![0, 100, 0]);
}

#[test]
fn system_default_constraints_spread_a_workload() {
    // No constraints of its own, owned by ReplicaSet rs-1: the System
    // defaults apply (hostname maxSkew 3, zone maxSkew 5) to pods of rs-1.
    // Three rs-1 pods on a (z1); a pod of another owner on b is ignored.
    // Weights: hostname ln(3+2) = 1.6094, zone (z1, z2) ln(2+2) = 1.3863.
    // a = 3*1.6094 + 2 + 3*1.3863 + 4 = 14.99 -> 15
    // b = 0        + 2 + 3*1.3863 + 4 = 10.16 -> 10
    // c = 0        + 2 + 0        + 4 = 6
    // min 6, max 15: a = 100*6/15 = 40, b = 100*11/15 = 73, c = 100.
    let owned = |name: &str, uid: &str| {
        pod_with(
            "default",
            name,
            &[("app", "web")],
            json!({}),
            json!({"metadata": {"ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}]}}),
            0,
            0,
        )
    };
    let snap = snapshot(vec![
        node(
            "a",
            &[(ZONE, "z1")],
            1000,
            vec![
                owned("p1", "rs-1"),
                owned("p2", "rs-1"),
                owned("p3", "rs-1"),
            ],
        ),
        node("b", &[(ZONE, "z1")], 1000, vec![owned("q1", "rs-2")]),
        node("c", &[(ZONE, "z2")], 1000, vec![]),
    ]);
    let (raw, norm) = scores(&topology(), &owned("new", "rs-1"), &snap).unwrap();
    assert_eq!(raw, vec![15, 10, 6]);
    assert_eq!(norm, vec![40, 73, 100]);
    // A bare pod (no controller) gets no default constraints.
    assert!(scores(&topology(), &web("bare"), &snap).is_none());
    // Defaulting "List" with no constraints turns defaults off.
    let list = PodTopologySpread::new(&json!({"defaultingType": "List"})).unwrap();
    assert!(scores(&list, &owned("new", "rs-1"), &snap).is_none());
}
