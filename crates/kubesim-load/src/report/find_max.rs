//! `kubesim load --find-max NAME=START..END[:STEP]`: the search for the
//! highest value of one test parameter at which every SLO holds, and its
//! `summary.html` with the SLO margins plotted against the parameter.
//!
//! The search grows the value by STEP (a quarter of the range unless
//! given) until a run fails or END is passed, then halves the gap
//! between the last value that passed and the first that failed until it
//! is at most a quarter step. It assumes, as ClusterLoader's design does
//! for this search, that a test passing at some load passes at lower ones.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::html::esc;

#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The parameter, as the config reads it (such as
    /// `CL2_LOAD_TEST_THROUGHPUT`).
    pub name: String,
    pub start: f64,
    pub end: f64,
    pub step: f64,
    /// START, END and STEP are all integers: so is every value tried.
    pub integer: bool,
}

/// One run of the test at one value.
#[derive(Debug, Clone, PartialEq)]
pub struct Trial {
    pub value: f64,
    /// The run had no failure: every SLO held and nothing else failed.
    pub passed: bool,
    /// [`super::margins::slo_margins`] of the run.
    pub margins: BTreeMap<String, f64>,
}

impl Search {
    pub fn parse(spec: &str) -> Result<Search, String> {
        let bad = || format!("expected NAME=START..END[:STEP] with START < END, got {spec:?}");
        let (name, range) = spec.split_once('=').ok_or_else(bad)?;
        let (range, step) = match range.split_once(':') {
            Some((r, s)) => (r, Some(s)),
            None => (range, None),
        };
        let (start, end) = range.split_once("..").ok_or_else(bad)?;
        let num = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let (start_v, end_v) = (num(start).ok_or_else(bad)?, num(end).ok_or_else(bad)?);
        if name.trim().is_empty() || start_v >= end_v {
            return Err(bad());
        }
        let is_int = |s: &str| s.trim().parse::<i64>().is_ok();
        let mut integer = is_int(start) && is_int(end);
        let step_v = match step {
            Some(s) => {
                integer &= is_int(s);
                num(s).filter(|v| *v > 0.0).ok_or_else(bad)?
            }
            None => (end_v - start_v) / 4.0,
        };
        let step_v = if integer {
            step_v.ceil().max(1.0)
        } else {
            step_v
        };
        Ok(Search {
            name: name.trim().to_string(),
            start: start_v,
            end: end_v,
            step: step_v,
            integer,
        })
    }

    /// The next value to run after `trials`, or None when the search is
    /// over.
    pub fn next(&self, trials: &[Trial]) -> Option<f64> {
        if trials.is_empty() {
            return Some(self.start);
        }
        let best = self.best(trials);
        let failed = trials
            .iter()
            .filter(|t| !t.passed && best.is_none_or(|b| t.value > b))
            .map(|t| t.value)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.min(v))));
        match (best, failed) {
            (None, _) => None,
            (Some(p), None) => (p < self.end).then(|| self.round((p + self.step).min(self.end))),
            (Some(p), Some(f)) => {
                let resolution = if self.integer {
                    (self.step / 4.0).max(1.0)
                } else {
                    self.step / 4.0
                };
                if f - p <= resolution {
                    return None;
                }
                let mid = self.round((p + f) / 2.0);
                (mid > p && mid < f).then_some(mid)
            }
        }
    }

    /// The highest value that passed.
    pub fn best(&self, trials: &[Trial]) -> Option<f64> {
        trials
            .iter()
            .filter(|t| t.passed)
            .map(|t| t.value)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    }

    fn round(&self, v: f64) -> f64 {
        if self.integer {
            v.floor()
        } else {
            v
        }
    }

    /// A value as it is given to the test.
    pub fn format(&self, v: f64) -> String {
        if self.integer {
            format!("{}", v as i64)
        } else {
            format!("{v}")
        }
    }
}

const W: f64 = 720.0;
const H: f64 = 300.0;
const PAD: f64 = 48.0;
const LINE_COLORS: [&str; 4] = ["#0969da", "#bf8700", "#8250df", "#1a7f37"];

