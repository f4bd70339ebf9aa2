//! kwok's Metric endpoints of the emulated nodes (such as
//! `/metrics/nodes/<node>/metrics/resource`): served beside the API by
//! `up`, on a listener of their own by `emulate`, where metrics-server or
//! Prometheus scrape them; and the scheduler's series that `up` adds to
//! the API server's `/metrics`.

use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use kubesim_emulator::usage::Model;

const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the in-process components serve beside the API: the emulated
/// kubelets' endpoints, and the scheduler's and the controllers' work
/// queues' series on `/metrics`.
pub struct ComponentRoutes {
    pub kubelets: Option<Arc<Model>>,
    pub scheduler: Option<Arc<kubesim_scheduler::Metrics>>,
}

impl kubesim_apiserver::http::ExtraRoutes for ComponentRoutes {
    fn get(&self, path: &str) -> Option<(String, Vec<u8>)> {
        let model = self.kubelets.as_ref()?;
        kubesim_emulator::usage::metric::serve(model, path)
            .map(|text| (CONTENT_TYPE.to_string(), text.into_bytes()))
    }

    fn metrics(&self, out: &mut String) {
        if let Some(s) = &self.scheduler {
            s.render(out);
        }
        kubesim_runtime::workqueue_metrics::render(out);
    }
}

/// Serves the endpoints alone (and `/healthz`) until dropped.
pub async fn serve(listener: tokio::net::TcpListener, model: Arc<Model>) {
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let model = model.clone();
        async move { answer(&model, uri.path()) }
    });
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!(error = %e, "the metrics endpoints stopped");
    }
}

fn answer(model: &Arc<Model>, path: &str) -> Response {
    if path == "/healthz" {
        return "ok".into_response();
    }
    match kubesim_emulator::usage::metric::serve(model, path) {
        Some(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        None => (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
    }
}
