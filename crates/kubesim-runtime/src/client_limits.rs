//! How a [`RemoteApi`](crate::RemoteApi) behaves as a guest of a shared
//! control plane, as client-go's rest client does: a token bucket on
//! requests (`--kube-api-qps`, `--kube-api-burst`; watches are not
//! counted), and a request answered 429, or 5xx with `Retry-After`, sent
//! again after the time the server asks for, a few times.

use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::Clock;

/// client-go's limit on retries of one request (`maxRetries`).
pub const DEFAULT_RETRIES: u32 = 10;
/// The wait when a server sends no `Retry-After` with its 429.
const DEFAULT_WAIT: Duration = Duration::from_secs(1);
/// The longest wait honoured, so that a bad header cannot park a client.
const MAX_WAIT: Duration = Duration::from_secs(60);

pub struct ClientLimits {
    clock: Clock,
    bucket: Option<Mutex<Bucket>>,
    qps: f64,
    burst: f64,
    pub retries: u32,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl ClientLimits {
    /// `qps` requests a second on average, `burst` at once; `qps` of 0
    /// means no limit.
    pub fn new(clock: Clock, qps: f64, burst: u32, retries: u32) -> ClientLimits {
        let burst = f64::from(burst.max(1));
        let bucket = (qps > 0.0).then(|| {
            Mutex::new(Bucket {
                tokens: burst,
                at: clock.instant(),
            })
        });
        ClientLimits {
            clock,
            bucket,
            qps,
            burst,
            retries,
        }
    }

    /// Waits for a token. Tokens are reserved in arrival order: a caller
    /// that finds the bucket empty takes a token ahead and sleeps until
    /// it is due, as golang.org/x/time/rate's `Wait` does.
    pub async fn wait(&self) {
        let Some(bucket) = &self.bucket else {
            return;
        };
        let due = {
            let mut b = bucket.lock();
            let now = self.clock.instant();
            let refill = now.saturating_duration_since(b.at).as_secs_f64() * self.qps;
            b.tokens = (b.tokens + refill).min(self.burst);
            b.at = now;
            b.tokens -= 1.0;
            if b.tokens >= 0.0 {
                return;
            }
            now + Duration::from_secs_f64(-b.tokens / self.qps)
        };
        self.clock.sleep_until(due).await;
    }

    /// How long to wait before sending again a request answered `code`
    /// with `retry_after` seconds, on its `attempt`-th retry; None when it
    /// is not to be retried.
    pub fn retry_wait(
        &self,
        code: u16,
        retry_after: Option<u32>,
        attempt: u32,
    ) -> Option<Duration> {
        if attempt > self.retries {
            return None;
        }
        let wait = match (code, retry_after) {
            (429, None) => DEFAULT_WAIT,
            (429 | 500..=599, Some(s)) => Duration::from_secs(u64::from(s)),
            _ => return None,
        };
        Some(wait.min(MAX_WAIT))
    }

    pub async fn sleep(&self, d: Duration) {
        self.clock.sleep(d).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_bucket_lets_a_burst_through_then_paces() {
        let clock = Clock::wall();
        let limits = ClientLimits::new(clock.clone(), 10.0, 5, DEFAULT_RETRIES);
        let start = clock.instant();
        for _ in 0..5 {
            limits.wait().await;
        }
        assert_eq!(
            (clock.instant() - start),
            Duration::ZERO,
            "the burst waits for nothing"
        );
        for _ in 0..10 {
            limits.wait().await;
        }
        // Ten more at 10 a second: one second.
        let took = (clock.instant() - start).as_secs_f64();
        assert!((0.99..1.01).contains(&took), "{took}");
    }

    #[tokio::test(start_paused = true)]
    async fn no_limit_with_zero_qps() {
        let clock = Clock::wall();
        let limits = ClientLimits::new(clock.clone(), 0.0, 1, 0);
        let start = clock.instant();
        for _ in 0..1000 {
            limits.wait().await;
        }
        assert_eq!((clock.instant() - start), Duration::ZERO);
    }

    #[test]
    fn which_answers_are_retried_and_after_how_long() {
        let l = ClientLimits::new(Clock::wall(), 0.0, 1, 2);
        assert_eq!(l.retry_wait(429, Some(3), 1), Some(Duration::from_secs(3)));
        assert_eq!(l.retry_wait(429, None, 1), Some(Duration::from_secs(1)));
        assert_eq!(l.retry_wait(503, Some(2), 2), Some(Duration::from_secs(2)));
        assert_eq!(
            l.retry_wait(429, Some(3600), 1),
            Some(Duration::from_secs(60))
        );
        assert_eq!(l.retry_wait(503, None, 1), None, "5xx without Retry-After");
        assert_eq!(l.retry_wait(409, Some(1), 1), None);
        assert_eq!(l.retry_wait(429, Some(1), 3), None, "past the retries");
    }
}
