//! `/metrics`: request counts and latency histograms under the names the
//! real API server uses, plus stored-object and watch gauges.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::Mutex;

/// Upstream's `apiserver_request_duration_seconds` buckets.
const BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
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
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

#[derive(Default)]
pub struct Metrics {
    totals: Mutex<BTreeMap<(Labels, u16), u64>>,
    durations: Mutex<BTreeMap<Labels, Histogram>>,
    pub watchers: AtomicI64,
}

impl Metrics {
    pub fn observe(&self, labels: Labels, code: u16, seconds: f64) {
        *self
            .totals
            .lock()
            .entry((labels.clone(), code))
            .or_insert(0) += 1;
        // Upstream leaves long-running requests (watches) out of the latency histogram.
        if labels.verb == "WATCH" {
            return;
        }
        let mut d = self.durations.lock();
        let h = d.entry(labels).or_default();
        if h.counts.is_empty() {
            h.counts = vec![0; BUCKETS.len()];
        }
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                h.counts[i] += 1;
            }
        }
        h.sum += seconds;
        h.count += 1;
    }

    pub fn watch_started(&self) {
        self.watchers.fetch_add(1, Ordering::Relaxed);
    }

    pub fn watch_ended(&self) {
        self.watchers.fetch_sub(1, Ordering::Relaxed);
    }

    /// Renders the Prometheus text exposition format.
    pub fn render(&self, objects: &[(String, usize)]) -> String {
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
        out.push_str("# HELP apiserver_request_duration_seconds Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.\n# TYPE apiserver_request_duration_seconds histogram\n");
        for (l, h) in self.durations.lock().iter() {
            let base = lbl(l);
            for (i, b) in BUCKETS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "apiserver_request_duration_seconds_bucket{{{base},le=\"{b}\"}} {}",
                    h.counts[i]
                );
            }
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_bucket{{{base},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_sum{{{base}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "apiserver_request_duration_seconds_count{{{base}}} {}",
                h.count
            );
        }
        out.push_str("# HELP apiserver_storage_objects Number of stored objects at the time of last check split by kind.\n# TYPE apiserver_storage_objects gauge\n");
        for (res, n) in objects {
            let _ = writeln!(out, "apiserver_storage_objects{{resource=\"{res}\"}} {n}");
        }
        out.push_str("# HELP apiserver_registered_watchers Number of currently registered watchers.\n# TYPE apiserver_registered_watchers gauge\n");
        let _ = writeln!(
            out,
            "apiserver_registered_watchers {}",
            self.watchers.load(Ordering::Relaxed)
        );
        out
    }
}
