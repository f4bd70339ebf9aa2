//! What the audit log records of one HTTP request, and when: the
//! RequestReceived event before anything runs, the request body at level
//! Request and above, then ResponseComplete (or Panic) with the status and,
//! at RequestResponse, the response body. Long-running requests also get
//! ResponseStarted when their headers go out, and ResponseComplete when
//! their stream ends.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::response::Response;
use futures::StreamExt;
use http::{header, HeaderValue, Method};
use kubesim_core::ApiError;
use serde_json::{json, Value};

use super::request_info::RequestInfo;
use super::{error_response, App, MAX_BODY};
use crate::audit::event::{strip_managed_fields, ObjectRef, UserInfo};
use crate::audit::{Attributes, Auditor, Decision, Event, Level, ResourceAttributes, Stage};
use crate::auth::UserInfo as User;

/// Marks a response the panic handler produced, so its event is Panic.
#[derive(Clone, Copy)]
pub(crate) struct Panicked;

const AUDIT_ID: &str = "audit-id";

/// The audit of one request in progress.
pub(crate) struct Audit {
    auditor: Arc<Auditor>,
    decision: Decision,
    event: Event,
    long_running: bool,
    resource_request: bool,
    app: Arc<App>,
}

impl Audit {
    /// Starts the audit of a request the policy logs, writing its
    /// RequestReceived event; None when it logs nothing.
    pub(crate) fn begin(
        app: &Arc<App>,
        info: &RequestInfo,
        user: &User,
        req: &Request,
    ) -> Option<Audit> {
        let auditor = app.audit.clone()?;
        let r = info.resource.as_ref();
        let decision = auditor.decide(&Attributes {
            user: &user.name,
            groups: &user.groups,
            verb: &info.verb,
            resource: r.map(|r| ResourceAttributes {
                group: &r.group,
                resource: &r.resource,
                subresource: &r.subresource,
                namespace: &r.namespace,
                name: &r.name,
            }),
            path: &info.path,
        });
        if decision.level == Level::None {
            return None;
        }
        let headers = req.headers();
        let header_str = |h: &str| headers.get(h).and_then(|v| v.to_str().ok());
        // A client (or an aggregating server in front) may name the
        // request; otherwise the seeded generator does.
        let audit_id = header_str(AUDIT_ID)
            .filter(|v| !v.is_empty() && v.len() <= 128)
            .map(str::to_string)
            .unwrap_or_else(|| app.server.rng.uuid());
        let event = Event::received(
            decision.level,
            audit_id,
            req.uri()
                .path_and_query()
                .map_or_else(|| info.path.clone(), |p| p.as_str().to_string()),
            info.verb.clone(),
            UserInfo {
                username: user.name.clone(),
                groups: user.groups.clone(),
            },
            source_ips(req),
            header_str("user-agent").unwrap_or("").to_string(),
            r.map(|r| ObjectRef {
                resource: r.resource.clone(),
                namespace: r.namespace.clone(),
                name: r.name.clone(),
                api_group: r.group.clone(),
                api_version: r.version.clone(),
                subresource: r.subresource.clone(),
            }),
            app.server.clock.now(),
        );
        let audit = Audit {
            auditor,
            decision,
            event,
            long_running: info.long_running(),
            resource_request: r.is_some(),
            app: app.clone(),
        };
        audit.emit(&audit.event);
        Some(audit)
    }

    fn emit(&self, e: &Event) {
        let stage = match e.stage {
            "RequestReceived" => Stage::RequestReceived,
            "ResponseStarted" => Stage::ResponseStarted,
            "Panic" => Stage::Panic,
            _ => Stage::ResponseComplete,
        };
        if self.decision.logs(stage) {
            self.auditor.write(e);
        }
    }

