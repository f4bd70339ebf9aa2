//! `/metrics`: request counts and latency histograms under the names the
//! real API server uses, plus stored-object and watch gauges.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use kubesim_runtime::histogram::Histogram;
use kubesim_store::Usage;

use super::inflight::Counters;

/// One figure of a resource's [`Usage`], as a series writes it.
type UsageValue = fn(&Usage) -> u64;

/// Upstream's `apiserver_request_duration_seconds` buckets.
const BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Upstream's `apiserver_request_sli_duration_seconds` buckets: the SLO
/// bounds (1s, 5s, 30s) are among them, so slow calls can be counted.
const SLI_BUCKETS: &[f64] = &[
    0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0,
    30.0, 45.0, 60.0,
];

/// The labels of one request series.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Labels {
    pub verb: &'static str,
    pub dry_run: bool,
    pub group: String,
    pub version: String,
    pub resource: String,
    pub subresource: String,
    pub scope: &'static str,
}

#[derive(Default)]
pub struct Metrics {
    totals: Mutex<BTreeMap<(Labels, u16), u64>>,
    durations: Mutex<BTreeMap<Labels, Histogram>>,
    /// Keyed by labels with `dry_run` always false: the SLI histogram has
    /// no such label.
    sli: Mutex<BTreeMap<Labels, Histogram>>,
    pub watchers: AtomicI64,
    /// Events sent to watches before they follow live changes, by group
    /// and resource.
    init_events: Mutex<BTreeMap<(String, String), u64>>,
    /// Requests whose handler panicked (answered with a 500).
    pub panics: AtomicI64,
    /// Slots held and requests turned away under the in-flight limits.
    pub inflight_read_only: Arc<Counters>,
    pub inflight_mutating: Arc<Counters>,
}

impl Metrics {
    pub fn observe(&self, mut labels: Labels, code: u16, seconds: f64) {
        // Upstream counts a create as a call on one object (its CleanScope
        // says "resource" for verb create), though the path names a collection.
        if labels.verb == "POST" {
            labels.scope = "resource";
        }
        *self
            .totals
            .lock()
            .entry((labels.clone(), code))
            .or_insert(0) += 1;
        // Upstream leaves long-running requests (watches) out of the latency histogram.
        if labels.verb == "WATCH" {
            return;
        }
        // kubesim has no webhooks or priority-and-fairness queues, so the SLI
        // latency (which leaves those out) is the whole latency; upstream
        // leaves dry-run requests out of it.
        if !labels.dry_run {
            self.sli
                .lock()
                .entry(labels.clone())
                .or_default()
                .observe(SLI_BUCKETS, seconds);
        }
        self.durations
            .lock()
            .entry(labels)
            .or_default()
            .observe(BUCKETS, seconds);
    }

