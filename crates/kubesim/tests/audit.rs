//! `kubesim up --audit-policy-file --audit-log-path`: the log's lines are
//! audit.k8s.io/v1 Events at the levels the policy gives, and a bad policy
//! stops the server with one line saying why.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::Kubesim;
use serde_json::Value;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  nonResourceURLs: ["/readyz", "/healthz*", "/livez*"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
- level: Metadata
  resources:
  - group: ""
    resources: ["secrets"]
- level: Request
  verbs: ["create"]
  namespaces: ["default"]
  omitManagedFields: true
- level: Metadata
  nonResourceURLs: ["/version"]
"#;

fn events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The log once `done` holds of its events (the last event of a stream is
/// written as the server drops it, just after the client saw its end).
fn wait_for(log: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let e = events(log);
        if done(&e) {
            return e;
        }
        assert!(Instant::now() < deadline, "audit log incomplete: {e:#?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn find<'a>(events: &'a [Value], verb: &str, uri_part: &str, stage: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| {
            e["verb"] == verb
                && e["stage"] == stage
                && e["requestURI"].as_str().unwrap_or("").contains(uri_part)
        })
        .collect()
}

fn one<'a>(events: &'a [Value], verb: &str, uri_part: &str, stage: &str) -> &'a Value {
    let found = find(events, verb, uri_part, stage);
    assert_eq!(found.len(), 1, "{verb} {uri_part} {stage}: {events:#?}");
    found[0]
}

fn is_micro_time(v: &Value) -> bool {
    let s = v.as_str().unwrap_or("");
    s.len() == 27 && s.ends_with('Z') && s.as_bytes()[19] == b'.' && jiff_ok(s)
}

fn jiff_ok(s: &str) -> bool {
    s.parse::<jiff::Timestamp>().is_ok()
}

