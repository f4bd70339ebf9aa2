//! End-to-end: gang scheduling with `kubesim up --scheduler-config` and a
//! KubeSchedulerConfiguration enabling Coscheduling, driven by kubectl
//! with PodGroups and labelled pods as scheduler-plugins documents them.

mod common;

use common::kubectl::Cluster;

/// scheduler-plugins' example configuration for Coscheduling, under the
/// configuration API v1 (`testdata/SOURCE.md`).
const CONFIG: &str =
    include_str!("../../../testdata/scheduler-plugins/coscheduling/scheduler-config-v1.yaml");

fn nodes() -> String {
    (1..=3)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: Node\nmetadata: {{name: worker-{i}, labels: {{kubernetes.io/hostname: worker-{i}}}}}\nstatus:\n  capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n  allocatable: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n"
            )
        })
        .collect::<Vec<_>>()
        .join("---\n")
}

fn pod_group(name: &str, min: u32) -> String {
    format!("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {{name: {name}}}\nspec: {{minMember: {min}, scheduleTimeoutSeconds: 10}}\n")
}

fn pod(name: &str, group: &str, cpu: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{scheduling.x-k8s.io/pod-group: {group}}}}}\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources: {{requests: {{cpu: \"{cpu}\", memory: 100Mi}}}}\n"
    )
}

fn node_of(c: &Cluster, pod: &str) -> String {
    c.ok(&["get", "pod", pod, "-o", "jsonpath={.spec.nodeName}"])
}

const SCHEDULED_MESSAGE: &str =
    "jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].message}";

#[test]
fn pod_groups_bind_all_together_or_wait() {
    let dir = std::env::temp_dir().join(format!("kubesim-cosched-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("scheduler.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let c = Cluster::start_with(
        "coscheduling",
        &["--scheduler-config", config.to_str().unwrap()],
    );
    // The kind is served as upstream installs it, and upstream's own CRD
    // file applies over it unchanged.
    c.ok(&["get", "crd", "podgroups.scheduling.x-k8s.io"]);
    let crd = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/scheduler-plugins/coscheduling/crd.yaml");
    let applied = c.ok(&["apply", "-f", crd.to_str().unwrap()]);
    assert!(
        applied.contains("podgroups.scheduling.x-k8s.io"),
        "{applied}"
    );
    c.apply(&nodes());

    // Two of three members: they wait for the third.
    c.apply(
        &[
            pod_group("trio", 3),
            pod("a", "trio", "3"),
            pod("b", "trio", "3"),
        ]
        .join("---\n"),
    );
    c.until(&["get", "pod", "b", "-o", SCHEDULED_MESSAGE], |m| {
        m.contains("pre-filter pod b cannot find enough sibling pods, current pods number: 2, minMember of group: 3")
    });
    assert_eq!(node_of(&c, "a"), "");
    assert_eq!(node_of(&c, "b"), "");

    // The third arrives: all three bind, one per node (3 of 4 cpu each).
    c.apply(&pod("c", "trio", "3"));
    for p in ["a", "b", "c"] {
        c.until(&["get", "pod", p, "-o", "jsonpath={.spec.nodeName}"], |n| {
            !n.is_empty()
        });
    }
    let mut placed: Vec<String> = ["a", "b", "c"].iter().map(|p| node_of(&c, p)).collect();
    placed.sort();
    assert_eq!(placed, ["worker-1", "worker-2", "worker-3"]);
    // scheduler-plugins' PodGroup controller fills in the status. These
    // nodes have no kubelet, so the bound pods do not run: Scheduling.
    c.until(&["get", "pg", "trio", "-o", "jsonpath={.status}"], |s| {
        s == r#"{"phase":"Scheduling"}"#
    });
    // A pair that cannot fit (1 cpu is left per node): neither binds.
    // (Names that YAML would read as booleans, such as y, are avoided.)
    c.apply(
        &[
            pod_group("pair", 2),
            pod("p1", "pair", "2"),
            pod("p2", "pair", "2"),
        ]
        .join("---\n"),
    );
    for p in ["p1", "p2"] {
        c.until(&["get", "pod", p, "-o", SCHEDULED_MESSAGE], |m| {
            m.contains(
                "0/3 nodes are available: 3 Insufficient cpu. PodGroup default/pair gets rejected",
            )
        });
        assert_eq!(node_of(&c, p), "");
    }
    // Enough members, none bound: scheduling, nothing running.
    c.until(&["get", "pg", "pair", "-o", "jsonpath={.status}"], |s| {
        s == r#"{"phase":"Scheduling"}"#
    });
    // Playing the trio's kubelet (last, as a failed pod frees its node):
    // all three run, then one fails.
    let phase = |pod: &str, phase: &str| {
        let patch = format!(r#"{{"status":{{"phase":"{phase}"}}}}"#);
        c.ok(&[
            "patch",
            pod,
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch,
        ]);
    };
    for p in ["pod/a", "pod/b", "pod/c"] {
        phase(p, "Running");
    }
    c.until(&["get", "pg", "trio", "-o", "yaml"], |y| {
        y.contains("phase: Running") && y.contains("running: 3")
    });
    phase("pod/a", "Failed");
    let failed = c.until(&["get", "pg", "trio", "-o", "yaml"], |y| {
        y.contains("phase: Failed")
    });
    assert!(
        failed.contains("running: 2") && failed.contains("failed: 1"),
        "{failed}"
    );

    let groups = c.names(&["get", "pg"]);
    assert_eq!(groups, ["pair", "trio"]);
    let _ = std::fs::remove_dir_all(&dir);
}
