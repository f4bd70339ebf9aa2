//! The in-process [`Api`]: components that run inside the server process
//! call the service verbs directly, skipping HTTP and serialization, yet get
//! exactly the answers a remote client would.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use kubesim_core::patch::{PatchBody, PatchType};
use kubesim_core::{meta, ApiError, ResourceInfo};
use kubesim_runtime::decode::Decode;
use kubesim_runtime::{Api, DeleteOptions, ListOptions, ResourceRef, WatchEvent, WriteOptions};
use kubesim_store::Record;
use serde_json::{json, Value};

use crate::auth::{Attributes, RequestAuth, UserInfo};
use crate::http::metrics::Labels;
use crate::service::approval::ApprovalChange;
use crate::service::read::list_json;
use crate::service::subresource::ScaleChange;
use crate::service::{Caller, WatchFrame, WatchRequest};
use crate::Server;

/// An [`Api`] bound to one component, whose name becomes the user agent (and
/// so the field manager of its writes, as upstream components' are).
pub struct InProcess {
    server: Arc<Server>,
    caller: Caller,
    /// The component's own user, held to RBAC when the server enforces
    /// it; None: trusted, as the real API server's loopback client is.
    identity: Option<Arc<UserInfo>>,
}

impl InProcess {
    /// `component` names the caller, e.g. `kube-controller-manager`.
    pub fn new(server: Arc<Server>, component: &str) -> Self {
        InProcess {
            server,
            caller: Caller {
                user_agent: format!("{component}/v1.36.0 (linux/amd64) kubesim"),
            },
            identity: None,
        }
    }

    /// [`new`](Self::new), acting as `user`: each call is authorized as a
    /// request of that user would be over HTTP.
    pub fn as_user(server: Arc<Server>, component: &str, user: UserInfo) -> Self {
        InProcess {
            identity: Some(Arc::new(user)),
            ..Self::new(server, component)
        }
    }

    /// 403 unless the component's user may `verb` the object, as over HTTP.
    fn allowed(
        &self,
        verb: &str,
        res: &ResourceInfo,
        ns: &str,
        name: &str,
        sub: Option<&str>,
    ) -> Result<(), ApiError> {
        let Some(user) = &self.identity else {
            return Ok(());
        };
        if !self.server.rbac_enabled() {
            return Ok(());
        }
        let a = Attributes {
            verb: verb.into(),
            resource_request: true,
            group: res.group.clone(),
            version: res.version.clone(),
            resource: res.plural.clone(),
            subresource: sub.unwrap_or_default().into(),
            namespace: ns.into(),
            name: name.into(),
            path: String::new(),
            field_selector: String::new(),
        };
        let d = self.server.authorize(user, &a);
        if d.allowed {
            Ok(())
        } else {
            // A built-in component refused is worth telling: its role
            // lacks something its loop does.
            tracing::warn!(user = %user.name, verb, resource = %res.plural, subresource = sub.unwrap_or_default(), namespace = ns, "in-process request forbidden");
            Err(a.forbidden_because(&user.name, &d.reason))
        }
    }

    /// Runs a write as the component's user, so that what depends on who
    /// asks (escalation checks, a CSR's requester) sees it.
    async fn as_identity<T>(
        &self,
        call: impl Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        match &self.identity {
            Some(user) => {
                let auth = RequestAuth {
                    user: user.clone(),
                    enforce: self.server.rbac_enabled(),
                };
                crate::auth::scoped(auth, guarded(call)).await
            }
            None => guarded(call).await,
        }
    }

