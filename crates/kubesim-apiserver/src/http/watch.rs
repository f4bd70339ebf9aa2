//! Watch responses: one JSON event per line, flushed as it happens.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::{header, HeaderValue};
use kubesim_core::table::{self, TableOptions};
use kubesim_core::ResourceInfo;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::negotiate::{self, Format};
use super::App;
use crate::service::WatchFrame;

/// Ends the watcher gauge when the client goes away.
struct Gauge(Arc<App>);

impl Drop for Gauge {
    fn drop(&mut self) {
        self.0.metrics.watch_ended();
    }
}

struct StreamState {
    rx: mpsc::Receiver<WatchFrame>,
    resource: Arc<ResourceInfo>,
    format: Format,
    first: bool,
    app: Arc<App>,
    _gauge: Gauge,
}

fn line(kind: &str, object: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(object.len() + 32);
    b.put_slice(b"{\"type\":\"");
    b.put_slice(kind.as_bytes());
    b.put_slice(b"\",\"object\":");
    b.put_slice(object);
    b.put_slice(b"}\n");
    b.freeze()
}

impl StreamState {
    fn render(&mut self, frame: WatchFrame) -> Bytes {
        match frame {
            WatchFrame::Event { kind, object, .. } => match self.format {
                Format::Json => line(kind, &object),
                Format::Metadata { v1beta1 } => {
                    let obj: Value = serde_json::from_slice(&object).unwrap_or(Value::Null);
                    let partial = Format::partial(v1beta1, &obj);
                    line(kind, &serde_json::to_vec(&partial).unwrap_or_default())
                }
                Format::Table { v1beta1 } => {
                    let obj: Value = serde_json::from_slice(&object).unwrap_or(Value::Null);
                    let opts = TableOptions {
                        include: negotiate::include_object(None)
                            .unwrap_or(table::IncludeObject::Metadata),
                        now: self.app.server.clock.now(),
                        headers: self.first,
                    };
                    self.first = false;
                    let mut t = table::table(&self.resource, std::slice::from_ref(&obj), &opts);
                    t["metadata"] =
                        json!({"resourceVersion": kubesim_core::meta::resource_version(&obj)});
                    if v1beta1 {
                        t["apiVersion"] = json!("meta.k8s.io/v1beta1");
                    }
                    line(kind, &serde_json::to_vec(&t).unwrap_or_default())
                }
            },
            WatchFrame::Bookmark { rev, initial_end } => {
                let mut md = json!({"resourceVersion": rev.to_string()});
                if initial_end {
                    md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                }
                let obj = match self.format {
                    // The client decodes bookmarks as what it asked for.
                    Format::Metadata { v1beta1 } => {
                        Format::partial(v1beta1, &json!({"metadata": md}))
                    }
                    _ => {
                        json!({"kind": self.resource.kind, "apiVersion": self.resource.api_version(), "metadata": md})
                    }
                };
                line("BOOKMARK", &serde_json::to_vec(&obj).unwrap_or_default())
            }
            WatchFrame::Error(e) => line(
                "ERROR",
                &serde_json::to_vec(&e.to_status()).unwrap_or_default(),
            ),
        }
    }
}

pub(crate) fn stream(
    app: Arc<App>,
    resource: Arc<ResourceInfo>,
    rx: mpsc::Receiver<WatchFrame>,
    format: Format,
) -> Response {
    app.metrics.watch_started();
    let state = StreamState {
        rx,
        resource,
        format,
        first: true,
        app: app.clone(),
        _gauge: Gauge(app),
    };
    let s = futures::stream::unfold(state, |mut st| async move {
        let frame = st.rx.recv().await?;
        let bytes = st.render(frame);
        Some((Ok::<Bytes, std::convert::Infallible>(bytes), st))
    });
    let mut r = Response::new(Body::from_stream(s));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    r
}
