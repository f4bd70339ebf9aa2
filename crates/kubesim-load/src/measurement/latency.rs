//! Latency helpers shared by the measurements: ClusterLoader2's
//! nearest-rank percentiles, its `LatencyMetric` and that metric as a
//! PerfData item, and Go's way of printing durations (error messages
//! quote thresholds the way the config wrote them).

use std::collections::BTreeMap;
use std::time::Duration;

use kubesim_gocompat::duration::format_std;

use crate::report::DataItem;

/// The index of percentile `p` (0..=100) in a sorted list of `n`
/// samples: `ceil(n*p/100) - 1`, the nearest rank, as ClusterLoader2
/// computes it. None for an empty list.
pub fn nearest_rank_index(n: usize, p: u32) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let rank = (n * p.min(100) as usize).div_ceil(100);
    Some(rank.saturating_sub(1))
}

/// Percentile `p` of `sorted` (ascending), None when empty.
pub fn percentile<T: Copy>(sorted: &[T], p: u32) -> Option<T> {
    nearest_rank_index(sorted.len(), p).map(|i| sorted[i])
}

/// 50th, 90th and 99th percentile of a set of latencies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencyMetric {
    pub perc50: Duration,
    pub perc90: Duration,
    pub perc99: Duration,
}

impl LatencyMetric {
    /// The percentiles of `samples` (any order); all zero when there are
    /// none, as ClusterLoader2 reports an empty transition.
    pub fn of(mut samples: Vec<Duration>) -> Self {
        samples.sort_unstable();
        let at = |p| percentile(&samples, p).unwrap_or_default();
        LatencyMetric {
            perc50: at(50),
            perc90: at(90),
            perc99: at(99),
        }
    }

    /// ClusterLoader2's `ToPerfData`: milliseconds as floats, labelled
    /// with the metric's name.
    pub fn to_data_item(&self, name: &str) -> DataItem {
        let data = BTreeMap::from([
            ("Perc50".to_string(), millis(self.perc50)),
            ("Perc90".to_string(), millis(self.perc90)),
            ("Perc99".to_string(), millis(self.perc99)),
        ]);
        DataItem {
            data,
            unit: "ms".into(),
            labels: BTreeMap::from([("Metric".to_string(), name.to_string())]),
        }
    }

    /// ClusterLoader2's `VerifyThresholdByPercentile`: the first
    /// percentile above its threshold, described as upstream does.
    pub fn check(&self, p50: Duration, p90: Duration, p99: Duration) -> Result<(), String> {
        for (name, got, max) in [
            ("50th", self.perc50, p50),
            ("90th", self.perc90, p90),
            ("99th", self.perc99, p99),
        ] {
            if got > max {
                return Err(format!(
                    "too high latency {name} percentile: got {} expected: {}",
                    format_std(got),
                    format_std(max)
                ));
            }
        }
        Ok(())
    }
}

pub fn millis(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn nearest_rank_matches_clusterloader() {
        // ceil(n*p/100)-1
        assert_eq!(nearest_rank_index(0, 50), None);
        assert_eq!(nearest_rank_index(1, 50), Some(0));
        assert_eq!(nearest_rank_index(1, 99), Some(0));
        assert_eq!(nearest_rank_index(10, 50), Some(4));
        assert_eq!(nearest_rank_index(10, 90), Some(8));
        assert_eq!(nearest_rank_index(10, 99), Some(9));
        assert_eq!(nearest_rank_index(100, 99), Some(98));
        assert_eq!(nearest_rank_index(3, 50), Some(1));
        assert_eq!(nearest_rank_index(5, 100), Some(4));
    }

    #[test]
    fn metric_of_samples() {
        let samples = (1..=10).rev().map(Duration::from_secs).collect();
        let m = LatencyMetric::of(samples);
        assert_eq!(m.perc50, Duration::from_secs(5));
        assert_eq!(m.perc90, Duration::from_secs(9));
        assert_eq!(m.perc99, Duration::from_secs(10));
        assert_eq!(LatencyMetric::of(Vec::new()), LatencyMetric::default());
    }

    #[test]
    fn perf_data_item_shape() {
        let m = LatencyMetric {
            perc50: Duration::from_micros(1500),
            perc90: Duration::from_secs(2),
            perc99: Duration::from_nanos(7_100_534_796),
        };
        let v = serde_json::to_value(m.to_data_item("pod_startup")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "data": {"Perc50": 1.5, "Perc90": 2000.0, "Perc99": 7100.534796},
                "unit": "ms",
                "labels": {"Metric": "pod_startup"}
            })
        );
    }

    #[test]
    fn thresholds_checked_in_order() {
        let m = LatencyMetric {
            perc50: Duration::from_secs(1),
            perc90: Duration::from_secs(3),
            perc99: Duration::from_secs(6),
        };
        let five = Duration::from_secs(5);
        assert_eq!(
            m.check(five, five, five),
            Err("too high latency 99th percentile: got 6s expected: 5s".into())
        );
        assert_eq!(m.check(five, five, Duration::from_secs(6)), Ok(()));
        assert!(m
            .check(Duration::from_millis(500), five, five)
            .unwrap_err()
            .contains("50th"));
    }

    proptest! {
        #[test]
        fn percentiles_are_monotone_and_bounded(
            mut xs in proptest::collection::vec(0u64..10_000_000, 1..200)
        ) {
            xs.sort_unstable();
            let (lo, hi) = (xs[0], xs[xs.len() - 1]);
            let mut prev = lo;
            for p in [0, 1, 25, 50, 75, 90, 99, 100] {
                let v = percentile(&xs, p).unwrap();
                prop_assert!(v >= prev, "p{} = {} < {}", p, v, prev);
                prop_assert!(lo <= v && v <= hi);
                prev = v;
            }
            prop_assert_eq!(percentile(&xs, 100), Some(hi));
            let m = LatencyMetric::of(xs.iter().map(|&x| Duration::from_micros(x)).collect());
            prop_assert!(m.perc50 <= m.perc90 && m.perc90 <= m.perc99);
            prop_assert!(m.perc99 <= Duration::from_micros(hi));
            prop_assert!(m.perc50 >= Duration::from_micros(lo));
        }
    }
}
