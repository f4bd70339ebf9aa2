//! How far a run stayed inside each latency SLO its summaries speak to:
//! `1 - p99 / SLO`, so 0.4 means 40 % of the budget left and a negative
//! margin a missed SLO. `--find-max` plots these against its parameter.

use std::collections::BTreeMap;
use std::path::Path;

use super::html::{api_call_slo_ms, is_api_calls, perf_items, POD_STARTUP_SLO_MS};
use super::Summary;

/// The tightest margin of each SLO kind over `summaries`: pod startup and
/// API call latency.
pub fn slo_margins(summaries: &[Summary]) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    let mut keep = |name: &str, m: f64| {
        if m.is_finite() {
            let e = out.entry(name.to_string()).or_insert(m);
            *e = e.min(m);
        }
    };
    for s in summaries {
        let Some(items) = perf_items(s) else { continue };
        if s.name.starts_with("PodStartupLatency") {
            for it in items.iter().filter(|i| i.label == "pod_startup") {
                keep("pod startup p99", 1.0 - it.p[2] / POD_STARTUP_SLO_MS);
            }
        } else if is_api_calls(&items) {
            for it in &items {
                keep("API call p99", 1.0 - it.p[2] / api_call_slo_ms(it));
            }
        }
    }
    out
}

/// The JSON summaries a run wrote to `dir`, named by their file names
/// (which start with the summary's name).
pub fn summaries_in(dir: &Path) -> std::io::Result<Vec<Summary>> {
    let mut names: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    // Directory order is the file system's; the margins must not depend on it.
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let content = std::fs::read_to_string(dir.join(&name))?;
        out.push(Summary {
            name,
            ext: "json".into(),
            time: jiff::Timestamp::UNIX_EPOCH,
            content,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(name: &str, content: &str) -> Summary {
        Summary {
            name: name.into(),
            ext: "json".into(),
            time: jiff::Timestamp::UNIX_EPOCH,
            content: content.into(),
        }
    }

    #[test]
    fn tightest_margin_per_slo() {
        let startup = summary(
            "PodStartupLatency_PodStartupLatency",
            r#"{"version":"v1","dataItems":[
              {"data":{"Perc50":500,"Perc90":900,"Perc99":4000},"unit":"ms","labels":{"Metric":"pod_startup"}},
              {"data":{"Perc50":1,"Perc90":2,"Perc99":3},"unit":"ms","labels":{"Metric":"create_to_schedule"}}]}"#,
        );
        let api = summary(
            "APIResponsivenessPrometheus_simple",
            r#"{"version":"v1","dataItems":[
              {"data":{"Perc50":10,"Perc90":20,"Perc99":500},"unit":"ms","labels":{"Verb":"GET","Resource":"pods","Scope":"resource"}},
              {"data":{"Perc50":10,"Perc90":20,"Perc99":3000},"unit":"ms","labels":{"Verb":"LIST","Resource":"pods","Scope":"cluster"}}]}"#,
        );
        let m = slo_margins(&[startup, api, summary("other", "not json")]);
        assert_eq!(m.len(), 2);
        assert!((m["pod startup p99"] - 0.2).abs() < 1e-9, "{m:?}");
        // GET: 1 - 500/1000 = 0.5; LIST: 1 - 3000/30000 = 0.9.
        assert!((m["API call p99"] - 0.5).abs() < 1e-9, "{m:?}");
    }
}