    pub fn watch_started(&self) {
        self.watchers.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` initial events sent to one watch of `group`/`resource`.
    pub fn init_events_sent(&self, group: &str, resource: &str, n: u64) {
        *self
            .init_events
            .lock()
            .entry((group.to_string(), resource.to_string()))
            .or_insert(0) += n;
    }

    pub fn handler_panicked(&self) {
        self.panics.fetch_add(1, Ordering::Relaxed);
    }

    pub fn watch_ended(&self) {
        self.watchers.fetch_sub(1, Ordering::Relaxed);
    }

    /// Renders the Prometheus text exposition format.
    pub fn render(&self, objects: &[(String, Usage)]) -> String {
        let mut out = String::new();
        let lbl = |l: &Labels| {
            format!(
                "component=\"apiserver\",dry_run=\"{}\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
                if l.dry_run { "All" } else { "" },
                l.group,
                l.resource,
                l.scope,
                l.subresource,
                l.verb,
                l.version
            )
        };
        out.push_str("# HELP apiserver_request_total Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.\n# TYPE apiserver_request_total counter\n");
        for ((l, code), n) in self.totals.lock().iter() {
            let _ = writeln!(
                out,
                "apiserver_request_total{{code=\"{code}\",{}}} {n}",
                lbl(l)
            );
        }
        let _ = writeln!(
            out,
            "# HELP kubesim_apiserver_handler_panics_total Requests whose handler panicked and were answered with a 500.\n# TYPE kubesim_apiserver_handler_panics_total counter\nkubesim_apiserver_handler_panics_total {}",
            self.panics.load(Ordering::Relaxed)
        );
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        for (l, h) in self.durations.lock().iter() {
            h.render(
                &mut out,
                "apiserver_request_duration_seconds",
                &lbl(l),
                BUCKETS,
            );
        }
        out.push_str("# HELP apiserver_request_sli_duration_seconds Response latency distribution (not counting webhook duration and priority & fairness queue wait times) in seconds for each verb, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_sli_duration_seconds histogram\n");
        for (l, h) in self.sli.lock().iter() {
            let base = format!(
                "component=\"apiserver\",group=\"{}\",resource=\"{}\",scope=\"{}\",subresource=\"{}\",verb=\"{}\",version=\"{}\"",
                l.group, l.resource, l.scope, l.subresource, l.verb, l.version
            );
            h.render(
                &mut out,
                "apiserver_request_sli_duration_seconds",
                &base,
                SLI_BUCKETS,
            );
        }
        out.push_str("# HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind.\n# TYPE apiserver_storage_objects gauge\n");
        for (res, u) in objects {
            let _ = writeln!(
                out,
                "apiserver_storage_objects{{resource=\"{res}\"}} {}",
                u.objects
            );
        }
        // Its successor, by group and resource (ClusterLoader2's load test
        // queries this one): a storage key is `<plural>.<group>`. Then the
        // stored bytes: upstream sums the last seen length of each object's
        // value in etcd; kubesim's stored value is the object's canonical
        // JSON, so the sum of those lengths (kept by the store as it
        // writes) is the same estimate. ClusterLoader2's load test reads it
        // (ResourceSize).
        let by_group_resource: [(&str, &str, UsageValue); 2] = [
            (
                "apiserver_resource_objects",
                "Number of stored objects at the time of last check split by kind.",
                |u| u.objects as u64,
            ),
            (
                "apiserver_resource_size_estimate_bytes",
                "Estimated bytes of the stored objects of each resource: the sum of their stored (serialized) lengths.",
                |u| u.bytes,
            ),
        ];
        for (name, help, value) in by_group_resource {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            for (res, u) in objects {
                let (resource, group) = res.split_once('.').unwrap_or((res, ""));
                let _ = writeln!(
                    out,
                    "{name}{{group=\"{group}\",resource=\"{resource}\"}} {}",
                    value(u)
                );
            }
        }
        // ClusterLoader2's load test sums it by group and resource (Init
        // Events), as upstream labels its counter.
        out.push_str("# HELP apiserver_init_events_total Events sent to watches from the initial state or the retained history, before they follow live changes, by group and resource.\n# TYPE apiserver_init_events_total counter\n");
        for ((group, resource), n) in self.init_events.lock().iter() {
            let _ = writeln!(
                out,
                "apiserver_init_events_total{{group=\"{group}\",resource=\"{resource}\"}} {n}"
            );
        }
        out.push_str("# HELP apiserver_registered_watchers Number of currently registered watchers.\n# TYPE apiserver_registered_watchers gauge\n");
        let _ = writeln!(
            out,
            "apiserver_registered_watchers {}",
            self.watchers.load(Ordering::Relaxed)
        );
        self.render_inflight(&mut out);
        out
    }

    /// The in-flight limits' series, under upstream's names. The gauge is
    /// the count at the time of the scrape (upstream's is the peak of the
    /// last second); rejections are counted under both the max-in-flight
    /// name and the priority-and-fairness one, whose flow schema and
    /// priority level here are the per-user queues and the request kind.
    fn render_inflight(&self, out: &mut String) {
        let kinds = [
            ("readOnly", &self.inflight_read_only),
            ("mutating", &self.inflight_mutating),
        ];
        // (name, type, help, labels of a kind, the value of a kind's counters)
        type Value = fn(&Counters) -> i64;
        let families: [(&str, &str, &str, &str, Value); 3] = [
            (
                "apiserver_current_inflight_requests",
                "gauge",
                "Requests holding a slot of the in-flight limit of each kind.",
                "request_kind=\"{kind}\"",
                |c| c.current.load(Ordering::Relaxed),
            ),
            (
                "apiserver_dropped_requests_total",
                "counter",
                "Requests answered 429 by the in-flight limit of each kind.",
                "request_kind=\"{kind}\"",
                |c| c.rejected.load(Ordering::Relaxed) as i64,
            ),
            (
                "apiserver_flowcontrol_rejected_requests_total",
                "counter",
                "Requests rejected because their user's queue was full.",
                "flow_schema=\"per-user\",priority_level=\"{kind}\",reason=\"queue-full\"",
                |c| c.rejected.load(Ordering::Relaxed) as i64,
            ),
        ];
        for (name, kind_of_metric, help, labels, value) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind_of_metric}");
            for (kind, c) in kinds {
                let labels = labels.replace("{kind}", kind);
                let _ = writeln!(out, "{name}{{{labels}}} {}", value(c));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(verb: &'static str, scope: &'static str, dry_run: bool) -> Labels {
        Labels {
            verb,
            dry_run,
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            subresource: String::new(),
            scope,
        }
    }

    #[test]
    fn creates_are_resource_scoped_and_sli_leaves_out_dry_runs() {
        let m = Metrics::default();
        m.observe(labels("POST", "namespace", false), 201, 0.3);
        m.observe(labels("POST", "namespace", true), 201, 0.3);
        m.observe(labels("LIST", "namespace", false), 200, 2.0);
        m.observe(labels("WATCH", "namespace", false), 200, 9.0);
        let text = m.render(&[]);
        let post = "component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"";
        assert!(text.contains(&format!(
            "apiserver_request_sli_duration_seconds_count{{{post}}} 1\n"
        )));
        assert!(text.contains(&format!(
            "apiserver_request_sli_duration_seconds_bucket{{{post},le=\"0.4\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "apiserver_request_sli_duration_seconds_bucket{{{post},le=\"0.2\"}} 0\n"
        )));
        assert!(text.contains("apiserver_request_duration_seconds_count{component=\"apiserver\",dry_run=\"All\",group=\"\",resource=\"pods\",scope=\"resource\""));
        assert!(text.contains("apiserver_request_sli_duration_seconds_bucket{component=\"apiserver\",group=\"\",resource=\"pods\",scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\",le=\"5\"} 1\n"));
        assert!(!text.contains("verb=\"WATCH\",version=\"v1\",le="));
        assert!(!text.contains("scope=\"namespace\",subresource=\"\",verb=\"POST\""));
    }

    #[test]
    fn stored_objects_are_counted_and_sized_by_group_and_resource() {
        let usage = |objects, bytes| Usage { objects, bytes };
        let text = Metrics::default().render(&[
            ("deployments.apps".to_string(), usage(2, 2048)),
            ("pods".to_string(), usage(5, 700)),
        ]);
        assert!(text.contains("apiserver_storage_objects{resource=\"deployments.apps\"} 2\n"));
        assert!(text
            .contains("apiserver_resource_objects{group=\"apps\",resource=\"deployments\"} 2\n"));
        assert!(text.contains("apiserver_resource_objects{group=\"\",resource=\"pods\"} 5\n"));
        assert!(text.contains("# TYPE apiserver_resource_size_estimate_bytes gauge\n"));
        assert!(text.contains(
            "apiserver_resource_size_estimate_bytes{group=\"apps\",resource=\"deployments\"} 2048\n"
        ));
        assert!(text.contains(
            "apiserver_resource_size_estimate_bytes{group=\"\",resource=\"pods\"} 700\n"
        ));
    }
}
