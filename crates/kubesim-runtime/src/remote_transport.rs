//! The HTTP transport under [`RemoteApi`](crate::remote::RemoteApi):
//! kube-rs's own layers (the base URL, the credentials, the extra headers)
//! over a TLS connector that offers HTTP/2 by ALPN, as client-go does.
//!
//! kube-rs's stock transport speaks HTTP/1.1 only, where every request in
//! flight holds a TCP connection of its own: an emulator with thousands of
//! nodes keeps hundreds of connections open to a shared API server, each a
//! TLS session and a server-side task. Over HTTP/2 the same requests and
//! watches are streams of one connection. The server chooses: one that
//! offers only HTTP/1.1 gets HTTP/1.1. Plain `http://` stays on HTTP/1.1,
//! since client-go speaks no cleartext HTTP/2 either, and so does a
//! connection through a proxy, which kube-rs's transport handles.

use std::time::Duration;

use hyper_rustls::{FixedServerNameResolver, HttpsConnectorBuilder};
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{Body, ConfigExt};
use kube::{Client, Config};
use tower::ServiceBuilder;

/// client-go's HTTP/2 health check: a PING after 30 s without a frame
/// (`ReadIdleTimeout`), and the connection closed when its answer takes
/// over 15 s (`PingTimeout`). Without it a watch on a connection that
/// died silently would wait forever.
const PING_AFTER_IDLE: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// Why the HTTP/2-capable transport could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error("invalid TLS server name {name:?}: {reason}")]
    ServerName { name: String, reason: String },
}

/// Whether HTTP/2 is turned off, by client-go's switch: the environment
/// variable `DISABLE_HTTP2` set to anything but the empty string.
fn http2_disabled() -> bool {
    std::env::var_os("DISABLE_HTTP2").is_some_and(|v| !v.is_empty())
}

/// A client for `config`: over TLS one that offers HTTP/2 (unless
/// `DISABLE_HTTP2` is set, as for client-go); over plain HTTP, HTTP/1.1.
pub fn client(config: Config) -> Result<Client, TransportError> {
    client_offering(config, !http2_disabled())
}

/// [`client`], offering HTTP/2 over TLS only when `http2` is true.
pub fn client_offering(config: Config, http2: bool) -> Result<Client, TransportError> {
    if config.proxy_url.is_some() {
        return Ok(Client::try_from(config)?);
    }
    // Small writes leave at once, as Go's connections (client-go's and
    // the API server's) do by default: with Nagle's algorithm a stream's
    // frame written behind an unacknowledged one waits for the peer's
    // delayed acknowledgement.
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    if config.cluster_url.scheme_str() != Some("https") {
        return build(tcp, &config);
    }
    tcp.enforce_http(false);
    // The connector writes the ALPN list (h2, http/1.1) from the
    // protocols enabled below.
    let tls = config.rustls_client_config()?;
    let builder = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    let builder = match &config.tls_server_name {
        Some(name) => {
            let server_name =
                rustls::pki_types::ServerName::try_from(name.clone()).map_err(|e| {
                    TransportError::ServerName {
                        name: name.clone(),
                        reason: e.to_string(),
                    }
                })?;
            builder.with_server_name_resolver(FixedServerNameResolver::new(server_name))
        }
        None => builder,
    };
    let builder = builder.enable_http1();
    if http2 {
        build(builder.enable_http2().wrap_connector(tcp), &config)
    } else {
        build(builder.wrap_connector(tcp), &config)
    }
}

/// The client over `connector`, with kube-rs's timeouts and layers.
fn build<C>(connector: C, config: &Config) -> Result<Client, TransportError>
where
    C: tower::Service<http::Uri> + Clone + Send + Sync + 'static,
    C::Response: hyper::rt::Read
        + hyper::rt::Write
        + hyper_util::client::legacy::connect::Connection
        + Send
        + Unpin
        + 'static,
    C::Future: Send + Unpin + 'static,
    C::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // The same timeouts kube-rs's own transport applies.
    let mut connector = TimeoutConnector::new(connector);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);

    let transport = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .http2_keep_alive_interval(PING_AFTER_IDLE)
        .http2_keep_alive_timeout(PING_TIMEOUT)
        .build::<_, Body>(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        // The credential layer fails with a boxed error; the layers under
        // it must too.
        .map_err(tower::BoxError::from)
        .service(transport);
    Ok(Client::new(service, config.default_namespace.clone()))
}
