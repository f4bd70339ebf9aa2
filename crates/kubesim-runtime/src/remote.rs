//! The [`Api`] over HTTP(S) to any Kubernetes API server, kubesim or a real
//! cluster, named by a kubeconfig.
//!
//! `kube::Client` is only the transport (offering HTTP/2 over TLS, see
//! `remote_transport`): it resolves kubeconfig contexts
//! and speaks TLS with whatever credentials the user entry holds (bearer
//! tokens, client certificates, exec plugins), which real clusters need.
//! Requests are built here by hand on JSON values, with the same paths,
//! query parameters and bodies the Kubernetes API documents, so both
//! implementations of [`Api`] mean the same thing.

use std::collections::HashMap;
use std::error::Error as _;
use std::fmt::Display;
use std::path::Path;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures::stream::{self, BoxStream};
use futures::StreamExt;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use kube::client::Body;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use kubesim_core::error::Details;
use kubesim_core::patch::PatchType;
use kubesim_core::{ApiError, Cause};
use parking_lot::RwLock;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS, NON_ALPHANUMERIC};
use serde_json::{json, Value};

use crate::api::{
    Api, DeleteOptions, FieldValidation, ListOptions, ResourceRef, WatchEvent, WriteOptions,
};
use crate::client_limits::ClientLimits;
use crate::remote_answer::Answer;

/// Characters escaped in a path segment: those that would end or split it.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// Characters escaped in a query value: everything but the unreserved ones,
/// so selectors (`a in (x,y)`, `!b`, `c=d`) survive intact.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Why a [`RemoteApi`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot use kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("no kubeconfig found (KUBECONFIG, ~/.kube/config) and not running in a cluster: {0}")]
    Infer(#[source] kube::config::InferConfigError),
    #[error("cannot build a client for {url}: {source}")]
    Client {
        url: String,
        #[source]
        source: crate::remote_transport::TransportError,
    },
}

/// Kind → (plural, namespaced) for one group-version.
type Kinds = HashMap<String, (String, bool)>;

/// An [`Api`] talking to a remote API server. Cloning is cheap and clones
/// share the connection pool and the discovery cache; share one between
/// many tasks rather than building one per task.
#[derive(Clone)]
pub struct RemoteApi {
    // kube's Client is a channel into one buffered service: each request
    // clones a sender and runs its own future, so concurrent callers never
    // wait on each other.
    client: Client,
    discovery: Arc<RwLock<HashMap<String, Arc<Kinds>>>>,
    /// Pacing and retries; None sends every request at once, and hands
    /// 429s to the caller.
    limits: Option<Arc<ClientLimits>>,
}

impl std::fmt::Debug for RemoteApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteApi").finish_non_exhaustive()
    }
}

impl RemoteApi {
    /// The current context of the kubeconfig at `path`, or when None of the
    /// one kube-rs infers (`KUBECONFIG`, `~/.kube/config`, then the
    /// in-cluster service account).
    pub async fn from_kubeconfig(path: Option<&Path>) -> Result<RemoteApi, ConnectError> {
        let mut config = match path {
            Some(p) => {
                let err = |source| ConnectError::Kubeconfig {
                    path: p.display().to_string(),
                    source,
                };
                let kubeconfig = Kubeconfig::read_from(p).map_err(err)?;
                Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await
                    .map_err(err)?
            }
            None => Config::infer().await.map_err(ConnectError::Infer)?,
        };
        // kube-rs would retry 429/503/504 for minutes inside one call; callers
        // must see them, to back off on their own queues or to count them.
        config.default_retry = false;
        Self::from_config(config)
    }

    /// From an explicit kube-rs configuration (timeouts, retries, headers).
    /// Must be called inside a tokio runtime: the client starts a task.
    pub fn from_config(config: Config) -> Result<RemoteApi, ConnectError> {
        let url = config.cluster_url.to_string();
        let client = crate::remote_transport::client(config)
            .map_err(|source| ConnectError::Client { url, source })?;
        Ok(Self::from_client(client))
    }

    pub fn from_client(client: Client) -> RemoteApi {
        RemoteApi {
            client,
            discovery: Arc::default(),
            limits: None,
        }
    }

    /// Paces requests and retries those the server asks to be sent again
    /// (429, or 5xx with `Retry-After`), as client-go does.
    pub fn with_limits(mut self, limits: ClientLimits) -> RemoteApi {
        self.limits = Some(Arc::new(limits));
        self
    }

