//! Which waiting jobs have their first patch rendered ahead: at most
//! [`RENDERED_AHEAD`] at a time, a freed place going to the waiting job
//! due soonest.
//!
//! A render made ahead (and the update the server prepares from it) is
//! held until its job is due. Made for every job as it was planned, a
//! cluster running tens of thousands of pods held one for each of them,
//! for as long as the pod ran, and the helper thread spent its time on
//! the jobs planned last rather than the ones due first. The window keeps
//! a bounded number of renders, and gives a freed place to the waiting
//! job due soonest. A job holding a place keeps it until it runs, even
//! if jobs due sooner come later: taking places back would throw away
//! work done.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kubesim_runtime::ObjectKey;
use parking_lot::Mutex;
use tokio::time::Instant;

/// Renders made ahead (or being made) held at most, by default: well over
/// the jobs a simulation's busy thread runs while the helper makes one.
/// On the base member of the benchmark family at 100,000 jobs, 256 places
/// found the update prepared for as many finishing pods as 1,024 did
/// (98 %), and held 70 MiB less at the peak.
pub const RENDERED_AHEAD: usize = 256;

pub(super) struct Window {
    capacity: usize,
    held: Arc<AtomicUsize>,
    /// Waiting jobs without a render, by when they are due, with the node
    /// whose kubelet will act. An entry may be stale (the job since
    /// replaced or gone); whoever takes it checks.
    later: Mutex<BTreeMap<(Instant, ObjectKey), String>>,
}

/// A place in the window, given back when dropped (with the render that
/// holds it).
pub(super) struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Window {
    /// A window of `capacity` places.
    pub(super) fn new(capacity: usize) -> Window {
        Window {
            capacity,
            held: Arc::default(),
            later: Mutex::default(),
        }
    }

    /// A place, if the window has room.
    pub(super) fn place(&self) -> Option<Place> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.capacity).then_some(n + 1)
            })
            .ok()
            .map(|_| Place(self.held.clone()))
    }

    /// Leaves the job on `key`'s object due at `due` for a place to free.
    pub(super) fn defer(&self, due: Instant, key: ObjectKey, node: &str) {
        self.later.lock().insert((due, key), node.to_string());
    }

    /// The waiting job due soonest and a place for it, while the window
    /// has room.
    pub(super) fn next(&self) -> Option<(Instant, ObjectKey, String, Place)> {
        let mut later = self.later.lock();
        if later.is_empty() {
            return None;
        }
        let place = self.place()?;
        let ((due, key), node) = later.pop_first()?;
        Some((due, key, node, place))
    }

    /// Forgets every waiting job (the stages were replaced).
    pub(super) fn clear(&self) {
        self.later.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use kubesim_runtime::Clock;

    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    #[test]
    fn places_are_bounded_and_given_back_when_dropped() {
        let w = Window::new(3);
        let held: Vec<Place> = (0..5).map_while(|_| w.place()).collect();
        assert_eq!(held.len(), 3);
        assert!(w.place().is_none());
        drop(held);
        assert!(w.place().is_some());
    }

    #[test]
    fn the_job_due_soonest_is_next_once_a_place_frees() {
        let w = Window::new(2);
        let t0 = Clock::wall().instant();
        let mut held: Vec<Place> = (0..2).map_while(|_| w.place()).collect();
        w.defer(t0 + Duration::from_secs(30), key("late"), "n1");
        w.defer(t0 + Duration::from_secs(10), key("soon"), "n2");
        assert!(w.next().is_none(), "no room");
        held.pop();
        let (due, k, node, _place) = w.next().unwrap();
        assert_eq!(
            (due, k, node.as_str()),
            (t0 + Duration::from_secs(10), key("soon"), "n2")
        );
        assert!(w.next().is_none(), "full again");
    }
}
