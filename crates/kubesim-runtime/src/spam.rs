//! The event spam filter of upstream's recorder: every (source, involved
//! object) pair has a token bucket of 25 events refilled at one event per
//! five minutes, and an event that finds its bucket empty is dropped. A pod
//! that stays unschedulable for hours thus costs a few dozen event writes,
//! not one per scheduling attempt.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

/// Events an object may get at once.
pub const BURST: f64 = 25.0;
/// One more allowed per this long.
pub const REFILL: Duration = Duration::from_secs(300);
/// Objects remembered; the oldest is forgotten first (upstream's LRU holds
/// 4096 as well).
const REMEMBERED: usize = 4096;

#[derive(Default)]
pub struct SpamFilter {
    buckets: BTreeMap<String, (f64, Instant)>,
    order: VecDeque<String>,
}

impl SpamFilter {
    /// Whether an event about `key` may be written at `now`; takes a token
    /// when it may.
    pub fn allow(&mut self, key: &str, now: Instant) -> bool {
        if !self.buckets.contains_key(key) {
            self.order.push_back(key.to_string());
            while self.order.len() > REMEMBERED {
                if let Some(old) = self.order.pop_front() {
                    self.buckets.remove(&old);
                }
            }
        }
        let (tokens, last) = self.buckets.entry(key.to_string()).or_insert((BURST, now));
        let refilled = now.saturating_duration_since(*last).as_secs_f64() / REFILL.as_secs_f64();
        *tokens = (*tokens + refilled).min(BURST);
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Clock;

    #[tokio::test(start_paused = true)]
    async fn burst_then_one_per_refill_period_per_object() {
        let clock = Clock::simulated(jiff::Timestamp::UNIX_EPOCH);
        let mut f = SpamFilter::default();
        let t0 = clock.instant();
        let allowed = (0..40).filter(|_| f.allow("pod-a", t0)).count();
        assert_eq!(allowed, 25);
        // Another object has its own bucket.
        assert!(f.allow("pod-b", t0));
        // Half a period later: still nothing; a full period: one more.
        assert!(!f.allow("pod-a", t0 + REFILL / 2));
        assert!(f.allow("pod-a", t0 + REFILL));
        assert!(!f.allow("pod-a", t0 + REFILL));
        // A long quiet spell refills up to the burst, no further.
        let later = t0 + REFILL * 100;
        assert_eq!((0..40).filter(|_| f.allow("pod-a", later)).count(), 25);
    }
}