    /// The underlying client, for requests this type does not model.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// GET of a non-resource path such as `/metrics`, `/version` or
    /// `/readyz`, as text.
    pub async fn get_text(&self, path: &str) -> Result<String, ApiError> {
        if !path.starts_with('/') {
            return Err(ApiError::bad_request(format!(
                "{path:?} is not an absolute path"
            )));
        }
        let res = self
            .send(Method::GET, path, "application/json, */*", None, false)
            .await?;
        let bytes = read_body(&Method::GET, path, res).await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The served resource for `kind` in `api_version` (`v1`, `apps/v1`)
    /// and whether it is namespaced, from the server's discovery. Answers
    /// are cached per group-version; a kind missing from the cache makes one
    /// fresh discovery request, so CRDs created later are found.
    pub async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(ResourceRef, bool), ApiError> {
        let (group, version) = match api_version.split_once('/') {
            None if !api_version.is_empty() => ("", api_version),
            Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => (g, v),
            _ => {
                return Err(ApiError::bad_request(format!(
                    "invalid apiVersion {api_version:?}"
                )))
            }
        };
        let found = |kinds: &Kinds| {
            kinds
                .get(kind)
                .map(|(plural, namespaced)| (ResourceRef::new(group, version, plural), *namespaced))
        };
        let cached = self.discovery.read().get(api_version).cloned();
        if let Some(hit) = cached.as_deref().and_then(found) {
            return Ok(hit);
        }
        let not_served = || {
            ApiError::new(
                404,
                "NotFound",
                format!("no matches for kind \"{kind}\" in version \"{api_version}\""),
            )
            .with_details("", group, kind)
        };
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let list = match self.request_json(Method::GET, &path, None).await {
            Ok(list) => list,
            Err(e) if e.code == 404 => return Err(not_served()),
            Err(e) => return Err(e),
        };
        let mut kinds = Kinds::new();
        for r in list["resources"].as_array().into_iter().flatten() {
            let (Some(name), Some(k)) = (r["name"].as_str(), r["kind"].as_str()) else {
                continue;
            };
            // Subresources (`deployments/scale`) name other kinds.
            if name.contains('/') {
                continue;
            }
            let namespaced = r["namespaced"].as_bool().unwrap_or(false);
            kinds
                .entry(k.to_string())
                .or_insert_with(|| (name.to_string(), namespaced));
        }
        let hit = found(&kinds);
        self.discovery
            .write()
            .insert(api_version.to_string(), Arc::new(kinds));
        hit.ok_or_else(not_served)
    }

    /// One request, paced and retried as the [`ClientLimits`] say when
    /// there are any.
    async fn send(
        &self,
        method: Method,
        uri: &str,
        accept: &'static str,
        body: Option<(&'static str, Vec<u8>)>,
        watch: bool,
    ) -> Result<Response<Body>, ApiError> {
        let Some(limits) = &self.limits else {
            return self.send_once(method, uri, accept, body, watch).await;
        };
        let mut attempt = 0;
        loop {
            if !watch {
                limits.wait().await;
            }
            let result = self
                .send_once(method.clone(), uri, accept, body.clone(), watch)
                .await;
            let Err(e) = &result else {
                return result;
            };
            attempt += 1;
            let after = e.details.as_ref().and_then(|d| d.retry_after_seconds);
            match limits.retry_wait(e.code, after, attempt) {
                Some(wait) => limits.sleep(wait).await,
                None => return result,
            }
        }
    }

    async fn send_once(
        &self,
        method: Method,
        uri: &str,
        accept: &'static str,
        body: Option<(&'static str, Vec<u8>)>,
        watch: bool,
    ) -> Result<Response<Body>, ApiError> {
        let mut req = Request::builder()
            .method(method.clone())
            .uri(uri)
            .header(header::ACCEPT, accept);
        let body = match body {
            Some((content_type, bytes)) => {
                req = req.header(header::CONTENT_TYPE, content_type);
                Body::from(bytes)
            }
            None => Body::empty(),
        };
        if watch {
            // A compressed watch stream would be decoded only up to its
            // first gzip member should decompression ever be enabled.
            req = req.header(header::ACCEPT_ENCODING, "identity");
        }
        let req = req
            .body(body)
            .map_err(|e| ApiError::bad_request(format!("{method} {uri}: {e}")))?;
        let res = self
            .client
            .send(req)
            .await
            .map_err(|e| transport_error(&method, uri, &e))?;
        if res.status().is_success() {
            return Ok(res);
        }
        let code = res.status().as_u16();
        let retry_after = res
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u32>().ok());
        // The status line alone still says what failed if the body is lost.
        let bytes = read_body(&method, uri, res).await.unwrap_or_default();
        let mut err = error_from_body(code, &bytes);
        if let Some(secs) = retry_after {
            let d = err.details.get_or_insert_with(Default::default);
            d.retry_after_seconds.get_or_insert(secs);
        }
        Err(err)
    }

    async fn request_json(
        &self,
        method: Method,
        uri: &str,
        body: Option<(&'static str, Vec<u8>)>,
    ) -> Result<Value, ApiError> {
        self.request(method, uri, body, Answer::Whole).await
    }

    /// A request whose answer is read as `answer` says.
    async fn request(
        &self,
        method: Method,
        uri: &str,
        body: Option<(&'static str, Vec<u8>)>,
        answer: Answer,
    ) -> Result<Value, ApiError> {
        let res = self
            .send(method.clone(), uri, "application/json", body, false)
            .await?;
        let bytes = read_body(&method, uri, res).await?;
        answer.read(&bytes).map_err(|e| {
            ApiError::internal(format!("{method} {uri}: the response is not JSON: {e}"))
        })
    }
}

#[async_trait::async_trait]
impl Api for RemoteApi {
    fn lists_from_cache(&self) -> bool {
        true
    }

    async fn get(&self, r: &ResourceRef, ns: &str, name: &str) -> Result<Value, ApiError> {
        let path = object_path(r, ns, name, None)?;
        self.request_json(Method::GET, &path, None).await
    }

    async fn get_scale(&self, r: &ResourceRef, ns: &str, name: &str) -> Result<Value, ApiError> {
        let path = object_path(r, ns, name, Some("scale"))?;
        self.request_json(Method::GET, &path, None).await
    }

    async fn list(&self, r: &ResourceRef, ns: &str, opts: &ListOptions) -> Result<Value, ApiError> {
        let mut q = Query::default();
        list_query(&mut q, opts);
        let path = q.finish(collection_path(r, ns));
        self.request_json(Method::GET, &path, None).await
    }

    async fn create(
        &self,
        r: &ResourceRef,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let mut q = Query::default();
        write_query(&mut q, opts);
        let path = q.finish(collection_path(r, ns));
        let body = Some(("application/json", encode(&obj)?));
        self.request(Method::POST, &path, body, Answer::of(opts.version_only))
            .await
    }

    async fn update(
        &self,
        r: &ResourceRef,
        ns: &str,
        obj: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let name = obj["metadata"]["name"].as_str().unwrap_or("");
        let mut q = Query::default();
        write_query(&mut q, opts);
        let path = q.finish(object_path(r, ns, name, subresource)?);
        let body = Some(("application/json", encode(&obj)?));
        self.request(Method::PUT, &path, body, Answer::of(opts.version_only))
            .await
    }

    async fn patch(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: Vec<u8>,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let content_type = match kind {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        };
        let mut q = Query::default();
        write_query(&mut q, opts);
        let path = q.finish(object_path(r, ns, name, subresource)?);
        let body = Some((content_type, body));
        self.request(Method::PATCH, &path, body, Answer::of(opts.version_only))
            .await
    }

    async fn delete(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let path = object_path(r, ns, name, None)?;
        let body = Some(("application/json", encode(&delete_body(opts))?));
        self.request(Method::DELETE, &path, body, Answer::of(opts.status_only))
            .await
    }

    async fn watch(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<BoxStream<'static, WatchEvent>, ApiError> {
        let mut q = Query::default();
        q.add("watch", "true");
        list_query(&mut q, opts);
        if opts.allow_bookmarks {
            q.add("allowWatchBookmarks", "true");
        }
        q.opt("sendInitialEvents", opts.send_initial_events);
        let path = q.finish(collection_path(r, ns));
        let res = self
            .send(Method::GET, &path, "application/json", None, true)
            .await?;
        Ok(watch_events(res.into_body()))
    }
}

fn collection_path(r: &ResourceRef, ns: &str) -> String {
    let mut p = if r.group.is_empty() {
        format!("/api/{}", segment(&r.version))
    } else {
        format!("/apis/{}/{}", segment(&r.group), segment(&r.version))
    };
    if !ns.is_empty() {
        p.push_str("/namespaces/");
        p.push_str(&segment(ns));
    }
    p.push('/');
    p.push_str(&segment(&r.plural));
    p
}

fn object_path(
    r: &ResourceRef,
    ns: &str,
    name: &str,
    subresource: Option<&str>,
) -> Result<String, ApiError> {
    // An empty name would turn the request into one on the collection.
    if name.is_empty() {
        return Err(ApiError::bad_request("resource name may not be empty"));
    }
    let mut p = collection_path(r, ns);
    p.push('/');
    p.push_str(&segment(name));
    if let Some(s) = subresource {
        p.push('/');
        p.push_str(&segment(s));
    }
    Ok(p)
}

fn segment(s: &str) -> String {
    utf8_percent_encode(s, SEGMENT).to_string()
}

#[derive(Default)]
struct Query(String);

impl Query {
    fn add(&mut self, key: &str, value: &str) {
        self.0.push(if self.0.is_empty() { '?' } else { '&' });
        self.0.push_str(key);
        self.0.push('=');
        self.0.extend(utf8_percent_encode(value, QUERY));
    }

    fn opt(&mut self, key: &str, value: Option<impl Display>) {
        if let Some(v) = value {
            self.add(key, &v.to_string());
        }
    }

    fn finish(self, mut path: String) -> String {
        path.push_str(&self.0);
        path
    }
}

/// The parameters lists and watches share. `allowWatchBookmarks` and
/// `sendInitialEvents` are watch-only: upstream rejects the latter on a list.
fn list_query(q: &mut Query, o: &ListOptions) {
    q.opt("labelSelector", o.label_selector.as_deref());
    q.opt("fieldSelector", o.field_selector.as_deref());
    q.opt("limit", o.limit);
    q.opt("continue", o.continue_token.as_deref());
    q.opt("resourceVersion", o.resource_version.as_deref());
    q.opt("resourceVersionMatch", o.resource_version_match.as_deref());
    q.opt("timeoutSeconds", o.timeout_seconds);
}

fn write_query(q: &mut Query, o: &WriteOptions) {
    if o.dry_run {
        q.add("dryRun", "All");
    }
    q.opt("fieldManager", o.field_manager.as_deref());
    q.opt(
        "fieldValidation",
        o.field_validation.map(|v| match v {
            FieldValidation::Ignore => "Ignore",
            FieldValidation::Warn => "Warn",
            FieldValidation::Strict => "Strict",
        }),
    );
    // Upstream refuses `force` on anything but an apply, even when false.
    if o.force {
        q.add("force", "true");
    }
}

/// A `meta/v1 DeleteOptions` body, as client-go sends it.
fn delete_body(o: &DeleteOptions) -> Value {
    let mut b = json!({"kind": "DeleteOptions", "apiVersion": "v1"});
    if let Some(g) = o.grace_period_seconds {
        b["gracePeriodSeconds"] = g.into();
    }
    if let Some(p) = &o.propagation_policy {
        b["propagationPolicy"] = p.as_str().into();
    }
    if let Some(orphan) = o.orphan_dependents {
        b["orphanDependents"] = orphan.into();
    }
    if o.precondition_uid.is_some() || o.precondition_resource_version.is_some() {
        let mut pre = json!({});
        if let Some(uid) = &o.precondition_uid {
            pre["uid"] = uid.as_str().into();
        }
        if let Some(rv) = &o.precondition_resource_version {
            pre["resourceVersion"] = rv.as_str().into();
        }
        b["preconditions"] = pre;
    }
    if o.dry_run {
        b["dryRun"] = json!(["All"]);
    }
    b
}

fn encode(v: &Value) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(v).map_err(|e| ApiError::bad_request(format!("cannot encode the body: {e}")))
}

async fn read_body(method: &Method, uri: &str, res: Response<Body>) -> Result<Bytes, ApiError> {
    res.into_body()
        .collect()
        .await
        .map(|c| c.to_bytes())
        .map_err(|e| transport_error(method, uri, &e))
}

/// A request that got no HTTP answer: the server is unreachable, TLS or the
/// credentials failed, or the connection dropped.
fn transport_error(method: &Method, uri: &str, err: &kube::Error) -> ApiError {
    if let kube::Error::Api(status) = err {
        if let Ok(v) = serde_json::to_value(&**status) {
            return status_error(&v, 500);
        }
    }
    let mut message = format!("{method} {uri}: {err}");
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    ApiError::new(503, "ServiceUnavailable", message)
}

/// A non-2xx answer: its Status when the body is one, else what the HTTP
/// status code says, as client-go makes of proxies' and gateways' pages.
fn error_from_body(code: u16, body: &[u8]) -> ApiError {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        if v["kind"] == "Status" {
            return status_error(&v, code);
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let message = if text.is_empty() || code == 404 {
        default_message(code)
    } else {
        text.chars().take(1024).collect()
    };
    ApiError::new(code, reason_for(code), message)
}

/// A `metav1.Status` as an [`ApiError`]; `fallback` is the code when the
/// Status carries none.
fn status_error(s: &Value, fallback: u16) -> ApiError {
    let code = s["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (100..600).contains(c))
        .unwrap_or(fallback);
    let reason = match s["reason"].as_str() {
        Some(r) if !r.is_empty() => r,
        _ => reason_for(code),
    };
    let message = match s["message"].as_str() {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => default_message(code),
    };
    let mut err = ApiError::new(code, reason, message);
    let d = &s["details"];
    if d.is_object() {
        let text = |k: &str| d[k].as_str().unwrap_or("").to_string();
        err.details = Some(Box::new(Details {
            name: text("name"),
            group: text("group"),
            kind: text("kind"),
            causes: d["causes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| Cause {
                    reason: c["reason"].as_str().unwrap_or("").to_string(),
                    message: c["message"].as_str().unwrap_or("").to_string(),
                    field: c["field"].as_str().unwrap_or("").to_string(),
                })
                .collect(),
            retry_after_seconds: d["retryAfterSeconds"]
                .as_u64()
                .and_then(|s| u32::try_from(s).ok())
                .filter(|s| *s > 0),
        }));
    }
    err
}

fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        500..=599 => "InternalError",
        _ => "Unknown",
    }
}

fn default_message(code: u16) -> String {
    match code {
        404 => "the server could not find the requested resource".to_string(),
        _ => StatusCode::from_u16(code)
            .ok()
            .and_then(|c| c.canonical_reason())
            .map(|r| format!("the server responded with {code} {r}"))
            .unwrap_or_else(|| format!("the server responded with status {code}")),
    }
}

/// The events of a watch body: one JSON object per line. The stream ends
/// when the server closes it or the connection drops; the consumer resumes
/// from the last resourceVersion it saw, as client-go's reflector does.
fn watch_events(body: Body) -> BoxStream<'static, WatchEvent> {
    struct Lines {
        body: BoxStream<'static, Result<Bytes, kube::Error>>,
        buf: BytesMut,
        /// How far `buf` is known to hold no newline.
        scanned: usize,
        ended: bool,
    }
    let lines = Lines {
        body: body.into_data_stream().boxed(),
        buf: BytesMut::new(),
        scanned: 0,
        ended: false,
    };
    stream::unfold(lines, |mut st| async move {
        loop {
            if let Some(i) = st.buf[st.scanned..].iter().position(|&b| b == b'\n') {
                let line = st.buf.split_to(st.scanned + i + 1);
                st.scanned = 0;
                let line = line.trim_ascii();
                if line.is_empty() {
                    continue;
                }
                return Some((parse_event(line), st));
            }
            st.scanned = st.buf.len();
            if st.ended {
                let rest = st.buf.split();
                st.scanned = 0;
                let rest = rest.trim_ascii();
                // A last line without its newline counts only if it is whole;
                // a connection cut mid-event leaves a fragment to drop.
                return match serde_json::from_slice::<Value>(rest) {
                    Ok(v) if !rest.is_empty() => Some((to_event(v), st)),
                    _ => None,
                };
            }
            match st.body.next().await {
                Some(Ok(chunk)) => st.buf.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "watch stream ended by a read error");
                    st.ended = true;
                }
                None => st.ended = true,
            }
        }
    })
    .boxed()
}

