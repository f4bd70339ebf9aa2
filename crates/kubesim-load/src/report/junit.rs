//! `junit.xml` in ClusterLoader2's shape (its JUnit reporter's output): a
//! `ClusterLoaderV2` suite whose first case is the whole test, followed by
//! one case per phase step and one per measurement call of a measurement
//! step.

use std::fmt::Write;

use super::{StepReport, TestReport};

const SUITE: &str = "ClusterLoaderV2";

struct Case {
    name: String,
    seconds: f64,
    failure: Option<String>,
    /// A measurement call that measured nothing, and why.
    skipped: Option<String>,
}

fn cases(r: &TestReport) -> Vec<Case> {
    let test = &r.config_name;
    let mut all_errors: Vec<String> = r.errors.clone();
    let mut steps = Vec::new();
    for s in &r.steps {
        all_errors.extend(step_errors(s));
        steps.extend(step_cases(test, s));
    }
    let mut out = vec![Case {
        name: format!("{test} overall ({})", r.config_path),
        seconds: r.duration.as_secs_f64(),
        failure: failure(&all_errors),
        skipped: None,
    }];
    out.extend(steps);
    out
}

fn step_errors(s: &StepReport) -> Vec<String> {
    let mut e = s.errors.clone();
    e.extend(s.measurements.iter().filter_map(|m| m.error.clone()));
    e
}

/// A phase step is one case; a measurement step is one case per call,
/// named `[MM] - <Identifier>` by its place in the step. (The step's own
/// errors then show only in the overall case, as in ClusterLoader2.)
fn step_cases(test: &str, s: &StepReport) -> Vec<Case> {
    let seconds = s.duration.as_secs_f64();
    if s.measurements.is_empty() {
        return vec![Case {
            name: format!("{test}: {}", s.name),
            seconds,
            failure: failure(&s.errors),
            skipped: None,
        }];
    }
    s.measurements
        .iter()
        .enumerate()
        .map(|(i, m)| Case {
            name: format!("{test}: {} [{i:02}] - {}", s.name, m.identifier),
            seconds,
            failure: m.error.clone(),
            skipped: m.skipped.clone(),
        })
        .collect()
}

fn failure(errors: &[String]) -> Option<String> {
    if errors.is_empty() {
        None
    } else {
        Some(errors.join("\n"))
    }
}

