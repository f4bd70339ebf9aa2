//! The audit log of requests through the HTTP router, on a simulated
//! clock: its stages, the Audit-ID header, and that the same requests on
//! the same seed give the same log byte for byte.

use std::io::Write;
use std::sync::Arc;

use axum::body::Body;
use http::{Method, Request};
use http_body_util::BodyExt;
use kubesim_apiserver::audit::{Auditor, Policy};
use kubesim_apiserver::http::{router, App};
use kubesim_apiserver::Server;
use kubesim_runtime::{Clock, Rng};
use kubesim_store::{MemStore, Store};
use serde_json::Value;
use tower::ServiceExt;

/// An in-memory audit log.
#[derive(Clone, Default)]
struct Log(Arc<parking_lot::Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().clone()).unwrap()
    }
    fn events(&self) -> Vec<Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

const POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  resources: [{group: '', resources: [configmaps]}]
- level: Metadata
";

async fn app(log: &Log) -> axum::Router {
    let store: Arc<dyn Store> = Arc::new(MemStore::ephemeral(Default::default()));
    let clock = Clock::simulated(jiff::Timestamp::constant(1_767_225_600, 0));
    let server = Server::new(store, clock, Rng::seeded(7));
    server.bootstrap().await.expect("bootstrap");
    let auditor = Auditor::new(Policy::parse(POLICY).unwrap(), Box::new(log.clone()));
    router(Arc::new(App {
        server,
        metrics: Default::default(),
        address: "127.0.0.1:6443".into(),
        auth: Default::default(),
        extra: None,
        inflight: Default::default(),
        audit: Some(Arc::new(auditor)),
    }))
}

async fn call(
    app: &axum::Router,
    method: Method,
    path: &str,
    audit_id: Option<&str>,
    body: Option<&str>,
) -> (u16, http::HeaderMap) {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(id) = audit_id {
        req = req.header("audit-id", id);
    }
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let resp = app.clone().oneshot(req.body(body).unwrap()).await.unwrap();
    let (parts, body) = resp.into_parts();
    body.collect().await.unwrap();
    (parts.status.as_u16(), parts.headers)
}

async fn session(log: &Log) -> Vec<String> {
    let app = app(log).await;
    let mut ids = Vec::new();
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[]},"data":{"k":"v"}}"#;
    let (code, h) = call(
        &app,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        None,
        Some(cm),
    )
    .await;
    assert_eq!(code, 201);
    ids.push(h["audit-id"].to_str().unwrap().to_string());
    let (code, h) = call(
        &app,
        Method::GET,
        "/api/v1/namespaces/default/configmaps/missing",
        Some("client-chosen-id"),
        None,
    )
    .await;
    assert_eq!(code, 404);
    ids.push(h["audit-id"].to_str().unwrap().to_string());
    let (code, h) = call(&app, Method::GET, "/api", None, None).await;
    assert_eq!(code, 200);
    ids.push(h["audit-id"].to_str().unwrap().to_string());
    ids
}

#[tokio::test(start_paused = true)]
async fn events_per_stage_with_the_ids_sent_back() {
    let log = Log::default();
    let ids = session(&log).await;
    assert_eq!(ids[1], "client-chosen-id");
    let events = log.events();
    let stages: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["auditID"].as_str().unwrap(), e["stage"].as_str().unwrap()))
        .collect();
    assert_eq!(
        stages,
        vec![
            (ids[0].as_str(), "RequestReceived"),
            (ids[0].as_str(), "ResponseComplete"),
            (ids[1].as_str(), "RequestReceived"),
            (ids[1].as_str(), "ResponseComplete"),
            (ids[2].as_str(), "RequestReceived"),
            (ids[2].as_str(), "ResponseComplete"),
        ]
    );
    // Simulated time: the clock has not moved.
    for e in &events {
        assert_eq!(e["stageTimestamp"], "2026-01-01T00:00:00.000000Z", "{e}");
    }
    // RequestReceived carries no outcome; ResponseComplete does.
    assert!(events[0].get("responseStatus").is_none());
    assert!(events[0].get("responseObject").is_none());
    assert_eq!(events[1]["responseStatus"]["code"], 201);
    assert_eq!(events[1]["requestObject"]["data"]["k"], "v");
    assert_eq!(events[1]["responseObject"]["metadata"]["name"], "a");
    assert_eq!(events[3]["responseStatus"]["reason"], "NotFound");
    assert_eq!(events[5]["level"], "Metadata");
    assert!(events[5].get("responseObject").is_none());
}

#[tokio::test(start_paused = true)]
async fn same_seed_same_requests_same_log() {
    let (a, b) = (Log::default(), Log::default());
    session(&a).await;
    session(&b).await;
    assert!(!a.text().is_empty());
    assert_eq!(a.text(), b.text());
}
