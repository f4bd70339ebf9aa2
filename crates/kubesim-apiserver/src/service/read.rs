//! get and list: consistent snapshots, paging, resourceVersion semantics.

use std::sync::Arc;

use base64::Engine;
use kubesim_core::selector::{FieldSelector, LabelSelector};
use kubesim_core::{ApiError, ResourceInfo};
use kubesim_runtime::ListOptions;
use kubesim_store::{Record, Snapshot};
use serde_json::{json, Value};

use super::attrs::Filter;
use super::{namespace_prefix, object_key, parse_rv, store_error, Server};

/// Largest page a client may ask for; larger limits are clamped, as lists
/// are served from memory anyway.
const MAX_LIMIT: i64 = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RvMatch {
    /// The newest state.
    Newest,
    /// State at least as new as the revision.
    NotOlderThan(u64),
    /// State at exactly the revision.
    Exact(u64),
}

/// A page of a list, still as stored bytes.
pub struct ListResult {
    pub rev: u64,
    pub items: Vec<Arc<Record>>,
    pub continue_token: Option<String>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    start: String,
}

fn encode_continue(rv: u64, next_key: &str) -> String {
    let t = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        start: format!("{next_key}\u{0}"),
    };
    base64::engine::general_purpose::URL_SAFE.encode(serde_json::to_vec(&t).unwrap_or_default())
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bad = || {
        ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    };
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token.trim_end_matches('='))
        .or_else(|_| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token.trim_end_matches('='))
        })
        .map_err(|_| bad())?;
    let t: ContinueToken = serde_json::from_slice(&raw).map_err(|_| bad())?;
    if t.v != "meta.k8s.io/v1" || t.rv == 0 {
        return Err(bad());
    }
    // The stored start is "<last key>\0": the next key strictly after it.
    Ok((t.rv, t.start))
}

pub fn parse_filter(resource: &ResourceInfo, opts: &ListOptions) -> Result<Filter, ApiError> {
    let labels = match opts.label_selector.as_deref() {
        Some(s) if !s.trim().is_empty() => LabelSelector::parse(s)?,
        _ => LabelSelector::everything(),
    };
    let fields = match opts.field_selector.as_deref() {
        Some(s) if !s.trim().is_empty() => FieldSelector::parse(s)?,
        _ => FieldSelector::default(),
    };
    fields.check_supported(resource)?;
    Ok(Filter::new(resource, labels, fields))
}

/// Interprets `resourceVersion` + `resourceVersionMatch` for a list.
pub fn rv_match(opts: &ListOptions) -> Result<RvMatch, ApiError> {
    let rv = opts.resource_version.as_deref().unwrap_or("");
    match opts.resource_version_match.as_deref().unwrap_or("") {
        "" => {
            if rv.is_empty() {
                Ok(RvMatch::Newest)
            } else if rv == "0" {
                Ok(RvMatch::NotOlderThan(0))
            } else if opts.limit.unwrap_or(0) > 0 {
                // Legacy: a limit with an explicit version reads exactly it.
                Ok(RvMatch::Exact(parse_rv(rv)?))
            } else {
                Ok(RvMatch::NotOlderThan(parse_rv(rv)?))
            }
        }
        "NotOlderThan" => {
            if rv.is_empty() {
                return Err(ApiError::invalid(
                    "ListOptions",
                    "meta.k8s.io",
                    "",
                    vec![kubesim_core::Cause::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )],
                ));
            }
            Ok(RvMatch::NotOlderThan(parse_rv(rv)?))
        }
        "Exact" => {
            if rv.is_empty() || rv == "0" {
                return Err(ApiError::invalid(
                    "ListOptions",
                    "meta.k8s.io",
                    "",
                    vec![kubesim_core::Cause::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\" or unset",
                    )],
                ));
            }
            Ok(RvMatch::Exact(parse_rv(rv)?))
        }
        other => Err(ApiError::invalid(
            "ListOptions",
            "meta.k8s.io",
            "",
            vec![kubesim_core::Cause::unsupported(
                "resourceVersionMatch",
                other,
                &["Exact", "NotOlderThan", ""],
            )],
        )),
    }
}

impl Server {
    pub fn get_record(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        name: &str,
    ) -> Result<Arc<Record>, ApiError> {
        self.store
            .get(&resource.storage_key(), &object_key(resource, ns, name))
            .ok_or_else(|| ApiError::not_found(&resource.plural, &resource.group, name))
    }

