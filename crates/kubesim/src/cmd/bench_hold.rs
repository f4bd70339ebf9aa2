//! The hold phase of `kubesim bench bringup`: the cluster left idle
//! (heartbeats only) while its CPU, RSS and stored objects are sampled at
//! a fixed interval, so that a warm-up that levels off can be told apart
//! from steady growth.
//!
//! The hold starts once the stored objects have stopped changing: when
//! every pod is Running the emulator is still publishing their PodMetrics
//! (one object per pod, on a 15 s beat), which is bring-up, not steady
//! state.

use std::time::Duration;

use kubesim_runtime::Clock;

use super::bench::{connect, cpu_seconds, request, rss_kib};

/// One sample: seconds into the hold, RSS, CPU used since the previous
/// sample, and stored objects (all resources, and Events among them).
struct Sample {
    at: u64,
    rss_kib: u64,
    cpu_pct: f64,
    objects: u64,
    events: u64,
}

/// Polls every 5 s, up to `limit`, until the number of stored objects has
/// stayed the same for 30 s (two beats of the metrics publisher); prints
/// how long that took.
pub(crate) async fn settle(clock: &Clock, port: u16, limit: Duration) {
    let start = clock.instant();
    let (mut last, _) = stored_objects(port).await;
    let mut since = clock.instant();
    loop {
        clock.sleep(Duration::from_secs(5)).await;
        let (now, _) = stored_objects(port).await;
        if now != last {
            (last, since) = (now, clock.instant());
        } else if since.elapsed() >= Duration::from_secs(30) {
            break;
        }
        if start.elapsed() >= limit {
            println!("settled:       not within {} s", limit.as_secs());
            return;
        }
    }
    println!(
        "settled:       {last} objects stored, unchanged for 30 s, after {:.0} s",
        start.elapsed().as_secs_f64()
    );
}

/// Holds for `secs` seconds, sampling every minute (or every tenth of a
/// shorter hold), and prints the samples and a summary.
pub(crate) async fn hold(clock: &Clock, pid: u32, port: u16, secs: u64, label: &str) {
    let step = if secs >= 600 { 60 } else { (secs / 10).max(1) };
    let proc = pid.to_string();
    let start = clock.instant();
    let cpu_start = cpu_seconds(&proc);
    let (objects, events) = stored_objects(port).await;
    let mut samples = vec![Sample {
        at: 0,
        rss_kib: rss_kib(pid),
        cpu_pct: 0.0,
        objects,
        events,
    }];
    let mut cpu_prev = cpu_start;
    let mut at = 0;
    while at < secs {
        let next = (at + step).min(secs);
        clock.sleep_until(start + Duration::from_secs(next)).await;
        let cpu = cpu_seconds(&proc);
        let (objects, events) = stored_objects(port).await;
        samples.push(Sample {
            at: next,
            rss_kib: rss_kib(pid),
            cpu_pct: 100.0 * (cpu - cpu_prev) / (next - at) as f64,
            objects,
            events,
        });
        cpu_prev = cpu;
        at = next;
    }
    let cpu_total = 100.0 * (cpu_seconds(&proc) - cpu_start) / secs.max(1) as f64;
    println!("hold samples:  t (s)  RSS (MiB)  CPU (% of a core)  stored objects  events");
    for s in &samples {
        println!(
            "             {:>6}  {:>9}  {:>17.1}  {:>14}  {:>6}",
            s.at,
            s.rss_kib / 1024,
            s.cpu_pct,
            s.objects,
            s.events
        );
    }
    let first = samples.first().map_or(0, |s| s.rss_kib);
    let last = samples.last().map_or(0, |s| s.rss_kib);
    // The second half shows whether growth continues once the history,
    // caches and allocator have filled: its slope is a least-squares fit.
    let half = &samples[samples.len() / 2..];
    println!(
        "{label}, for {secs} s: CPU {cpu_total:.1} % of one core, RSS {} -> {} MiB ({:+.1} %); second half {} -> {} MiB, slope {:+.2} MiB/min",
        first / 1024,
        last / 1024,
        100.0 * (last as f64 - first as f64) / first.max(1) as f64,
        half.first().map_or(0, |s| s.rss_kib) / 1024,
        last / 1024,
        slope_mib_per_min(half)
    );
}

/// The least-squares slope of RSS over time, in MiB per minute.
fn slope_mib_per_min(samples: &[Sample]) -> f64 {
    let n = samples.len() as f64;
    if samples.len() < 2 {
        return 0.0;
    }
    let mean_t = samples.iter().map(|s| s.at as f64).sum::<f64>() / n;
    let mean_r = samples.iter().map(|s| s.rss_kib as f64).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for s in samples {
        let dt = s.at as f64 - mean_t;
        num += dt * (s.rss_kib as f64 - mean_r);
        den += dt * dt;
    }
    if den == 0.0 {
        return 0.0;
    }
    num / den * 60.0 / 1024.0
}

/// Stored objects from the server's `apiserver_storage_objects` gauges:
/// the total and the Events among them (0, 0 if unavailable).
async fn stored_objects(port: u16) -> (u64, u64) {
    let Ok(mut c) = connect(port).await else {
        return (0, 0);
    };
    let Ok((200, body)) = request(&mut c, "GET", "/metrics", None).await else {
        return (0, 0);
    };
    let (mut total, mut events) = (0, 0);
    for line in String::from_utf8_lossy(&body).lines() {
        let Some(rest) = line.strip_prefix("apiserver_storage_objects{resource=\"") else {
            continue;
        };
        let Some((resource, value)) = rest.split_once("\"} ") else {
            continue;
        };
        let n: u64 = value.trim().parse().unwrap_or(0);
        total += n;
        if resource == "events" {
            events += n;
        }
    }
    (total, events)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: u64, rss_mib: u64) -> Sample {
        Sample {
            at,
            rss_kib: rss_mib * 1024,
            cpu_pct: 0.0,
            objects: 0,
            events: 0,
        }
    }

    #[test]
    fn slope_is_per_minute() {
        let rising: Vec<Sample> = (0..5).map(|i| sample(i * 60, 100 + 3 * i)).collect();
        assert!((slope_mib_per_min(&rising) - 3.0).abs() < 1e-9);
        let flat: Vec<Sample> = (0..5).map(|i| sample(i * 60, 100)).collect();
        assert_eq!(slope_mib_per_min(&flat), 0.0);
        assert_eq!(slope_mib_per_min(&rising[..1]), 0.0);
    }
}
