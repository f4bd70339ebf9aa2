//! The [`Api`]: how components reach objects, whether the API server is in
//! the same process or across the network. Request options mirror the query
//! parameters of the Kubernetes API so both transports mean the same thing.

use bytes::Bytes;
use futures::stream::BoxStream;
use kubesim_core::patch::PatchType;
use kubesim_core::ApiError;
use serde_json::Value;

/// Names a served resource: group, version and plural (`apps`, `v1`, `deployments`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceRef {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl ResourceRef {
    pub fn new(group: &str, version: &str, plural: &str) -> Self {
        ResourceRef {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
        }
    }
    pub fn core(plural: &str) -> Self {
        Self::new("", "v1", plural)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListOptions {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<i64>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub resource_version_match: Option<String>,
    pub timeout_seconds: Option<u64>,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    #[default]
    Strict,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    /// None: the server default (Strict for kubectl, which always sends it;
    /// upstream's default when absent is Warn).
    pub field_validation: Option<FieldValidation>,
    pub force: bool,
    /// In process only (never sent over HTTP): the caller reads nothing of
    /// the written object but its `metadata.resourceVersion`, so the
    /// server may answer with that alone and hand the object itself to its
    /// watchers rather than copy it. A remote server answers in full, and
    /// the remote client then reads the resourceVersion alone.
    pub version_only: bool,
}

impl WriteOptions {
    /// The defaults, for a caller that reads nothing of the answer but
    /// the resourceVersion (see [`version_only`](Self::version_only)).
    pub fn answer_version_only() -> Self {
        WriteOptions {
            version_only: true,
            ..Default::default()
        }
    }
}

/// The answer a `version_only` writer gets, from either transport: the
/// written object's resourceVersion alone.
pub fn version_answer(resource_version: &str) -> Value {
    serde_json::json!({"metadata": {"resourceVersion": resource_version}})
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    /// Background, Foreground or Orphan.
    pub propagation_policy: Option<String>,
    pub orphan_dependents: Option<bool>,
    pub precondition_uid: Option<String>,
    pub precondition_resource_version: Option<String>,
    pub dry_run: bool,
    /// In process only (never sent over HTTP): the caller reads nothing of
    /// the answer, so the server may answer a delete with a Success Status
    /// where it would return the deleted object, and hand the object's
    /// final state to its watchers rather than copy it. A remote server
    /// answers in full, and the remote client then reads the
    /// resourceVersion alone.
    pub status_only: bool,
}

impl DeleteOptions {
    /// A deletion without grace, for a caller that reads nothing of the
    /// answer (see [`status_only`](Self::status_only)).
    pub fn now_status_only() -> Self {
        DeleteOptions {
            grace_period_seconds: Some(0),
            status_only: true,
            ..Default::default()
        }
    }
}

/// A watch event as components see it.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent {
    Added(Value),
    Modified(Value),
    Deleted(Value),
    /// The resourceVersion the watch has reached.
    Bookmark(String),
    Error(ApiError),
}

/// Object access for controllers, schedulers and emulated kubelets.
#[async_trait::async_trait]
pub trait Api: Send + Sync {
    /// Whether the server ends this transport's watches after a while (as
    /// kube-apiserver does over HTTP, to spread connections), so that a
    /// watcher resumes them and wants bookmarks to resume from a recent
    /// revision. A watch that only ends on an error starts over with a list
    /// and gains nothing from them.
    fn watches_expire(&self) -> bool {
        true
    }
    /// Whether an informer's first list asks for `resourceVersion=0`, which
    /// a kube-apiserver answers from its watch cache instead of a read
    /// through to etcd, as client-go's reflector does: what a client of a
    /// shared control plane should do. The in-process server has no such
    /// difference and keeps paging.
    fn lists_from_cache(&self) -> bool {
        false
    }
    async fn get(&self, r: &ResourceRef, ns: &str, name: &str) -> Result<Value, ApiError>;
    /// The object's `scale` subresource (an autoscaling/v1 Scale), as
    /// `GET .../scale` answers; an Api without subresources answers 404.
    async fn get_scale(&self, r: &ResourceRef, ns: &str, name: &str) -> Result<Value, ApiError> {
        let _ = (r, ns, name);
        Err(ApiError::path_not_found())
    }
    /// A list object (`items`, `metadata.resourceVersion`, `metadata.continue`).
    async fn list(&self, r: &ResourceRef, ns: &str, opts: &ListOptions) -> Result<Value, ApiError>;
    async fn create(
        &self,
        r: &ResourceRef,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError>;
    /// Replaces the object, or with `subresource` = `status` only its status.
    async fn update(
        &self,
        r: &ResourceRef,
        ns: &str,
        obj: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError>;
    #[allow(clippy::too_many_arguments)]
    async fn patch(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: Vec<u8>,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError>;
    /// [`patch`](Self::patch) with a body already built as a value (a
    /// JSON, merge or strategic patch). A transport whose server is in the
    /// same process may hand the value over instead of its JSON; the
    /// server's answer is the same, as the value is what parsing that JSON
    /// gives. Others send the JSON.
    #[allow(clippy::too_many_arguments)]
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
        let bytes = body.to_string().into_bytes();
        self.patch(r, ns, name, kind, bytes, subresource, opts)
            .await
    }
    /// The object (still present, being deleted) or a Success Status.
    async fn delete(
        &self,
        r: &ResourceRef,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError>;
    async fn watch(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<BoxStream<'static, WatchEvent>, ApiError>;
    /// [`list`](Self::list), with each item's serialized JSON (in the
    /// order of `items`) when the transport has it at hand; see
    /// [`watch_with_bytes`](Self::watch_with_bytes).
    async fn list_with_bytes(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<(Value, Vec<Option<Bytes>>), ApiError> {
        let list = self.list(r, ns, opts).await?;
        let n = list
            .get("items")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        Ok((list, vec![None; n]))
    }
    /// [`watch`](Self::watch), each event with its object's serialized JSON
    /// when the transport has it at hand. In process that is the API
    /// server's stored bytes, which an informer's cache then shares instead
    /// of keeping a copy.
    async fn watch_with_bytes(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<BoxStream<'static, (WatchEvent, Option<Bytes>)>, ApiError> {
        use futures::StreamExt;
        Ok(self.watch(r, ns, opts).await?.map(|e| (e, None)).boxed())
    }
    /// [`watch_with_bytes`](Self::watch_with_bytes) for a consumer that
    /// keeps only part of each object: a transport that has the serialized
    /// objects at hand decodes them with `decode`, skipping what the
    /// consumer would drop; others may decode them in full, so the consumer
    /// must still reduce what it gets.
    async fn watch_decoded(
        &self,
        r: &ResourceRef,
        ns: &str,
        opts: &ListOptions,
        decode: crate::decode::Decode,
    ) -> Result<BoxStream<'static, (WatchEvent, Option<Bytes>)>, ApiError> {
        let _ = decode;
        self.watch_with_bytes(r, ns, opts).await
    }
}
