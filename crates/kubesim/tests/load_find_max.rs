//! End-to-end: `kubesim load --find-max` on ClusterLoader2's own
//! scheduler-throughput config (unmodified, 100 pods on 10 nodes). Its
//! throughput threshold is the parameter: a threshold of 1 pod/s is met,
//! 6,251 and more cannot be with 100 pods, so the search must find 1 after
//! growing once and halving twice, with a report per value and the
//! margins plotted in `summary.html`.

mod common;

use common::load::{load, scratch, testdata, text};

#[test]
fn find_max_finds_the_highest_passing_value_and_plots_the_margins() {
    let dir = scratch("find-max");
    let config = testdata("scheduler-throughput/config.yaml");
    let out = load(
        &[
            "--config",
            config.to_str().unwrap(),
            "--nodes",
            "10",
            "--report-dir",
            dir.to_str().unwrap(),
            "--find-max",
            "CL2_SCHEDULER_THROUGHPUT_THRESHOLD=1..100001:25000",
        ],
        &[("CL2_SCHEDULER_THROUGHPUT_PODS", "100")],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("every SLO held: 1 (4 runs)"),
        "{}",
        text(&out)
    );
    let mut runs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("CL2_"))
        .collect();
    runs.sort();
    assert_eq!(
        runs,
        [
            "CL2_SCHEDULER_THROUGHPUT_THRESHOLD=1",
            "CL2_SCHEDULER_THROUGHPUT_THRESHOLD=12501",
            "CL2_SCHEDULER_THROUGHPUT_THRESHOLD=25001",
            "CL2_SCHEDULER_THROUGHPUT_THRESHOLD=6251"
        ]
    );
    // Each run's own ClusterLoader2 report: the passing one without a
    // failure, a failing one with the throughput violation.
    let junit = |v: &str| {
        std::fs::read_to_string(
            dir.join(format!("CL2_SCHEDULER_THROUGHPUT_THRESHOLD={v}/junit.xml")),
        )
        .unwrap()
    };
    assert!(!junit("1").contains("<failure"), "{}", junit("1"));
    assert!(junit("6251").contains("<failure"), "{}", junit("6251"));
    let page = std::fs::read_to_string(dir.join("summary.html")).unwrap();
    assert!(page.contains("every SLO held: <b>1</b>"), "{page}");
    assert!(page.contains("pod startup p99 margin"), "{page}");
    assert!(page.contains("<polyline"), "{page}");
    std::fs::remove_dir_all(&dir).ok();
}
