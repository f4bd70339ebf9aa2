//! The resources a real kube-scheduler and kube-controller-manager inform
//! on, served over HTTP: discovery lists their groups, and each can be
//! created, listed, watched and read as a Table.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use base64::Engine;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use kubesim_apiserver::http::{router, App};
use kubesim_apiserver::Server;
use kubesim_runtime::{Clock, Rng};
use kubesim_store::{MemStore, Store};
use serde_json::{json, Value};
use tower::ServiceExt;

const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

async fn app() -> axum::Router {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated(jiff::Timestamp::constant(1_767_225_600, 0));
    let server = Server::new(store, clock, Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    router(Arc::new(App {
        server,
        metrics: Default::default(),
        address: "127.0.0.1:6443".into(),
        auth: Default::default(),
        extra: None,
        inflight: Default::default(),
        audit: None,
    }))
}

async fn call(
    app: &axum::Router,
    method: Method,
    path: &str,
    accept: &str,
    body: Option<Value>,
) -> (StatusCode, http::HeaderMap, Value) {
    let mut req = Request::builder().method(method).uri(path);
    if !accept.is_empty() {
        req = req.header("accept", accept);
    }
    let body = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            Body::from(serde_json::to_vec(&b).expect("body"))
        }
        None => Body::empty(),
    };
    let resp = app
        .clone()
        .oneshot(req.body(body).expect("request"))
        .await
        .expect("response");
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.expect("body").to_bytes();
    let v = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (parts.status, parts.headers, v)
}

/// (group, plural, namespaced, a valid object of the kind)
fn samples() -> Vec<(&'static str, &'static str, bool, Value)> {
    let pem = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n");
    vec![
        (
            "storage.k8s.io",
            "csinodes",
            false,
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": "node-1"}, "spec": {"drivers": []}}),
        ),
        (
            "storage.k8s.io",
            "csidrivers",
            false,
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "hostpath.csi.k8s.io"}, "spec": {}}),
        ),
        (
            "storage.k8s.io",
            "csistoragecapacities",
            true,
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap-1"}, "storageClassName": "standard", "capacity": "10Gi"}),
        ),
        (
            "storage.k8s.io",
            "volumeattachments",
            false,
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": "va-1"}, "spec": {"attacher": "hostpath.csi.k8s.io", "nodeName": "node-1",
            "source": {"persistentVolumeName": "pv-1"}}}),
        ),
        (
            "storage.k8s.io",
            "volumeattributesclasses",
            false,
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
            "metadata": {"name": "gold"}, "driverName": "hostpath.csi.k8s.io", "parameters": {"iops": "100"}}),
        ),
        (
            "resource.k8s.io",
            "resourceclaims",
            true,
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "gpu"}, "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}),
        ),
        (
            "resource.k8s.io",
            "resourceclaimtemplates",
            true,
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu"}, "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}}),
        ),
        (
            "resource.k8s.io",
            "resourceslices",
            false,
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-1-gpu"}, "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}}),
        ),
        (
            "resource.k8s.io",
            "deviceclasses",
            false,
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}}),
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicies",
            false,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "replicas"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]}}),
        ),
        (
            "admissionregistration.k8s.io",
            "validatingadmissionpolicybindings",
            false,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "replicas"},
            "spec": {"policyName": "replicas", "validationActions": ["Deny"]}}),
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            false,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "hook"}, "webhooks": [{"name": "check.example.com",
            "clientConfig": {"url": "https://example.com/check"}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            false,
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration", "metadata": {"name": "hook"}, "webhooks": [{"name": "mutate.example.com",
            "clientConfig": {"service": {"namespace": "default", "name": "hook"}}, "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        ),
        (
            "networking.k8s.io",
            "servicecidrs",
            false,
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
            "metadata": {"name": "extra"}, "spec": {"cidrs": ["10.100.0.0/16"]}}),
        ),
        (
            "networking.k8s.io",
            "ipaddresses",
            false,
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"name": "10.100.0.5"}, "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}}}),
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            false,
            json!({"apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest", "metadata": {"name": "alice"}, "spec": {"request": pem,
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}}),
        ),
    ]
}