    /// Runs `call`, the way every in-process request goes: a write first
    /// spends a unit of the task's cooperative budget (below), and the
    /// call is counted as a `verb` request on `r` when the server counts
    /// in-process calls (a binding as upstream's scheduler sends it: a
    /// POST of `pods/binding`).
    #[allow(clippy::too_many_arguments)]
    async fn counted<T>(
        &self,
        verb: &'static str,
        r: &ResourceRef,
        ns: &str,
        named: bool,
        sub: Option<&str>,
        call: impl Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        if !matches!(verb, "GET" | "LIST" | "WATCH") {
            // A write in process completes without waiting, so a task
            // making many in a row (a batch of Stage patches) would starve
            // the watchers of the same thread, which then fall behind
            // their channel and catch up from the store's history. Each
            // write spends a unit of the task's cooperative budget: the
            // task yields every 128 writes and the watchers keep up.
            tokio::task::consume_budget().await;
        }
        let Some(metrics) = self.server.request_metrics() else {
            return call.await;
        };
        let started = self.server.clock.instant();
        let out = call.await;
        let binding = r.group.is_empty() && r.plural == "bindings";
        let labels = Labels {
            verb,
            dry_run: false,
            group: r.group.clone(),
            version: r.version.clone(),
            resource: if binding {
                "pods".into()
            } else {
                r.plural.clone()
            },
            subresource: if binding {
                "binding".into()
            } else {
                sub.unwrap_or_default().to_string()
            },
            scope: if named || binding {
                "resource"
            } else if ns.is_empty() {
                "cluster"
            } else {
                "namespace"
            },
        };
        let code = match &out {
            Ok(_) if verb == "POST" => 201,
            Ok(_) => 200,
            Err(e) => e.code,
        };
        let secs = (self.server.clock.instant() - started).as_secs_f64();
        metrics.observe(labels, code, secs);
        out
    }

    fn resource(&self, r: &ResourceRef) -> Result<Arc<ResourceInfo>, ApiError> {
        self.server.resource(&r.group, &r.version, &r.plural)
    }

    /// The same checks the HTTP router makes before it reaches a verb, so
    /// both transports reject the same requests.
    fn check(
        resource: &ResourceInfo,
        ns: &str,
        sub: Option<&str>,
        named: bool,
    ) -> Result<(), ApiError> {
        if (!resource.namespaced() && !ns.is_empty())
            || (resource.namespaced() && ns.is_empty() && named)
        {
            return Err(ApiError::path_not_found());
        }
        if let Some(s) = sub {
            if !resource.has_subresource(s) {
                return Err(ApiError::path_not_found());
            }
        }
        Ok(())
    }

    /// The resource a write goes to, checked, and its options as in-process
    /// components send them (unknown fields are ignored, not warned of).
    fn writing(
        &self,
        r: &ResourceRef,
        ns: &str,
        subresource: Option<&str>,
        named: bool,
        opts: &WriteOptions,
    ) -> Result<(Arc<ResourceInfo>, WriteOptions), ApiError> {
        let res = self.resource(r)?;
        Self::check(&res, ns, subresource, named)?;
        Ok((res, quiet(opts)))
    }

    /// A patch given as bytes or as a value; the scale subresource reads
    /// bytes.
    #[allow(clippy::too_many_arguments)]
    async fn patch_body(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: PatchBody<'_>,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.counted("PATCH", r, ns, true, subresource, async {
            self.as_identity(async {
                let (res, opts) = self.writing(r, ns, subresource, true, opts)?;
                self.allowed("patch", &res, ns, name, subresource)?;
                let opts = &opts;
                if subresource == Some("scale") {
                    let json;
                    let bytes = match body {
                        PatchBody::Bytes(b) => b,
                        PatchBody::Value(v) => {
                            json = v.to_string().into_bytes();
                            &json
                        }
                    };
                    return self
                        .server
                        .write_scale(
                            &res,
                            ns,
                            name,
                            ScaleChange::Patch(kind, bytes),
                            opts,
                            &self.caller,
                        )
                        .await;
                }
                Ok(self
                    .server
                    .patch(&res, ns, name, kind, body, subresource, opts, &self.caller)
                    .await?
                    .obj)
            })
            .await
        })
        .await
    }
}

/// A server call that panics answers 500, as it does over HTTP, instead of
/// unwinding into the calling component's task.
async fn guarded<T>(call: impl Future<Output = Result<T, ApiError>>) -> Result<T, ApiError> {
    match AssertUnwindSafe(call).catch_unwind().await {
        Ok(answer) => answer,
        Err(panic) => {
            let what = kubesim_runtime::panic_message(&*panic);
            tracing::error!(panic = %what, "an in-process API call panicked");
            Err(ApiError::internal(format!(
                "Internal error occurred: {what}"
            )))
        }
    }
}

fn is_core(r: &ResourceInfo, plural: &str) -> bool {
    r.group.is_empty() && r.plural == plural
}

/// `opts` with unknown-field checking off unless the caller asked for it:
/// the server's default (Warn) only produces warnings, which have nowhere
/// to go in process, and the schema walk is a large part of a small write.
fn quiet(opts: &WriteOptions) -> WriteOptions {
    let mut opts = opts.clone();
    opts.field_validation
        .get_or_insert(kubesim_runtime::FieldValidation::Ignore);
    opts
}

