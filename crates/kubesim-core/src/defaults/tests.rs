//! Defaults compared with what a real cluster returns for minimal objects,
//! plus properties: idempotent, panic-free, and valid output for valid input.

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::resource::Registry;
use crate::validation;

fn info(group: &str, plural: &str) -> ResourceInfo {
    Registry::new()
        .all()
        .into_iter()
        .find(|r| r.group == group && r.plural == plural)
        .map(|r| (*r).clone())
        .unwrap_or_else(|| panic!("no {plural}.{group}"))
}

fn defaulted(group: &str, plural: &str, mut obj: Value) -> Value {
    let mut next = || "x7k2p".to_string();
    let mut ctx = Context {
        random_suffix: &mut next,
    };
    apply(&info(group, plural), &mut obj, &mut ctx);
    obj
}

fn token_volume() -> Value {
    json!({"name": "kube-api-access-x7k2p", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}, "path": "namespace"}]}}]}})
}

/// `kubectl run nginx --image=nginx` against a real cluster, but for
/// `priority`, which the server's Priority admission sets after defaulting.
#[test]
fn minimal_pod_matches_real_cluster() {
    let pod = defaulted(
        "",
        "pods",
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "nginx", "namespace": "default", "labels": {"run": "nginx"}},
               "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}),
    );
    let expected = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"run": "nginx"}},
        "spec": {
            "containers": [{
                "image": "nginx", "imagePullPolicy": "Always", "name": "nginx", "resources": {},
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "volumeMounts": [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                  "name": "kube-api-access-x7k2p", "readOnly": true}]}],
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
            "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "serviceAccount": "default", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300}],
            "volumes": [token_volume()]
        },
        "status": {"phase": "Pending", "qosClass": "BestEffort"}
    });
    assert_eq!(pod, expected);
    assert!(validation::validate(&info("", "pods"), &pod, None).is_empty());
    // An update that changes nothing but the image passes pod update rules.
    let mut updated = pod.clone();
    updated["spec"]["containers"][0]["image"] = json!("nginx:1.27");
    assert!(validation::validate(&info("", "pods"), &updated, Some(&pod)).is_empty());
}

