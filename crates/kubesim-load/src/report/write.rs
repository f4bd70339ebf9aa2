//! Writes a run's report directory: every summary under ClusterLoader2's
//! file name, `junit.xml`, `generatedConfig_<name>.yaml` and `summary.html`.

use std::io;
use std::path::Path;

use super::html::summary_html;
use super::junit::junit_xml;
use super::TestReport;

pub fn write_all(dir: &Path, report: &TestReport, generated_config_yaml: &str) -> io::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| with_path(e, dir))?;
    for s in &report.summaries {
        write(dir, &s.file_name(&report.config_name), &s.content)?;
    }
    write(dir, "junit.xml", &junit_xml(report))?;
    write(
        dir,
        &format!("generatedConfig_{}.yaml", report.config_name),
        generated_config_yaml,
    )?;
    write(dir, "summary.html", &summary_html(report))
}

fn write(dir: &Path, name: &str, content: &str) -> io::Result<()> {
    let path = dir.join(file_name(name));
    std::fs::write(&path, content).map_err(|e| with_path(e, &path))
}

/// Names come from the config (its `name`, a `summaryName` parameter), so
/// path separators and parent references are flattened: every file stays
/// in the report directory.
fn file_name(name: &str) -> String {
    let flat: String = name
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c == '\0' {
                '_'
            } else {
                c
            }
        })
        .collect();
    if flat.is_empty() || flat == "." || flat == ".." {
        format!("_{flat}")
    } else {
        flat
    }
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::html::tests::sample;

    #[test]
    fn writes_every_file() {
        let dir = std::env::temp_dir().join(format!("kubesim-load-report-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut r = sample();
        r.summaries[3].name = "../Timer".into();
        write_all(&dir.join("nested"), &r, "name: pod-startup-latency\n").expect("written");
        let mut names: Vec<String> = std::fs::read_dir(dir.join("nested"))
            .expect("dir")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ".._Timer_pod-startup-latency_2026-01-01T00:10:00Z.json",
                "APIResponsivenessPrometheus_simple_pod-startup-latency_2026-01-01T00:10:00Z.json",
                "PodStartupLatency_PodStartupLatency_pod-startup-latency_2026-01-01T00:10:00Z.json",
                "SchedulingThroughput_pod-startup-latency_2026-01-01T00:10:00Z.json",
                "WaitForControlledPodsRunning_failedpods_pod-startup-latency_2026-01-01T00:10:00Z.json",
                "generatedConfig_pod-startup-latency.yaml",
                "junit.xml",
                "summary.html",
            ]
        );
        let junit = std::fs::read_to_string(dir.join("nested/junit.xml")).expect("junit");
        assert!(junit.contains("<testsuite name=\"ClusterLoaderV2\""));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn errors_name_the_path() {
        let file =
            std::env::temp_dir().join(format!("kubesim-load-notadir-{}", std::process::id()));
        std::fs::write(&file, "x").expect("file");
        let err = write_all(&file.join("sub"), &sample(), "").expect_err("parent is a file");
        assert!(
            err.to_string().contains(&file.display().to_string()),
            "{err}"
        );
        let _ = std::fs::remove_file(&file);
    }

    #[test]
    fn names_stay_in_the_directory() {
        assert_eq!(file_name("a/b\\c"), "a_b_c");
        assert_eq!(file_name(".."), "_..");
        assert_eq!(file_name(""), "_");
    }
}
