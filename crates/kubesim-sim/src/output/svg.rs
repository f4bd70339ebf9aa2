//! Charts as inline SVG: the Gantt chart of jobs over nodes, step charts
//! of a quantity over time, and a histogram. Coordinates are printed with
//! fixed precision so output is byte-identical across runs.

use std::fmt::Write;

use super::summary::counted;
use crate::engine::{Outcome, Run};

const WIDTH: f64 = 960.0;
const LEFT: f64 = 110.0;
const LANE: f64 = 10.0;
const TOP: f64 = 20.0;
const AXIS: f64 = 30.0;

/// A stable colour per job id (FNV-1a hue).
fn colour(id: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in id.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("hsl({},60%,55%)", h % 360)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "Nice" tick spacing for a range.
fn tick_step(span: f64) -> f64 {
    if span <= 0.0 {
        return 1.0;
    }
    let raw = span / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn time_axis(out: &mut String, span: f64, y: f64, scale: f64) {
    let step = tick_step(span);
    let mut t = 0.0;
    while t <= span + 1e-9 {
        let x = LEFT + t * scale;
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" y1="{y:.1}" x2="{x:.1}" y2="{:.1}" stroke="#888"/><text x="{x:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"##,
            y + 4.0,
            y + 15.0,
            fmt_time(t)
        );
        t += step;
    }
}

fn fmt_time(t: f64) -> String {
    if t >= 86400.0 {
        format!("{:.1}d", t / 86400.0)
    } else if t >= 3600.0 {
        format!("{:.1}h", t / 3600.0)
    } else if t >= 60.0 {
        format!("{:.1}m", t / 60.0)
    } else {
        format!("{t:.0}s")
    }
}

/// Jobs that overlap on a node get lanes of their own.
fn lanes(jobs: &[&Outcome]) -> (Vec<usize>, usize) {
    let mut ends: Vec<f64> = Vec::new();
    let mut lane_of = Vec::with_capacity(jobs.len());
    for o in jobs {
        let (s, f) = (o.start.unwrap_or(0.0), o.finish.unwrap_or(0.0));
        let lane = match ends.iter().position(|e| *e <= s) {
            Some(l) => l,
            None => {
                ends.push(0.0);
                ends.len() - 1
            }
        };
        ends[lane] = f;
        lane_of.push(lane);
    }
    (lane_of, ends.len().max(1))
}

/// The Gantt chart: a row per node, a bar per job from start to finish.
pub fn gantt(run: &Run) -> String {
    let finished: Vec<&Outcome> = counted(run)
        .filter(|o| o.start.is_some() && o.finish.is_some())
        .collect();
    let span = finished
        .iter()
        .filter_map(|o| o.finish)
        .fold(0.0, f64::max)
        .max(1.0);
    let scale = (WIDTH - LEFT - 10.0) / span;
    let mut body = String::new();
    let mut y = TOP;
    for (n, name) in run.nodes.iter().enumerate() {
        let mut on: Vec<&Outcome> = finished
            .iter()
            .copied()
            .filter(|o| o.node == Some(n))
            .collect();
        on.sort_by(|a, b| a.start.unwrap_or(0.0).total_cmp(&b.start.unwrap_or(0.0)));
        let (lane_of, count) = lanes(&on);
        let h = count as f64 * LANE;
        let _ = write!(
            body,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text><rect x="{LEFT:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="#f4f4f4"/>"##,
            LEFT - 4.0,
            y + h / 2.0 + 3.0,
            esc(name),
            WIDTH - LEFT - 10.0
        );
        for (o, lane) in on.iter().zip(lane_of) {
            let (s, f) = (o.start.unwrap_or(0.0), o.finish.unwrap_or(0.0));
            let _ = write!(
                body,
                r#"<rect x="{:.2}" y="{:.1}" width="{:.2}" height="{:.1}" fill="{}"><title>{} {}: {:.1}s to {:.1}s</title></rect>"#,
                LEFT + s * scale,
                y + lane as f64 * LANE + 1.0,
                ((f - s) * scale).max(0.5),
                LANE - 2.0,
                colour(&o.job.id),
                esc(&o.job.workload),
                esc(&o.job.id),
                s,
                f
            );
        }
        y += h + 2.0;
    }
    let height = y + AXIS;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="sans-serif">"#
    );
    out.push_str(&body);
    time_axis(&mut out, span, y + 2.0, scale);
    out.push_str("</svg>\n");
    out
}