#[test]
fn pod_admission_respects_user_choices() {
    let pod = defaulted(
        "",
        "pods",
        json!({"metadata": {"name": "p"}, "spec": {
            "automountServiceAccountToken": false,
            "serviceAccountName": "builder",
            "priorityClassName": "high",
            "tolerations": [{"operator": "Exists"}],
            "containers": [{"name": "c", "image": "app:1.2",
                            "ports": [{"containerPort": 80}],
                            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
    );
    let spec = &pod["spec"];
    assert_eq!(spec["serviceAccount"], "builder");
    assert!(spec.get("volumes").is_none());
    assert!(spec["containers"][0].get("volumeMounts").is_none());
    // A named class is resolved by the server, not here.
    assert!(spec.get("priority").is_none());
    assert_eq!(spec["tolerations"], json!([{"operator": "Exists"}]));
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(spec["containers"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(
        spec["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");

    let mut resolved = pod.clone();
    resolve_priority(&mut resolved, 1000, "Never");
    assert_eq!(resolved["spec"]["priority"], 1000);
    assert_eq!(resolved["spec"]["preemptionPolicy"], "Never");
}

#[test]
fn token_mount_reuses_an_existing_volume() {
    let mut calls = 0;
    let mut next = || {
        calls += 1;
        "aaaaa".to_string()
    };
    let mut ctx = Context {
        random_suffix: &mut next,
    };
    let mut pod = json!({"spec": {
        "volumes": [{"name": "kube-api-access-zzzzz", "projected": {"sources": []}}],
        "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x",
            "volumeMounts": [{"name": "own", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}]}]}});
    apply(&info("", "pods"), &mut pod, &mut ctx);
    assert_eq!(calls, 0);
    assert_eq!(pod["spec"]["volumes"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        pod["spec"]["containers"][0]["volumeMounts"][0]["name"],
        "kube-api-access-zzzzz"
    );
    assert_eq!(
        pod["spec"]["containers"][1]["volumeMounts"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

fn template_spec() -> Value {
    json!({
        "containers": [{"image": "nginx", "imagePullPolicy": "Always", "name": "nginx", "resources": {},
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
        "securityContext": {}, "terminationGracePeriodSeconds": 30
    })
}

/// `kubectl create deployment nginx --image=nginx`.
#[test]
fn minimal_deployment_matches_real_cluster() {
    let d = defaulted(
        "apps",
        "deployments",
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
               "spec": {"selector": {"matchLabels": {"app": "nginx"}},
                        "template": {"metadata": {"labels": {"app": "nginx"}},
                                     "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}),
    );
    let expected = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
        "spec": {
            "progressDeadlineSeconds": 600, "replicas": 1, "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": "nginx"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
            "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": template_spec()}}});
    assert_eq!(d, expected);
    assert!(validation::validate(&info("apps", "deployments"), &d, None).is_empty());
}

/// `kubectl create job pi --image=nginx` (restartPolicy Never from kubectl).
#[test]
fn minimal_job_matches_real_cluster() {
    let j = defaulted(
        "batch",
        "jobs",
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "uid": "0b5c"},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                   "containers": [{"name": "pi", "image": "nginx"}]}}}}),
    );
    let labels = json!({"batch.kubernetes.io/controller-uid": "0b5c", "batch.kubernetes.io/job-name": "pi",
                        "controller-uid": "0b5c", "job-name": "pi"});
    let mut tspec = template_spec();
    tspec["restartPolicy"] = json!("Never");
    tspec["containers"][0]["name"] = json!("pi");
    let expected = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "uid": "0b5c", "labels": labels},
        "spec": {
            "backoffLimit": 6, "completionMode": "NonIndexed", "completions": 1, "manualSelector": false,
            "parallelism": 1, "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "0b5c"}},
            "suspend": false,
            "template": {"metadata": {"labels": labels}, "spec": tspec}}});
    assert_eq!(j, expected);
    assert!(validation::validate(&info("batch", "jobs"), &j, None).is_empty());
}

#[test]
fn job_rules() {
    let j = defaulted(
        "batch",
        "jobs",
        json!({"metadata": {"name": "w", "uid": "u", "labels": {"team": "a"}}, "spec": {
            "parallelism": 3, "backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": []}}}}),
    );
    assert!(j["spec"].get("completions").is_none());
    assert_eq!(j["spec"]["backoffLimit"], i64::from(i32::MAX));
    assert_eq!(j["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(
        j["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );
    assert_eq!(j["metadata"]["labels"], json!({"team": "a"}));
    // Template labels of the user are copied to an unlabelled Job.
    let j = defaulted(
        "batch",
        "jobs",
        json!({"metadata": {"name": "w", "uid": "u"}, "spec": {"manualSelector": true,
            "selector": {"matchLabels": {"app": "w"}},
            "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": []}}}}),
    );
    assert_eq!(j["metadata"]["labels"], json!({"app": "w"}));
    assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"app": "w"}}));
}

/// `kubectl create service clusterip web --tcp=80:8080` minus targetPort.
#[test]
fn minimal_service_matches_real_cluster() {
    let s = defaulted(
        "",
        "services",
        json!({"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}}),
    );
    assert_eq!(
        s["spec"],
        json!({"selector": {"app": "web"},
               "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 80}],
               "sessionAffinity": "None", "type": "ClusterIP",
               "internalTrafficPolicy": "Cluster", "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"]})
    );
    assert!(validation::validate(&info("", "services"), &s, None).is_empty());
    let lb = defaulted(
        "",
        "services",
        json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
        "ports": [{"port": 443, "targetPort": "https"}]}}),
    );
    assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(
        lb["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        10800
    );
    assert_eq!(lb["spec"]["ports"][0]["targetPort"], "https");
    let ext = defaulted(
        "",
        "services",
        json!({"spec": {"type": "ExternalName", "externalName": "a.example"}}),
    );
    assert!(ext["spec"].get("ipFamilies").is_none());
    assert!(ext["spec"].get("internalTrafficPolicy").is_none());
    let headless = defaulted("", "services", json!({"spec": {"clusterIP": "None"}}));
    assert_eq!(headless["spec"]["ipFamilyPolicy"], "RequireDualStack");
}

