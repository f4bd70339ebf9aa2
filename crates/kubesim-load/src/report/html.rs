//! `summary.html`: one self-contained page (inline CSS and SVG, nothing
//! fetched) with the verdict, the steps, the SLOs the summaries speak to,
//! and bar charts of every latency summary. The page is a function of the
//! report alone, so the same run renders the same bytes.

use std::fmt::Write;
use std::time::Duration;

use serde_json::Value;

use super::{StepReport, Summary, TestReport};

/// The official SLOs: pod startup p99 ≤ 5 s; API calls p99 ≤ 1 s on one
/// object and, as ClusterLoader2 checks them, ≤ 30 s on collections.
pub(crate) const POD_STARTUP_SLO_MS: f64 = 5000.0;
const SINGLE_RESOURCE_SLO_MS: f64 = 1000.0;
const MULTIPLE_RESOURCES_SLO_MS: f64 = 30_000.0;
/// API call types shown beyond those that miss their SLO.
const API_ROWS: usize = 10;
/// Bars per chart; summaries list their slowest items first.
const CHART_ITEMS: usize = 15;

const CSS: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:2rem auto;max-width:1000px;color:#1f2328;padding:0 1rem}
h1{margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
.verdict{display:inline-block;padding:.25rem .8rem;border-radius:1rem;font-weight:700;color:#fff}
.pass{background:#1a7f37}.fail{background:#cf222e}
.meta{color:#57606a;margin:.6rem 0}
table{border-collapse:collapse;width:100%;margin:.6rem 0;font-size:.92rem}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{background:#f6f8fa}th.num{text-align:right}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.bad td{background:#ffebe9}.ok{color:#1a7f37;font-weight:600}.no{color:#cf222e;font-weight:600}
ul.calls{margin:0;padding-left:1rem}pre{white-space:pre-wrap;margin:0;font-size:.85rem}
.chart{margin:1rem 0}.muted{color:#57606a}code{font-size:.88rem}
";

pub fn summary_html(r: &TestReport) -> String {
    let mut o = String::new();
    let failures = r.failures();
    let _ = writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>",
        esc(&r.config_name)
    );
    let verdict = if failures == 0 {
        "<span class=\"verdict pass\">PASSED</span>".to_string()
    } else {
        format!("<span class=\"verdict fail\">FAILED: {failures} failure(s)</span>")
    };
    let _ = write!(
        o,
        "<h1>{}</h1>{verdict}\n<p class=\"meta\">",
        esc(&r.config_name)
    );
    let _ = write!(o, "config <code>{}</code>", esc(&r.config_path));
    if let Some(t) = r.started {
        let _ = write!(
            o,
            " · started {}",
            esc(&t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        );
    }
    let _ = writeln!(
        o,
        " · took {} · {} steps · {} summaries · {} measurement call(s) skipped</p>",
        human(r.duration),
        r.steps.len(),
        r.summaries.len(),
        r.skipped()
    );
    if !r.errors.is_empty() {
        o.push_str("<h2>Test errors</h2><ul>");
        for e in &r.errors {
            let _ = write!(o, "<li><pre>{}</pre></li>", esc(e));
        }
        o.push_str("</ul>\n");
    }
    slos(&mut o, r);
    steps(&mut o, &r.steps);
    charts(&mut o, r);
    others(&mut o, r);
    o.push_str("</body></html>\n");
    o
}

fn steps(o: &mut String, steps: &[StepReport]) {
    o.push_str("<h2>Steps</h2>\n<table><tr><th>Step</th><th class=\"num\">Duration</th><th>Outcome</th></tr>\n");
    for s in steps {
        let failed = !s.errors.is_empty() || s.measurements.iter().any(|m| m.error.is_some());
        let _ = write!(
            o,
            "<tr{}><td>{}</td><td class=\"num\">{}</td><td>",
            if failed { " class=\"bad\"" } else { "" },
            esc(&s.name),
            human(s.duration)
        );
        if s.measurements.is_empty() && s.errors.is_empty() {
            o.push_str("<span class=\"ok\">ok</span>");
        }
        for e in &s.errors {
            let _ = write!(o, "<pre class=\"no\">{}</pre>", esc(e));
        }
        if !s.measurements.is_empty() {
            o.push_str("<ul class=\"calls\">");
            for m in &s.measurements {
                let outcome = match (&m.error, &m.skipped, &m.note) {
                    (None, Some(why), _) => format!("<span>skipped: {}</span>", esc(why)),
                    (None, None, Some(note)) => {
                        format!("<span class=\"ok\">ok</span> ({})", esc(note))
                    }
                    (None, None, None) => "<span class=\"ok\">ok</span>".to_string(),
                    (Some(e), _, _) => format!(
                        "<span class=\"no\">{}</span><pre>{}</pre>",
                        if m.violation {
                            "SLO violated"
                        } else {
                            "failed"
                        },
                        esc(e)
                    ),
                };
                let action = if m.action.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", esc(&m.action))
                };
                let _ = write!(
                    o,
                    "<li>{} <code>{}</code>{action}: {outcome}</li>",
                    esc(&m.method),
                    esc(&m.identifier)
                );
            }
            o.push_str("</ul>");
        }
        o.push_str("</td></tr>\n");
    }
    o.push_str("</table>\n");
}

/// PerfData items: (label text, labels, Perc50/90/99 in ms).
pub(crate) struct Item {
    pub(crate) label: String,
    pub(crate) labels: serde_json::Map<String, Value>,
    pub(crate) p: [f64; 3],
}

/// The items of a PerfData summary in milliseconds, or None for any other shape.
/// Whether the items are API call latencies (APIResponsivenessPrometheus
/// and its simple variant label them by verb and scope).
pub(crate) fn is_api_calls(items: &[Item]) -> bool {
    items
        .iter()
        .any(|i| i.labels.contains_key("Verb") && i.labels.contains_key("Scope"))
}

/// The p99 latency SLO of an API call type: 1 s for one object, 30 s for
/// lists (upstream's SLO for namespace and cluster scope alike).
pub(crate) fn api_call_slo_ms(i: &Item) -> f64 {
    if i.labels.get("Scope").and_then(Value::as_str) == Some("resource") {
        SINGLE_RESOURCE_SLO_MS
    } else {
        MULTIPLE_RESOURCES_SLO_MS
    }
}

pub(crate) fn perf_items(s: &Summary) -> Option<Vec<Item>> {
    let v: Value = serde_json::from_str(&s.content).ok()?;
    let items = v.get("dataItems")?.as_array()?;
    let mut out = Vec::new();
    for it in items {
        if it.get("unit").and_then(Value::as_str) != Some("ms") {
            return None;
        }
        let data = it.get("data")?.as_object()?;
        let get = |k: &str| data.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
        let labels = it
            .get("labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        out.push(Item {
            label: item_label(&labels),
            labels,
            p: [get("Perc50"), get("Perc90"), get("Perc99")],
        });
    }
    Some(out)
}

fn item_label(l: &serde_json::Map<String, Value>) -> String {
    let s = |k: &str| l.get(k).and_then(Value::as_str).unwrap_or_default();
    if !s("Metric").is_empty() {
        return s("Metric").to_string();
    }
    if !s("Verb").is_empty() {
        let sub = if s("Subresource").is_empty() {
            String::new()
        } else {
            format!("/{}", s("Subresource"))
        };
        return format!("{} {}{sub} ({})", s("Verb"), s("Resource"), s("Scope"));
    }
    l.iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str().map_or_else(|| v.to_string(), str::to_string)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn slos(o: &mut String, r: &TestReport) {
    let mut rows = String::new();
    for s in &r.summaries {
        let Some(items) = perf_items(s) else { continue };
        if s.name.starts_with("PodStartupLatency") {
            for it in items.iter().filter(|i| i.label == "pod_startup") {
                slo_row(
                    &mut rows,
                    &format!("Pod startup ({})", s.name),
                    it.p,
                    POD_STARTUP_SLO_MS,
                );
            }
        } else if is_api_calls(&items) {
            let slo = api_call_slo_ms;
            let mut shown = 0;
            let mut hidden = 0;
            for it in &items {
                let missed = it.p[2] > slo(it);
                if missed || shown < API_ROWS {
                    if !missed {
                        shown += 1;
                    }
                    let name = format!("API call {} — {}", it.label, s.name);
                    slo_row(&mut rows, &name, it.p, slo(it));
                } else {
                    hidden += 1;
                }
            }
            if hidden > 0 {
                let _ = writeln!(
                    rows,
                    "<tr><td colspan=\"6\" class=\"muted\">{hidden} more API call types of {} within their SLO</td></tr>",
                    esc(&s.name)
                );
            }
        }
    }
    let mut throughput = String::new();
    for s in r
        .summaries
        .iter()
        .filter(|s| s.name.starts_with("SchedulingThroughput"))
    {
        let Ok(v) = serde_json::from_str::<Value>(&s.content) else {
            continue;
        };
        let f = |k: &str| {
            v.get(k)
                .and_then(Value::as_f64)
                .map_or("–".to_string(), |x| format!("{x:.1}"))
        };
        let _ = writeln!(
            throughput,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&s.name),
            f("perc50"),
            f("perc90"),
            f("perc99"),
            f("max")
        );
    }
    if rows.is_empty() && throughput.is_empty() {
        return;
    }
    o.push_str("<h2>SLOs</h2>\n");
    if !rows.is_empty() {
        o.push_str("<table><tr><th>SLI</th><th class=\"num\">p50</th><th class=\"num\">p90</th><th class=\"num\">p99</th><th class=\"num\">SLO (p99)</th><th>Status</th></tr>\n");
        o.push_str(&rows);
        o.push_str("</table>\n");
    }
    if !throughput.is_empty() {
        o.push_str("<table><tr><th>Scheduling throughput (pods/s)</th><th class=\"num\">p50</th><th class=\"num\">p90</th><th class=\"num\">p99</th><th class=\"num\">max</th></tr>\n");
        o.push_str(&throughput);
        o.push_str("</table>\n");
    }
}

fn slo_row(o: &mut String, name: &str, p: [f64; 3], slo_ms: f64) {
    let met = p[2] <= slo_ms;
    let status = if met {
        "<span class=\"ok\">met</span>"
    } else if p[2].is_nan() {
        "<span class=\"muted\">unknown</span>"
    } else {
        "<span class=\"no\">missed</span>"
    };
    let _ = writeln!(
        o,
        "<tr{}><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">≤ {}</td><td>{}</td></tr>",
        if met || p[2].is_nan() {
            ""
        } else {
            " class=\"bad\""
        },
        esc(name),
        ms(p[0]),
        ms(p[1]),
        ms(p[2]),
        ms(slo_ms),
        status
    );
}

fn charts(o: &mut String, r: &TestReport) {
    let mut any = false;
    for s in &r.summaries {
        let Some(items) = perf_items(s).filter(|i| !i.is_empty()) else {
            continue;
        };
        if !any {
            o.push_str("<h2>Latency percentiles</h2>\n");
            any = true;
        }
        let _ = write!(o, "<div class=\"chart\"><h3>{}</h3>", esc(&s.name));
        o.push_str(&bar_chart(&items[..items.len().min(CHART_ITEMS)]));
        if items.len() > CHART_ITEMS {
            let _ = write!(
                o,
                "<p class=\"muted\">{} more items in the summary file.</p>",
                items.len() - CHART_ITEMS
            );
        }
        o.push_str("</div>\n");
    }
}

const COLORS: [(&str, &str); 3] = [("p50", "#54aeff"), ("p90", "#0969da"), ("p99", "#0a3069")];

/// Horizontal bars, three per item (p50, p90, p99), on one linear scale.
fn bar_chart(items: &[Item]) -> String {
    const LABEL_W: f64 = 270.0;
    const BAR_W: f64 = 380.0;
    const BAR_H: f64 = 9.0;
    const ROW_H: f64 = 3.0 * BAR_H + 12.0;
    const TOP: f64 = 26.0;
    let width = LABEL_W + BAR_W + 110.0;
    let height = TOP + ROW_H * items.len() as f64 + 4.0;
    let max = items
        .iter()
        .flat_map(|i| i.p)
        .filter(|v| v.is_finite())
        .fold(0.0_f64, f64::max);
    let scale = if max > 0.0 { BAR_W / max } else { 0.0 };
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"system-ui,sans-serif\" font-size=\"11\" role=\"img\">"
    );
    for (k, (name, color)) in COLORS.iter().enumerate() {
        let x = LABEL_W + 70.0 * k as f64;
        let _ = write!(
            s,
            "<rect x=\"{x}\" y=\"4\" width=\"12\" height=\"10\" fill=\"{color}\"/><text x=\"{}\" y=\"13\">{name}</text>",
            x + 16.0
        );
    }
    for (n, it) in items.iter().enumerate() {
        let y0 = TOP + ROW_H * n as f64;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            LABEL_W - 8.0,
            y0 + 1.5 * BAR_H + 4.0,
            esc(&shorten(&it.label, 42))
        );
        for (k, v) in it.p.iter().enumerate() {
            let y = y0 + BAR_H * k as f64;
            let w = if v.is_finite() {
                (v * scale).max(0.0)
            } else {
                0.0
            };
            let _ = write!(
                s,
                "<rect x=\"{LABEL_W}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{}\" fill=\"#57606a\" font-size=\"10\">{}</text>",
                BAR_H - 1.0,
                COLORS[k].1,
                LABEL_W + w + 4.0,
                y + BAR_H - 1.5,
                ms(*v)
            );
        }
    }
    s.push_str("</svg>");
    s
}

fn others(o: &mut String, r: &TestReport) {
    if r.summaries.is_empty() {
        return;
    }
    o.push_str("<h2>Summary files</h2>\n<table><tr><th>File</th><th>Content</th></tr>\n");
    for s in &r.summaries {
        let kind = match perf_items(s) {
            Some(items) => format!("PerfData, {} item(s) in ms", items.len()),
            None => match serde_json::from_str::<Value>(&s.content) {
                Ok(Value::Object(m)) if m.contains_key("dataItems") => "PerfData".into(),
                Ok(Value::Object(m)) => format!(
                    "JSON object: {}",
                    m.keys().take(8).cloned().collect::<Vec<_>>().join(", ")
                ),
                Ok(Value::Array(a)) => format!("JSON list of {}", a.len()),
                Ok(_) => "JSON".into(),
                Err(_) => format!("{} bytes of {}", s.content.len(), s.ext),
            },
        };
        let _ = writeln!(
            o,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            esc(&s.file_name(&r.config_name)),
            esc(&kind)
        );
    }
    o.push_str("</table>\n");
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// Milliseconds as people read them: ms below a second, seconds above.
fn ms(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v >= 1000.0 {
        format!("{:.2} s", v / 1000.0)
    } else if v >= 10.0 {
        format!("{v:.0} ms")
    } else {
        format!("{v:.2} ms")
    }
}

fn human(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 1.0 {
        format!("{} ms", d.as_millis())
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        let s = d.as_secs();
        let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
        if h > 0 {
            format!("{h}h{m:02}m{s:02}s")
        } else {
            format!("{m}m{s:02}s")
        }
    }
}

pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::report::MeasurementOutcome;
    use serde_json::json;

    fn perf(items: Value) -> String {
        serde_json::to_string_pretty(&json!({"version": "v1", "dataItems": items}))
            .unwrap_or_default()
    }

    fn summary(name: &str, content: String) -> Summary {
        Summary {
            name: name.into(),
            ext: "json".into(),
            time: "2026-01-01T00:10:00Z".parse().expect("time"),
            content,
        }
    }

    /// A report with one of each kind of summary, for tests and a look.
    pub(crate) fn sample() -> TestReport {
        let pod = |m: &str, a: f64| json!({"data": {"Perc50": a, "Perc90": a * 1.6, "Perc99": a * 2.1}, "unit": "ms", "labels": {"Metric": m}});
        let api = |v: &str, r: &str, s: &str, p99: f64| {
            json!({"data": {"Perc50": p99 / 4.0, "Perc90": p99 / 2.0, "Perc99": p99}, "unit": "ms",
            "labels": {"Verb": v, "Resource": r, "Subresource": "", "Scope": s, "Count": "100", "SlowCount": "0"}})
        };
        TestReport {
            config_name: "pod-startup-latency".into(),
            config_path: "testing/pod-startup-latency/config.yaml".into(),
            started: Some("2026-01-01T00:00:00Z".parse().expect("time")),
            duration: Duration::from_secs(95),
            steps: vec![
                StepReport {
                    name: "[step: 01] Starting measurements".into(),
                    duration: Duration::from_millis(120),
                    measurements: vec![MeasurementOutcome {
                        method: "PodStartupLatency".into(),
                        identifier: "PodStartupLatency".into(),
                        action: "start".into(),
                        ..Default::default()
                    }],
                    errors: vec![],
                },
                StepReport {
                    name: "[step: 02] Creating pods <fast>".into(),
                    duration: Duration::from_secs(30),
                    measurements: vec![],
                    errors: vec![],
                },
                StepReport {
                    name: "[step: 03] Collecting measurements".into(),
                    duration: Duration::from_millis(900),
                    measurements: vec![MeasurementOutcome {
                        method: "APIResponsivenessPrometheus".into(),
                        identifier: "APIResponsivenessPrometheusSimple".into(),
                        action: "gather".into(),
                        error: Some("top latency metric: GET nodes 1.2s > 1s".into()),
                        violation: true,
                        ..Default::default()
                    }],
                    errors: vec![],
                },
            ],
            summaries: vec![
                summary(
                    "PodStartupLatency_PodStartupLatency",
                    perf(json!([
                        pod("create_to_schedule", 3.0),
                        pod("schedule_to_run", 600.0),
                        pod("pod_startup", 1200.0)
                    ])),
                ),
                summary(
                    "APIResponsivenessPrometheus_simple",
                    perf(json!([
                        api("GET", "nodes", "resource", 1200.0),
                        api("LIST", "pods", "cluster", 800.0),
                        api("POST", "pods", "resource", 45.5)
                    ])),
                ),
                summary(
                    "SchedulingThroughput",
                    serde_json::to_string(
                        &json!({"perc50": 410.0, "perc90": 460.0, "perc99": 480.0, "max": 500.0}),
                    )
                    .unwrap_or_default(),
                ),
                summary("Timer", perf(json!([]))),
                summary("WaitForControlledPodsRunning_failedpods", "[]".into()),
            ],
            errors: vec![],
        }
    }

    #[test]
    fn page_has_verdict_steps_slos_and_charts() {
        let h = summary_html(&sample());
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(h.contains("FAILED: 1 failure(s)"));
        assert!(h.contains("[step: 02] Creating pods &lt;fast&gt;"));
        assert!(h.contains("<span class=\"no\">SLO violated</span>"));
        // SLO rows: pod startup met, GET nodes missed, LIST pods met.
        assert!(h.contains("<td>Pod startup (PodStartupLatency_PodStartupLatency)</td><td class=\"num\">1.20 s</td><td class=\"num\">1.92 s</td><td class=\"num\">2.52 s</td><td class=\"num\">≤ 5.00 s</td><td><span class=\"ok\">met</span>"));
        assert!(h.contains("<tr class=\"bad\"><td>API call GET nodes (resource) — APIResponsivenessPrometheus_simple</td>"));
        assert!(h.contains("API call LIST pods (cluster) — APIResponsivenessPrometheus_simple</td><td class=\"num\">200 ms</td><td class=\"num\">400 ms</td><td class=\"num\">800 ms</td><td class=\"num\">≤ 30.00 s</td><td><span class=\"ok\">met"));
        assert!(h.contains("<td>SchedulingThroughput</td><td class=\"num\">410.0</td>"));
        // Two charts (Timer has no items), three rows of bars each.
        assert_eq!(h.matches("<svg ").count(), 2);
        assert_eq!(h.matches("<rect ").count(), 2 * (3 + 3 * 3));
        assert!(h.contains("pod_startup</text>"));
        assert!(h.contains("<code>WaitForControlledPodsRunning_failedpods_pod-startup-latency_2026-01-01T00:10:00Z.json</code></td><td>JSON list of 0</td>"));
        assert!(h.contains("<td>PerfData, 0 item(s) in ms</td>"));
        // Self-contained.
        assert!(!h.contains("<script"));
        assert!(
            !h.contains("http://")
                || h.matches("http://").count()
                    == h.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
        );
        assert!(!h.contains("https://"));
        assert!(!h.contains("<link"));
    }

    #[test]
    fn same_report_same_bytes_and_passing_verdict() {
        let mut r = sample();
        assert_eq!(summary_html(&r), summary_html(&r));
        r.steps[2].measurements[0].error = None;
        let h = summary_html(&r);
        assert!(h.contains("<span class=\"verdict pass\">PASSED</span>"));
    }

    #[test]
    fn formats() {
        assert_eq!(ms(f64::NAN), "n/a");
        assert_eq!(ms(1.234), "1.23 ms");
        assert_eq!(ms(45.5), "46 ms");
        assert_eq!(ms(1500.0), "1.50 s");
        assert_eq!(human(Duration::from_millis(120)), "120 ms");
        assert_eq!(human(Duration::from_secs(95)), "1m35s");
        assert_eq!(human(Duration::from_secs(3725)), "1h02m05s");
        assert_eq!(shorten("abcdef", 4), "abc…");
        assert_eq!(
            esc("<a href='x'>&\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;"
        );
    }
}
