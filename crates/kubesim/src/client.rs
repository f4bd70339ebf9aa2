//! A minimal Kubernetes client for the CLI's own commands: reads a
//! kubeconfig (current context; server URL, CA and bearer token) and sends
//! one JSON request at a time over HTTP or HTTPS.

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;

pub struct Client {
    host: String,
    port: u16,
    tls: Option<(
        tokio_rustls::TlsConnector,
        rustls::pki_types::ServerName<'static>,
    )>,
    token: Option<String>,
}

impl Client {
    /// From a kubeconfig file: its current context's cluster and user.
    pub fn from_kubeconfig(path: &Path) -> anyhow::Result<Client> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
        let kc: Value = serde_saphyr::from_str(&text)
            .map_err(|e| anyhow!("{} is not a kubeconfig: {e}", path.display()))?;
        let named = |list: &str, name: &str, field: &str| -> Option<Value> {
            kc.get(list)?
                .as_array()?
                .iter()
                .find(|e| e.get("name").and_then(Value::as_str) == Some(name))?
                .get(field)
                .cloned()
        };
        let current = kc
            .get("current-context")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("{}: no current-context", path.display()))?;
        let ctx = named("contexts", current, "context")
            .ok_or_else(|| anyhow!("{}: context {current:?} not found", path.display()))?;
        let cluster_name = ctx.get("cluster").and_then(Value::as_str).unwrap_or("");
        let cluster = named("clusters", cluster_name, "cluster")
            .ok_or_else(|| anyhow!("{}: cluster {cluster_name:?} not found", path.display()))?;
        let user = ctx
            .get("user")
            .and_then(Value::as_str)
            .and_then(|u| named("users", u, "user"));
        let server = cluster
            .get("server")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("{}: the cluster has no server", path.display()))?;
        let url = url::Url::parse(server).with_context(|| format!("bad server URL {server:?}"))?;
        let host = url
            .host_str()
            .ok_or_else(|| anyhow!("no host in {server:?}"))?
            .trim_matches(|c| c == '[' || c == ']')
            .to_string();
        let port = url.port_or_known_default().unwrap_or(6443);
        let tls = match url.scheme() {
            "http" => None,
            "https" => {
                let ca = cluster
                    .get("certificate-authority-data")
                    .and_then(Value::as_str)
                    .ok_or_else(|| anyhow!("an https cluster needs certificate-authority-data"))?;
                let pem = base64::engine::general_purpose::STANDARD
                    .decode(ca)
                    .context("certificate-authority-data is not base64")?;
                Some(tls_connector(&pem, &host)?)
            }
            s => bail!("unsupported scheme {s:?} in {server:?}"),
        };
        let token = user
            .as_ref()
            .and_then(|u| u.get("token"))
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(Client {
            host,
            port,
            tls,
            token,
        })
    }

    /// Sends one request; returns the status code and the parsed body.
    pub async fn request(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
            .await
            .with_context(|| format!("cannot reach {}:{}", self.host, self.port))?;
        let body = Full::new(Bytes::from(body.map(|b| b.to_string()).unwrap_or_default()));
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", format!("{}:{}", self.host, self.port))
            .header("accept", "application/json")
            .header("content-type", content_type);
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req.body(body)?;
        let resp = match &self.tls {
            None => send(TokioIo::new(tcp), req).await?,
            Some((connector, name)) => {
                let stream = connector.connect(name.clone(), tcp).await?;
                send(TokioIo::new(stream), req).await?
            }
        };
        Ok(resp)
    }
}

async fn send<T>(io: T, req: hyper::Request<Full<Bytes>>) -> anyhow::Result<(u16, Value)>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut send, conn) = hyper::client::conn::http1::handshake(io).await?;
    tokio::spawn(conn);
    let resp = send.send_request(req).await?;
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await?.to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok((code, body))
}

fn tls_connector(
    ca_pem: &[u8],
    host: &str,
) -> anyhow::Result<(
    tokio_rustls::TlsConnector,
    rustls::pki_types::ServerName<'static>,
)> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots
            .add(cert.context("bad CA certificate")?)
            .context("bad CA certificate")?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(host.to_string())
        .map_err(|_| anyhow!("bad server name {host:?}"))?;
    Ok((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
}

/// The message of a Kubernetes Status body, for one-line errors.
pub fn status_message(body: &Value) -> String {
    body.get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message")
        .to_string()
}
