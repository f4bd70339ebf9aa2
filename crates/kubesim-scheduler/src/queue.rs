//! The scheduling queue, as kube-scheduler's: pods waiting to be tried
//! (activeQ, highest priority first, then longest waiting), pods waiting
//! out a backoff after a failed attempt (backoffQ), and pods no node could
//! take (unschedulable), which wait for a cluster event that may help them
//! or for a periodic flush.
//!
//! [`Queue`] is the plain data structure with time passed in, so it can be
//! tested as a table; [`SchedulingQueue`] adds the lock, the wake-ups and
//! the [`Clock`].

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kubesim_runtime::{Clock, KeyedMap, ObjectKey};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::framework::PodInfo;

/// Upstream's defaults: backoff starts at 1 s, doubles per attempt up to
/// 10 s; unschedulable pods are retried at the latest after 5 minutes.
pub const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
pub const MAX_UNSCHEDULABLE: Duration = Duration::from_secs(300);

/// Plugins whose failures a newly placed or relabelled pod can cure.
const POD_SENSITIVE: [&str; 2] = ["InterPodAffinity", "PodTopologySpread"];

/// What happened in the cluster, for deciding which waiting pods to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterEvent {
    NodeAdd,
    NodeUpdate,
    /// A bound pod was deleted (or finished): resources were freed.
    AssignedPodDelete,
    /// A pod was bound or a bound pod's labels changed.
    AssignedPodChange,
    /// Namespace labels or a PodDisruptionBudget changed.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Active,
    Backoff,
    Unschedulable,
    /// Being scheduled right now.
    InFlight,
    /// Has `spec.schedulingGates`: not tried until they are removed.
    Gated,
}

struct Entry {
    info: Arc<PodInfo>,
    attempts: u32,
    /// When the pod last entered the queue or last failed: orders pods of
    /// equal priority and starts the backoff.
    timestamp: Instant,
    /// When the pod first entered the queue: the start of its scheduling
    /// SLI, however many attempts it takes.
    queued: Instant,
    seq: u64,
    place: Place,
    /// The plugins that rejected the pod in its last attempt.
    plugins: Rejecting,
}

/// A pod handed to the scheduling loop.
#[derive(Clone)]
pub struct QueuedPod {
    pub info: Arc<PodInfo>,
    /// Attempts so far, this one included.
    pub attempts: u32,
    /// The scheduling cycle this attempt belongs to.
    pub cycle: u64,
    /// When the pod first entered the queue.
    pub queued: Instant,
}

type ActiveKey = (Reverse<i32>, Instant, u64);

/// The plugins that rejected a pod in its last attempt, which decide the
/// events that may help it; shared by the pods that failed alike, as a
/// replayed verdict hands every retry the same set.
pub type Rejecting = Arc<BTreeSet<&'static str>>;

/// The empty [`Rejecting`] of a pod not yet tried, one for all of them.
fn untried() -> Rejecting {
    static NONE: std::sync::LazyLock<Rejecting> = std::sync::LazyLock::new(Rejecting::default);
    NONE.clone()
}

/// Nominated pods by node, then by key.
pub type Nominated = BTreeMap<String, BTreeMap<ObjectKey, Arc<PodInfo>>>;

pub struct Queue {
    /// Hashed: looked up several times per attempt and per pod an event
    /// moves, with a backlog of tens of thousands at saturation; the only
    /// walk over it ([`take_where`](Self::take_where)) sorts what it takes.
    pods: KeyedMap<Entry>,
    /// The three waiting places hold the pod itself, found by its
    /// position alone (the sequence number is unique): a pod moves
    /// between them on every attempt and every event that may help it,
    /// and a key of two strings would be copied at each move.
    active: BTreeMap<ActiveKey, Arc<PodInfo>>,
    backoff: BTreeMap<(Instant, u64), Arc<PodInfo>>,
    unschedulable: BTreeMap<(Instant, u64), Arc<PodInfo>>,
    seq: u64,
    cycle: u64,
    /// The cycle during which the last cluster event arrived: a pod that
    /// failed in a cycle that saw an event retries after its backoff
    /// rather than waiting for another event.
    move_request_cycle: u64,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
    nominated: Arc<Nominated>,
    nominated_of: BTreeMap<ObjectKey, String>,
    /// Pods by PodGroup, kept only when a profile enables Coscheduling
    /// ([`track_groups`](Self::track_groups)), so the default profile pays
    /// nothing for it.
    groups: Option<BTreeMap<ObjectKey, BTreeSet<ObjectKey>>>,
}