/// The search's `summary.html`: the answer, the runs with their verdicts
/// and margins, and the margins plotted against the parameter.
pub fn summary_html(config: &str, search: &Search, trials: &[Trial]) -> String {
    let mut sorted: Vec<&Trial> = trials.iter().collect();
    sorted.sort_by(|a, b| a.value.total_cmp(&b.value));
    let kinds: BTreeSet<&String> = trials.iter().flat_map(|t| t.margins.keys()).collect();
    let mut o = String::new();
    let title = format!("{} — --find-max {}", config, search.name);
    let _ = writeln!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>body{{font-family:system-ui,sans-serif;margin:2rem auto;max-width:900px;padding:0 1rem}}\
         table{{border-collapse:collapse}}td,th{{padding:.2rem .6rem;border-bottom:1px solid #d0d7de;text-align:right}}\
         .pass{{color:#1a7f37}}.fail{{color:#cf222e}}</style></head><body><h1>{}</h1>",
        esc(&title),
        esc(&title)
    );
    let answer = match search.best(trials) {
        Some(b) => format!(
            "Highest value at which every SLO held: <b>{}</b>",
            esc(&search.format(b))
        ),
        None => "No value passed: the test failed at the start of the range.".to_string(),
    };
    let _ = writeln!(
        o,
        "<p>{answer} (searched {}..{}, step {}; each run's report is in its own directory, named by the value).</p>",
        esc(&search.format(search.start)),
        esc(&search.format(search.end)),
        esc(&search.format(search.step))
    );
    o.push_str(&plot(search, &sorted, &kinds));
    o.push_str("<table><tr><th>value</th><th>verdict</th>");
    for k in &kinds {
        let _ = write!(o, "<th>{} margin</th>", esc(k));
    }
    o.push_str("</tr>\n");
    for t in &sorted {
        let (class, verdict) = if t.passed {
            ("pass", "passed")
        } else {
            ("fail", "failed")
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"{class}\">{verdict}</td>",
            esc(&search.format(t.value))
        );
        for k in &kinds {
            match t.margins.get(*k) {
                Some(m) => {
                    let _ = write!(o, "<td>{:.0} %</td>", m * 100.0);
                }
                None => o.push_str("<td>–</td>"),
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n<p>A margin is 1 − p99 / SLO: the share of the latency budget left; below 0 the SLO was missed.</p></body></html>\n");
    o
}

/// The margins against the parameter, one line per SLO kind, with the
/// zero line where an SLO is missed.
fn plot(search: &Search, trials: &[&Trial], kinds: &BTreeSet<&String>) -> String {
    let (lo, hi) = (search.start, search.end);
    let all: Vec<f64> = trials
        .iter()
        .flat_map(|t| t.margins.values().copied())
        .collect();
    let ymin = all.iter().copied().fold(-0.2_f64, f64::min).max(-2.0);
    let ymax = 1.0;
    let x = |v: f64| PAD + (v - lo) / (hi - lo) * (W - 2.0 * PAD);
    let y = |m: f64| PAD + (ymax - m.clamp(ymin, ymax)) / (ymax - ymin) * (H - 2.0 * PAD);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\">"
    );
    let _ = writeln!(
        o,
        "<line x1=\"{PAD}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#cf222e\" stroke-dasharray=\"4 3\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#cf222e\">SLO</text>",
        W - PAD,
        y(0.0),
        y(0.0),
        W - PAD + 4.0,
        y(0.0) + 4.0
    );
    for (v, label) in [(lo, search.format(lo)), (hi, search.format(hi))] {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x(v),
            H - PAD + 16.0,
            esc(&label)
        );
    }
    for (m, label) in [(ymax, "100 %"), (0.0, "0 %")] {
        let _ = writeln!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{label}</text>",
            PAD - 4.0,
            y(m) + 4.0
        );
    }
    for (i, kind) in kinds.iter().enumerate() {
        let color = LINE_COLORS[i % LINE_COLORS.len()];
        let points: Vec<String> = trials
            .iter()
            .filter_map(|t| {
                t.margins
                    .get(*kind)
                    .map(|m| format!("{:.1},{:.1}", x(t.value), y(*m)))
            })
            .collect();
        let _ = writeln!(
            o,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"{color}\">{}</text>",
            points.join(" "),
            PAD + 8.0,
            PAD - 20.0 + 14.0 * i as f64,
            esc(kind)
        );
    }
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(value: f64, passed: bool) -> Trial {
        Trial {
            value,
            passed,
            margins: BTreeMap::from([(
                "pod startup p99".to_string(),
                if passed { 0.3 } else { -0.1 },
            )]),
        }
    }

    /// Runs the search against a test that passes up to `limit`.
    fn search_with(s: &Search, limit: f64) -> Vec<Trial> {
        let mut trials = Vec::new();
        while let Some(v) = s.next(&trials) {
            assert!(trials.len() < 50, "the search does not end");
            trials.push(trial(v, v <= limit));
        }
        trials
    }

    #[test]
    fn specs() {
        let s = Search::parse("CL2_LOAD_TEST_THROUGHPUT=10..50").unwrap();
        assert_eq!(
            (s.start, s.end, s.step, s.integer),
            (10.0, 50.0, 10.0, true)
        );
        let s = Search::parse("X=0.5..2:0.5").unwrap();
        assert_eq!((s.step, s.integer), (0.5, false));
        for bad in [
            "X", "X=1", "X=5..1", "=1..2", "X=1..2:0", "X=a..2", "X=1..inf",
        ] {
            assert!(Search::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn grows_then_bisects_to_a_quarter_step() {
        let s = Search::parse("T=10..50").unwrap();
        let trials = search_with(&s, 33.0);
        let values: Vec<f64> = trials.iter().map(|t| t.value).collect();
        // 10, 20, 30 pass, 40 fails; then 35 fails, 32 passes, 33 passes:
        // the gap to 35 is 2, within a quarter step (2.5).
        assert_eq!(values, vec![10.0, 20.0, 30.0, 40.0, 35.0, 32.0, 33.0]);
        assert_eq!(s.best(&trials), Some(33.0));
    }

    #[test]
    fn passing_everywhere_stops_at_the_end_and_failing_at_once_gives_none() {
        let s = Search::parse("T=1..9:3").unwrap();
        let all = search_with(&s, 100.0);
        assert_eq!(
            all.iter().map(|t| t.value).collect::<Vec<_>>(),
            vec![1.0, 4.0, 7.0, 9.0]
        );
        assert_eq!(s.best(&all), Some(9.0));
        let none = search_with(&s, 0.0);
        assert_eq!(none.len(), 1);
        assert_eq!(s.best(&none), None);
    }

    #[test]
    fn the_page_gives_the_answer_and_plots_each_margin() {
        let s = Search::parse("T=10..50").unwrap();
        let trials = search_with(&s, 33.0);
        let page = summary_html("load", &s, &trials);
        assert!(page.contains("every SLO held: <b>33</b>"), "{page}");
        assert!(page.contains("<polyline"), "{page}");
        assert!(page.contains("pod startup p99 margin"));
        assert_eq!(page, summary_html("load", &s, &trials), "not deterministic");
    }
}
