//! kwok's Metric endpoints of the emulated nodes (such as
//! `/metrics/nodes/<node>/metrics/resource`): served beside the API by
//! `up`, on a listener of their own by `emulate`, where metrics-server or
//! Prometheus scrape them.

use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use kubesim_emulator::usage::Model;

const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The endpoints as routes of the API server.
pub struct KubeletMetrics(pub Arc<Model>);

impl kubesim_apiserver::http::ExtraRoutes for KubeletMetrics {
    fn get(&self, path: &str) -> Option<(String, Vec<u8>)> {
        kubesim_emulator::usage::metric::serve(&self.0, path)
            .map(|text| (CONTENT_TYPE.to_string(), text.into_bytes()))
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
