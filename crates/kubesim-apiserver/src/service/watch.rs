//! watch: initial events, selector transitions, bookmarks, timeouts, and
//! streaming lists (`sendInitialEvents`).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kubesim_core::{convert, ApiError, Cause, ResourceInfo};
use kubesim_runtime::decode::Decode;
use kubesim_runtime::ListOptions;
use kubesim_store::{Event, EventType};
use serde_json::Value;
use tokio::sync::mpsc;

use super::attrs::Filter;
use super::read::{parse_filter, rv_match, RvMatch};
use super::versions::present_bytes;
use super::{encode, namespace_prefix, store_error, Server};

/// How often an idle watch that asked for bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// One frame of a watch stream; objects stay serialized.
#[derive(Debug, Clone)]
pub enum WatchFrame {
    Event {
        kind: &'static str,
        object: Bytes,
        /// For watchers that asked for [`WatchRequest::values`]: `object`
        /// as that shape decodes it, built from the committed value when
        /// the server had it at hand.
        value: Option<Arc<Value>>,
    },
    /// Progress notification at `rev`; `initial_end` marks the end of a
    /// streaming list's initial events.
    Bookmark {
        rev: u64,
        initial_end: bool,
    },
    Error(ApiError),
}

pub struct WatchRequest {
    pub resource: Arc<ResourceInfo>,
    pub namespace: String,
    pub opts: ListOptions,
    /// Some for a watcher in the same process that decodes objects as
    /// `shape` does: that shape of the committed value is attached to
    /// events when the server has it at hand (see `values_to_watchers`), and without
    /// `timeoutSeconds` the watch runs until the client leaves rather than
    /// for kube-apiserver's random 30–60 minutes. That limit spreads HTTP
    /// connections over servers; an in-process watcher has no connection,
    /// and restarting its watch would only cost work (in simulated months,
    /// hundreds of thousands of restarts).
    pub values: Option<Decode>,
}

struct Plan {
    filter: Filter,
    prefix: String,
    /// Objects to send as ADDED before live events.
    initial: Vec<Bytes>,
    initial_end: bool,
    from: u64,
}

