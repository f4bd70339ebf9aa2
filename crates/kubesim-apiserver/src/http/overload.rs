//! The HTTP side of the in-flight limits: which requests count, and the
//! 429 answer of those turned away.

use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderValue, StatusCode};

use super::inflight::Slot;
use super::request_info::RequestInfo;
use super::App;
use crate::auth::UserInfo as User;

/// Upstream's answer: plain text, not a Status, which clients turn into a
/// TooManyRequests error and retry after the given second.
const MESSAGE: &str = "Too many requests, please try again later.\n";

/// A slot for the request (None when it is not limited), or the 429 to
/// answer with.
pub(crate) async fn admit(
    app: &App,
    info: &RequestInfo,
    user: &User,
) -> Result<Option<Slot>, Response> {
    // Watches and streams would hold a slot for their whole life; probes
    // must answer even when the server is busy; the cluster admin is never
    // turned away, as upstream exempts system:masters.
    if info.long_running() || info.is_probe() || user.is_privileged() {
        return Ok(None);
    }
    let Some(pool) = app.inflight.pool(info.read_only()) else {
        return Ok(None);
    };
    match pool.acquire(&user.name).await {
        Ok(slot) => Ok(Some(slot)),
        Err(_) => Err(too_many_requests()),
    }
}

pub(crate) fn too_many_requests() -> Response {
    let mut r = Response::new(Body::from(MESSAGE));
    *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let h = r.headers_mut();
    h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn refusal_is_upstreams_plain_text_with_retry_after() {
        let r = too_many_requests();
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        let body = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
        assert_eq!(&body[..], b"Too many requests, please try again later.\n");
    }
}
