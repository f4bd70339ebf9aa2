//! End-to-end: `kubectl auth` against `kubesim up`. The reviews it posts
//! are answered and never stored; other verbs on them are refused.

mod common;

use common::kubectl::Cluster;

#[test]
fn can_i_whoami_and_review_resources() {
    let c = Cluster::start("kubectl-auth");

    assert_eq!(c.ok(&["auth", "can-i", "create", "pods"]).trim(), "yes");
    assert_eq!(
        c.ok(&["auth", "can-i", "delete", "nodes", "--all-namespaces"])
            .trim(),
        "yes"
    );
    assert_eq!(c.ok(&["auth", "can-i", "get", "/healthz"]).trim(), "yes");

    let list = c.ok(&["auth", "can-i", "--list"]);
    assert!(
        list.lines()
            .any(|l| l.split_whitespace().next() == Some("*.*")),
        "{list}"
    );

    let me = c.ok(&["auth", "whoami"]);
    assert!(me.contains("kubesim-admin"), "{me}");
    assert!(me.contains("system:masters"), "{me}");
    let me = c.json(&["auth", "whoami"]);
    assert_eq!(me["kind"], "SelfSubjectReview");
    assert_eq!(me["status"]["userInfo"]["username"], "kubesim-admin");

    let res = c.ok(&["api-resources", "-o", "wide"]);
    for want in [
        "selfsubjectreviews",
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
    ] {
        let line = res
            .lines()
            .find(|l| l.split_whitespace().next() == Some(want))
            .unwrap_or_else(|| panic!("api-resources lacks {want}:\n{res}"));
        // NAME APIVERSION NAMESPACED KIND VERBS: create and nothing else.
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols.len(), 5, "{line}");
        assert_eq!(cols[2], "false", "{line}");
        assert_eq!(cols[4].trim_matches(['[', ']']), "create", "{line}");
    }
    let explain = c.ok(&["explain", "selfsubjectaccessreview.spec.resourceAttributes"]);
    assert!(explain.contains("verb"), "{explain}");

    // Created through the generic path (JSON, dry run): the answer comes
    // back with 201 and nothing is kept.
    let review = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"list","resource":"secrets","namespace":"default"}}}"#;
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let (code, body) = c
        .server
        .request("POST", &format!("{path}?dryRun=All"), Some(review));
    assert_eq!(code, 201, "{body}");
    assert!(body.contains("\"allowed\":true"), "{body}");

    for (method, p) in [
        ("GET", path.to_string()),
        ("GET", format!("{path}?watch=true")),
        ("GET", format!("{path}/x")),
        ("DELETE", format!("{path}/x")),
        (
            "GET",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews".into(),
        ),
    ] {
        let (code, body) = c.server.request(method, &p, None);
        assert_eq!(code, 405, "{method} {p}: {body}");
        assert!(body.contains("MethodNotAllowed"), "{body}");
    }
    let raw = c.fails(&["get", "--raw", path]);
    assert!(
        raw.contains("MethodNotAllowed") || raw.contains("not allow"),
        "{raw}"
    );
}
