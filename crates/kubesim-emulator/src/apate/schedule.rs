//! When a configuration's tasks fire: at the scenario start plus their
//! timestamp, or, for `relative_to_pod`, at the pod's start plus it.

use jiff::{SignedDuration, Timestamp};

use super::types::Task;
use kubesim_gocompat::duration;

/// The tasks due at `now`, in firing order, and when the next one is due.
pub fn due<S>(
    tasks: &[Task<S>],
    scenario_start: Option<Timestamp>,
    pod_start: Option<Timestamp>,
    now: Timestamp,
) -> (Vec<&Task<S>>, Option<Timestamp>) {
    let mut timed: Vec<(Timestamp, usize)> = tasks
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let base = if t.relative_to_pod {
                pod_start
            } else {
                scenario_start
            }?;
            let offset = duration::parse(&t.timestamp).ok()?;
            let at = base.checked_add(SignedDuration::from_nanos(offset)).ok()?;
            Some((at, i))
        })
        .collect();
    // Same instant: file order, as Apate's queue pops equal keys.
    timed.sort();
    let fired = timed
        .iter()
        .filter(|(at, _)| *at <= now)
        .map(|(_, i)| &tasks[*i])
        .collect();
    let next = timed.iter().map(|(at, _)| *at).find(|at| *at > now);
    (fired, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(ts: &str, rel: bool, v: u8) -> Task<u8> {
        Task {
            timestamp: ts.into(),
            relative_to_pod: rel,
            state: v,
        }
    }

    #[test]
    fn fires_in_time_order() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let tasks = [
            task("5s", false, 2),
            task("1s", false, 1),
            task("2s", true, 3),
        ];
        let at = |s: i64| t0.checked_add(SignedDuration::from_secs(s)).unwrap();
        // No scenario yet: nothing fires, nothing is due.
        let (fired, next) = due(&tasks, None, None, at(10));
        assert!(fired.is_empty() && next.is_none());
        let states = |f: Vec<&Task<u8>>| f.iter().map(|t| t.state).collect::<Vec<_>>();
        let (fired, next) = due(&tasks, Some(t0), None, at(3));
        assert_eq!(states(fired), [1]);
        assert_eq!(next, Some(at(5)));
        // The pod started at +4 s: its relative task is due at +6 s.
        let (fired, next) = due(&tasks, Some(t0), Some(at(4)), at(5));
        assert_eq!(states(fired), [1, 2]);
        assert_eq!(next, Some(at(6)));
        let (fired, next) = due(&tasks, Some(t0), Some(at(4)), at(6));
        assert_eq!(states(fired), [1, 2, 3]);
        assert_eq!(next, None);
    }
}
