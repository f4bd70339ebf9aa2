//! The HTTP front of the API server: routing, bodies, negotiation,
//! responses, watch streaming and metrics.

mod audited;
mod body;
pub mod discovery;
mod guard;
mod handlers;
pub mod identity;
pub mod inflight;
pub mod metrics;
pub mod negotiate;
mod overload;
pub mod query;
pub mod request_info;
pub mod route;
mod watch;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use futures::FutureExt;
use http::{header, HeaderValue, StatusCode};
use kubesim_core::ApiError;
use serde_json::Value;

use crate::Server;

/// Bodies larger than this are refused, as the real server does (3 MiB).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Shared state of the HTTP front.
pub struct App {
    pub server: Arc<Server>,
    pub metrics: Arc<metrics::Metrics>,
    /// host:port clients reach us at, for `/api`'s serverAddressByClientCIDRs.
    pub address: String,
    /// How requests are authenticated (see `auth::authn`).
    pub auth: crate::auth::authn::Config,
    /// GET paths served by a component outside the API server (the
    /// emulated kubelets' Prometheus endpoints), asked only for paths the
    /// API does not serve.
    pub extra: Option<Arc<dyn ExtraRoutes>>,
    /// `--max-requests-inflight` and `--max-mutating-requests-inflight`.
    pub inflight: inflight::Limits,
    /// `--audit-policy-file` with `--audit-log-path`.
    pub audit: Option<Arc<crate::audit::Auditor>>,
}

/// Read-only paths another component serves through this server, so the
/// API server need not know the component.
pub trait ExtraRoutes: Send + Sync {
    /// The content type and body for `path`, or None when not served.
    fn get(&self, path: &str) -> Option<(String, Vec<u8>)>;

    /// Series of the process's other components (the scheduler's, ...),
    /// appended to `/metrics` in Prometheus' text format.
    fn metrics(&self, _out: &mut String) {}
}

/// The router: every path goes through one handler that parses it, because
/// Kubernetes paths do not fit a static route table (CRDs appear at run time).
pub fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(app)
}

/// Dispatches a request. A handler that panics is a bug; as a last defence
/// its request is answered with a 500 Status, logged and counted, and the
/// connection stays usable.
async fn handle(State(app): State<Arc<App>>, req: Request) -> Response {
    guard::serve(app, req, handle_unguarded).await
}

async fn handle_unguarded(app: Arc<App>, req: Request) -> Response {
    let method = req.method().clone();
    let uri = req.uri().clone();
    match AssertUnwindSafe(handlers::dispatch(app.clone(), req))
        .catch_unwind()
        .await
    {
        Ok(r) => r,
        Err(panic) => {
            let what = kubesim_runtime::panic_message(&*panic);
            tracing::error!(%method, %uri, panic = %what, "request handler panicked");
            app.metrics.handler_panicked();
            let mut r = error_response(&ApiError::internal(format!(
                "Internal error occurred: {what}"
            )));
            r.extensions_mut().insert(audited::Panicked);
            r
        }
    }
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