    pub fn get(&self, resource: &ResourceInfo, ns: &str, name: &str) -> Result<Value, ApiError> {
        Self::allow(resource, "get")?;
        let rec = self.get_record(resource, ns, name)?;
        super::decode(&rec).map(|o| kubesim_core::convert::from_storage(resource, o))
    }

    pub(crate) fn snapshot_for(
        &self,
        resource: &ResourceInfo,
        m: RvMatch,
    ) -> Result<Snapshot, ApiError> {
        let key = resource.storage_key();
        match m {
            RvMatch::Newest => self.store.snapshot(&key, None).map_err(store_error),
            RvMatch::NotOlderThan(rv) => {
                let current = self.store.current_rev();
                if rv > current {
                    return Err(ApiError::timeout(format!(
                        "Too large resource version: {rv}, current: {current}"
                    )));
                }
                self.store.snapshot(&key, None).map_err(store_error)
            }
            RvMatch::Exact(rv) => self.store.snapshot(&key, Some(rv)).map_err(store_error),
        }
    }

    pub fn list(
        &self,
        resource: &ResourceInfo,
        ns: &str,
        opts: &ListOptions,
    ) -> Result<ListResult, ApiError> {
        Self::allow(resource, "list")?;
        let filter = parse_filter(resource, opts)?;
        let limit = match opts.limit {
            Some(l) if l < 0 => {
                return Err(ApiError::bad_request(format!(
                    "limit must be non-negative, got {l}"
                )))
            }
            Some(l) if l > 0 => Some(l.min(MAX_LIMIT) as usize),
            _ => None,
        };
        let (snap, start) = match opts.continue_token.as_deref() {
            Some(t) if !t.is_empty() => {
                let (rv, start) = decode_continue(t)?;
                let snap = self
                    .store
                    .snapshot(&resource.storage_key(), Some(rv))
                    .map_err(|e| match e {
                        kubesim_store::StoreError::Expired { .. } => ApiError::expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."),
                        other => store_error(other),
                    })?;
                (snap, Some(start))
            }
            _ => (self.snapshot_for(resource, rv_match(opts)?)?, None),
        };
        let prefix = namespace_prefix(resource, ns);
        let from: std::sync::Arc<str> = match &start {
            Some(s) if s.as_str() > prefix.as_str() => std::sync::Arc::from(s.as_str()),
            _ => std::sync::Arc::from(prefix.as_str()),
        };
        let mut items = Vec::new();
        let mut continue_token = None;
        let mut scanned_to_end = true;
        let mut last_key: Option<std::sync::Arc<str>> = None;
        for (k, rec) in snap.items.range(from..) {
            if !k.starts_with(prefix.as_str()) {
                break;
            }
            if !filter.matches(&rec.attrs) {
                continue;
            }
            if let Some(l) = limit {
                if items.len() == l {
                    scanned_to_end = false;
                    break;
                }
            }
            last_key = Some(k.clone());
            items.push(rec.clone());
        }
        // remainingItemCount is optional and would cost a scan of the rest
        // of the snapshot on every page, so it is not sent.
        if !scanned_to_end {
            if let Some(lk) = &last_key {
                continue_token = Some(encode_continue(snap.rev, lk));
            }
        }
        if kubesim_core::convert::is_converted(resource) {
            items = items
                .into_iter()
                .map(|r| super::versions::present_record(resource, r))
                .collect();
        }
        Ok(ListResult {
            rev: snap.rev,
            items,
            continue_token,
        })
    }
}

/// Renders a list page as the `<Kind>List` JSON object, splicing the stored
/// bytes of the items in without parsing them.
pub fn list_json(resource: &ResourceInfo, page: &ListResult) -> Vec<u8> {
    let mut meta = json!({"resourceVersion": page.rev.to_string()});
    if let Some(c) = &page.continue_token {
        meta["continue"] = Value::String(c.clone());
    }
    let head = format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
        Value::String(resource.list_kind()),
        Value::String(resource.api_version()),
        meta
    );
    let size: usize = page.items.iter().map(|r| r.bytes.len() + 1).sum();
    let mut out = Vec::with_capacity(head.len() + size + 2);
    out.extend_from_slice(head.as_bytes());
    for (i, r) in page.items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&r.bytes);
    }
    out.extend_from_slice(b"]}");
    out
}
