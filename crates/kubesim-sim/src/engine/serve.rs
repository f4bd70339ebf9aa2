//! The Kubernetes API over HTTP during a simulation (`simulate --serve`),
//! with the handlers of `kubesim up`, so a real scheduler can be studied
//! in simulated time.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use kubesim_apiserver::http::query::Query;
use kubesim_apiserver::http::route::{self, Route};
use kubesim_apiserver::http::{router, App};
use kubesim_apiserver::Server;

use super::lockstep::Policy;

/// How to serve the API during a run.
pub struct Serve {
    /// Bound by the caller, who knows the address it wrote into the
    /// kubeconfig.
    pub listener: std::net::TcpListener,
    /// Wall time the outside scheduler gets, after the last change it
    /// could react to, while pods wait for it.
    pub quiet: Duration,
    /// Wall time one virtual instant may be held at most (and the wait for
    /// a scheduler to connect at the start).
    pub timeout: Duration,
    /// The audit log, if one was asked for.
    pub audit: Option<Arc<kubesim_apiserver::audit::Auditor>>,
    /// Called once the API is served and every node is Ready, before
    /// waiting for a scheduler to connect.
    pub ready: Option<Box<dyn FnOnce() + Send>>,
}

/// Serves `server` on `listener` until the task is dropped; each request
/// holds simulated time while it is handled.
pub async fn run(
    listener: std::net::TcpListener,
    server: Arc<Server>,
    policy: Arc<Policy>,
    audit: Option<Arc<kubesim_apiserver::audit::Auditor>>,
) -> anyhow::Result<()> {
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?.to_string();
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let app = Arc::new(App {
        server,
        metrics: Default::default(),
        address,
        auth: Default::default(),
        extra: None,
        // Every caller is the admin, whom the in-flight limits exempt.
        inflight: Default::default(),
        audit,
    });
    let routes = router(app).layer(axum::middleware::from_fn_with_state(policy, in_lockstep));
    // With the peer's address, for the audit log's sourceIPs.
    axum::serve(
        listener,
        routes.into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .await?;
    Ok(())
}

/// Holds time from the request's arrival until its response is ready. A
/// watch's response is ready once its stream is set up, so open watches
/// hold nothing.
async fn in_lockstep(State(policy): State<Arc<Policy>>, req: Request, next: Next) -> Response {
    let pods_watch = watches_pods(&req);
    let _busy = policy.gate.enter();
    let resp = next.run(req).await;
    if pods_watch && resp.status().is_success() {
        policy.client_watches_pods();
    }
    resp
}

fn watches_pods(req: &Request) -> bool {
    let Route::Resource(p) = route::parse(req.uri().path()) else {
        return false;
    };
    p.group.is_empty()
        && p.plural == "pods"
        && p.name.is_none()
        && Query::parse(req.uri().query()).watch().unwrap_or(false)
}