#[test]
fn audit_log_follows_the_policy() {
    let dir = std::env::temp_dir().join(format!("kubesim-audit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.join("logs").join("audit.log");
    let k = Kubesim::start_ephemeral_with(
        "audit",
        &[
            "--audit-policy-file",
            policy.to_str().unwrap(),
            "--audit-log-path",
            log.to_str().unwrap(),
        ],
    );

    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm1"},"data":{"k":"v"}}"#;
    assert_eq!(
        k.request("POST", "/api/v1/namespaces/default/configmaps", Some(cm))
            .0,
        201
    );
    assert_eq!(
        k.request("GET", "/api/v1/namespaces/default/configmaps/nope", None)
            .0,
        404
    );
    let secret = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1"},"stringData":{"password":"hunter2"}}"#;
    assert_eq!(
        k.request("POST", "/api/v1/namespaces/default/secrets", Some(secret))
            .0,
        201
    );
    let sa = r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa1"}}"#;
    assert_eq!(
        k.request(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            Some(sa)
        )
        .0,
        201
    );
    assert_eq!(k.request("GET", "/version", None).0, 200);
    // Matches no rule: not logged.
    assert_eq!(k.request("GET", "/api/v1/namespaces", None).0, 200);
    // A watch that ends by itself after a second.
    assert_eq!(
        k.request(
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
            None
        )
        .0,
        200
    );

    let events = wait_for(&log, |e| {
        e.iter()
            .any(|e| e["verb"] == "watch" && e["stage"] == "ResponseComplete")
    });
    for e in &events {
        assert_eq!(e["kind"], "Event", "{e}");
        assert_eq!(e["apiVersion"], "audit.k8s.io/v1", "{e}");
        assert_ne!(e["stage"], "RequestReceived", "omitted stage logged: {e}");
        assert_eq!(e["user"]["username"], "kubesim-admin", "{e}");
        assert!(
            e["user"]["groups"]
                .as_array()
                .unwrap()
                .contains(&Value::from("system:masters")),
            "{e}"
        );
        assert!(
            e["sourceIPs"]
                .as_array()
                .is_some_and(|ips| ips.contains(&Value::from("127.0.0.1"))),
            "{e}"
        );
        assert!(is_micro_time(&e["requestReceivedTimestamp"]), "{e}");
        assert!(is_micro_time(&e["stageTimestamp"]), "{e}");
        assert!(!e["auditID"].as_str().unwrap_or("").is_empty(), "{e}");
        assert!(!e["requestURI"].as_str().unwrap_or("").contains("readyz"));
        assert!(e["requestURI"] != "/api/v1/namespaces", "unmatched: {e}");
    }

    // RequestResponse: both bodies, the object's address.
    let create = one(&events, "create", "/configmaps", "ResponseComplete");
    assert_eq!(create["level"], "RequestResponse");
    assert_eq!(create["responseStatus"]["code"], 201);
    assert_eq!(create["requestObject"]["data"]["k"], "v");
    assert_eq!(create["responseObject"]["metadata"]["name"], "cm1");
    assert!(create["responseObject"]["metadata"]["uid"].is_string());
    let r = &create["objectRef"];
    assert_eq!(
        (
            &r["resource"],
            &r["namespace"],
            &r["name"],
            &r["apiVersion"]
        ),
        (
            &Value::from("configmaps"),
            &Value::from("default"),
            &Value::from("cm1"),
            &Value::from("v1")
        ),
        "{create}"
    );
    assert!(r.get("apiGroup").is_none(), "core group is empty: {create}");

    // A failure carries the Status's reason and message.
    let missing = one(&events, "get", "/configmaps/nope", "ResponseComplete");
    let s = &missing["responseStatus"];
    assert_eq!(s["code"], 404, "{missing}");
    assert_eq!(s["reason"], "NotFound", "{missing}");
    assert_eq!(s["status"], "Failure", "{missing}");
    assert!(s["message"].as_str().unwrap().contains("nope"), "{missing}");

    // Metadata: no bodies, so no secret in the log.
    let sec = one(&events, "create", "/secrets", "ResponseComplete");
    assert_eq!(sec["level"], "Metadata");
    assert!(sec.get("requestObject").is_none() && sec.get("responseObject").is_none());
    assert_eq!(sec["objectRef"]["name"], "s1", "{sec}");
    assert!(!std::fs::read_to_string(&log).unwrap().contains("hunter2"));

    // Request: the request body only, without managed fields.
    let sa = one(&events, "create", "/serviceaccounts", "ResponseComplete");
    assert_eq!(sa["level"], "Request");
    assert_eq!(sa["requestObject"]["metadata"]["name"], "sa1");
    assert!(sa.get("responseObject").is_none(), "{sa}");

    // A path that is not a resource: the lower-cased method, no objectRef.
    let version = one(&events, "get", "/version", "ResponseComplete");
    assert_eq!(version["level"], "Metadata");
    assert!(version.get("objectRef").is_none());

    // A watch: started, then complete, under one audit ID.
    let started = one(&events, "watch", "watch=true", "ResponseStarted");
    let done = one(&events, "watch", "watch=true", "ResponseComplete");
    assert_eq!(started["auditID"], done["auditID"]);
    assert_eq!(started["responseStatus"]["code"], 200);
    assert_eq!(started["level"], "RequestResponse");

    // Every request has its own ID.
    let mut ids: Vec<&str> = events
        .iter()
        .filter(|e| e["stage"] == "ResponseComplete")
        .map(|e| e["auditID"].as_str().unwrap())
        .collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n, "{events:#?}");
    drop(k);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_policy_stops_the_server_with_one_line() {
    let dir = std::env::temp_dir().join(format!("kubesim-audit-bad-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loudly\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .args(["up", "--ephemeral", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .arg("--audit-policy-file")
        .arg(&policy)
        .args(["--audit-log-path", "-"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("audit")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("Loudly"), "{stderr}");
    assert!(errors[0].contains("policy.yaml"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
