//! What a run is written as: Batsim's `jobs.csv` and `schedule.csv`, a
//! Gantt chart and a self-contained HTML report. Every writer is a pure
//! function of the run, so the same run gives the same bytes.

pub mod jobs_csv;
pub mod report;
pub mod schedule_csv;
pub mod summary;
pub mod svg;

use std::path::Path;

use crate::engine::Run;

/// Writes every output into `dir` (created if missing).
pub fn write_all(dir: &Path, run: &Run) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let summary = summary::Summary::of(run);
    std::fs::write(dir.join("jobs.csv"), jobs_csv::render(run))?;
    std::fs::write(
        dir.join("schedule.csv"),
        schedule_csv::render(run, &summary),
    )?;
    std::fs::write(dir.join("gantt.svg"), svg::gantt(run))?;
    std::fs::write(dir.join("report.html"), report::render(run, &summary))?;
    Ok(())
}