/// A watch frame as components see it, with the object's bytes. The object
/// is the one the frame carries when the server built it from the
/// committed value (equal to what `decode` gives, at a fraction of the
/// cost), else decoded. Frames whose object does not parse (which the
/// server never sends) become errors rather than being dropped, so a
/// consumer notices and relists.
fn to_event(frame: WatchFrame, decode: Decode) -> (WatchEvent, Option<Bytes>) {
    match frame {
        WatchFrame::Event {
            kind,
            object,
            value,
        } => match value.map_or_else(
            || decode.bytes(&object),
            |v| Ok(Arc::try_unwrap(v).unwrap_or_else(|v| Value::clone(&v))),
        ) {
            Ok(obj) => {
                let ev = match kind {
                    "ADDED" => WatchEvent::Added(obj),
                    "DELETED" => WatchEvent::Deleted(obj),
                    _ => WatchEvent::Modified(obj),
                };
                (ev, Some(object))
            }
            Err(e) => (
                WatchEvent::Error(ApiError::internal(format!(
                    "watch event object is corrupt: {e}"
                ))),
                None,
            ),
        },
        WatchFrame::Bookmark { rev, .. } => (WatchEvent::Bookmark(rev.to_string()), None),
        WatchFrame::Error(e) => (WatchEvent::Error(e), None),
    }
}

/// Below this many items a list is decoded on the calling thread alone.
const PARALLEL_DECODE_FROM: usize = 128;

