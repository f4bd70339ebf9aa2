//! Rates are checked on the simulated clock: the times actions start are
//! exact, whatever the machine is doing.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use kubesim_runtime::{Clock, Rng};
use parking_lot::Mutex;

use super::*;

fn clock() -> Clock {
    Clock::simulated("2026-01-01T00:00:00Z".parse().unwrap())
}

/// Runs `n` actions under `load`; returns each action's start offset (ms)
/// in start order and the time until all had finished.
async fn starts(load: Load, n: usize, work: Duration) -> (Vec<u64>, u64) {
    let c = clock();
    let t0 = c.instant();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let actions: Vec<Action> = (0..n)
        .map(|_| {
            let (seen, c) = (seen.clone(), c.clone());
            async move {
                seen.lock()
                    .push(c.instant().duration_since(t0).as_millis() as u64);
                c.sleep(work).await;
            }
            .boxed()
        })
        .collect();
    TuningSet::new(load)
        .execute(actions, &c, &Rng::seeded(3), &|| {})
        .await;
    let total = c.instant().duration_since(t0).as_millis() as u64;
    let v = seen.lock().clone();
    (v, total)
}

#[tokio::test(start_paused = true)]
async fn qps_load_starts_one_action_per_period_and_waits_for_all() {
    let (s, total) = starts(Load::Qps { qps: 4.0 }, 5, Duration::from_secs(1)).await;
    assert_eq!(s, [0, 250, 500, 750, 1000]);
    assert_eq!(total, 2000);
}

#[tokio::test(start_paused = true)]
async fn stepped_load_starts_bursts() {
    let load = Load::Stepped {
        burst_size: 2,
        step_delay: Duration::from_secs(3),
    };
    let (s, _) = starts(load, 5, Duration::ZERO).await;
    assert_eq!(s, [0, 0, 3000, 3000, 6000]);
}

#[tokio::test(start_paused = true)]
async fn time_limited_load_spreads_actions_over_the_limit() {
    let load = Load::TimeLimited {
        time_limit: Duration::from_secs(10),
    };
    let (s, _) = starts(load, 4, Duration::ZERO).await;
    assert_eq!(s, [0, 2500, 5000, 7500]);
}

#[tokio::test(start_paused = true)]
async fn randomized_time_limited_load_starts_everything_within_the_limit() {
    let load = Load::RandomizedTimeLimited {
        time_limit: Duration::from_secs(10),
    };
    let (s, _) = starts(load, 200, Duration::ZERO).await;
    assert_eq!(s.len(), 200);
    assert!(s.iter().all(|&t| t < 10_000));
    assert!(s.windows(2).all(|w| w[0] <= w[1]));
    // Spread, not bunched: both halves of the window are used.
    assert!(s.iter().filter(|&&t| t < 5000).count() > 60);
    assert!(s.iter().filter(|&&t| t >= 5000).count() > 60);
}

#[tokio::test(start_paused = true)]
async fn randomized_load_averages_its_rate() {
    let (s, _) = starts(Load::Randomized { average_qps: 10.0 }, 1001, Duration::ZERO).await;
    let span = *s.last().unwrap() as f64 / 1000.0;
    // 1000 gaps of mean 100 ms: the total is within a few percent of 100 s.
    assert!((90.0..110.0).contains(&span), "{span}");
}

#[tokio::test(start_paused = true)]
async fn poisson_load_averages_its_rate() {
    let load = Load::Poisson {
        expected_actions_per_second: 20.0,
    };
    let (s, _) = starts(load, 2001, Duration::ZERO).await;
    let span = *s.last().unwrap() as f64 / 1000.0;
    assert!((90.0..110.0).contains(&span), "{span}");
}

#[tokio::test(start_paused = true)]
async fn parallelism_limited_load_runs_at_most_limit_at_once() {
    let load = Load::ParallelismLimited {
        parallelism_limit: 3,
    };
    let (s, total) = starts(load, 7, Duration::from_secs(1)).await;
    assert_eq!(s, [0, 0, 0, 1000, 1000, 1000, 2000]);
    assert_eq!(total, 3000);
}

#[tokio::test(start_paused = true)]
async fn global_qps_load_allows_a_burst_then_the_rate() {
    let load = Load::GlobalQps { qps: 2.0, burst: 3 };
    let (s, _) = starts(load, 6, Duration::ZERO).await;
    assert_eq!(s, [0, 0, 0, 500, 1000, 1500]);
}

#[tokio::test(start_paused = true)]
async fn global_qps_load_is_shared_by_concurrent_phases() {
    let c = clock();
    let t0 = c.instant();
    let set = Arc::new(TuningSet::new(Load::GlobalQps {
        qps: 10.0,
        burst: 1,
    }));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let phase = |set: Arc<TuningSet>| {
        let (seen, c) = (seen.clone(), c.clone());
        async move {
            let actions: Vec<Action> = (0..5)
                .map(|_| {
                    let (seen, c) = (seen.clone(), c.clone());
                    async move { seen.lock().push(c.instant().duration_since(t0).as_millis()) }
                        .boxed()
                })
                .collect();
            set.execute(actions, &c, &Rng::seeded(1), &|| {}).await;
        }
    };
    futures::join!(phase(set.clone()), phase(set.clone()));
    let mut s = seen.lock().clone();
    s.sort();
    // Ten actions from two phases share 10 qps: the last starts at 900 ms.
    assert_eq!(s.len(), 10);
    assert_eq!(*s.last().unwrap(), 900);
}

#[tokio::test(start_paused = true)]
async fn a_pace_the_cluster_cannot_follow_is_bounded_in_flight() {
    // 1000 actions/s of 10 s each would have 10,000 running at once;
    // at most MAX_IN_FLIGHT run, the others start as earlier ones end.
    let n = MAX_IN_FLIGHT + 50;
    let (s, total) = starts(Load::Qps { qps: 1000.0 }, n, Duration::from_secs(10)).await;
    assert_eq!(s.len(), n);
    assert_eq!(s[MAX_IN_FLIGHT - 1], (MAX_IN_FLIGHT as u64 - 1));
    // The first one over the bound waits for the first to finish.
    assert_eq!(s[MAX_IN_FLIGHT], 10_000);
    assert_eq!(total, 20_049);
}