impl Default for Queue {
    fn default() -> Self {
        Self::new(INITIAL_BACKOFF, MAX_BACKOFF)
    }
}

fn gated(spec: &Value) -> bool {
    spec.get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
}

impl Queue {
    pub fn new(initial_backoff: Duration, max_backoff: Duration) -> Self {
        Queue {
            pods: KeyedMap::new(),
            active: BTreeMap::new(),
            backoff: BTreeMap::new(),
            unschedulable: BTreeMap::new(),
            seq: 0,
            cycle: 0,
            move_request_cycle: 0,
            initial_backoff,
            max_backoff,
            nominated: Arc::default(),
            nominated_of: BTreeMap::new(),
            groups: None,
        }
    }

    /// Keeps the pods of each PodGroup, for gang scheduling.
    pub fn track_groups(&mut self) {
        self.groups.get_or_insert_with(BTreeMap::new);
    }

    fn index_group(&mut self, info: &PodInfo, add: bool) {
        let Some(groups) = self.groups.as_mut() else {
            return;
        };
        let Some(gk) = crate::coscheduling::group_key(info) else {
            return;
        };
        if add {
            groups.entry(gk).or_default().insert(info.key.clone());
        } else if let Some(m) = groups.get_mut(&gk) {
            m.remove(&info.key);
            if m.is_empty() {
                groups.remove(&gk);
            }
        }
    }