/// A step chart of `points` (time, value), value axis from 0 to `max`.
pub fn steps(points: &[(f64, f64)], end: f64, max: f64, label: &str) -> String {
    let height = 160.0;
    let plot = height - TOP - AXIS;
    let span = end.max(1.0);
    let scale = (WIDTH - LEFT - 10.0) / span;
    let max = if max > 0.0 { max } else { 1.0 };
    let y_of = |v: f64| TOP + plot - (v / max).clamp(0.0, 1.0) * plot;
    let mut d = format!("M{LEFT:.2},{:.2}", y_of(0.0));
    let mut last = 0.0;
    for (t, v) in points {
        let x = LEFT + t.clamp(0.0, span) * scale;
        let _ = write!(d, " L{x:.2},{:.2} L{x:.2},{:.2}", y_of(last), y_of(*v));
        last = *v;
    }
    let _ = write!(d, " L{:.2},{:.2}", LEFT + span * scale, y_of(last));
    let mut out = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="sans-serif"><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">0</text><path d="{d}" fill="none" stroke="#36c" stroke-width="1.5"/>"##,
        LEFT - 4.0,
        TOP + 4.0,
        esc(label),
        LEFT - 4.0,
        TOP + plot
    );
    time_axis(&mut out, span, TOP + plot, scale);
    out.push_str("</svg>\n");
    out
}

/// A histogram of `values` in `bins` equal bins.
pub fn histogram(values: &[f64], bins: usize, label: &str) -> String {
    let height = 180.0;
    let plot = height - TOP - AXIS;
    let max = values.iter().copied().fold(0.0, f64::max);
    let bins = bins.max(1);
    let width = if max > 0.0 { max / bins as f64 } else { 1.0 };
    let mut counts = vec![0usize; bins];
    for v in values {
        let b = ((v / width) as usize).min(bins - 1);
        counts[b] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(0).max(1) as f64;
    let bar = (WIDTH - LEFT - 10.0) / bins as f64;
    let mut out = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="sans-serif"><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"#,
        LEFT - 4.0,
        TOP + 4.0,
        esc(label)
    );
    for (i, c) in counts.iter().enumerate() {
        let h = *c as f64 / top * plot;
        let x = LEFT + i as f64 * bar;
        let _ = write!(
            out,
            r##"<rect x="{x:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="#6a6"><title>{}–{}: {c}</title></rect>"##,
            TOP + plot - h,
            (bar - 1.0).max(0.5),
            fmt_time(i as f64 * width),
            fmt_time((i + 1) as f64 * width)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{LEFT:.1}" y="{:.1}" font-size="10">0</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text></svg>"#,
        TOP + plot + 15.0,
        WIDTH - 10.0,
        TOP + plot + 15.0,
        fmt_time(max)
    );
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_times() {
        assert_eq!(tick_step(100.0), 20.0);
        assert_eq!(tick_step(2215.0), 500.0);
        assert_eq!(fmt_time(90.0), "1.5m");
        assert_eq!(fmt_time(7200.0), "2.0h");
    }

    #[test]
    fn a_histogram_counts_every_value() {
        let svg = histogram(&[0.0, 1.0, 9.0, 10.0], 2, "waiting");
        // Two bins of width 5: {0, 1} and {9, 10}.
        assert_eq!(svg.matches(": 2</title>").count(), 2);
    }
}
