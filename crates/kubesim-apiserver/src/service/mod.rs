//! The verbs of the Kubernetes API, independent of HTTP.
//!
//! The HTTP handlers and the in-process [`Api`](kubesim_runtime::Api) both
//! call these functions, so a controller in the same process and kubectl
//! across the network get exactly the same behaviour.

mod admission;
pub mod approval;
pub mod attrs;
mod bootstrap;
mod compaction;
mod crd;
pub(crate) mod decoded_without_parsing;
pub mod delete;
mod event_ttl;
mod facts_from_bytes;
pub(crate) mod jwt;
pub mod logs;
mod managed_fields_text;
pub mod planted;
pub mod read;
pub mod reviews;
mod stamp;
pub mod subresource;
mod token;
mod values_to_watchers;
mod versions;
mod watch;
pub mod write;

use std::sync::Arc;

use bytes::Bytes;
use kubesim_core::{ApiError, Registry, ResourceInfo};
use kubesim_runtime::{Clock, Rng};
use kubesim_store::{Record, Store, StoreError};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub(crate) use managed_fields_text::{decode_apart, restore_managed};
pub use read::{ListResult, RvMatch};
pub(crate) use stamp::restamped;
pub use watch::{WatchFrame, WatchRequest};

/// Who is asking and how, for bookkeeping (managedFields, metrics).
#[derive(Debug, Clone, Default)]
pub struct Caller {
    pub user_agent: String,
}

pub struct Server {
    pub registry: Registry,
    pub store: Arc<dyn Store>,
    pub clock: Clock,
    pub rng: Rng,
    pub(crate) ips: parking_lot::Mutex<admission::IpAllocator>,
    /// Signs and checks service account tokens; its secret is replaced by
    /// the stored one at bootstrap.
    pub(crate) tokens: parking_lot::RwLock<jwt::Signer>,
    /// Committed values on their way to in-process watchers.
    pub(crate) handoff: values_to_watchers::Handoff,
    pub(crate) compactor: compaction::Compactor,
    /// Whether each namespace is terminating, by its revision: asked by
    /// every create.
    pub(crate) namespaces_deleting: facts_from_bytes::DeletingCache,
    /// When each Event expires (see `event_ttl`).
    pub(crate) event_ttl: event_ttl::EventTtl,
    /// RBAC's view of the roles and bindings (see `auth::rbac`).
    pub(crate) rbac: crate::auth::rbac::Authorizer,
    /// Where in-process calls are counted as requests, when the server
    /// also serves HTTP (see [`Server::count_in_process_requests`]).
    request_metrics: std::sync::OnceLock<Arc<crate::http::metrics::Metrics>>,
}

impl Server {
    /// Counts the in-process components' calls in `metrics` as the real
    /// API server counts its components' requests, so that
    /// `apiserver_request_total` and its histograms see the scheduler's
    /// bindings and the controllers' writes too. Only the first call
    /// takes effect.
    pub fn count_in_process_requests(&self, metrics: Arc<crate::http::metrics::Metrics>) {
        let _ = self.request_metrics.set(metrics);
    }

    pub(crate) fn request_metrics(&self) -> Option<&Arc<crate::http::metrics::Metrics>> {
        self.request_metrics.get()
    }

    pub fn new(store: Arc<dyn Store>, clock: Clock, rng: Rng) -> Arc<Self> {
        let s = Arc::new(Server {
            registry: Registry::new(),
            store,
            clock,
            rng: rng.clone(),
            ips: parking_lot::Mutex::new(admission::IpAllocator::default()),
            tokens: parking_lot::RwLock::new(jwt::Signer::new(|| rng.uuid().into_bytes())),
            handoff: values_to_watchers::Handoff::default(),
            compactor: compaction::Compactor::default(),
            namespaces_deleting: facts_from_bytes::DeletingCache::default(),
            event_ttl: event_ttl::EventTtl::default(),
            rbac: Default::default(),
            request_metrics: Default::default(),
        });
        s.load_custom_resources();
        s
    }

    /// Resolves `group/version/plural`, or 404 as the real server answers.
    pub fn resource(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Arc<ResourceInfo>, ApiError> {
        self.registry
            .get(group, version, plural)
            .ok_or_else(ApiError::path_not_found)
    }

    /// 405 for a verb the resource does not serve (a review's get, a
    /// binding's list), as upstream answers before looking at storage.
    pub(crate) fn allow(resource: &ResourceInfo, verb: &str) -> Result<(), ApiError> {
        if resource.verbs.contains(&verb) {
            Ok(())
        } else {
            Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ))
        }
    }

    pub(crate) fn now_string(&self) -> String {
        kubesim_core::meta::format_time(self.clock.now())
    }
}

/// The store key of an object: `ns/name`, or `name` when cluster-scoped.
pub fn object_key(resource: &ResourceInfo, ns: &str, name: &str) -> String {
    if resource.namespaced() {
        format!("{ns}/{name}")
    } else {
        name.to_string()
    }
}