impl Server {
    fn plan_watch(&self, req: &WatchRequest) -> Result<Plan, ApiError> {
        Self::allow(&req.resource, "watch")?;
        let opts = &req.opts;
        let filter = parse_filter(&req.resource, opts)?;
        let prefix = namespace_prefix(&req.resource, &req.namespace);
        let rv = opts.resource_version.as_deref().unwrap_or("");
        let streaming = opts.send_initial_events == Some(true);
        if opts.send_initial_events.is_some() {
            let mut causes = Vec::new();
            if opts.resource_version_match.as_deref() != Some("NotOlderThan") {
                causes.push(Cause::forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if streaming && !opts.allow_bookmarks {
                causes.push(Cause::forbidden(
                    "allowWatchBookmarks",
                    "sendInitialEvents requires setting allowWatchBookmarks to true",
                ));
            }
            if !causes.is_empty() {
                return Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", causes));
            }
        } else if opts
            .resource_version_match
            .as_deref()
            .is_some_and(|m| !m.is_empty())
        {
            return Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", vec![Cause::forbidden(
                "resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")]));
        }
        let with_initial =
            streaming || (opts.send_initial_events.is_none() && (rv.is_empty() || rv == "0"));
        if !with_initial {
            let from = if rv.is_empty() || rv == "0" {
                self.store.current_rev()
            } else {
                super::parse_rv(rv)?
            };
            return Ok(Plan {
                filter,
                prefix,
                initial: Vec::new(),
                initial_end: false,
                from,
            });
        }
        let m = if rv.is_empty() || rv == "0" {
            RvMatch::Newest
        } else {
            rv_match(&ListOptions {
                resource_version_match: Some("NotOlderThan".into()),
                ..opts.clone()
            })?
        };
        let snap = self.snapshot_for(&req.resource, m)?;
        let start: Arc<str> = Arc::from(prefix.as_str());
        let initial = snap
            .items
            .range(start..)
            .take_while(|(k, _)| k.starts_with(prefix.as_str()))
            .filter(|(_, r)| filter.matches(&r.attrs))
            .map(|(_, r)| present_bytes(&req.resource, &r.bytes))
            .collect();
        Ok(Plan {
            filter,
            prefix,
            initial,
            initial_end: streaming,
            from: snap.rev,
        })
    }

    /// Starts a watch. Errors that upstream reports before streaming (bad
    /// selectors, bad options) are returned; an expired resourceVersion is
    /// reported in-stream as an ERROR event, as clients expect.
    pub fn watch(
        self: &Arc<Self>,
        req: WatchRequest,
    ) -> Result<mpsc::Receiver<WatchFrame>, ApiError> {
        let plan = self.plan_watch(&req)?;
        let (tx, rx) = mpsc::channel(256);
        let timeout = match (req.opts.timeout_seconds, req.values.is_some()) {
            (Some(s), _) => Some(Duration::from_secs(s)),
            (None, true) => None,
            (None, false) => Some(Duration::from_secs(1800 + self.rng.below(1800))),
        };
        let server = self.clone();
        let bookmarks = req.opts.allow_bookmarks;
        let values = req.values;
        tokio::spawn(async move {
            let watching = server.run_watch(req.resource.clone(), plan, bookmarks, values, &tx);
            match timeout {
                Some(t) => {
                    let clock = server.clock.clone();
                    let _ = clock.timeout(t, watching).await;
                }
                None => watching.await,
            }
            if bookmarks && !tx.is_closed() {
                let _ = tx
                    .send(WatchFrame::Bookmark {
                        rev: server.store.current_rev(),
                        initial_end: false,
                    })
                    .await;
            }
        });
        Ok(rx)
    }

    async fn run_watch(
        &self,
        resource: Arc<ResourceInfo>,
        plan: Plan,
        bookmarks: bool,
        values: Option<Decode>,
        tx: &mpsc::Sender<WatchFrame>,
    ) {
        // Events sent before the watch follows live changes, counted as
        // upstream's apiserver_init_events_total counts them.
        let mut init_events = 0u64;
        for object in plan.initial {
            if tx
                .send(WatchFrame::Event {
                    kind: "ADDED",
                    object,
                    value: None,
                })
                .await
                .is_err()
            {
                return;
            }
            init_events += 1;
        }
        if plan.initial_end
            && tx
                .send(WatchFrame::Bookmark {
                    rev: plan.from,
                    initial_end: true,
                })
                .await
                .is_err()
        {
            return;
        }
        // Opened before the subscription, so that every live event committed
        // from now on can find its value. Converted objects are not the
        // values that were committed.
        let inbox = values
            .filter(|_| !convert::is_converted(&resource))
            .and_then(|shape| self.handoff.open(&resource.storage_key(), shape));
        // What this watcher is sent of a store event, if anything.
        let seen = |ev: &Event| {
            let value = inbox.as_ref().and_then(|i| i.take(&ev.record));
            translate(&resource, ev, &plan.filter, &plan.prefix, value)
        };
        let mut stream = match self.store.watch(&resource.storage_key(), plan.from) {
            Ok(s) => s,
            Err(e) => {
                let _ = tx.send(WatchFrame::Error(store_error(e))).await;
                return;
            }
        };
        // The newest revision the client knows of, from an event or a
        // bookmark. A bookmark that would repeat it tells nothing, so the
        // ticker then rests until the store moves on: an idle cluster (or
        // simulated months without jobs) costs no wake-ups per watch.
        let mut told = plan.from;
        // The history after the start revision that the store held when the
        // watch began is part of its initial events too (upstream's watch
        // cache sends it from its buffer before going live).
        let backlog_end = stream.backlog_end();
        while stream.last_rev() < backlog_end {
            let Some(ev) = stream.try_next() else { break };
            if let Some(frame) = seen(&ev) {
                if tx.send(frame).await.is_err() {
                    return;
                }
                told = ev.rev;
                init_events += 1;
            }
        }
        if init_events > 0 {
            if let Some(m) = self.request_metrics() {
                m.init_events_sent(&resource.group, &resource.plural, init_events);
            }
        }
        let mut ticker = self.clock.interval(BOOKMARK_EVERY);
        ticker.tick().await;
        let mut resting: Option<tokio::sync::watch::Receiver<u64>> = None;
        loop {
            tokio::select! {
                // A fixed polling order: the same inputs give the same run.
                biased;
                ev = stream.next() => {
                    let Some(ev) = ev else { return };
                    if let Some(frame) = seen(&ev) {
                        if tx.send(frame).await.is_err() {
                            return;
                        }
                        told = ev.rev;
                    }
                }
                _ = ticker.tick(), if bookmarks && resting.is_none() => {
                    // Everything up to `rev` is already queued in the stream:
                    // deliver it first so the bookmark never overtakes an event.
                    let rev = self.store.current_rev();
                    while let Some(ev) = stream.try_next() {
                        if let Some(frame) = seen(&ev) {
                            if tx.send(frame).await.is_err() {
                                return;
                            }
                            told = ev.rev;
                        }
                    }
                    let rev = rev.max(stream.last_rev());
                    if rev <= told {
                        // Subscribing marks the current revision as seen.
                        let revs = self.store.revisions();
                        // A write between the read above and subscribing
                        // is not missed: it is newer than `told`.
                        if self.store.current_rev() <= told {
                            resting = Some(revs);
                        }
                        continue;
                    }
                    if tx.send(WatchFrame::Bookmark { rev, initial_end: false }).await.is_err() {
                        return;
                    }
                    told = rev;
                }
                _ = async { resting.as_mut().expect("guarded").changed().await }, if resting.is_some() => {
                    resting = None;
                    ticker.reset();
                }
                _ = tx.closed() => return,
            }
        }
    }
}

/// Turns a store event into what this watcher sees: selector enter/leave
/// become ADDED/DELETED, events of other namespaces vanish. `value` is the
/// watcher's shape of the event's record, which goes with it.
fn translate(
    resource: &ResourceInfo,
    ev: &Event,
    filter: &Filter,
    prefix: &str,
    value: Option<Arc<Value>>,
) -> Option<WatchFrame> {
    if !ev.key.starts_with(prefix) {
        return None;
    }
    let now = filter.matches(&ev.record.attrs);
    let before = ev.prev.as_ref().is_some_and(|p| filter.matches(&p.attrs));
    let (kind, object, value) = match ev.kind {
        EventType::Deleted => {
            if !before && !now {
                return None;
            }
            ("DELETED", ev.record.bytes.clone(), value)
        }
        EventType::Added | EventType::Modified => match (before, now) {
            (true, true) => ("MODIFIED", ev.record.bytes.clone(), value),
            (false, true) => ("ADDED", ev.record.bytes.clone(), value),
            (true, false) => {
                // The object left the selection: the client sees its last
                // matching state, at the revision where it left.
                let prev = ev.prev.as_ref()?;
                let v = super::at_revision(serde_json::from_slice(&prev.bytes).ok()?, ev.rev);
                ("DELETED", encode(&v), None)
            }
            (false, false) => return None,
        },
    };
    let object = present_bytes(resource, &object);
    Some(WatchFrame::Event {
        kind,
        object,
        value,
    })
}