fn collection(group: &str, plural: &str, namespaced: bool) -> String {
    if namespaced {
        format!("/apis/{group}/v1/namespaces/default/{plural}")
    } else {
        format!("/apis/{group}/v1/{plural}")
    }
}

#[tokio::test]
async fn discovery_lists_the_control_plane_groups() {
    let app = app().await;
    let (status, headers, groups) = call(&app, Method::GET, "/apis", AGGREGATED, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(headers["content-type"]
        .to_str()
        .unwrap_or("")
        .contains("as=APIGroupDiscoveryList"));
    let resources_of = |group: &str| -> Vec<String> {
        groups["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["metadata"]["name"] == group)
            .flat_map(|g| {
                g["versions"][0]["resources"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|r| r["resource"].as_str().map(str::to_string))
            .collect()
    };
    for (group, plural, _, _) in samples() {
        assert!(
            resources_of(group).iter().any(|r| r == plural),
            "{plural}.{group} missing from aggregated discovery"
        );
        let (status, _, legacy) =
            call(&app, Method::GET, &format!("/apis/{group}/v1"), "", None).await;
        assert_eq!(status, StatusCode::OK, "{group}");
        assert!(
            legacy["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|r| r["name"] == plural),
            "{plural} missing from /apis/{group}/v1"
        );
    }
    let (_, _, storage) = call(&app, Method::GET, "/apis/storage.k8s.io/v1", "", None).await;
    let names: Vec<&str> = storage["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(names.contains(&"volumeattachments/status"), "{names:?}");
    let (_, _, certs) = call(&app, Method::GET, "/apis/certificates.k8s.io/v1", "", None).await;
    let names: Vec<&str> = certs["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        names.contains(&"certificatesigningrequests/approval"),
        "{names:?}"
    );
    let (_, _, version) = call(&app, Method::GET, "/version", "", None).await;
    assert_eq!(version["minor"], "36");
    // OpenAPI documents exist for the new group versions.
    let (status, _, doc) = call(
        &app,
        Method::GET,
        "/openapi/v3/apis/resource.k8s.io/v1",
        "",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["components"]["schemas"]
        .get("io.k8s.api.resource.v1.ResourceClaim")
        .is_some());
}

#[tokio::test]
async fn each_resource_is_created_listed_watched_and_tabled() {
    let app = app().await;
    for (group, plural, namespaced, obj) in samples() {
        let path = collection(group, plural, namespaced);
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();

        // A watch from now sees the create.
        let watch = Request::builder()
            .uri(format!("{path}?watch=true&resourceVersion=1"))
            .body(Body::empty())
            .expect("watch request");
        let resp = app.clone().oneshot(watch).await.expect("watch");
        assert_eq!(resp.status(), StatusCode::OK, "watch {plural}");
        let mut stream = resp.into_body();

        let (status, _, made) = call(&app, Method::POST, &path, "", Some(obj.clone())).await;
        assert_eq!(status, StatusCode::CREATED, "create {plural}: {made}");
        assert_eq!(made["metadata"]["name"], name.as_str());

        let frame = tokio::time::timeout(Duration::from_secs(10), stream.frame())
            .await
            .expect("a watch event")
            .expect("frame")
            .expect("frame bytes");
        let data = frame.into_data().unwrap_or_default();
        let line = data.split(|b| *b == b'\n').next().unwrap_or_default();
        let event: Value = serde_json::from_slice(line).expect("event json");
        assert_eq!(event["type"], "ADDED", "{plural}");
        assert_eq!(event["object"]["metadata"]["name"], name.as_str());

        let (status, _, list) = call(&app, Method::GET, &path, "", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{plural}");

        let (status, _, table) = call(&app, Method::GET, &path, TABLE, None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(table["kind"], "Table");
        let columns: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(columns.first(), Some(&"Name"), "{plural}");
        assert!(columns.contains(&"Age"), "{plural}: {columns:?}");
        assert_eq!(table["rows"][0]["cells"][0], name.as_str(), "{plural}");
    }
}

#[tokio::test]
async fn objects_are_defaulted_and_validated() {
    let app = app().await;
    let (_, _, driver) = call(
        &app,
        Method::GET,
        "/apis/storage.k8s.io/v1/csidrivers",
        "",
        None,
    )
    .await;
    assert_eq!(driver["items"].as_array().map(Vec::len), Some(0));
    let (status, _, made) = call(
        &app,
        Method::POST,
        "/apis/storage.k8s.io/v1/csidrivers",
        "",
        Some(
            json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "d.csi.io"}, "spec": {}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(made["spec"]["attachRequired"], true);
    assert_eq!(made["spec"]["volumeLifecycleModes"], json!(["Persistent"]));

    let (status, _, err) = call(
        &app,
        Method::POST,
        "/apis/networking.k8s.io/v1/ipaddresses",
        "",
        Some(
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
            "metadata": {"name": "010.1.2.3"}, "spec": {}}),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    let (status, _, err) = call(
        &app,
        Method::POST,
        "/apis/resource.k8s.io/v1/resourceslices",
        "",
        Some(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "Bad_Name"}, "spec": {"driver": "d", "pool": {"name": "p", "resourceSliceCount": 1}, "allNodes": true}})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("metadata.name"),
        "{err}"
    );
}

#[tokio::test]
async fn a_csr_is_approved_through_its_approval_subresource() {
    let app = app().await;
    let (_, _, _, csr) = samples()
        .into_iter()
        .find(|s| s.1 == "certificatesigningrequests")
        .expect("csr sample");
    let path = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let (status, _, made) = call(&app, Method::POST, path, "", Some(csr)).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert!(!made["spec"]["username"].as_str().unwrap_or("").is_empty());

    let (_, _, table) = call(&app, Method::GET, path, TABLE, None).await;
    assert_eq!(table["rows"][0]["cells"][5], "Pending");

    // What `kubectl certificate approve` sends: the object with a new
    // condition, PUT to /approval.
    let mut approved = made.clone();
    approved["status"] = json!({"conditions": [{"type": "Approved", "status": "True",
        "reason": "KubectlApprove", "message": "This CSR was approved by kubectl certificate approve."}]});
    approved["spec"]["usages"] = json!(["server auth"]);
    let (status, _, after) = call(
        &app,
        Method::PUT,
        &format!("{path}/alice/approval"),
        "",
        Some(approved),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(after["status"]["conditions"][0]["type"], "Approved");
    // Only the conditions changed.
    assert_eq!(after["spec"]["usages"], json!(["client auth"]));

    let (_, _, table) = call(&app, Method::GET, path, TABLE, None).await;
    assert_eq!(table["rows"][0]["cells"][5], "Approved");

    // Denying an approved request is refused: the two exclude each other.
    let deny = json!({"status": {"conditions": [
        {"type": "Approved", "status": "True", "reason": "KubectlApprove"},
        {"type": "Denied", "status": "True", "reason": "KubectlDeny"}]}});
    let req = Request::builder()
        .method(Method::PATCH)
        .uri(format!("{path}/alice/approval"))
        .header("content-type", "application/merge-patch+json")
        .body(Body::from(serde_json::to_vec(&deny).unwrap_or_default()))
        .expect("patch");
    let resp = app.clone().oneshot(req).await.expect("patch response");
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);

    // Reading the approval subresource answers the request itself.
    let (status, _, _) = call(
        &app,
        Method::GET,
        &format!("{path}/alice/approval"),
        "",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn in_process_clients_reach_the_approval_subresource() {
    use kubesim_apiserver::inprocess::InProcess;
    use kubesim_runtime::{Api, ResourceRef, WriteOptions};

    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated(jiff::Timestamp::constant(1_767_225_600, 0));
    let server = Server::new(store, clock, Rng::seeded(1));
    server.bootstrap().await.expect("bootstrap");
    let api = InProcess::new(server, "csr-approver");
    let csrs = ResourceRef::new("certificates.k8s.io", "v1", "certificatesigningrequests");
    let (_, _, _, csr) = samples()
        .into_iter()
        .find(|s| s.1 == "certificatesigningrequests")
        .expect("csr sample");
    let mut made = api
        .create(&csrs, "", csr, &WriteOptions::default())
        .await
        .expect("create");
    made["status"] =
        json!({"conditions": [{"type": "Denied", "status": "True", "reason": "Policy"}]});
    let denied = api
        .update(&csrs, "", made, Some("approval"), &WriteOptions::default())
        .await
        .expect("approval");
    assert_eq!(denied["status"]["conditions"][0]["type"], "Denied");
}

/// What a v1.36 kube-scheduler (its informers, DRA and volume plugins
/// included) and kube-controller-manager (its default controllers) list
/// and watch: (group, version, plural). A 404 on any one of them keeps the
/// program waiting for its caches forever.
const INFORMED_ON: &[(&str, &str, &str)] = &[
    ("", "v1", "pods"),
    ("", "v1", "nodes"),
    ("", "v1", "namespaces"),
    ("", "v1", "services"),
    ("", "v1", "endpoints"),
    ("", "v1", "persistentvolumes"),
    ("", "v1", "persistentvolumeclaims"),
    ("", "v1", "replicationcontrollers"),
    ("", "v1", "serviceaccounts"),
    ("", "v1", "secrets"),
    ("", "v1", "configmaps"),
    ("", "v1", "resourcequotas"),
    ("", "v1", "limitranges"),
    ("", "v1", "podtemplates"),
    ("apps", "v1", "replicasets"),
    ("apps", "v1", "deployments"),
    ("apps", "v1", "statefulsets"),
    ("apps", "v1", "daemonsets"),
    ("apps", "v1", "controllerrevisions"),
    ("batch", "v1", "jobs"),
    ("batch", "v1", "cronjobs"),
    ("autoscaling", "v2", "horizontalpodautoscalers"),
    ("policy", "v1", "poddisruptionbudgets"),
    ("coordination.k8s.io", "v1", "leases"),
    ("discovery.k8s.io", "v1", "endpointslices"),
    ("rbac.authorization.k8s.io", "v1", "clusterroles"),
    ("storage.k8s.io", "v1", "storageclasses"),
    ("storage.k8s.io", "v1", "csinodes"),
    ("storage.k8s.io", "v1", "csidrivers"),
    ("storage.k8s.io", "v1", "csistoragecapacities"),
    ("storage.k8s.io", "v1", "volumeattachments"),
    ("storage.k8s.io", "v1", "volumeattributesclasses"),
    ("resource.k8s.io", "v1", "resourceclaims"),
    ("resource.k8s.io", "v1", "resourceclaimtemplates"),
    ("resource.k8s.io", "v1", "resourceslices"),
    ("resource.k8s.io", "v1", "deviceclasses"),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
    ),
    ("networking.k8s.io", "v1", "servicecidrs"),
    ("networking.k8s.io", "v1", "ipaddresses"),
    ("certificates.k8s.io", "v1", "certificatesigningrequests"),
];

#[tokio::test]
async fn everything_a_real_scheduler_and_controller_manager_inform_on_is_served() {
    let app = app().await;
    for (group, version, plural) in INFORMED_ON {
        let base = if group.is_empty() {
            format!("/api/{version}/{plural}")
        } else {
            format!("/apis/{group}/{version}/{plural}")
        };
        let (status, _, list) =
            call(&app, Method::GET, &format!("{base}?limit=500"), "", None).await;
        assert_eq!(status, StatusCode::OK, "list {base}: {list}");
        let rv = list["metadata"]["resourceVersion"].as_str().unwrap_or("");
        assert!(!rv.is_empty(), "{base}: {list}");
        // The watch informers start from the list's resourceVersion.
        let watch = Request::builder()
            .uri(format!(
                "{base}?watch=true&allowWatchBookmarks=true&resourceVersion={rv}"
            ))
            .body(Body::empty())
            .expect("watch request");
        let resp = app.clone().oneshot(watch).await.expect("watch");
        assert_eq!(resp.status(), StatusCode::OK, "watch {base}");
    }
}
