//! End-to-end: `kubectl create token` against `kubesim up`, through the
//! `serviceaccounts/token` subresource.

mod common;

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::kubectl::Cluster;
use serde_json::Value;

fn claims(token: &str) -> Value {
    let parts: Vec<&str> = token.trim().split('.').collect();
    assert_eq!(parts.len(), 3, "not a JWT: {token}");
    let payload = URL_SAFE_NO_PAD.decode(parts[1]).expect("base64url payload");
    serde_json::from_slice(&payload).expect("JSON claims")
}

#[test]
fn create_token_for_service_accounts() {
    let c = Cluster::start("kubectl-tokens");
    // The default account comes from the namespace controller.
    c.eventually(
        "the default service account",
        100,
        Duration::from_millis(100),
        || {
            c.kubectl(&["get", "serviceaccount", "default"])
                .status
                .success()
                .then_some(())
        },
    );

    let token = c.ok(&["create", "token", "default"]);
    let cl = claims(&token);
    assert_eq!(cl["sub"], "system:serviceaccount:default:default");
    assert_eq!(cl["kubernetes.io"]["namespace"], "default");
    assert_eq!(cl["kubernetes.io"]["serviceaccount"]["name"], "default");
    assert_eq!(
        cl["exp"].as_i64().unwrap() - cl["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(cl["nbf"], cl["iat"]);
    assert!(cl["iss"].as_str().is_some_and(|s| !s.is_empty()), "{cl}");
    assert!(cl["aud"].as_array().is_some_and(|a| !a.is_empty()), "{cl}");

    let token = c.ok(&[
        "create",
        "token",
        "default",
        "--audience",
        "vault",
        "--duration",
        "2h",
    ]);
    let cl = claims(&token);
    assert_eq!(cl["aud"], serde_json::json!(["vault"]));
    assert_eq!(
        cl["exp"].as_i64().unwrap() - cl["iat"].as_i64().unwrap(),
        7200
    );

    let err = c.fails(&["create", "token", "nosuch"]);
    // kubectl prints `error: failed to create token: <message>`.
    assert!(
        err.contains("serviceaccounts \"nosuch\" not found"),
        "{err}"
    );
    let (code, resp) = c.server.request(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/nosuch/token",
        Some("{}"),
    );
    assert_eq!(code, 404, "{resp}");
    assert!(resp.contains("\"reason\":\"NotFound\""), "{resp}");
    let err = c.fails(&["create", "token", "default", "--duration", "5m"]);
    assert!(
        err.contains("may not specify a duration less than 10 minutes"),
        "{err}"
    );

    // Bound to a pod: the pod must exist, and its uid is in the token.
    c.ok(&["run", "p1", "--image", "nginx"]);
    let uid = c.json(&["get", "pod", "p1"])["metadata"]["uid"].clone();
    let token = c.ok(&[
        "create",
        "token",
        "default",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "p1",
    ]);
    assert_eq!(claims(&token)["kubernetes.io"]["pod"]["uid"], uid);
    let err = c.fails(&[
        "create",
        "token",
        "default",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "nope",
    ]);
    assert!(err.contains("pods \"nope\" not found"), "{err}");

    // The whole TokenRequest, as the API returns it (201, status filled).
    let body = r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":900}}"#;
    let path = "/api/v1/namespaces/default/serviceaccounts/default/token";
    let (code, resp) = c.server.request("POST", path, Some(body));
    assert_eq!(code, 201, "{resp}");
    let tr: Value = serde_json::from_str(&resp).unwrap();
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["spec"]["expirationSeconds"], 900);
    assert!(tr["status"]["expirationTimestamp"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
    assert_eq!(
        claims(tr["status"]["token"].as_str().unwrap())["exp"]
            .as_i64()
            .unwrap()
            - claims(tr["status"]["token"].as_str().unwrap())["iat"]
                .as_i64()
                .unwrap(),
        900
    );
    for bad in [
        r#"{"spec":{"expirationSeconds":"x"}}"#,
        r#"{"kind":"Pod"}"#,
        "[1]",
    ] {
        let (code, resp) = c.server.request("POST", path, Some(bad));
        assert_eq!(code, 400, "{bad}: {resp}");
    }
    let (code, resp) = c
        .server
        .request("POST", path, Some(r#"{"spec":{"expirationSeconds":10}}"#));
    assert_eq!(code, 422, "{resp}");
    assert!(resp.contains("\"reason\":\"Invalid\""), "{resp}");
    // create is its only verb.
    let (code, _) = c.server.request("GET", path, None);
    assert_eq!(code, 405);

    // Discovery lists the subresource like the real server.
    let v1: Value = serde_json::from_str(&c.ok(&["get", "--raw", "/api/v1"])).unwrap();
    let sub = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .expect("serviceaccounts/token in /api/v1");
    assert_eq!(sub["verbs"], serde_json::json!(["create"]));
    assert_eq!(sub["group"], "authentication.k8s.io");
    assert_eq!(sub["version"], "v1");
    assert_eq!(sub["kind"], "TokenRequest");
}