fn parse_event(line: &[u8]) -> WatchEvent {
    match serde_json::from_slice::<Value>(line) {
        Ok(v) => to_event(v),
        // Something was lost: an error makes the consumer relist.
        Err(e) => WatchEvent::Error(ApiError::internal(format!(
            "unable to decode an event from the watch stream: {e}"
        ))),
    }
}

fn to_event(mut v: Value) -> WatchEvent {
    let object = v.get_mut("object").map(Value::take).unwrap_or(Value::Null);
    match v["type"].as_str() {
        Some("ADDED") => WatchEvent::Added(object),
        Some("MODIFIED") => WatchEvent::Modified(object),
        Some("DELETED") => WatchEvent::Deleted(object),
        Some("BOOKMARK") => match object["metadata"]["resourceVersion"].as_str() {
            Some(rv) if !rv.is_empty() => WatchEvent::Bookmark(rv.to_string()),
            _ => WatchEvent::Error(ApiError::internal(
                "watch bookmark without a resourceVersion",
            )),
        },
        Some("ERROR") => WatchEvent::Error(status_error(&object, 500)),
        other => WatchEvent::Error(ApiError::internal(format!(
            "unknown watch event type {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_queries() {
        let deploy = ResourceRef::new("apps", "v1", "deployments");
        assert_eq!(
            object_path(&deploy, "ns", "web", Some("scale")).unwrap(),
            "/apis/apps/v1/namespaces/ns/deployments/web/scale"
        );
        let nodes = ResourceRef::core("nodes");
        assert_eq!(collection_path(&nodes, ""), "/api/v1/nodes");
        assert_eq!(
            object_path(
                &ResourceRef::new("rbac.authorization.k8s.io", "v1", "clusterroles"),
                "",
                "system:a/b",
                None
            )
            .unwrap(),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:a%2Fb"
        );
        assert_eq!(object_path(&nodes, "", "", None).unwrap_err().code, 400);

        let mut q = Query::default();
        list_query(
            &mut q,
            &ListOptions {
                label_selector: Some("app in (a,b),!x".into()),
                limit: Some(5),
                continue_token: Some("abc=".into()),
                ..Default::default()
            },
        );
        write_query(
            &mut q,
            &WriteOptions {
                dry_run: true,
                field_manager: Some("me".into()),
                field_validation: Some(FieldValidation::Warn),
                force: true,
                // Never sent: it only says how much of the answer is read.
                version_only: true,
            },
        );
        assert_eq!(
            q.finish("/p".into()),
            "/p?labelSelector=app%20in%20%28a%2Cb%29%2C%21x&limit=5&continue=abc%3D\
             &dryRun=All&fieldManager=me&fieldValidation=Warn&force=true"
        );
    }

    #[test]
    fn delete_options_body() {
        let b = delete_body(&DeleteOptions {
            grace_period_seconds: Some(0),
            propagation_policy: Some("Foreground".into()),
            precondition_uid: Some("u".into()),
            dry_run: true,
            ..Default::default()
        });
        assert_eq!(
            b,
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "propagationPolicy": "Foreground", "preconditions": {"uid": "u"}, "dryRun": ["All"]})
        );
    }

    #[test]
    fn errors_from_bodies() {
        let status =
            ApiError::invalid("ConfigMap", "", "x", vec![Cause::required("metadata.name")])
                .to_status();
        let e = error_from_body(422, status.to_string().as_bytes());
        assert_eq!(e.code, 422);
        assert_eq!(e.reason, "Invalid");
        let d = e.details.unwrap();
        assert_eq!(d.kind, "ConfigMap");
        assert_eq!(d.causes[0].field, "metadata.name");

        let e = error_from_body(502, b"<html>bad gateway</html>");
        assert_eq!((e.code, e.reason.as_str()), (502, "InternalError"));
        assert!(e.message.contains("bad gateway"));
        let e = error_from_body(404, b"404 page not found");
        assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    }

    #[test]
    fn watch_lines() {
        assert!(matches!(
            to_event(json!({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}})),
            WatchEvent::Bookmark(rv) if rv == "7"
        ));
        let gone = ApiError::expired("too old resource version").to_status();
        assert!(matches!(
            to_event(json!({"type": "ERROR", "object": gone})),
            WatchEvent::Error(e) if e.code == 410 && e.reason == "Expired"
        ));
        assert!(matches!(parse_event(b"{\"type\""), WatchEvent::Error(e) if e.code == 500));
    }
}