pub fn junit_xml(r: &TestReport) -> String {
    let cases = cases(r);
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let skipped = cases.iter().filter(|c| c.skipped.is_some()).count();
    // Only a run with skipped calls says so, keeping the others in
    // ClusterLoader2's exact shape.
    let skipped_attr = if skipped > 0 {
        format!(" skipped=\"{skipped}\"")
    } else {
        String::new()
    };
    // The suite time is truncated to the millisecond, as the reporter does.
    let suite_time = (r.duration.as_secs_f64() * 1000.0).trunc() / 1000.0;
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "  <testsuite name=\"{SUITE}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\"{skipped_attr} time=\"{suite_time}\">",
        cases.len()
    );
    for c in &cases {
        let _ = write!(
            out,
            "      <testcase name=\"{}\" classname=\"{SUITE}\" time=\"{}\">",
            escape(&c.name, true),
            c.seconds
        );
        if let Some(why) = &c.skipped {
            let _ = write!(
                out,
                "\n          <skipped message=\"{}\"></skipped>\n      ",
                escape(why, true)
            );
        }
        if let Some(f) = &c.failure {
            let _ = write!(
                out,
                "\n          <failure type=\"Failure\">{}</failure>\n      ",
                escape(f, false)
            );
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>");
    out
}

/// XML-escapes text; in attributes, line breaks and tabs too (they would
/// otherwise be normalised to spaces by readers). Characters XML 1.0 cannot
/// carry become U+FFFD.
pub fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '\n' if attribute => out.push_str("&#xA;"),
            '\r' => out.push_str("&#xD;"),
            '\t' if attribute => out.push_str("&#x9;"),
            '\n' | '\t' => out.push(ch),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::MeasurementOutcome;
    use std::time::Duration;

    fn report() -> TestReport {
        TestReport {
            config_name: "pod-startup-latency".into(),
            config_path: "testing/pod-startup-latency/config.yaml".into(),
            started: None,
            duration: Duration::from_millis(95_123_456),
            steps: vec![
                StepReport {
                    name: "[step: 01] Starting measurements".into(),
                    duration: Duration::from_millis(1500),
                    measurements: vec![
                        MeasurementOutcome {
                            method: "APIResponsivenessPrometheus".into(),
                            identifier: "APIResponsivenessPrometheusSimple".into(),
                            action: "start".into(),
                            ..Default::default()
                        },
                        MeasurementOutcome {
                            method: "PodStartupLatency".into(),
                            identifier: "PodStartupLatency".into(),
                            action: "start".into(),
                            error: Some("pod_startup p99 6s > 5s & <more>".into()),
                            violation: true,
                            ..Default::default()
                        },
                    ],
                    errors: vec![],
                },
                StepReport {
                    name: "[step: 02] Creating \"pods\"".into(),
                    duration: Duration::from_secs(30),
                    measurements: vec![],
                    errors: vec!["create failed\nsecond".into()],
                },
                StepReport {
                    name: "[step: 03] Deleting pods".into(),
                    duration: Duration::from_millis(250),
                    ..Default::default()
                },
            ],
            summaries: vec![],
            errors: vec!["namespace cleanup".into()],
        }
    }

    fn attr<'a>(line: &'a str, name: &str) -> &'a str {
        let start = line
            .find(&format!(" {name}=\""))
            .map(|i| i + name.len() + 3);
        start
            .and_then(|s| line[s..].find('"').map(|e| &line[s..s + e]))
            .unwrap_or("")
    }

    #[test]
    fn clusterloader_shape() {
        let x = junit_xml(&report());
        assert!(x.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n  <testsuite name=\"ClusterLoaderV2\" "
        ));
        assert!(x.ends_with("</testsuite>"));
        let suite = x.lines().nth(1).unwrap_or_default();
        assert_eq!(attr(suite, "tests"), "5");
        assert_eq!(attr(suite, "failures"), "3");
        assert_eq!(attr(suite, "errors"), "0");
        assert_eq!(attr(suite, "time"), "95123.456");
        let names: Vec<&str> = x
            .lines()
            .filter(|l| l.trim_start().starts_with("<testcase "))
            .map(|l| attr(l, "name"))
            .collect();
        assert_eq!(
            names,
            [
                "pod-startup-latency overall (testing/pod-startup-latency/config.yaml)",
                "pod-startup-latency: [step: 01] Starting measurements [00] - APIResponsivenessPrometheusSimple",
                "pod-startup-latency: [step: 01] Starting measurements [01] - PodStartupLatency",
                "pod-startup-latency: [step: 02] Creating &#34;pods&#34;",
                "pod-startup-latency: [step: 03] Deleting pods",
            ]
        );
        assert_eq!(x.matches("<failure type=\"Failure\">").count(), 3);
        assert_eq!(x.matches("</testcase>").count(), 5);
        assert!(x.contains(
            "<failure type=\"Failure\">pod_startup p99 6s &gt; 5s &amp; &lt;more&gt;</failure>"
        ));
        // The overall case carries every error, the test's own last.
        assert!(x.contains("<failure type=\"Failure\">namespace cleanup\npod_startup p99 6s &gt; 5s &amp; &lt;more&gt;\ncreate failed\nsecond</failure>"));
        assert!(x.contains("classname=\"ClusterLoaderV2\" time=\"1.5\">"));
        assert!(x.contains("time=\"0.25\"></testcase>"));
    }

    #[test]
    fn passing_run_has_no_failures() {
        let mut r = report();
        r.errors.clear();
        r.steps.truncate(1);
        r.steps[0].measurements[1].error = None;
        let x = junit_xml(&r);
        assert!(x.contains("tests=\"3\" failures=\"0\""));
        assert!(!x.contains("<failure"));
    }

    #[test]
    fn escapes_what_xml_cannot_carry() {
        assert_eq!(escape("a<b>&\"'", true), "a&lt;b&gt;&amp;&#34;&#39;");
        assert_eq!(escape("l1\nl2\t\r", true), "l1&#xA;l2&#x9;&#xD;");
        assert_eq!(escape("l1\nl2\t", false), "l1\nl2\t");
        assert_eq!(escape("x\u{1}y\u{FFFF}", false), "x\u{FFFD}y\u{FFFD}");
    }

    #[test]
    fn skipped_calls_are_junit_skipped_with_their_reason() {
        let mut r = report();
        r.steps[0].measurements[0].skipped =
            Some("not applicable to emulated nodes (no \"probes\")".into());
        let x = junit_xml(&r);
        let suite = x.lines().nth(1).unwrap();
        assert_eq!(attr(suite, "skipped"), "1");
        // Skipping is no failure: the count is the one of the same report
        // without it.
        assert_eq!(attr(suite, "failures"), "3");
        assert!(x.contains(
            "<skipped message=\"not applicable to emulated nodes (no &#34;probes&#34;)\"></skipped>"
        ));
        assert!(!junit_xml(&report()).contains("skipped"));
    }
}