    /// At level Request and above, reads the body of a resource request to
    /// record it, and hands back a request with the same body. A body over
    /// the limit is answered here as the handler would.
    pub(crate) async fn capture_request(&mut self, req: Request) -> Result<Request, Response> {
        // A create names its object in the body, not the path, so its body
        // is read at level Metadata too, for objectRef.name, as upstream.
        let unnamed = self
            .event
            .object_ref
            .as_ref()
            .is_some_and(|r| r.name.is_empty());
        let record = self.decision.level >= Level::Request;
        if !(record || (unnamed && *req.method() == Method::POST))
            || !self.resource_request
            || matches!(*req.method(), Method::GET | Method::HEAD)
        {
            return Ok(req);
        }
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
            let e =
                ApiError::too_large("the request body is too large: the limit is 3145728 bytes");
            return Err(error_response(&e));
        };
        if let Some(mut obj) = decode(&bytes) {
            if self.decision.omit_managed_fields {
                strip_managed_fields(&mut obj);
            }
            if let Some(r) = self.event.object_ref.as_mut() {
                if r.name.is_empty() {
                    if let Some(n) = obj.pointer("/metadata/name").and_then(Value::as_str) {
                        r.name = n.to_string();
                    }
                }
            }
            if record {
                self.event.request_object = Some(obj);
            }
        }
        Ok(Request::from_parts(parts, Body::from(bytes)))
    }

    /// Records the response and hands it on.
    pub(crate) async fn finish(self, mut resp: Response) -> Response {
        if let Ok(v) = HeaderValue::from_str(&self.event.audit_id) {
            resp.headers_mut().insert(AUDIT_ID, v);
        }
        let code = resp.status().as_u16();
        let panicked = resp.extensions().get::<Panicked>().is_some();
        if self.long_running && resp.status().is_success() && !panicked {
            return self.follow_stream(resp, code);
        }
        let stage = if panicked {
            Stage::Panic
        } else {
            Stage::ResponseComplete
        };
        let mut e = self.event.at_stage(stage, self.app.server.clock.now());
        // The body is looked at only for a failure's Status or to record
        // it; every response but a stream's is already whole in memory.
        if code < 400 && !self.wants_response_object() {
            e.response_status = Some(status(code, None));
            self.emit(&e);
            return resp;
        }
        let (parts, body) = resp.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX)
            .await
            .unwrap_or_default();
        let parsed = decode_json(&bytes, &parts.headers);
        e.response_status = Some(status(code, parsed.as_ref()));
        if self.wants_response_object() {
            e.response_object = parsed.map(|mut v| {
                if self.decision.omit_managed_fields {
                    strip_managed_fields(&mut v);
                }
                v
            });
        }
        self.emit(&e);
        Response::from_parts(parts, Body::from(bytes))
    }

    fn wants_response_object(&self) -> bool {
        self.decision.level >= Level::RequestResponse && self.resource_request
    }

    /// ResponseStarted now; ResponseComplete when the stream is dropped
    /// (ended, or its client gone).
    fn follow_stream(self, resp: Response, code: u16) -> Response {
        let mut started = self
            .event
            .at_stage(Stage::ResponseStarted, self.app.server.clock.now());
        started.response_status = Some(status(code, None));
        self.emit(&started);
        let done = Completion {
            audit: self,
            event: started,
        };
        let (parts, body) = resp.into_parts();
        let stream = body.into_data_stream().map(move |chunk| {
            let _keep = &done;
            chunk
        });
        Response::from_parts(parts, Body::from_stream(stream))
    }
}

struct Completion {
    audit: Audit,
    event: Event,
}

impl Drop for Completion {
    fn drop(&mut self) {
        let e = self
            .event
            .at_stage(Stage::ResponseComplete, self.audit.app.server.clock.now());
        self.audit.emit(&e);
    }
}

/// Upstream's responseStatus: the code, and for failures the Status's
/// status, reason and message when the body is one.
fn status(code: u16, body: Option<&Value>) -> Value {
    let mut s = json!({"metadata": {}});
    if let Some(b) = body.filter(|b| code >= 400 && b["kind"] == "Status") {
        for k in ["status", "message", "reason", "details"] {
            if let Some(v) = b.get(k) {
                s[k] = v.clone();
            }
        }
    }
    s["code"] = json!(code);
    s
}

fn decode_json(bytes: &[u8], headers: &http::HeaderMap) -> Option<Value> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("json"));
    json.then(|| serde_json::from_slice(bytes).ok()).flatten()
}

/// A request body as JSON: JSON bodies as they are, YAML ones (apply
/// patches) converted; anything else is not recorded.
fn decode(bytes: &[u8]) -> Option<Value> {
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Some(v);
    }
    let text = std::str::from_utf8(bytes).ok()?;
    serde_saphyr::from_str::<Value>(text)
        .ok()
        .filter(|v| v.is_object())
}

/// X-Forwarded-For, then X-Real-Ip, then the peer, without repeating the
/// last; as upstream, all but the peer are the client's word.
fn source_ips(req: &Request) -> Vec<String> {
    let h = req.headers();
    let mut ips: Vec<String> = h
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| s.parse::<std::net::IpAddr>().is_ok())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if let Some(real) = h
        .get("x-real-ip")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|s| s.parse::<std::net::IpAddr>().is_ok())
    {
        if !ips.iter().any(|i| i == real) {
            ips.push(real.to_string());
        }
    }
    if let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>() {
        let ip = peer.ip().to_string();
        if ips.last() != Some(&ip) {
            ips.push(ip);
        }
    }
    ips
}
