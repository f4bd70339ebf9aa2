//! `report.html`: one self-contained page (inline SVG and CSS, nothing
//! fetched) with the schedule's figures, the Gantt chart, utilisation and
//! queue length over time, and the distribution of waiting times.

use std::fmt::Write;

use super::summary::{counted, times, Summary};
use super::svg;
use crate::engine::Run;

pub fn render(run: &Run, s: &Summary) -> String {
    let end = s.makespan.max(run.simulated);
    let total = run.total_cpu_millis.max(1) as f64;
    let util: Vec<(f64, f64)> = run
        .samples
        .iter()
        .map(|x| (x.time, x.cpu_millis_used as f64 / total))
        .collect();
    let queue: Vec<(f64, f64)> = run
        .samples
        .iter()
        .map(|x| (x.time, x.queued as f64))
        .collect();
    let max_queue = queue.iter().map(|q| q.1).fold(0.0, f64::max);
    let waits: Vec<f64> = counted(run).filter_map(times).map(|t| t.1).collect();
    let mut out = String::from(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>kubesim simulation report</title>\
         <style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}\
         td,th{padding:2px 10px;text-align:right;border-bottom:1px solid #ddd}h2{margin-top:1.5em}</style>\
         </head><body><h1>Simulation report</h1>\n<table>",
    );
    let rows: [(&str, String); 11] = [
        ("jobs", s.nb_jobs.to_string()),
        ("finished", s.nb_finished.to_string()),
        ("succeeded", s.nb_success.to_string()),
        ("killed at walltime", s.nb_killed.to_string()),
        ("rejected", s.nb_rejected.to_string()),
        ("makespan (s)", format!("{:.3}", s.makespan)),
        (
            "mean / max waiting (s)",
            format!("{:.3} / {:.3}", s.mean_waiting, s.max_waiting),
        ),
        (
            "mean / max turnaround (s)",
            format!("{:.3} / {:.3}", s.mean_turnaround, s.max_turnaround),
        ),
        (
            "mean / max slowdown",
            format!("{:.3} / {:.3}", s.mean_slowdown, s.max_slowdown),
        ),
        ("cpu utilisation", format!("{:.1} %", s.utilisation * 100.0)),
        ("nodes", run.nodes.len().to_string()),
    ];
    for (k, v) in rows {
        let _ = write!(out, "<tr><th>{k}</th><td>{v}</td></tr>");
    }
    out.push_str("</table>\n<h2>Jobs over nodes</h2>\n");
    out.push_str(&svg::gantt(run));
    out.push_str("<h2>Cluster cpu utilisation</h2>\n");
    out.push_str(&svg::steps(&util, end, 1.0, "100 %"));
    out.push_str("<h2>Jobs waiting</h2>\n");
    out.push_str(&svg::steps(
        &queue,
        end,
        max_queue,
        &format!("{max_queue:.0}"),
    ));
    out.push_str("<h2>Waiting time distribution</h2>\n");
    out.push_str(&svg::histogram(&waits, 20, "jobs"));
    out.push_str("</body></html>\n");
    out
}
