//! A Prometheus histogram and its text rendering, for every component
//! that serves metrics under upstream's names (the API server's request
//! latencies, the scheduler's attempt and SLI durations).

use std::fmt::Write;

/// Cumulative bucket counts against fixed upper bounds, a sum and a
/// count, as Prometheus' text format gives them.
#[derive(Debug, Default, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// Counts `seconds` in every bucket whose bound it does not exceed.
    pub fn observe(&mut self, bounds: &[f64], seconds: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; bounds.len()];
        }
        for (i, b) in bounds.iter().enumerate() {
            if seconds <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds `other`'s counts (of the same bounds) to these.
    pub fn merge(&mut self, other: &Histogram) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.sum += other.sum;
        self.count += other.count;
    }

    /// Appends the `_bucket`, `_sum` and `_count` lines of series `name`
    /// with `labels` (already formatted, `a="x",b="y"`) to `out`.
    pub fn render(&self, out: &mut String, name: &str, labels: &str, bounds: &[f64]) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (b, n) in bounds.iter().zip(&self.counts) {
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}",
            self.count
        );
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

/// Upstream's exponential buckets: `count` bounds from `start`, each
/// `factor` times the one before.
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    (0..count).map(|i| start * factor.powi(i as i32)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_text_is_prometheus() {
        let bounds = [0.1, 1.0];
        let mut h = Histogram::default();
        h.observe(&bounds, 0.05);
        h.observe(&bounds, 0.5);
        h.observe(&bounds, 5.0);
        let mut out = String::new();
        h.render(&mut out, "x_seconds", "a=\"b\"", &bounds);
        assert_eq!(
            out,
            "x_seconds_bucket{a=\"b\",le=\"0.1\"} 1\n\
             x_seconds_bucket{a=\"b\",le=\"1\"} 2\n\
             x_seconds_bucket{a=\"b\",le=\"+Inf\"} 3\n\
             x_seconds_sum{a=\"b\"} 5.55\n\
             x_seconds_count{a=\"b\"} 3\n"
        );
        assert_eq!(
            exponential_buckets(0.001, 2.0, 3),
            vec![0.001, 0.002, 0.004]
        );
    }
}