/// The key range prefix of a namespace (empty: every object).
pub fn namespace_prefix(resource: &ResourceInfo, ns: &str) -> String {
    if resource.namespaced() && !ns.is_empty() {
        format!("{ns}/")
    } else {
        String::new()
    }
}

/// Sets `obj`'s `metadata.resourceVersion` to `rev` (in place when it has
/// one, so the key keeps its position).
pub(crate) fn stamp_revision(obj: &mut Value, rev: u64) {
    kubesim_core::meta::metadata_mut(obj)
        .insert("resourceVersion".into(), Value::String(rev.to_string()));
}

/// `obj` stamped with `rev` (see [`stamp_revision`]).
pub(crate) fn at_revision(mut obj: Value, rev: u64) -> Value {
    stamp_revision(&mut obj, rev);
    obj
}

pub(crate) fn decode(rec: &Record) -> Result<Value, ApiError> {
    serde_json::from_slice(&rec.bytes)
        .map_err(|e| ApiError::internal(format!("stored object is corrupt: {e}")))
}

/// Serializes an object with `apiVersion`, `kind`, `metadata` first, the
/// order the real server writes. The bytes are an allocation of their exact
/// size: `Bytes` keeps a vector's whole allocation, and stored objects live
/// long (a 2.5 KB pod would otherwise hold 4 KiB).
pub(crate) fn encode(obj: &Value) -> Bytes {
    encode_with(obj, None)
}

/// [`encode`], with `managed` (see `managed_fields_text`) written where the object's
/// `metadata.managedFields` holds its `null` placeholder.
pub(crate) fn encode_with(obj: &Value, managed: Option<&RawValue>) -> Bytes {
    with_buffer(|buf| {
        let written = match obj {
            Value::Object(m) => serde_json::to_writer(&mut *buf, &HeadFirst { m, managed }),
            _ => serde_json::to_writer(&mut *buf, obj),
        };
        match written {
            Ok(()) => Bytes::copy_from_slice(buf),
            Err(_) => Bytes::new(),
        }
    })
}

/// Runs `f` with an empty buffer that keeps its capacity from one call to
/// the next on this thread. Serializing into a fresh vector grew it by
/// doubling (a reallocation and copy at each step) and then shrank it to
/// the exact size (see below); one copy out of a warm buffer into an
/// allocation of the exact size costs less than either.
fn with_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    use std::cell::RefCell;
    /// Larger buffers are not kept: one huge object must not pin its
    /// size for the thread's lifetime.
    const KEEP: usize = 1 << 20;
    thread_local! {
        static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let r = f(&mut buf);
            if buf.capacity() > KEEP {
                *buf = Vec::new();
            }
            r
        }
        // Not reached (serializing a value never encodes another), but a
        // nested call would still be correct with a buffer of its own.
        Err(_) => f(&mut Vec::new()),
    })
}

/// The keys of `apiVersion`, `kind` and `metadata`, written first.
pub(crate) const HEAD: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// An object serialized with its head keys first, the rest in order: the
/// same bytes as a reordered copy of the map would give, without copying
/// the object (every write of a pod serializes it).
struct HeadFirst<'a> {
    m: &'a Map<String, Value>,
    /// The managedFields text kept apart, if any.
    managed: Option<&'a RawValue>,
}

impl serde::Serialize for HeadFirst<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let m = self.m;
        let mut out = s.serialize_map(Some(m.len()))?;
        for k in HEAD {
            match (m.get(k), self.managed) {
                (Some(Value::Object(md)), Some(managed)) if k == "metadata" => {
                    out.serialize_entry(k, &managed_fields_text::Rejoined { md, managed })?;
                }
                (Some(v), _) => out.serialize_entry(k, v)?,
                (None, _) => {}
            }
        }
        for (k, v) in m.iter().filter(|(k, _)| !HEAD.contains(&k.as_str())) {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}

pub(crate) fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::Expired { requested, oldest } => {
            ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
        }
        StoreError::TooLarge { requested, current } => ApiError::timeout(format!(
            "Too large resource version: {requested}, current: {current}"
        )),
        StoreError::Backend(m) => ApiError::internal(m),
    }
}

/// Parses a resourceVersion string; 400 for anything but a decimal number.
pub(crate) fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    rv.parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_writes_the_head_first_and_the_rest_in_order() {
        let obj: Value =
            serde_json::from_str(r#"{"spec":{"b":1,"a":2},"metadata":{"name":"x"},"status":{},"kind":"Pod","apiVersion":"v1"}"#)
                .unwrap();
        assert_eq!(
            &encode(&obj)[..],
            br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"b":1,"a":2},"status":{}}"#
        );
        assert_eq!(&encode(&Value::from(3))[..], b"3");
    }
}
