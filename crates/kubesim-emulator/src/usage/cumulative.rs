//! Usage summed over emulated time, for `CumulativeUsage()` and the
//! `*_cpu_usage_seconds_total` counters: each reading adds the current
//! rate times the time since the previous reading, so a counter grows
//! with the clock (wall or simulated) and never goes back.

use std::collections::BTreeMap;

use super::cel::Resource;

/// What a total is kept for: a container (`container` set), a pod, or a
/// node (empty namespace, `uid` empty).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub namespace: String,
    pub name: String,
    /// Tells a pod from a later one of the same name.
    pub uid: String,
    pub container: Option<String>,
    pub resource: Resource,
}

#[derive(Debug, Clone, Copy)]
struct Total {
    /// Unix seconds of the last reading.
    at: f64,
    sum: f64,
}

#[derive(Debug, Default)]
pub struct Totals {
    totals: BTreeMap<Key, Total>,
}

impl Totals {
    /// The total at `now` for a rate of `rate` since the last reading. A
    /// first reading starts from `initial` at `since` (clamped to `now`):
    /// a pod's containers count from its start time.
    pub fn read(&mut self, key: Key, now: f64, rate: f64, since: f64, initial: f64) -> f64 {
        let t = self.totals.entry(key).or_insert(Total {
            at: since.min(now),
            sum: initial,
        });
        if now > t.at {
            t.sum += rate.max(0.0) * (now - t.at);
            t.at = now;
        }
        t.sum
    }

    /// Forgets totals no longer wanted (pods gone, nodes deleted).
    pub fn retain(&mut self, keep: impl Fn(&Key) -> bool) {
        self.totals.retain(|k, _| keep(k));
    }

    pub fn contains(&self, key: &Key) -> bool {
        self.totals.contains_key(key)
    }

    pub fn len(&self) -> usize {
        self.totals.len()
    }

    pub fn is_empty(&self) -> bool {
        self.totals.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key {
            namespace: "d".into(),
            name: "p".into(),
            uid: "u".into(),
            container: None,
            resource: Resource::Cpu,
        }
    }

    #[test]
    fn grows_with_time_at_the_current_rate() {
        let mut t = Totals::default();
        // Started 10 s before the first reading, at half a core.
        assert_eq!(t.read(key(), 110.0, 0.5, 100.0, 0.0), 5.0);
        assert_eq!(t.read(key(), 120.0, 1.0, 0.0, 0.0), 15.0);
        // Time standing still, or a negative rate, adds nothing.
        assert_eq!(t.read(key(), 120.0, 9.0, 0.0, 0.0), 15.0);
        assert_eq!(t.read(key(), 130.0, -1.0, 0.0, 0.0), 15.0);
        t.retain(|_| false);
        assert_eq!(t.len(), 0);
    }
}
