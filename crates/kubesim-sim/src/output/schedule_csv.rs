//! Batsim 4's `schedule.csv`: a header and one row, columns in
//! lexicographic order, plus kubesim's `utilisation`. Every column is a
//! function of the inputs and the seed, so the file is byte-identical from
//! run to run: the wall time Batsim puts in `simulation_time` is -1 here,
//! and `kubesim simulate` prints it instead.

use super::summary::Summary;
use crate::engine::Run;

pub fn render(run: &Run, s: &Summary) -> String {
    let f6 = |v: f64| format!("{v:.6}");
    let success_rate = if s.nb_jobs > 0 {
        s.nb_success as f64 / s.nb_jobs as f64
    } else {
        0.0
    };
    let machine_seconds = run.nodes.len() as f64 * s.makespan;
    let cols: Vec<(&str, String)> = vec![
        (
            "batsim_version",
            format!("kubesim-{}", env!("CARGO_PKG_VERSION")),
        ),
        ("consumed_joules", f6(0.0)),
        ("makespan", f6(s.makespan)),
        ("max_slowdown", f6(s.max_slowdown)),
        ("max_turnaround_time", f6(s.max_turnaround)),
        ("max_waiting_time", f6(s.max_waiting)),
        ("mean_slowdown", f6(s.mean_slowdown)),
        ("mean_turnaround_time", f6(s.mean_turnaround)),
        ("mean_waiting_time", f6(s.mean_waiting)),
        ("nb_computing_machines", run.nodes.len().to_string()),
        ("nb_grouped_switches", "0".into()),
        ("nb_jobs", s.nb_jobs.to_string()),
        ("nb_jobs_finished", s.nb_finished.to_string()),
        ("nb_jobs_killed", s.nb_killed.to_string()),
        ("nb_jobs_rejected", s.nb_rejected.to_string()),
        ("nb_jobs_success", s.nb_success.to_string()),
        ("nb_machine_switches", "0".into()),
        // The scheduler runs inside the simulated control plane; its own
        // share of the wall time is not measured apart.
        ("scheduling_time", f6(-1.0)),
        ("simulation_time", f6(-1.0)),
        ("success_rate", f6(success_rate)),
        ("time_computing", f6(s.time_computing)),
        (
            "time_idle",
            f6((machine_seconds - s.time_computing).max(0.0)),
        ),
        ("time_sleeping", f6(0.0)),
        ("time_switching_off", f6(0.0)),
        ("time_switching_on", f6(0.0)),
        ("time_unavailable", f6(0.0)),
        ("utilisation", f6(s.utilisation)),
    ];
    let header: Vec<&str> = cols.iter().map(|(k, _)| *k).collect();
    let row: Vec<&str> = cols.iter().map(|(_, v)| v.as_str()).collect();
    format!("{}\n{}\n", header.join(","), row.join(","))
}
