//! Report files: measurement summaries under ClusterLoader2's names and
//! shapes (`<name>_<test>_<RFC3339>.<ext>`, PerfData JSON), `junit.xml`,
//! the compiled config, and a readable `summary.html`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use serde::Serialize;

/// One report file's content, named at write time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// E.g. `PodStartupLatency_<Identifier>`.
    pub name: String,
    /// `json`, `txt`, ...
    pub ext: String,
    pub time: Timestamp,
    pub content: String,
}

impl Summary {
    pub fn json(name: impl Into<String>, time: Timestamp, value: &impl Serialize) -> Self {
        Summary {
            name: name.into(),
            ext: "json".into(),
            time,
            content: serde_json::to_string_pretty(value).unwrap_or_default(),
        }
    }

    /// `<name>_<config name>_<RFC3339 to the second>.<ext>`.
    pub fn file_name(&self, config_name: &str) -> String {
        let t = self.time.strftime("%Y-%m-%dT%H:%M:%SZ");
        format!("{}_{}_{}.{}", self.name, config_name, t, self.ext)
    }
}

/// ClusterLoader2's PerfData: what performance dashboards read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfData {
    pub version: String,
    #[serde(rename = "dataItems")]
    pub data_items: Vec<DataItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataItem {
    pub data: BTreeMap<String, f64>,
    pub unit: String,
    pub labels: BTreeMap<String, String>,
}

/// What a test run did, for `junit.xml` and `summary.html`.
#[derive(Debug, Clone, Default)]
pub struct TestReport {
    /// The config's `name`.
    pub config_name: String,
    /// The config file as given on the command line.
    pub config_path: String,
    pub started: Option<Timestamp>,
    pub duration: std::time::Duration,
    pub steps: Vec<StepReport>,
    pub summaries: Vec<Summary>,
    /// Failures outside any step (namespace setup or cleanup, a critical
    /// error that stopped the test).
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct StepReport {
    /// `[step: NN] <name>`, as ClusterLoader2 names steps.
    pub name: String,
    pub duration: std::time::Duration,
    /// A measurement step's calls, in config order.
    pub measurements: Vec<MeasurementOutcome>,
    /// A phase step's failures.
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct MeasurementOutcome {
    pub method: String,
    pub identifier: String,
    /// The `action` parameter, when given.
    pub action: String,
    pub error: Option<String>,
    /// The error is an SLO violation rather than a failure to measure.
    pub violation: bool,
    /// Why the call measured nothing (e.g. "not applicable to emulated
    /// nodes"); a skipped call is no failure.
    pub skipped: Option<String>,
    /// What a call that passed left out (a bundle's skipped parts).
    pub note: Option<String>,
}

impl TestReport {
    /// Measurement calls reported as skipped.
    pub fn skipped(&self) -> usize {
        self.steps
            .iter()
            .flat_map(|s| &s.measurements)
            .filter(|m| m.skipped.is_some())
            .count()
    }

    pub fn failures(&self) -> usize {
        self.errors.len()
            + self
                .steps
                .iter()
                .map(|s| {
                    s.errors.len() + s.measurements.iter().filter(|m| m.error.is_some()).count()
                })
                .sum::<usize>()
    }
}

pub mod find_max;
pub mod html;
pub mod junit;
pub mod margins;
pub mod write;
