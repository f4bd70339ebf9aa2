//! End-to-end: core/v1 and events.k8s.io/v1 Events are one stored
//! resource: written through either API, read, listed, selected and
//! watched through both.

mod common;

use common::kubectl::Cluster;
use serde_json::Value;

const CORE: &str = "/api/v1/namespaces/default/events";
const NEW: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

fn names(list: &Value) -> Vec<String> {
    let mut n: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    n.sort();
    n
}

#[test]
fn events_are_one_resource_in_two_apis() {
    let c = Cluster::start("kubectl-events-unified");
    let core_ev = r#"{"apiVersion":"v1","kind":"Event",
        "metadata":{"name":"core-ev","namespace":"default"},
        "involvedObject":{"kind":"Pod","name":"p1","namespace":"default","uid":"u1"},
        "reason":"Started","message":"started container","type":"Normal",
        "source":{"component":"kubelet","host":"node-1"},
        "firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T00:00:00Z","count":1}"#;
    c.apply_stdin(&["create", "-f", "-"], core_ev);
    let new_ev = r#"{"apiVersion":"events.k8s.io/v1","kind":"Event",
        "metadata":{"name":"new-ev","namespace":"default"},
        "eventTime":"2026-01-01T00:00:00.000000Z",
        "reportingController":"example.com/scaler","reportingInstance":"scaler-1",
        "action":"Scale","reason":"Scaled","type":"Normal","note":"scaled to 3",
        "regarding":{"apiVersion":"apps/v1","kind":"Deployment","name":"web","namespace":"default"}}"#;
    c.apply_stdin(&["create", "-f", "-"], new_ev);

    // Each one through the other API.
    let seen = c.json(&["get", "events.v1.events.k8s.io", "core-ev"]);
    assert_eq!(seen["apiVersion"], "events.k8s.io/v1");
    assert_eq!(seen["regarding"]["name"], "p1");
    assert_eq!(seen["note"], "started container");
    assert_eq!(seen["reportingController"], "kubelet");
    assert_eq!(seen["deprecatedSource"]["host"], "node-1");
    assert_eq!(seen["deprecatedCount"], 1);
    let seen = c.json(&["get", "events.v1.", "new-ev"]);
    assert_eq!(seen["apiVersion"], "v1");
    assert_eq!(seen["involvedObject"]["kind"], "Deployment");
    assert_eq!(seen["message"], "scaled to 3");
    assert_eq!(seen["reportingComponent"], "example.com/scaler");
    assert_eq!(seen["reportingInstance"], "scaler-1");

    // Both lists hold both, in their own shapes; tables render.
    let core = c.server.json("GET", CORE, None, 200);
    let new = c.server.json("GET", NEW, None, 200);
    assert_eq!(names(&core), vec!["core-ev", "new-ev"]);
    assert_eq!(names(&new), vec!["core-ev", "new-ev"]);
    assert!(new["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["apiVersion"] == "events.k8s.io/v1" && i.get("involvedObject").is_none()));
    let table = c.ok(&["get", "events"]);
    assert!(table.contains("scaled to 3"), "{table}");
    let table = c.ok(&["get", "events.v1.events.k8s.io"]);
    assert!(
        table.contains("started container") || table.contains("Started"),
        "{table}"
    );

    // Field selectors, each API with its own names.
    let sel = c.server.json(
        "GET",
        &format!("{NEW}?fieldSelector=regarding.name%3Dp1"),
        None,
        200,
    );
    assert_eq!(names(&sel), vec!["core-ev"]);
    let sel = c.server.json(
        "GET",
        &format!("{NEW}?fieldSelector=reportingController%3Dexample.com%2Fscaler"),
        None,
        200,
    );
    assert_eq!(names(&sel), vec!["new-ev"]);
    let sel = c.server.json(
        "GET",
        &format!("{CORE}?fieldSelector=involvedObject.kind%3DDeployment"),
        None,
        200,
    );
    assert_eq!(names(&sel), vec!["new-ev"]);
    let sel = c.server.json(
        "GET",
        &format!("{CORE}?fieldSelector=reportingComponent%3Dexample.com%2Fscaler"),
        None,
        200,
    );
    assert_eq!(names(&sel), vec!["new-ev"]);
    let (code, resp) = c.server.request(
        "GET",
        &format!("{CORE}?fieldSelector=regarding.name%3Dp1"),
        None,
    );
    assert_eq!(code, 400, "{resp}");
    let sel = c.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=p1",
        "-o",
        "name",
    ]);
    assert_eq!(sel.trim(), "event/core-ev");

    // Watches through events.k8s.io see core writes in their shape.
    let (code, body) = c.server.request(
        "GET",
        &format!("{NEW}?watch=true&timeoutSeconds=1&fieldSelector=regarding.name%3Dp1"),
        None,
    );
    assert_eq!(code, 200);
    let evs: Vec<Value> = body
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(evs.len(), 1, "{body}");
    assert_eq!(evs[0]["type"], "ADDED");
    assert_eq!(evs[0]["object"]["regarding"]["uid"], "u1");

    // Updates through one API land in the other; delete through either.
    c.ok(&[
        "patch",
        "events.v1.events.k8s.io",
        "core-ev",
        "--type=merge",
        "-p",
        r#"{"note":"restarted"}"#,
    ]);
    assert_eq!(
        c.json(&["get", "events.v1.", "core-ev"])["message"],
        "restarted"
    );
    c.ok(&["delete", "events.v1.", "new-ev"]);
    let (code, _) = c.server.request("GET", &format!("{NEW}/new-ev"), None);
    assert_eq!(code, 404);

    // events.k8s.io keeps its own rules: the reporting fields are required.
    let missing = r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"x"},"reason":"R","type":"Normal","regarding":{"kind":"Pod","name":"p"}}"#;
    let (code, resp) = c.server.request("POST", NEW, Some(missing));
    assert_eq!(code, 422, "{resp}");
    assert!(resp.contains("reportingController"), "{resp}");
}