    fn group_members(&self, group: &ObjectKey) -> Vec<ObjectKey> {
        self.groups
            .as_ref()
            .and_then(|g| g.get(group))
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Pods of `group` in the queue that can be tried (not gated), the
    /// one being scheduled included.
    pub fn group_pending(&self, group: &ObjectKey) -> usize {
        self.group_members(group)
            .iter()
            .filter(|k| self.pods.get(*k).is_some_and(|e| e.place != Place::Gated))
            .count()
    }

    /// Takes every waiting pod of `group` but `except` out of the queue for
    /// this cycle, in name order, as [`pop`](Self::pop) would.
    pub fn take_group(&mut self, group: &ObjectKey, except: &ObjectKey) -> Vec<QueuedPod> {
        let mut out = Vec::new();
        for key in self.group_members(group) {
            let waiting = self.pods.get(&key).is_some_and(|e| {
                matches!(
                    e.place,
                    Place::Active | Place::Backoff | Place::Unschedulable
                )
            });
            if key == *except || !waiting {
                continue;
            }
            out.extend(self.take_for_cycle(&key));
        }
        out
    }

    /// Takes the waiting pod `key` out of its place for an attempt in this
    /// cycle.
    fn take_for_cycle(&mut self, key: &ObjectKey) -> Option<QueuedPod> {
        self.unlink(key);
        let cycle = self.cycle;
        let e = self.pods.get_mut(key)?;
        e.place = Place::InFlight;
        e.attempts += 1;
        Some(QueuedPod {
            info: e.info.clone(),
            attempts: e.attempts,
            cycle,
            queued: e.queued,
        })
    }

    /// Takes every waiting pod (not gated) for which `pick` holds out of
    /// the queue for this cycle, in key order, as [`pop`](Self::pop)
    /// would: a batch policy plans them all at once.
    pub fn take_where(&mut self, pick: impl Fn(&PodInfo) -> bool) -> Vec<QueuedPod> {
        let mut keys: Vec<ObjectKey> = self
            .pods
            .iter()
            .filter(|(_, e)| {
                matches!(
                    e.place,
                    Place::Active | Place::Backoff | Place::Unschedulable
                ) && pick(&e.info)
            })
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort_unstable();
        let mut out = Vec::new();
        for key in keys {
            out.extend(self.take_for_cycle(&key));
        }
        out
    }

    /// Retries the unschedulable pods of `group` (its PodGroup changed).
    pub fn activate_group(&mut self, group: &ObjectKey, now: Instant) {
        for key in self.group_members(group) {
            if self.place(&key) == Some(Place::Unschedulable) {
                self.unlink(&key);
                self.activate(&key, now);
            }
        }
    }

    /// Backoff after `attempts` failed attempts: the initial backoff,
    /// doubled for every attempt after the first, capped at the maximum.
    pub fn backoff_duration(&self, attempts: u32) -> Duration {
        let mut d = self.initial_backoff;
        for _ in 1..attempts {
            d = d.saturating_mul(2);
            if d >= self.max_backoff {
                return self.max_backoff;
            }
        }
        d.min(self.max_backoff)
    }

    pub fn place(&self, key: &ObjectKey) -> Option<Place> {
        self.pods.get(key).map(|e| e.place)
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    pub fn active_len(&self) -> usize {
        self.active.len()
    }

    /// Pods nominated to nodes by preemption, by node.
    pub fn nominated(&self) -> Arc<Nominated> {
        self.nominated.clone()
    }

    fn set_nominated(&mut self, info: &Arc<PodInfo>, node: &str) {
        let key = info.key.clone();
        let old = self.nominated_of.get(&key).cloned();
        if old.as_deref() == Some(node) && !node.is_empty() {
            if let Some(m) = Arc::make_mut(&mut self.nominated).get_mut(node) {
                m.insert(key, info.clone());
            }
            return;
        }
        if old.is_none() && node.is_empty() {
            return;
        }
        let map = Arc::make_mut(&mut self.nominated);
        if let Some(o) = old {
            if let Some(m) = map.get_mut(&o) {
                m.remove(&key);
                if m.is_empty() {
                    map.remove(&o);
                }
            }
            self.nominated_of.remove(&key);
        }
        if !node.is_empty() {
            map.entry(node.to_string())
                .or_default()
                .insert(key.clone(), info.clone());
            self.nominated_of.insert(key, node.to_string());
        }
    }

    /// Records that preemption nominated `key` to `node`.
    pub fn nominate(&mut self, key: &ObjectKey, node: &str) {
        if let Some(info) = self.pods.get(key).map(|e| e.info.clone()) {
            self.set_nominated(&info, node);
        }
    }

    fn unlink(&mut self, key: &ObjectKey) {
        let Some(e) = self.pods.get(key) else { return };
        let (place, ts, seq, prio) = (e.place, e.timestamp, e.seq, e.info.priority);
        match place {
            Place::Active => {
                self.active.remove(&(Reverse(prio), ts, seq));
            }
            Place::Backoff => {
                let at = ts + self.backoff_duration(e.attempts);
                self.backoff.remove(&(at, seq));
            }
            Place::Unschedulable => {
                self.unschedulable.remove(&(ts, seq));
            }
            Place::InFlight | Place::Gated => {}
        }
    }

    fn put(&mut self, key: &ObjectKey, place: Place) {
        self.seq += 1;
        let seq = self.seq;
        let backoff = {
            let Some(e) = self.pods.get(key) else { return };
            self.backoff_duration(e.attempts)
        };
        let Some(e) = self.pods.get_mut(key) else {
            return;
        };
        e.seq = seq;
        e.place = place;
        match place {
            Place::Active => {
                self.active
                    .insert((Reverse(e.info.priority), e.timestamp, seq), e.info.clone());
            }
            Place::Backoff => {
                self.backoff
                    .insert((e.timestamp + backoff, seq), e.info.clone());
            }
            Place::Unschedulable => {
                self.unschedulable
                    .insert((e.timestamp, seq), e.info.clone());
            }
            Place::InFlight | Place::Gated => {}
        }
    }

    /// Active, or backoff when the pod's backoff has not expired.
    fn activate(&mut self, key: &ObjectKey, now: Instant) {
        let Some(e) = self.pods.get(key) else { return };
        let place = if e.attempts > 0 && e.timestamp + self.backoff_duration(e.attempts) > now {
            Place::Backoff
        } else {
            Place::Active
        };
        self.put(key, place);
    }

    /// A pending pod appeared or changed.
    pub fn add_or_update(&mut self, info: Arc<PodInfo>, now: Instant) {
        let key = info.key.clone();
        let nominated = info.nominated_node().to_string();
        self.set_nominated(&info, &nominated);
        let is_gated = gated(&info.pod.spec);
        match self.pods.get_mut(&key) {
            None => {
                self.index_group(&info, true);
                self.pods.insert(
                    key.clone(),
                    Entry {
                        info,
                        attempts: 0,
                        timestamp: now,
                        queued: now,
                        seq: 0,
                        place: Place::Gated,
                        plugins: untried(),
                    },
                );
                if !is_gated {
                    self.put(&key, Place::Active);
                }
            }
            Some(e) => {
                let changed = e.info.pod.spec != info.pod.spec || e.info.labels != info.labels;
                let place = e.place;
                if self.groups.is_some() && e.info.labels != info.labels {
                    let old = e.info.clone();
                    self.index_group(&old, false);
                    self.index_group(&info, true);
                }
                let Some(e) = self.pods.get_mut(&key) else {
                    return;
                };
                if place == Place::InFlight {
                    e.info = info;
                    return;
                }
                self.unlink(&key);
                let Some(e) = self.pods.get_mut(&key) else {
                    return;
                };
                e.info = info;
                match place {
                    _ if is_gated => e.place = Place::Gated,
                    Place::Gated => {
                        e.timestamp = now;
                        self.put(&key, Place::Active);
                    }
                    // An update may make it schedulable: retry it.
                    Place::Unschedulable if changed => self.activate(&key, now),
                    other => self.put(&key, other),
                }
            }
        }
    }

    /// The pod was deleted or is no longer this scheduler's.
    pub fn delete(&mut self, key: &ObjectKey) {
        self.unlink(key);
        if let Some(e) = self.pods.remove(key) {
            self.index_group(&e.info, false);
            self.set_nominated(&e.info, "");
        }
    }

    /// Moves expired backoffs to active, and pods unschedulable for longer
    /// than [`MAX_UNSCHEDULABLE`] to active (or backoff).
    pub fn flush(&mut self, now: Instant) {
        while let Some(first) = self.backoff.first_entry() {
            if first.key().0 > now {
                break;
            }
            let info = first.remove();
            self.put(&info.key, Place::Active);
        }
        while let Some(first) = self.unschedulable.first_entry() {
            if first.key().0 + MAX_UNSCHEDULABLE > now {
                break;
            }
            let info = first.remove();
            self.activate(&info.key, now);
        }
    }

    /// When [`flush`](Self::flush) next has something to do.
    pub fn next_wakeup(&self) -> Option<Instant> {
        let b = self.backoff.first_key_value().map(|((at, _), _)| *at);
        let u = self
            .unschedulable
            .first_key_value()
            .map(|((since, _), _)| *since + MAX_UNSCHEDULABLE);
        match (b, u) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next pod to schedule, after flushing.
    pub fn pop(&mut self, now: Instant) -> Option<QueuedPod> {
        self.flush(now);
        let (_, info) = self.active.pop_first()?;
        self.cycle += 1;
        self.take_for_cycle(&info.key)
    }

    /// The pod was placed (assumed): the queue forgets it. A failed
    /// binding brings it back through [`requeue_backoff`](Self::requeue_backoff).
    pub fn done(&mut self, key: &ObjectKey) {
        if self
            .pods
            .get(key)
            .is_some_and(|e| e.place == Place::InFlight)
        {
            if let Some(e) = self.pods.remove(key) {
                self.index_group(&e.info, false);
                self.set_nominated(&e.info, "");
            }
        }
    }

    /// No node fits: the pod waits for a cluster event, or only for its
    /// backoff if an event arrived while it was being scheduled.
    pub fn requeue_unschedulable(
        &mut self,
        key: &ObjectKey,
        cycle: u64,
        plugins: Rejecting,
        now: Instant,
    ) {
        let move_cycle = self.move_request_cycle;
        let Some(e) = self.pods.get_mut(key) else {
            return;
        };
        if e.place != Place::InFlight {
            return;
        }
        e.timestamp = now;
        e.plugins = plugins;
        if move_cycle >= cycle {
            self.put(key, Place::Backoff);
        } else {
            self.put(key, Place::Unschedulable);
        }
    }

    /// An error (or a failed binding): retry after the backoff. `info`
    /// re-adds a pod the queue had already let go of.
    pub fn requeue_backoff(&mut self, info: Arc<PodInfo>, attempts: u32, now: Instant) {
        let key = info.key.clone();
        self.unlink(&key);
        if !self.pods.contains_key(&key) {
            self.index_group(&info, true);
        }
        let e = self.pods.entry(key.clone()).or_insert(Entry {
            info: info.clone(),
            attempts,
            timestamp: now,
            queued: now,
            seq: 0,
            place: Place::InFlight,
            plugins: untried(),
        });
        e.timestamp = now;
        e.attempts = e.attempts.max(attempts).max(1);
        self.put(&key, Place::Backoff);
    }

    /// Retries the unschedulable pods `event` may help.
    pub fn move_on(&mut self, event: ClusterEvent, now: Instant) {
        self.move_request_cycle = self.cycle;
        let helps = |e: &Entry| {
            // A pod waiting only for the rest of its PodGroup is helped by
            // new members, which take it along, not by the cluster.
            let waits_for_group =
                e.plugins.len() == 1 && e.plugins.contains(crate::coscheduling::NAME);
            !waits_for_group
                && match event {
                    ClusterEvent::AssignedPodChange | ClusterEvent::Other => {
                        e.plugins.iter().any(|p| POD_SENSITIVE.contains(p))
                    }
                    _ => true,
                }
        };
        let helped: Vec<Arc<PodInfo>> = self
            .unschedulable
            .values()
            .filter(|info| self.pods.get(&info.key).is_some_and(helps))
            .cloned()
            .collect();
        for info in helped {
            self.unlink(&info.key);
            self.activate(&info.key, now);
        }
    }
}

/// The queue shared by the informer handlers and the scheduling loop.
pub struct SchedulingQueue {
    queue: Mutex<Queue>,
    notify: Notify,
    clock: Clock,
}

impl SchedulingQueue {
    pub fn new(clock: Clock, initial_backoff: Duration, max_backoff: Duration) -> Self {
        SchedulingQueue {
            queue: Mutex::new(Queue::new(initial_backoff, max_backoff)),
            notify: Notify::new(),
            clock,
        }
    }

    /// Runs `f` on the queue, then wakes the loop.
    pub fn with<R>(&self, f: impl FnOnce(&mut Queue, Instant) -> R) -> R {
        let now = self.clock.instant();
        let r = f(&mut self.queue.lock(), now);
        self.notify.notify_one();
        r
    }

    pub fn nominated(&self) -> Arc<Nominated> {
        self.queue.lock().nominated()
    }

    /// Waits for the next pod to schedule.
    pub async fn pop(&self) -> QueuedPod {
        loop {
            let wake = {
                let mut q = self.queue.lock();
                if let Some(p) = q.pop(self.clock.instant()) {
                    return p;
                }
                q.next_wakeup()
            };
            match wake {
                Some(at) => {
                    tokio::select! {
                        // A fixed polling order: the same inputs give the same run.
                        biased;
                        _ = self.notify.notified() => {}
                        _ = self.clock.sleep_until(at) => {}
                    }
                }
                None => self.notify.notified().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Where a test's times start: only differences matter, read through
    /// the clock like every other instant.
    fn origin() -> Instant {
        kubesim_runtime::Clock::wall().instant()
    }

    fn pod(name: &str, prio: i64) -> Arc<PodInfo> {
        Arc::new(PodInfo::from_pod(Arc::new(json!({
            "metadata": {"name": name, "namespace": "d", "uid": name},
            "spec": {"priority": prio, "containers": [{"name": "c"}]},
        }))))
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new("d", name)
    }

    #[test]
    fn backoff_doubles_from_one_second_up_to_ten() {
        let q = Queue::default();
        let table = [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (30, 10)];
        for (attempts, secs) in table {
            assert_eq!(
                q.backoff_duration(attempts),
                Duration::from_secs(secs),
                "attempts {attempts}"
            );
        }
    }

    #[test]
    fn active_order_is_priority_then_arrival() {
        let t0 = origin();
        let mut q = Queue::default();
        q.add_or_update(pod("low-early", 0), t0);
        q.add_or_update(pod("high-late", 100), t0 + Duration::from_secs(2));
        q.add_or_update(pod("low-late", 0), t0 + Duration::from_secs(1));
        q.add_or_update(pod("high-early", 100), t0 + Duration::from_secs(1));
        let now = t0 + Duration::from_secs(3);
        let order: Vec<String> = std::iter::from_fn(|| q.pop(now))
            .map(|p| p.info.key.name.clone())
            .collect();
        assert_eq!(order, ["high-early", "high-late", "low-early", "low-late"]);
    }

    #[test]
    fn failed_pod_backs_off_then_returns() {
        // (attempt number, seconds after the failure it is poppable)
        let table = [(1, 1), (2, 2), (3, 4), (4, 8), (5, 10)];
        let mut q = Queue::default();
        let mut now = origin();
        q.add_or_update(pod("p", 0), now);
        for (attempt, secs) in table {
            let p = q.pop(now).expect("active");
            assert_eq!(p.attempts, attempt);
            q.requeue_backoff(p.info.clone(), p.attempts, now);
            assert_eq!(q.place(&key("p")), Some(Place::Backoff));
            let just_before = now + Duration::from_secs(secs) - Duration::from_millis(1);
            assert!(q.pop(just_before).is_none(), "attempt {attempt}");
            assert_eq!(q.next_wakeup(), Some(now + Duration::from_secs(secs)));
            now += Duration::from_secs(secs);
        }
        assert!(q.pop(now).is_some());
    }

    #[test]
    fn unschedulable_pods_move_on_events() {
        // (event, plugin that rejected the pod, moved back?)
        let table = [
            (ClusterEvent::NodeAdd, "NodeResourcesFit", true),
            (ClusterEvent::NodeUpdate, "TaintToleration", true),
            (ClusterEvent::AssignedPodDelete, "NodeResourcesFit", true),
            (ClusterEvent::AssignedPodChange, "NodeResourcesFit", false),
            (ClusterEvent::AssignedPodChange, "InterPodAffinity", true),
            // A disk or claim is freed only when the pod using it goes.
            (ClusterEvent::AssignedPodDelete, "VolumeRestrictions", true),
            (ClusterEvent::AssignedPodChange, "VolumeRestrictions", false),
            (ClusterEvent::Other, "NodeAffinity", false),
        ];
        for (event, plugin, moved) in table {
            let t0 = origin();
            let mut q = Queue::default();
            q.add_or_update(pod("p", 0), t0);
            let p = q.pop(t0).unwrap();
            // The event happens in a later cycle than the failure.
            q.requeue_unschedulable(&key("p"), p.cycle, Arc::new([plugin].into()), t0);
            assert_eq!(q.place(&key("p")), Some(Place::Unschedulable));
            q.add_or_update(pod("other", 0), t0);
            let o = q.pop(t0).unwrap();
            q.done(&o.info.key);
            // Past the 1 s backoff: straight to active when moved.
            let later = t0 + Duration::from_secs(5);
            q.move_on(event, later);
            let want = if moved {
                Place::Active
            } else {
                Place::Unschedulable
            };
            assert_eq!(q.place(&key("p")), Some(want), "{event:?} after {plugin}");
        }
    }

    #[test]
    fn moved_pod_still_in_backoff_waits_in_backoff() {
        let t0 = origin();
        let mut q = Queue::default();
        q.add_or_update(pod("p", 0), t0);
        let p = q.pop(t0).unwrap();
        q.requeue_unschedulable(&key("p"), p.cycle, Rejecting::default(), t0);
        q.add_or_update(pod("x", 0), t0);
        q.pop(t0);
        q.move_on(ClusterEvent::NodeAdd, t0 + Duration::from_millis(500));
        assert_eq!(q.place(&key("p")), Some(Place::Backoff));
        assert!(q.pop(t0 + Duration::from_millis(999)).is_none());
        assert!(q.pop(t0 + Duration::from_secs(1)).is_some());
    }

    #[test]
    fn event_during_the_attempt_sends_the_pod_to_backoff() {
        let t0 = origin();
        let mut q = Queue::default();
        q.add_or_update(pod("p", 0), t0);
        let p = q.pop(t0).unwrap();
        q.move_on(ClusterEvent::NodeAdd, t0);
        q.requeue_unschedulable(&key("p"), p.cycle, Rejecting::default(), t0);
        assert_eq!(q.place(&key("p")), Some(Place::Backoff));
    }

    #[test]
    fn unschedulable_pods_are_flushed_after_five_minutes() {
        let t0 = origin();
        let mut q = Queue::default();
        q.add_or_update(pod("p", 0), t0);
        let p = q.pop(t0).unwrap();
        q.requeue_unschedulable(&key("p"), p.cycle, Rejecting::default(), t0);
        assert_eq!(q.next_wakeup(), Some(t0 + MAX_UNSCHEDULABLE));
        assert!(q.pop(t0 + Duration::from_secs(299)).is_none());
        assert!(q.pop(t0 + Duration::from_secs(300)).is_some());
    }

    #[test]
    fn gated_pods_wait_for_their_gates_to_go() {
        let t0 = origin();
        let mut q = Queue::default();
        let gated = Arc::new(PodInfo::from_pod(Arc::new(json!({
            "metadata": {"name": "g", "namespace": "d", "uid": "g"},
            "spec": {"schedulingGates": [{"name": "x"}], "containers": []},
        }))));
        q.add_or_update(gated, t0);
        assert!(q.pop(t0).is_none());
        q.add_or_update(pod("g", 0), t0);
        assert!(q.pop(t0).is_some());
    }

    #[test]
    fn nominated_pods_are_tracked_by_node() {
        let t0 = origin();
        let mut q = Queue::default();
        q.add_or_update(pod("p", 5), t0);
        q.nominate(&key("p"), "n1");
        assert_eq!(q.nominated()["n1"].len(), 1);
        q.delete(&key("p"));
        assert!(q.nominated().is_empty());
    }
}
