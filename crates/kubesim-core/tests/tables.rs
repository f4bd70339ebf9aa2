//! Golden tests for server-side Tables: realistic objects rendered at a
//! fixed "now" and compared with the JSON under tests/golden.
//! Run with UPDATE_GOLDEN=1 to rewrite the golden files after an intended
//! change, then review the diff.

use std::path::PathBuf;

use jiff::{SignedDuration, Timestamp};
use kubesim_core::resource::{CrdInfo, PrinterColumn};
use kubesim_core::table::{table, IncludeObject, TableOptions};
use kubesim_core::{Registry, ResourceInfo};
use serde_json::{json, Value};

const NOW: &str = "2024-05-01T12:00:00Z";

fn now() -> Timestamp {
    NOW.parse().expect("now")
}

/// An RFC 3339 time `secs` seconds before NOW.
fn ago(secs: i64) -> String {
    let t = now() - SignedDuration::from_secs(secs);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn opts(include: IncludeObject) -> TableOptions {
    TableOptions {
        include,
        now: now(),
        headers: true,
    }
}

fn resource(group: &str, version: &str, plural: &str) -> ResourceInfo {
    let r = Registry::new();
    let info = r
        .get(group, version, plural)
        .unwrap_or_else(|| panic!("{group}/{version}/{plural} is not registered"));
    (*info).clone()
}

/// Compares with (or, under UPDATE_GOLDEN=1, rewrites) tests/golden/<name>.json.
fn golden(name: &str, actual: &Value) {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "golden",
        &format!("{name}.json"),
    ]
    .iter()
    .collect();
    let text = serde_json::to_string_pretty(actual).expect("serialize") + "\n";
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing {}; run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    if want != text {
        let first_diff = want
            .lines()
            .zip(text.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(text.lines().count()));
        panic!(
            "{} differs from the rendered table at line {}:\n  golden: {}\n  actual: {}\n(run with UPDATE_GOLDEN=1 if the change is intended)",
            path.display(),
            first_diff + 1,
            want.lines().nth(first_diff).unwrap_or("<end>"),
            text.lines().nth(first_diff).unwrap_or("<end>"),
        );
    }
}

fn meta(name: &str, ns: &str, age_secs: i64) -> Value {
    json!({"name": name, "namespace": ns, "uid": format!("uid-{name}"), "resourceVersion": "42", "creationTimestamp": ago(age_secs)})
}

fn running(name: &str, restarts: i64) -> Value {
    json!({"name": name, "ready": true, "started": true, "restartCount": restarts, "image": "nginx:1.27",
           "state": {"running": {"startedAt": ago(300)}}})
}

