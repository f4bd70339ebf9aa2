//! The HTTP front of the API server: routing, bodies, negotiation,
//! responses, watch streaming and metrics.

pub mod discovery;
mod handlers;
pub mod metrics;
pub mod negotiate;
pub mod query;
pub mod route;
mod watch;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http::{header, HeaderValue, StatusCode};
use kubesim_core::ApiError;
use serde_json::Value;

use crate::Server;

/// Bodies larger than this are refused, as the real server does (3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Shared state of the HTTP front.
pub struct App {
    pub server: Arc<Server>,
    pub metrics: metrics::Metrics,
    /// host:port clients reach us at, for `/api`'s serverAddressByClientCIDRs.
    pub address: String,
}

/// The router: every path goes through one handler that parses it, because
/// Kubernetes paths do not fit a static route table (CRDs appear at run time).
pub fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(app)
}

async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    handlers::dispatch(app, req).await
}

pub(crate) fn json_response(code: u16, body: Vec<u8>) -> Response {
    bytes_response(code, "application/json", body)
}

pub(crate) fn bytes_response(code: u16, content_type: &str, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

pub(crate) fn value_response(code: u16, v: &Value) -> Response {
    json_response(code, serde_json::to_vec(v).unwrap_or_default())
}

pub(crate) fn error_response(e: &ApiError) -> Response {
    let mut r = value_response(e.code, &e.to_status());
    if let Some(secs) = e.details.as_ref().and_then(|d| d.retry_after_seconds) {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    r
}

/// Adds `Warning: 299 - "..."` headers, which kubectl prints.
pub(crate) fn with_warnings(mut r: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}
