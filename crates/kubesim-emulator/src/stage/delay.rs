//! How long an object waits before its stage's steps run (kwok's rules:
//! the jitter is an upper bound, not an addend).

use std::time::Duration;

use jiff::Timestamp;
use kubesim_core::meta;
use kubesim_runtime::Rng;
use serde_json::Value;

use super::expr::Expression;
use super::jq::Input;
use super::spec::Delay;
use kubesim_gocompat::duration;

/// A `*From` program's result in milliseconds: an RFC 3339 time counts
/// from `now` (negative when past), a string a Go duration. None when it
/// yields nothing usable.
fn eval_ms(e: &Expression, input: &Input, now: Timestamp) -> Option<i64> {
    match e.first(input)? {
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => {
            if let Some(t) = meta::parse_time(&s) {
                return Some(t.duration_since(now).as_millis() as i64);
            }
            duration::parse(&s).ok().map(|ns| ns / 1_000_000)
        }
        _ => None,
    }
}

impl Delay {
    /// The delay for this object: the duration, or with a jitter J above
    /// it a uniform draw in [duration, J); a jitter at or below the
    /// duration is the delay itself. Negative results are no delay.
    pub fn compute(&self, input: &Input, now: Timestamp, rng: &Rng) -> Duration {
        let ms = match self.bounds(input, now) {
            (d, None) => d,
            (d, Some(j)) => d + rng.below((j - d) as u64) as i64,
        };
        Duration::from_millis(ms.max(0) as u64)
    }

    /// The delay in milliseconds, or the range [low, high) it is drawn
    /// from.
    pub fn bounds(&self, input: &Input, now: Timestamp) -> (i64, Option<i64>) {
        let d = self
            .duration_from
            .as_ref()
            .and_then(|j| eval_ms(j, input, now))
            .unwrap_or(self.duration_ms);
        let jitter = self
            .jitter_from
            .as_ref()
            .and_then(|j| eval_ms(j, input, now))
            .or(self.jitter_ms);
        // A time already past is no delay at all.
        let (d, jitter) = (d.max(0), jitter.map(|j| j.max(0)));
        match jitter {
            None => (d, None),
            Some(j) if j <= d => (j, None),
            Some(j) => (d, Some(j)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delay(spec: Value) -> Delay {
        let stage = super::super::spec::Stage::from_object(&json!({
            "metadata": {"name": "s"},
            "spec": {"resourceRef": {"kind": "Pod"}, "selector": {}, "delay": spec}}))
        .unwrap();
        stage.delay
    }

    #[test]
    fn duration_jitter_and_from_forms() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let rng = Rng::seeded(1);
        let obj = json!({"metadata": {"annotations": {"d": "2s", "t": "2026-01-01T00:00:30Z", "e": ""},
            "deletionTimestamp": "2026-01-01T00:00:10Z"}});
        let input = Input::new(&obj);
        let ms = |d: &Delay| d.compute(&input, now, &rng).as_millis() as i64;
        assert_eq!(ms(&delay(json!({"durationMilliseconds": 1000}))), 1000);
        // Jitter below the duration replaces it.
        assert_eq!(
            ms(&delay(
                json!({"durationMilliseconds": 1000, "jitterDurationMilliseconds": 400})
            )),
            400
        );
        // Jitter above: uniform in [1000, 5000).
        let d = delay(json!({"durationMilliseconds": 1000, "jitterDurationMilliseconds": 5000}));
        let draws: Vec<i64> = (0..500).map(|_| ms(&d)).collect();
        assert!(draws.iter().all(|v| (1000..5000).contains(v)));
        assert!(draws.iter().any(|v| *v < 2000) && draws.iter().any(|v| *v > 4000));
        // A Go duration, an RFC 3339 time (from now), or fall back.
        let from = |e: &str| {
            delay(json!({"durationMilliseconds": 7, "durationFrom": {"jq": {"expression": e}}}))
        };
        assert_eq!(ms(&from(".metadata.annotations.d")), 2000);
        assert_eq!(ms(&from(".metadata.annotations.t")), 30_000);
        assert_eq!(ms(&from(".metadata.annotations.missing")), 7);
        assert_eq!(ms(&from(".metadata.annotations.e")), 7);
        // kwok's pod-delete: between 1 s and the deletion deadline.
        let d = delay(json!({"durationMilliseconds": 1000,
            "jitterDurationFrom": {"jq": {"expression": ".metadata.deletionTimestamp"}}}));
        assert!((0..200)
            .map(|_| ms(&d))
            .all(|v| (1000..10_000).contains(&v)));
        // A time in the past is no delay.
        let past =
            delay(json!({"durationFrom": {"jq": {"expression": "\"2025-01-01T00:00:00Z\""}}}));
        assert_eq!(ms(&past), 0);
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    proptest! {
        /// Whatever the duration and jitter, the delay lies in kwok's
        /// range: the jitter itself when it is not above the duration,
        /// else [duration, jitter).
        #[test]
        fn delay_within_kwoks_range(d in 0i64..1_000_000, j in proptest::option::of(0i64..2_000_000), seed in any::<u64>()) {
            let mut spec = json!({"durationMilliseconds": d});
            if let Some(j) = j {
                spec["jitterDurationMilliseconds"] = json!(j);
            }
            let stage = super::super::spec::Stage::from_object(&json!({
                "metadata": {"name": "s"},
                "spec": {"resourceRef": {"kind": "Pod"}, "selector": {}, "delay": spec}})).unwrap();
            let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
            let obj = json!({});
            let got = stage.delay.compute(&Input::new(&obj), now, &kubesim_runtime::Rng::seeded(seed)).as_millis() as i64;
            match j {
                None => prop_assert_eq!(got, d),
                Some(j) if j <= d => prop_assert_eq!(got, j),
                Some(j) => prop_assert!(got >= d && got < j, "{} not in [{}, {})", got, d, j),
            }
        }
    }
}