fn pods() -> Vec<Value> {
    let ready = json!([{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"},
                       {"type": "ContainersReady", "status": "True"}, {"type": "PodScheduled", "status": "True"}]);
    let two = json!([{"name": "app", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}]);
    let one = json!([{"name": "app", "image": "nginx:1.27"}]);
    vec![
        json!({"metadata": meta("web-1", "default", 300), "spec": {"nodeName": "node-1", "containers": one},
               "status": {"phase": "Running", "podIP": "10.244.0.7", "podIPs": [{"ip": "10.244.0.7"}],
                          "conditions": ready, "containerStatuses": [running("app", 0)]}}),
        json!({"metadata": meta("web-2", "default", 12), "spec": {"nodeName": "node-2", "containers": one},
               "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                          "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0,
                                                 "state": {"waiting": {"reason": "ContainerCreating"}}}]}}),
        json!({"metadata": meta("crash", "default", 3 * 3600 + 120), "spec": {"nodeName": "node-1", "containers": one},
               "status": {"phase": "Running", "podIP": "10.244.0.9",
                          "conditions": [{"type": "Ready", "status": "False"}],
                          "containerStatuses": [{"name": "app", "ready": false, "restartCount": 5,
                              "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s"}},
                              "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(185)}}}]}}),
        json!({"metadata": meta("job-x-abcde", "default", 2 * 86400), "spec": {"nodeName": "node-2", "containers": one},
               "status": {"phase": "Succeeded", "podIP": "10.244.1.3",
                          "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0,
                              "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": ago(86400)}}}]}}),
        json!({"metadata": {"name": "leaving", "namespace": "default", "creationTimestamp": ago(3600),
                            "deletionTimestamp": ago(-30), "deletionGracePeriodSeconds": 30},
               "spec": {"nodeName": "node-1", "containers": one},
               "status": {"phase": "Running", "podIP": "10.244.0.10", "conditions": ready,
                          "containerStatuses": [running("app", 0)]}}),
        json!({"metadata": meta("init-wait", "default", 40),
               "spec": {"nodeName": "node-1", "containers": one,
                        "initContainers": [{"name": "migrate", "image": "migrate"}, {"name": "seed", "image": "seed"}]},
               "status": {"phase": "Pending", "initContainerStatuses": [
                   {"name": "migrate", "ready": false, "restartCount": 0, "state": {"running": {"startedAt": ago(10)}}},
                   {"name": "seed", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}],
                   "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "PodInitializing"}}}]}}),
        json!({"metadata": meta("init-loop", "default", 900),
               "spec": {"nodeName": "node-1", "containers": one, "initContainers": [{"name": "migrate", "image": "migrate"}]},
               "status": {"phase": "Pending", "initContainerStatuses": [
                   {"name": "migrate", "ready": false, "restartCount": 4,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 2, "reason": "Error", "finishedAt": ago(70)}}}]}}),
        json!({"metadata": meta("init-err", "default", 900),
               "spec": {"nodeName": "node-1", "containers": one,
                        "initContainers": [{"name": "a", "image": "a"}, {"name": "b", "image": "b"}]},
               "status": {"phase": "Pending", "initContainerStatuses": [
                   {"name": "a", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                   {"name": "b", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]}}),
        json!({"metadata": meta("half-done", "default", 1200), "spec": {"nodeName": "node-2", "containers": two},
               "status": {"phase": "Running", "podIP": "10.244.1.8",
                          "conditions": [{"type": "Ready", "status": "False"}],
                          "containerStatuses": [
                              {"name": "app", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                              running("log", 0)]}}),
        json!({"metadata": {"name": "lost", "namespace": "default", "creationTimestamp": ago(7 * 86400),
                            "deletionTimestamp": ago(600)},
               "spec": {"nodeName": "node-3", "containers": one},
               "status": {"phase": "Running", "reason": "NodeLost", "message": "Node node-3 which was running pod lost is unresponsive",
                          "containerStatuses": [running("app", 0)]}}),
        json!({"metadata": meta("gated", "default", 90),
               "spec": {"containers": one, "schedulingGates": [{"name": "example.com/quota"}]},
               "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}}),
        json!({"metadata": meta("with-sidecar", "default", 10 * 86400),
               "spec": {"nodeName": "node-1", "containers": one,
                        "initContainers": [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}]},
               "status": {"phase": "Running", "podIP": "fd00::12", "conditions": ready,
                          "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 1,
                              "state": {"running": {"startedAt": ago(600)}},
                              "lastState": {"terminated": {"exitCode": 137, "finishedAt": ago(601)}}}],
                          "containerStatuses": [running("app", 2)]}}),
        json!({"metadata": meta("killed", "default", 400), "spec": {"nodeName": "node-2", "containers": one},
               "status": {"phase": "Failed",
                          "containerStatuses": [{"name": "app", "ready": false, "restartCount": 0,
                              "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}}),
        json!({"metadata": meta("gates", "default", 60),
               "spec": {"nodeName": "node-1", "containers": one,
                        "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]},
               "status": {"phase": "Running", "podIP": "10.244.0.11", "nominatedNodeName": "node-9",
                          "conditions": [{"type": "Ready", "status": "False"}, {"type": "example.com/lb", "status": "True"}],
                          "containerStatuses": [running("app", 0)]}}),
        json!({"metadata": {"name": "bare"}}),
    ]
}

#[test]
fn pods_table() {
    golden(
        "pods",
        &table(
            &resource("", "v1", "pods"),
            &pods(),
            &opts(IncludeObject::None),
        ),
    );
}

#[test]
fn include_object_modes() {
    let pods = &pods()[..1];
    let r = resource("", "v1", "pods");
    let mut o = opts(IncludeObject::Metadata);
    golden("pods_include_metadata", &table(&r, pods, &o));
    o.include = IncludeObject::Object;
    let full = table(&r, pods, &o);
    assert_eq!(full["rows"][0]["object"], pods[0]);
    o.include = IncludeObject::None;
    o.headers = false;
    let bare = table(&r, pods, &o);
    assert_eq!(bare["columnDefinitions"], json!([]));
    assert_eq!(bare["rows"][0]["object"], Value::Null);
    assert_eq!(bare["rows"][0]["cells"], full["rows"][0]["cells"]);
}

fn nodes() -> Vec<Value> {
    let info = json!({"kubeletVersion": "v1.32.4", "osImage": "Ubuntu 24.04 LTS", "kernelVersion": "6.8.0-45-generic",
                      "containerRuntimeVersion": "containerd://1.7.22"});
    let addrs = |ip: &str| json!([{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": "h"}]);
    vec![
        json!({"metadata": {"name": "cp-1", "creationTimestamp": ago(30 * 86400),
                            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "cp-1"}},
               "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                          "nodeInfo": info, "addresses": [{"type": "InternalIP", "address": "172.18.0.2"},
                                                          {"type": "ExternalIP", "address": "203.0.113.5"}]}}),
        json!({"metadata": {"name": "node-1", "creationTimestamp": ago(29 * 86400),
                            "labels": {"kubernetes.io/role": "worker", "node-role.kubernetes.io/gpu": "true"}},
               "status": {"conditions": [{"type": "Ready", "status": "Unknown"}], "nodeInfo": info, "addresses": addrs("172.18.0.3")}}),
        json!({"metadata": {"name": "node-2", "creationTimestamp": ago(5 * 3600 + 1800)},
               "spec": {"unschedulable": true},
               "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": info, "addresses": addrs("172.18.0.4")}}),
        json!({"metadata": {"name": "new-node", "creationTimestamp": ago(20)}, "status": {}}),
    ]
}

#[test]
fn nodes_table() {
    golden(
        "nodes",
        &table(
            &resource("", "v1", "nodes"),
            &nodes(),
            &opts(IncludeObject::None),
        ),
    );
}

fn template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": {"containers": [
        {"name": "app", "image": "nginx:1.27"}, {"name": "sidecar", "image": "envoyproxy/envoy:v1.31"}]}})
}

#[test]
fn workloads_tables() {
    let deployments = vec![
        json!({"metadata": meta("web", "default", 86400 * 3),
               "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template(json!({"app": "web"}))},
               "status": {"replicas": 3, "readyReplicas": 3, "updatedReplicas": 3, "availableReplicas": 3}}),
        json!({"metadata": meta("api", "default", 610),
               "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "api"},
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "backend"]}]},
                        "template": template(json!({"app": "api", "tier": "backend"}))},
               "status": {"replicas": 4, "readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}}),
        json!({"metadata": meta("scaled-to-zero", "default", 60), "spec": {"replicas": 0, "selector": {}, "template": template(json!({}))}}),
    ];
    golden(
        "deployments",
        &table(
            &resource("apps", "v1", "deployments"),
            &deployments,
            &opts(IncludeObject::None),
        ),
    );

    let rs = vec![json!({"metadata": meta("web-7d4b9c8f5", "default", 86400),
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "7d4b9c8f5"}}, "template": template(json!({"app": "web"}))},
        "status": {"replicas": 3, "readyReplicas": 2}})];
    golden(
        "replicasets",
        &table(
            &resource("apps", "v1", "replicasets"),
            &rs,
            &opts(IncludeObject::None),
        ),
    );

    let sts = vec![json!({"metadata": meta("db", "default", 7200),
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "db"}}, "template": template(json!({"app": "db"}))},
        "status": {"replicas": 2, "readyReplicas": 2}})];
    golden(
        "statefulsets",
        &table(
            &resource("apps", "v1", "statefulsets"),
            &sts,
            &opts(IncludeObject::None),
        ),
    );

    let mut ds_template = template(json!({"app": "agent"}));
    ds_template["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let ds = vec![json!({"metadata": meta("agent", "kube-system", 86400 * 40),
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": ds_template},
        "status": {"desiredNumberScheduled": 5, "currentNumberScheduled": 5, "numberReady": 4,
                   "updatedNumberScheduled": 5, "numberAvailable": 4}})];
    golden(
        "daemonsets",
        &table(
            &resource("apps", "v1", "daemonsets"),
            &ds,
            &opts(IncludeObject::None),
        ),
    );

    let job_sel = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}});
    let jobs = vec![
        json!({"metadata": meta("pi", "default", 3600), "spec": {"completions": 1, "parallelism": 1, "selector": job_sel, "template": template(json!({}))},
               "status": {"succeeded": 1, "startTime": ago(3600), "completionTime": ago(3600 - 47),
                          "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}}),
        json!({"metadata": meta("work-queue", "default", 400), "spec": {"parallelism": 4, "selector": job_sel, "template": template(json!({}))},
               "status": {"succeeded": 2, "active": 2, "startTime": ago(400)}}),
        json!({"metadata": meta("broken", "default", 7200), "spec": {"completions": 5, "selector": job_sel, "template": template(json!({}))},
               "status": {"failed": 7, "startTime": ago(7200), "conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]}}),
        json!({"metadata": meta("held", "default", 30), "spec": {"completions": 2, "suspend": true, "template": template(json!({}))},
               "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}),
    ];
    golden(
        "jobs",
        &table(
            &resource("batch", "v1", "jobs"),
            &jobs,
            &opts(IncludeObject::None),
        ),
    );

    let cronjobs = vec![
        json!({"metadata": meta("nightly", "default", 86400 * 9),
               "spec": {"schedule": "0 2 * * *", "timeZone": "Europe/Paris", "suspend": false,
                        "jobTemplate": {"spec": {"template": template(json!({}))}}},
               "status": {"active": [{"name": "nightly-28577160"}], "lastScheduleTime": ago(36000)}}),
        json!({"metadata": meta("never", "default", 100), "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template(json!({}))}}}}),
    ];
    golden(
        "cronjobs",
        &table(
            &resource("batch", "v1", "cronjobs"),
            &cronjobs,
            &opts(IncludeObject::None),
        ),
    );
}

#[test]
fn network_tables() {
    let services = vec![
        json!({"metadata": meta("kubernetes", "default", 86400 * 30),
               "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
                        "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}}),
        json!({"metadata": meta("web", "default", 3600),
               "spec": {"type": "NodePort", "clusterIP": "10.96.12.7", "clusterIPs": ["10.96.12.7"], "selector": {"app": "web"},
                        "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP", "nodePort": 30053}]}}),
        json!({"metadata": meta("lb-pending", "default", 50),
               "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.3.3"], "selector": {"app": "web", "tier": "front"},
                        "ports": [{"port": 443, "protocol": "TCP", "nodePort": 31443}]}}),
        json!({"metadata": meta("lb", "default", 50),
               "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.3.4"], "externalIPs": ["198.51.100.9"],
                        "ports": [{"port": 443, "protocol": "TCP", "nodePort": 31444}]},
               "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}, {"hostname": "lb.example.com"}]}}}),
        json!({"metadata": meta("db-headless", "default", 50),
               "spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"], "selector": {"app": "db"}}}),
        json!({"metadata": meta("upstream", "default", 50), "spec": {"type": "ExternalName", "externalName": "api.example.com"}}),
    ];
    golden(
        "services",
        &table(
            &resource("", "v1", "services"),
            &services,
            &opts(IncludeObject::None),
        ),
    );

    let addrs = |n: usize| -> Value {
        (0..n)
            .map(|i| json!({"ip": format!("10.244.0.{}", i + 2)}))
            .collect::<Vec<_>>()
            .into()
    };
    let endpoints = vec![
        json!({"metadata": meta("web", "default", 3600),
               "subsets": [{"addresses": addrs(4), "ports": [{"port": 8080, "protocol": "TCP"}]}]}),
        json!({"metadata": meta("db-headless", "default", 60), "subsets": [{"addresses": addrs(2)}]}),
        json!({"metadata": meta("empty", "default", 60)}),
    ];
    golden(
        "endpoints",
        &table(
            &resource("", "v1", "endpoints"),
            &endpoints,
            &opts(IncludeObject::None),
        ),
    );

    let slices = vec![
        json!({"metadata": meta("web-abc12", "default", 3600), "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics"}],
        "endpoints": [{"addresses": ["10.244.0.2"]}, {"addresses": ["10.244.0.3"]}, {"addresses": ["10.244.0.4", "10.244.0.5"]}]}),
    ];
    golden(
        "endpointslices",
        &table(
            &resource("discovery.k8s.io", "v1", "endpointslices"),
            &slices,
            &opts(IncludeObject::None),
        ),
    );
}

#[test]
fn events_tables() {
    let core = vec![
        json!({"metadata": meta("web-1.17c8a", "default", 600), "type": "Normal", "reason": "Pulled",
               "message": "Successfully pulled image \"nginx:1.27\" in 1.2s\n",
               "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "default", "fieldPath": "spec.containers{app}"},
               "source": {"component": "kubelet", "host": "node-1"},
               "firstTimestamp": ago(600), "lastTimestamp": ago(125), "count": 3}),
        json!({"metadata": meta("crash.17c8b", "default", 900), "type": "Warning", "reason": "BackOff",
               "message": "Back-off restarting failed container app",
               "involvedObject": {"kind": "Pod", "name": "crash"},
               "reportingComponent": "kubelet", "reportingInstance": "node-1",
               "eventTime": ago(900), "series": {"count": 42, "lastObservedTime": ago(15)}}),
        json!({"metadata": meta("node.17c8c", "default", 30), "type": "Normal", "reason": "RegisteredNode",
               "message": "Node node-2 event: Registered Node node-2 in Controller",
               "involvedObject": {"kind": "Node"}, "source": {"component": "node-controller"},
               "eventTime": ago(30)}),
    ];
    golden(
        "events",
        &table(
            &resource("", "v1", "events"),
            &core,
            &opts(IncludeObject::None),
        ),
    );

    let new_api = vec![
        json!({"metadata": meta("web.17c9", "default", 200), "type": "Normal", "reason": "ScalingReplicaSet",
        "note": "Scaled up replica set web-7d4b9c8f5 to 3", "action": "Scale",
        "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"},
        "reportingController": "deployment-controller", "eventTime": ago(200)}),
    ];
    golden(
        "events_k8s_io",
        &table(
            &resource("events.k8s.io", "v1", "events"),
            &new_api,
            &opts(IncludeObject::None),
        ),
    );
}

#[test]
fn config_and_policy_tables() {
    let r = |g: &str, v: &str, p: &str, objs: Vec<Value>| {
        table(&resource(g, v, p), &objs, &opts(IncludeObject::None))
    };
    let mut all = serde_json::Map::new();
    all.insert("namespaces".into(), r("", "v1", "namespaces", vec![
        json!({"metadata": {"name": "default", "creationTimestamp": ago(86400 * 400)}, "status": {"phase": "Active"}}),
        json!({"metadata": {"name": "old", "creationTimestamp": ago(86400 * 365 * 3 + 86400 * 12), "deletionTimestamp": ago(5)}, "status": {"phase": "Terminating"}}),
    ]));
    all.insert("configmaps".into(), r("", "v1", "configmaps", vec![
        json!({"metadata": meta("kube-root-ca.crt", "default", 86400), "data": {"ca.crt": "..."}}),
        json!({"metadata": meta("mixed", "default", 86400), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AAE="}}),
    ]));
    all.insert("secrets".into(), r("", "v1", "secrets", vec![
        json!({"metadata": meta("tls", "default", 5000), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
    ]));
    all.insert(
        "serviceaccounts".into(),
        r(
            "",
            "v1",
            "serviceaccounts",
            vec![json!({"metadata": meta("default", "default", 86400)})],
        ),
    );
    all.insert("leases".into(), r("coordination.k8s.io", "v1", "leases", vec![
        json!({"metadata": meta("node-1", "kube-node-lease", 86400), "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40}}),
        json!({"metadata": meta("free", "default", 10), "spec": {}}),
    ]));
    all.insert("horizontalpodautoscalers".into(), r("autoscaling", "v2", "horizontalpodautoscalers", vec![
        json!({"metadata": meta("web", "default", 3600),
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
                        "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
                                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                                    {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "100"}}}]},
               "status": {"currentReplicas": 3, "desiredReplicas": 3,
                          "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "90m"}}}]}}),
        json!({"metadata": meta("fresh", "default", 5),
               "spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "db"}, "maxReplicas": 4}}),
    ]));
    all.insert("poddisruptionbudgets".into(), r("policy", "v1", "poddisruptionbudgets", vec![
        json!({"metadata": meta("web", "default", 3600), "spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}}),
        json!({"metadata": meta("db", "default", 3600), "spec": {"maxUnavailable": "25%"}, "status": {"disruptionsAllowed": 0}}),
    ]));
    all.insert("priorityclasses".into(), r("scheduling.k8s.io", "v1", "priorityclasses", vec![
        json!({"metadata": {"name": "system-node-critical", "creationTimestamp": ago(86400 * 30)}, "value": 2000001000,
               "globalDefault": false, "preemptionPolicy": "PreemptLowerPriority"}),
        json!({"metadata": {"name": "batch", "creationTimestamp": ago(60)}, "value": 100, "globalDefault": true}),
    ]));
    all.insert("persistentvolumeclaims".into(), r("", "v1", "persistentvolumeclaims", vec![
        json!({"metadata": meta("data-db-0", "default", 7200),
               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}},
                        "storageClassName": "standard", "volumeName": "pvc-1", "volumeMode": "Filesystem"},
               "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "capacity": {"storage": "10Gi"}}}),
        json!({"metadata": meta("waiting", "default", 20), "spec": {"accessModes": ["ReadWriteMany"]}, "status": {"phase": "Pending"}}),
    ]));
    all.insert("persistentvolumes".into(), r("", "v1", "persistentvolumes", vec![
        json!({"metadata": {"name": "pvc-1", "creationTimestamp": ago(7100), "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
               "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Delete",
                        "claimRef": {"namespace": "default", "name": "data-db-0"}, "storageClassName": "standard"},
               "status": {"phase": "Bound"}}),
    ]));
    all.insert(
        "roles (default table)".into(),
        r(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            vec![
                json!({"metadata": meta("reader", "default", 3600), "rules": []}),
                json!({"metadata": {"name": "no-timestamp"}}),
            ],
        ),
    );
    all.insert("customresourcedefinitions".into(), r("apiextensions.k8s.io", "v1", "customresourcedefinitions", vec![
        json!({"metadata": {"name": "databases.example.com", "creationTimestamp": "2024-04-30T08:15:00Z"}}),
    ]));
    golden("config_and_policy", &Value::Object(all));
}

fn database_crd(columns: Vec<PrinterColumn>) -> ResourceInfo {
    ResourceInfo {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Database".into(),
        plural: "databases".into(),
        singular: "database".into(),
        scope: kubesim_core::Scope::Namespaced,
        short_names: vec!["db".into()],
        categories: vec![],
        verbs: kubesim_core::resource::ALL_VERBS.to_vec(),
        subresources: vec![],
        crd: Some(CrdInfo {
            printer_columns: columns,
            schema: None,
            scale: None,
        }),
    }
}

fn pc(name: &str, type_: &str, path: &str, priority: i64, description: &str) -> PrinterColumn {
    PrinterColumn {
        name: name.into(),
        type_: type_.into(),
        format: String::new(),
        description: description.into(),
        priority,
        json_path: path.into(),
    }
}

#[test]
fn custom_resource_tables() {
    let dbs = vec![
        json!({"apiVersion": "example.com/v1", "kind": "Database",
               "metadata": {"name": "orders", "namespace": "default", "creationTimestamp": ago(86400 + 3600),
                            "labels": {"app.kubernetes.io/name": "postgres"}},
               "spec": {"replicas": 3, "ratio": 0.75, "paused": false, "backup": {"schedule": "@daily", "keep": 7}},
               "status": {"lastBackup": ago(5400), "endpoint": "orders.default.svc:5432",
                          "conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False"}]}}),
        json!({"apiVersion": "example.com/v1", "kind": "Database",
               "metadata": {"name": "scratch", "namespace": "default", "creationTimestamp": ago(45)},
               "spec": {"replicas": 1.0, "ratio": 1, "backup": null},
               "status": {"lastBackup": "not-a-time"}}),
    ];
    let columns = vec![
        pc(
            "Replicas",
            "integer",
            ".spec.replicas",
            0,
            "Desired number of database instances.",
        ),
        pc(
            "Ready",
            "string",
            ".status.conditions[?(@.type==\"Ready\")].status",
            0,
            "",
        ),
        pc(
            "Engine",
            "string",
            ".metadata.labels['app.kubernetes.io/name']",
            0,
            "",
        ),
        pc("Ratio", "number", ".spec.ratio", 0, ""),
        pc("Paused", "boolean", ".spec.paused", 0, ""),
        pc("Backup", "string", ".spec.backup", 1, ""),
        pc("Last Backup", "date", ".status.lastBackup", 0, ""),
        pc(
            "Endpoint",
            "string",
            ".status.endpoint",
            1,
            "Where clients connect.",
        ),
        pc("Age", "date", ".metadata.creationTimestamp", 0, ""),
    ];
    golden(
        "crd_database",
        &table(&database_crd(columns), &dbs, &opts(IncludeObject::None)),
    );
    golden(
        "crd_no_columns",
        &table(&database_crd(vec![]), &dbs, &opts(IncludeObject::None)),
    );
    // A path that does not parse ends the column list there, as upstream.
    let broken = vec![
        pc("Replicas", "integer", ".spec.replicas", 0, ""),
        pc("Bad", "string", ".spec[", 0, ""),
        pc("Never", "string", ".spec.ratio", 0, ""),
    ];
    let t = table(&database_crd(broken), &dbs, &opts(IncludeObject::None));
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["Name", "Replicas"]);
    assert_eq!(t["rows"][0]["cells"], json!(["orders", 3]));
}

/// Whatever is stored, every printer renders a row of the right width and
/// never panics.
#[test]
fn odd_objects_never_panic() {
    let odd = vec![
        json!(null),
        json!([1, 2]),
        json!("text"),
        json!({}),
        json!({"metadata": 5, "spec": "x", "status": []}),
        json!({"metadata": {"name": 7, "creationTimestamp": 12, "labels": "no", "deletionTimestamp": "soon"},
               "spec": {"containers": "none", "initContainers": [null, 3], "replicas": "three", "selector": {"matchLabels": [1]},
                        "ports": [{"port": "http", "nodePort": -1}], "type": 4, "metrics": [{"type": "Resource"}, {}],
                        "completions": -1, "parallelism": 1e30},
               "status": {"phase": 1, "conditions": [{}, "x"], "containerStatuses": [{"state": {"terminated": null}}, 1],
                          "initContainerStatuses": [{"state": {"terminated": {"exitCode": "1"}}}],
                          "addresses": "none", "loadBalancer": {"ingress": [1]}}, "subsets": [{"addresses": [{}], "ports": [{}]}],
               "series": 3, "involvedObject": []}),
    ];
    let registry = Registry::new();
    let mut resources: Vec<ResourceInfo> = registry.all().iter().map(|r| (**r).clone()).collect();
    resources.push(database_crd(vec![
        pc("A", "integer", ".spec.replicas", 0, ""),
        pc("B", "date", ".metadata.creationTimestamp", 0, ""),
        pc("C", "string", "..name", 0, ""),
    ]));
    resources.push(database_crd(vec![]));
    for r in &resources {
        for include in [
            IncludeObject::None,
            IncludeObject::Metadata,
            IncludeObject::Object,
        ] {
            let t = table(r, &odd, &opts(include));
            let width = t["columnDefinitions"].as_array().expect("columns").len();
            for row in t["rows"].as_array().expect("rows") {
                assert_eq!(
                    row["cells"].as_array().expect("cells").len(),
                    width,
                    "{}/{}",
                    r.group,
                    r.plural
                );
            }
        }
    }
}