/// Decodes a page of records, in order. An informer's first list of a
/// large cluster is the longest stretch of work that nothing else
/// overlaps (every component waits for its caches), and decoding is most
/// of it, so a large page is split across the machine's cores.
fn decode_all(records: &[Arc<Record>]) -> Result<Vec<Value>, ApiError> {
    let decode = |rs: &[Arc<Record>]| -> Result<Vec<Value>, ApiError> {
        rs.iter()
            .map(|r| {
                serde_json::from_slice::<Value>(&r.bytes)
                    .map_err(|e| ApiError::internal(format!("list is corrupt: {e}")))
            })
            .collect()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if records.len() < PARALLEL_DECODE_FROM || cores < 2 {
        return decode(records);
    }
    let (first, rest) = records.split_at(records.len() / 2);
    std::thread::scope(|s| {
        let other = s.spawn(|| decode(rest));
        let mut out = decode(first)?;
        let tail = other
            .join()
            .map_err(|_| ApiError::internal("decoding a list failed"))??;
        out.extend(tail);
        Ok(out)
    })
}

#[async_trait::async_trait]
impl Api for InProcess {
    /// In-process watches have no server-side timeout (`watch.rs`).
    fn watches_expire(&self) -> bool {
        false
    }

    async fn get(&self, r: &ResourceRef, ns: &str, name: &str) -> Result<Value, ApiError> {
        self.counted("GET", r, ns, true, None, async {
            let res = self.resource(r)?;
            Self::check(&res, ns, None, true)?;
            self.allowed("get", &res, ns, name, None)?;
            self.server.get(&res, ns, name)
        })
        .await
    }

    async fn get_scale(&self, r: &ResourceRef, ns: &str, name: &str) -> Result<Value, ApiError> {
        let res = self.resource(r)?;
        Self::check(&res, ns, Some("scale"), true)?;
        self.allowed("get", &res, ns, name, Some("scale"))?;
        self.server.get_scale(&res, ns, name)
    }

    async fn list(&self, r: &ResourceRef, ns: &str, opts: &ListOptions) -> Result<Value, ApiError> {
        self.counted("LIST", r, ns, false, None, async {
            let res = self.resource(r)?;
            Self::check(&res, ns, None, false)?;
            self.allowed("list", &res, ns, "", None)?;
            let page = self.server.list(&res, ns, opts)?;
            serde_json::from_slice(&list_json(&res, &page))
                .map_err(|e| ApiError::internal(format!("list is corrupt: {e}")))
        })
        .await
    }

    async fn list_with_bytes(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<(Value, Vec<Option<Bytes>>), ApiError> {
        self.counted("LIST", r, ns, false, None, async {
            let res = self.resource(r)?;
            Self::check(&res, ns, None, false)?;
            self.allowed("list", &res, ns, "", None)?;
            let page = self.server.list(&res, ns, opts)?;
            let mut list = json!({
                "kind": res.list_kind(),
                "apiVersion": res.api_version(),
                "metadata": {"resourceVersion": page.rev.to_string()},
            });
            if let Some(c) = &page.continue_token {
                list["metadata"]["continue"] = Value::String(c.clone());
            }
            list["items"] = Value::Array(decode_all(&page.items)?);
            Ok((
                list,
                page.items.iter().map(|r| Some(r.bytes.clone())).collect(),
            ))
        })
        .await
    }

    async fn create(
        &self,
        r: &ResourceRef,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        self.counted("POST", r, ns, false, None, async {
            self.as_identity(async {
                let (res, opts) = self.writing(r, ns, None, false, opts)?;
                self.allowed("create", &res, ns, "", None)?;
                let opts = &opts;
                if is_core(&res, "bindings") {
                    let name = meta::name(&obj).to_string();
                    return self.server.bind(ns, &name, &obj).await;
                }
                Ok(self
                    .server
                    .create(&res, ns, obj, opts, &self.caller)
                    .await?
                    .obj)
            })
            .await
        })
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
        self.counted("PUT", r, ns, true, subresource, async {
            self.as_identity(async {
                let (res, opts) = self.writing(r, ns, subresource, true, opts)?;
                let opts = &opts;
                let name = meta::name(&obj).to_string();
                if name.is_empty() {
                    return Err(ApiError::bad_request("the object has no name"));
                }
                self.allowed("update", &res, ns, &name, subresource)?;
                match subresource {
                    Some("finalize") => {
                        self.server
                            .finalize_namespace(&name, &obj, &self.caller)
                            .await
                    }
                    Some("scale") => {
                        self.server
                            .write_scale(
                                &res,
                                ns,
                                &name,
                                ScaleChange::Replace(&obj),
                                opts,
                                &self.caller,
                            )
                            .await
                    }
                    Some("approval") => Ok(self
                        .server
                        .write_approval(
                            &res,
                            &name,
                            ApprovalChange::Replace(obj),
                            opts,
                            &self.caller,
                        )
                        .await?
                        .obj),
                    _ => Ok(self
                        .server
                        .update(&res, ns, &name, obj, subresource, opts, &self.caller)
                        .await?
                        .obj),
                }
            })
            .await
        })
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
        self.patch_body(
            r,
            ns,
            name,
            kind,
            PatchBody::Bytes(&body),
            subresource,
            opts,
        )
        .await
    }

    async fn patch_value(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        // Floating-point numbers may not survive a trip through JSON: a
        // body holding one goes as the bytes a remote client would send,
        // so that both give the same object.
        let bytes;
        let body = if crate::service::decoded_without_parsing::has_float(&body) {
            bytes = body.to_string().into_bytes();
            PatchBody::Bytes(&bytes)
        } else {
            PatchBody::Value(&body)
        };
        self.patch_body(r, ns, name, kind, body, subresource, opts)
            .await
    }

    async fn delete(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        self.counted("DELETE", r, ns, true, None, async {
            self.as_identity(async {
                let res = self.resource(r)?;
                Self::check(&res, ns, None, true)?;
                self.allowed("delete", &res, ns, name, None)?;
                Ok(self.server.delete(&res, ns, name, opts).await?.body)
            })
            .await
        })
        .await
    }

    async fn watch(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<BoxStream<'static, WatchEvent>, ApiError> {
        Ok(self
            .watch_with_bytes(r, ns, opts)
            .await?
            .map(|(ev, _)| ev)
            .boxed())
    }

    async fn watch_with_bytes(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<BoxStream<'static, (WatchEvent, Option<Bytes>)>, ApiError> {
        self.watch_decoded(r, ns, opts, Decode::Full).await
    }

    async fn watch_decoded(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
        decode: Decode,
    ) -> Result<BoxStream<'static, (WatchEvent, Option<Bytes>)>, ApiError> {
        let res = self.resource(r)?;
        Self::check(&res, ns, None, false)?;
        self.allowed("watch", &res, ns, "", None)?;
        let rx = self.server.watch(WatchRequest {
            resource: res,
            namespace: ns.to_string(),
            opts: opts.clone(),
            values: Some(decode),
        })?;
        let stream = futures::stream::unfold(rx, move |mut rx| async move {
            let frame = rx.recv().await?;
            Some((to_event(frame, decode), rx))
        });
        Ok(stream.boxed())
    }
}
