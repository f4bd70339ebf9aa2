//! The remote `Api` as a guest of a shared control plane: with limits, a
//! 429 is sent again after the server's `Retry-After`, and requests are
//! paced by the token bucket; without, the 429 reaches the caller. The
//! server here is a stub that refuses the first requests it gets.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use kubesim_runtime::client_limits::ClientLimits;
use kubesim_runtime::{Api, Clock, RemoteApi, ResourceRef};

#[path = "common/scratch.rs"]
mod scratch;
use scratch::Scratch;

/// Serves a ConfigMap at every path, after refusing the first `refuse`
/// requests with 429 and `Retry-After: 1`; counts the requests. Returns
/// the directory of a kubeconfig naming it.
async fn stub(refuse: usize) -> (Scratch, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let app = axum::Router::new().fallback(move || {
        let n = s.fetch_add(1, Ordering::SeqCst);
        async move {
            if n < refuse {
                let mut r: Response = (
                    StatusCode::TOO_MANY_REQUESTS,
                    "Too many requests, please try again later.\n",
                )
                    .into_response();
                r.headers_mut()
                    .insert("retry-after", HeaderValue::from_static("1"));
                return r;
            }
            (
                [("content-type", "application/json")],
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}"#,
            )
                .into_response()
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = Scratch::created(&format!("limits-{}", addr.port()));
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://{addr}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user: {{}}\n"
        ),
    )
    .unwrap();
    (dir, seen)
}

async fn api(dir: &Scratch) -> RemoteApi {
    RemoteApi::from_kubeconfig(Some(&dir.join("kubeconfig")))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_429_is_retried_after_retry_after_with_limits_only() {
    let (dir, seen) = stub(2).await;
    let plain = api(&dir).await;
    let e = plain
        .get(&ResourceRef::core("configmaps"), "default", "x")
        .await
        .unwrap_err();
    assert_eq!(e.code, 429);
    assert_eq!(e.details.and_then(|d| d.retry_after_seconds), Some(1));
    assert_eq!(seen.load(Ordering::SeqCst), 1);

    let limited = api(&dir)
        .await
        .with_limits(ClientLimits::new(Clock::wall(), 0.0, 1, 10));
    let start = Instant::now();
    let got = limited
        .get(&ResourceRef::core("configmaps"), "default", "x")
        .await
        .expect("served after one retry");
    assert_eq!(got["metadata"]["name"], "x");
    // One more refusal (the second), then the answer: one Retry-After
    // waited.
    assert_eq!(seen.load(Ordering::SeqCst), 3);
    let took = start.elapsed();
    assert!(took >= Duration::from_secs(1), "{took:?}");
}

#[tokio::test]
async fn requests_are_paced_by_the_bucket() {
    let (dir, seen) = stub(0).await;
    let limited = api(&dir)
        .await
        .with_limits(ClientLimits::new(Clock::wall(), 20.0, 1, 10));
    let start = Instant::now();
    for _ in 0..21 {
        limited
            .get(&ResourceRef::core("configmaps"), "default", "x")
            .await
            .unwrap();
    }
    // The first goes at once, the other twenty at 20 a second.
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(950), "{took:?}");
    assert_eq!(seen.load(Ordering::SeqCst), 21);
}