#[test]
fn other_workloads() {
    let t = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    let sts = defaulted(
        "apps",
        "statefulsets",
        json!({"spec": {"template": t.clone(),
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}}),
    );
    assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert_eq!(
        sts["spec"]["persistentVolumeClaimRetentionPolicy"],
        json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
    );
    assert_eq!(sts["spec"]["replicas"], 1);
    assert_eq!(sts["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(
        sts["spec"]["volumeClaimTemplates"][0]["spec"]["volumeMode"],
        "Filesystem"
    );
    assert_eq!(
        sts["spec"]["volumeClaimTemplates"][0]["status"]["phase"],
        "Pending"
    );
    assert!(sts["spec"].get("serviceName").is_none());

    let ds = defaulted(
        "apps",
        "daemonsets",
        json!({"spec": {"template": t.clone()}}),
    );
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);

    let rs = defaulted(
        "apps",
        "replicasets",
        json!({"spec": {"template": t.clone()}}),
    );
    assert_eq!(rs["spec"]["replicas"], 1);
    assert_eq!(
        rs["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );

    let recreate = defaulted(
        "apps",
        "deployments",
        json!({"spec": {"strategy": {"type": "Recreate"}}}),
    );
    assert_eq!(recreate["spec"]["strategy"], json!({"type": "Recreate"}));

    let cj = defaulted(
        "batch",
        "cronjobs",
        json!({"spec": {"schedule": "* * * * *",
        "jobTemplate": {"spec": {"template": t}}}}),
    );
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cj["spec"]["suspend"], false);
    assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(cj["spec"]["failedJobsHistoryLimit"], 1);
    assert_eq!(
        cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"],
        "Always"
    );
    assert!(cj["spec"]["jobTemplate"]["spec"]
        .get("backoffLimit")
        .is_none());
}

#[test]
fn cluster_kinds() {
    let ns = defaulted("", "namespaces", json!({"metadata": {"name": "team"}}));
    assert_eq!(
        ns,
        json!({"metadata": {"name": "team", "labels": {"kubernetes.io/metadata.name": "team"}},
               "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    );
    // Once finalized, the finalizer stays gone.
    let mut done = ns.clone();
    done["spec"]["finalizers"] = json!([]);
    done["status"]["phase"] = json!("Terminating");
    assert_eq!(defaulted("", "namespaces", done.clone()), done);

    assert_eq!(
        defaulted("", "secrets", json!({"data": {}}))["type"],
        "Opaque"
    );
    assert_eq!(
        defaulted(
            "",
            "secrets",
            json!({"data": {"a": "eA==", "b": "eA=="}, "stringData": {"b": "hi"}})
        ),
        json!({"type": "Opaque", "data": {"a": "eA==", "b": "aGk="}})
    );
    assert_eq!(
        defaulted("", "secrets", json!({"type": "kubernetes.io/tls"}))["type"],
        "kubernetes.io/tls"
    );

    let hpa = defaulted(
        "autoscaling",
        "horizontalpodautoscalers",
        json!({"spec": {"maxReplicas": 3}}),
    );
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    assert!(hpa["spec"].get("behavior").is_none());
    let hpa = defaulted(
        "autoscaling",
        "horizontalpodautoscalers",
        json!({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}),
    );
    assert_eq!(
        hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
        60
    );
    assert_eq!(hpa["spec"]["behavior"]["scaleDown"]["selectPolicy"], "Max");
    assert_eq!(
        hpa["spec"]["behavior"]["scaleUp"]["policies"][0],
        json!({"type": "Pods", "value": 4, "periodSeconds": 15})
    );

    let pc = defaulted("scheduling.k8s.io", "priorityclasses", json!({"value": 10}));
    assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");

    let crd = defaulted(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        json!({"spec": {"names": {"kind": "Widget", "plural": "widgets"}}}),
    );
    assert_eq!(crd["spec"]["names"]["singular"], "widget");
    assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(crd["spec"]["conversion"]["strategy"], "None");

    // Kinds without defaults are untouched.
    let pdb = json!({"spec": {"minAvailable": 1}});
    assert_eq!(
        defaulted("policy", "poddisruptionbudgets", pdb.clone()),
        pdb
    );
}

#[test]
fn odd_shapes_are_left_alone() {
    let odd = json!({"spec": {"containers": "nope", "template": 5, "ports": {"a": 1}, "strategy": []}, "status": 3});
    for r in Registry::new().all() {
        let once = defaulted(&r.group, &r.plural, odd.clone());
        assert_eq!(once["spec"]["containers"], "nope", "{}", r.plural);
    }
}

/// Field names that steer random trees into the code paths above.
const KEYS: &[&str] = &[
    "metadata",
    "name",
    "uid",
    "labels",
    "annotations",
    "spec",
    "status",
    "phase",
    "template",
    "containers",
    "initContainers",
    "image",
    "ports",
    "port",
    "targetPort",
    "protocol",
    "resources",
    "limits",
    "requests",
    "cpu",
    "memory",
    "volumes",
    "volumeMounts",
    "mountPath",
    "tolerations",
    "key",
    "effect",
    "selector",
    "matchLabels",
    "strategy",
    "type",
    "rollingUpdate",
    "updateStrategy",
    "jobTemplate",
    "manualSelector",
    "serviceAccountName",
    "automountServiceAccountToken",
    "priorityClassName",
    "podFailurePolicy",
    "rules",
    "onPodConditions",
    "behavior",
    "scaleUp",
    "metrics",
    "names",
    "kind",
    "versions",
    "finalizers",
    "data",
    "binaryData",
    "schedule",
    "clusterIP",
    "sessionAffinity",
    "projected",
    "secret",
    "livenessProbe",
    "httpGet",
    "env",
    "valueFrom",
    "fieldRef",
    "volumeClaimTemplates",
];

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-2i64..70000).prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "nginx",
            "nginx:latest",
            "a@sha256:x",
            "100m",
            "1Gi",
            "-1",
            "None",
            "Always",
            "RollingUpdate",
            "ClientIP",
            "LoadBalancer",
            "kube-api-access-abcde",
            "25%",
            "*/5 * * * *",
            "/var/run/secrets/kubernetes.io/serviceaccount",
            "NoExecute",
            "Exists",
        ])
        .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn defaulting_is_idempotent_and_never_panics(v in arb_json()) {
        for r in Registry::new().all() {
            let mut once = v.clone();
            let mut n = 0u32;
            let mut next = || { n += 1; format!("s{n:04}") };
            let mut ctx = Context { random_suffix: &mut next };
            apply(&r, &mut once, &mut ctx);
            let mut twice = once.clone();
            apply(&r, &mut twice, &mut ctx);
            prop_assert_eq!(&once, &twice, "{}", r.plural);
        }
    }

    #[test]
    fn validation_never_panics(v in arb_json(), old in arb_json()) {
        for r in Registry::new().all() {
            let _ = validation::validate(&r, &v, None);
            let _ = validation::validate(&r, &v, Some(&old));
            let _ = validation::validate(&r, &v, Some(&v));
        }
    }
}
