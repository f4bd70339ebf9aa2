//! The scheduler process: informers feed the cache and the queue; one loop
//! pops a pod, runs the algorithm on a snapshot, assumes the pod on the
//! chosen node and hands the binding to a concurrent binder, so the next
//! cycle starts without waiting for the API.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use kubesim_core::meta;
use kubesim_core::patch::PatchType;
use kubesim_runtime::{
    Api, Change, Clock, DeleteOptions, EventRecorder, EventType, Informers, ObjectRef, ResourceRef,
    Rng, WriteOptions,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::algorithm::{Algorithm, ScheduleError};
use crate::cache::{is_terminal, Cache};
use crate::config::SchedulerConfig;
use crate::coscheduling::{self, PodGroup};
use crate::failures::{self, Failure, Failures};
use crate::framework::{Nomination, PodInfo, Snapshot};
use crate::metrics::{Metrics, Outcome};
use crate::profile::Profile;
use crate::queue::{ClusterEvent, QueuedPod, SchedulingQueue};

mod batch;
mod gang;
use gang::Gang;

/// The component name on events and in the user agent.
pub const COMPONENT: &str = "default-scheduler";
/// Bindings and status writes in flight at once.
const CONCURRENT_WRITES: usize = 64;

/// Work for the API, done off the scheduling loop.
enum Job {
    Bind {
        pod: Arc<PodInfo>,
        node: String,
        attempts: u32,
        /// When the attempt started (for [`Metrics`]).
        started: tokio::time::Instant,
        /// When the pod first entered the queue (its SLI's start).
        queued: tokio::time::Instant,
        /// The profile that placed it, for the metrics' labels.
        profile: Arc<str>,
    },
    Failed {
        pod: Arc<PodInfo>,
        /// Shared by the pods that fail alike (see `Failure::message`).
        message: Arc<str>,
        nomination: Option<Nomination>,
    },
}

struct Shared {
    api: Arc<dyn Api>,
    cache: Arc<Cache>,
    queue: Arc<SchedulingQueue>,
    recorder: EventRecorder,
    clock: Clock,
    metrics: Option<Arc<Metrics>>,
    /// The PodGroups, followed only when a profile enables Coscheduling.
    groups: parking_lot::Mutex<coscheduling::Groups>,
    /// When the pods a batch policy bound were bound, by uid, for
    /// planning when they end.
    started: parking_lot::Mutex<BTreeMap<String, tokio::time::Instant>>,
}

/// What the scheduling loop carries from one cycle to the next.
struct Cycle<'a> {
    algo: &'a mut Algorithm,
    snapshot: &'a mut Snapshot,
    failures: &'a mut Failures,
}

/// Aborts a spawned task when dropped, so dropping [`run`] stops it all.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn spawn(f: impl std::future::Future<Output = ()> + Send + 'static) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(f))
}

fn pods_ref() -> ResourceRef {
    ResourceRef::core("pods")
}

/// The pod as an Event names it, built from what the scheduler keeps of
/// it rather than from a copy of the pod at every attempt.
fn pod_ref(pod: &PodInfo) -> ObjectRef {
    ObjectRef {
        kind: "Pod".into(),
        api_version: "v1".into(),
        namespace: pod.namespace().to_string(),
        name: pod.name().to_string(),
        uid: pod.uid.clone(),
        resource_version: pod.pod.resource_version.to_string(),
    }
}

fn is_assigned(pod: &Value) -> bool {
    meta::pointer(pod, "/spec/nodeName")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty())
}

/// Whether a node update can make a pod fit where it did not.
fn node_changed(old: &Value, new: &Value) -> bool {
    old.get("spec") != new.get("spec")
        || meta::labels(old) != meta::labels(new)
        || old.pointer("/status/allocatable") != new.pointer("/status/allocatable")
}

/// Follows the PodGroups; a new or changed group retries its waiting pods.
fn watch_pod_groups(informers: &Informers, s: &Arc<Shared>) {
    let sh = s.clone();
    informers
        .get(&coscheduling::crd::resource())
        .on_change(move |c| {
            let obj = c.object();
            let key = kubesim_runtime::ObjectKey::of(obj);
            if matches!(c, Change::Deleted(_)) {
                sh.groups.lock().remove(&key);
                return;
            }
            let group = PodGroup::from_object(obj);
            if sh.groups.lock().insert(key.clone(), group.clone()) != Some(group) {
                sh.queue.with(|q, now| q.activate_group(&key, now));
            }
        });
}

fn watch_cluster(informers: &Informers, s: &Arc<Shared>, served: Arc<Vec<String>>) {
    let sh = s.clone();
    informers
        .get(&ResourceRef::core("nodes"))
        .on_change(move |c| match c {
            Change::Added(n) => {
                sh.cache.add_or_update_node(n.clone());
                sh.queue
                    .with(|q, now| q.move_on(ClusterEvent::NodeAdd, now));
            }
            Change::Modified { old, new } => {
                sh.cache.add_or_update_node(new.clone());
                if node_changed(old, new) {
                    sh.queue
                        .with(|q, now| q.move_on(ClusterEvent::NodeUpdate, now));
                }
            }
            Change::Deleted(n) => sh.cache.remove_node(meta::name(n)),
        });
    let sh = s.clone();
    informers.get(&pods_ref()).on_change(move |c| {
        let obj = c.object();
        let key = kubesim_runtime::ObjectKey::of(obj);
        let gone = matches!(c, Change::Deleted(_));
        if is_assigned(obj) {
            if gone || is_terminal(obj) {
                // kube-scheduler watches pods with the field selector
                // `status.phase!=Succeeded,status.phase!=Failed`: a pod
                // that finishes is deleted from its view then, and what
                // happens to it afterwards (its later status writes, its
                // deletion by the garbage collector) never reaches it. So
                // only the first of these is an event for the queue.
                if sh.cache.remove_pod(&key) {
                    sh.queue
                        .with(|q, now| q.move_on(ClusterEvent::AssignedPodDelete, now));
                }
                return;
            }
            let relabelled = match c {
                Change::Modified { old, .. } => old.node().is_none() || !old.same_labels(obj),
                _ => true,
            };
            sh.cache.add_or_update_pod(obj.clone());
            sh.queue.with(|q, now| {
                q.delete(&key);
                if relabelled {
                    q.move_on(ClusterEvent::AssignedPodChange, now);
                }
            });
            return;
        }
        if gone {
            sh.cache.forget(&key);
            sh.queue.with(|q, _| q.delete(&key));
            return;
        }
        let info = Arc::new(PodInfo::from_pod(obj.clone()));
        let ours = served.iter().any(|s| s == info.scheduler_name());
        if ours && !meta::is_deleting(obj) && !is_terminal(obj) {
            sh.queue.with(|q, now| q.add_or_update(info, now));
        } else {
            sh.queue.with(|q, _| q.delete(&key));
        }
    });
    let sh = s.clone();
    informers
        .get(&ResourceRef::core("namespaces"))
        .on_change(move |c| {
            sh.cache
                .set_namespace(c.object(), matches!(c, Change::Deleted(_)));
            sh.queue.with(|q, now| q.move_on(ClusterEvent::Other, now));
        });
    let sh = s.clone();
    informers
        .get(&ResourceRef::new("policy", "v1", "poddisruptionbudgets"))
        .on_change(move |c| {
            sh.cache
                .set_pdb(c.object().clone(), matches!(c, Change::Deleted(_)));
        });
    // No queue event: access modes cannot change, and a claim that does
    // not exist yet rejects no pod here (see VolumeRestrictions), so a
    // claim event cannot cure a rejection; a deleted user of the claim can.
    let sh = s.clone();
    informers
        .get(&ResourceRef::core("persistentvolumeclaims"))
        .on_change(move |c| {
            sh.cache
                .set_claim(c.object(), matches!(c, Change::Deleted(_)));
        });
}

/// Runs the scheduler until the returned future is dropped. Profiles that
/// fail to build are reported and left out (a configuration read with
/// [`SchedulerConfig::from_file`] has already been checked).
pub async fn run(
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    clock: Clock,
    rng: Rng,
    config: SchedulerConfig,
) {
    run_with_metrics(api, informers, clock, rng, config, None).await
}

/// [`run`], recording [`Metrics`].
pub async fn run_with_metrics(
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    clock: Clock,
    rng: Rng,
    config: SchedulerConfig,
    metrics: Option<Arc<Metrics>>,
) {
    let mut profiles: BTreeMap<String, Profile> = BTreeMap::new();
    for p in &config.profiles {
        match Profile::build(p) {
            Ok(built) => {
                profiles.insert(p.scheduler_name.clone(), built);
            }
            Err(e) => {
                tracing::error!(profile = %p.scheduler_name, error = %e, "bad scheduler profile")
            }
        }
    }
    let served = Arc::new(profiles.keys().cloned().collect::<Vec<_>>());
    // A batch policy decides at each event (a job ends or arrives), as
    // Batsim's schedulers do: retries wait for no backoff.
    let (initial_backoff, max_backoff) = if profiles.values().any(|p| p.policy.is_some()) {
        (std::time::Duration::ZERO, std::time::Duration::ZERO)
    } else {
        (config.initial_backoff, config.max_backoff)
    };
    // kube-scheduler records through the events.k8s.io recorder: a pod
    // retried for hours gets one FailedScheduling series, not a write per
    // attempt.
    let (recorder, events) = EventRecorder::with_style(
        api.clone(),
        clock.clone(),
        COMPONENT,
        kubesim_runtime::EventStyle::Series,
    );
    let shared = Arc::new(Shared {
        api: api.clone(),
        cache: Cache::new(),
        queue: Arc::new(SchedulingQueue::new(
            clock.clone(),
            initial_backoff,
            max_backoff,
        )),
        recorder,
        clock: clock.clone(),
        metrics,
        groups: Default::default(),
        started: Default::default(),
    });
    if profiles.values().any(|p| p.gang) {
        shared.queue.with(|q, _| q.track_groups());
        watch_pod_groups(&informers, &shared);
    }
    watch_cluster(&informers, &shared, served);
    let inf = informers.clone();
    let _informers = spawn(async move { inf.run().await });
    let _events = spawn(events);
    let (tx, rx) = mpsc::unbounded_channel::<Job>();
    let sh = shared.clone();
    let _writer = spawn(async move {
        tokio_stream_of(rx)
            .for_each_concurrent(CONCURRENT_WRITES, |job| {
                let sh = sh.clone();
                async move { sh.write(job).await }
            })
            .await
    });
    informers.wait_synced().await;
    tracing::info!(profiles = ?profiles.keys().collect::<Vec<_>>(), "scheduler started");
    let mut algo = Algorithm::new(rng, config.percentage_of_nodes_to_score);
    let mut snapshot = Snapshot::default();
    let mut failures = Failures::default();
    loop {
        let qp = shared.queue.pop().await;
        // A batch policy plans all of an instant's events (jobs ending,
        // jobs arriving) at once, as Batsim hands them to its scheduler in
        // one message: it waits until nothing else is due at this instant.
        if profiles
            .get(qp.info.scheduler_name())
            .is_some_and(|p| p.policy.is_some())
        {
            clock.settled().await;
        }
        let started = clock.instant();
        let mut cycle = Cycle {
            algo: &mut algo,
            snapshot: &mut snapshot,
            failures: &mut failures,
        };
        shared.schedule_one(started, qp, &profiles, &mut cycle, &tx);
        // Lets the informers and writers run on a single-threaded runtime.
        tokio::task::yield_now().await;
    }
}

fn tokio_stream_of<T: Send + 'static>(
    mut rx: mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

impl Shared {
    /// Counts an attempt that placed nothing.
    fn observe_failed(&self, profile: &Profile, outcome: Outcome, started: tokio::time::Instant) {
        if let Some(m) = &self.metrics {
            m.attempt(&profile.name, outcome, self.clock.instant() - started, None);
        }
    }

    fn schedule_one(
        &self,
        started: tokio::time::Instant,
        qp: QueuedPod,
        profiles: &BTreeMap<String, Profile>,
        cycle: &mut Cycle,
        tx: &mpsc::UnboundedSender<Job>,
    ) {
        let (algo, snapshot) = (&mut *cycle.algo, &mut *cycle.snapshot);
        let pod = qp.info.clone();
        let Some(profile) = profiles.get(pod.scheduler_name()) else {
            self.queue.with(|q, _| q.delete(&pod.key));
            return;
        };
        if profile.policy.is_some() {
            return self.schedule_batch(started, qp, profile, algo, snapshot, tx);
        }
        if profile.gang {
            if let Some(gk) = coscheduling::group_key(&pod) {
                let group = self.groups.lock().get(&gk).cloned();
                // As upstream: a pod whose PodGroup does not exist, or asks
                // for fewer than two, is scheduled on its own.
                if let Some(group) = group.filter(|g| g.min_member > 1) {
                    let gang = Gang {
                        key: gk,
                        group,
                        started,
                    };
                    return self.schedule_group(gang, qp, profile, algo, snapshot, tx);
                }
            }
        }
        self.cache.update_snapshot(snapshot);
        let nominated = self.queue.nominated();
        let shape = failures::shape(profile, &pod);
        if let Some(known) = shape.as_ref().and_then(|s| {
            cycle
                .failures
                .replay(s, profile, &pod, snapshot, &nominated)
        }) {
            return self.unschedulable(profile, qp, known, None, started, tx);
        }
        match algo.schedule(profile, &pod, snapshot, &nominated) {
            Ok(placement) => {
                self.cache.assume(&pod, &placement.node);
                self.queue.with(|q, _| q.done(&pod.key));
                let _ = tx.send(Job::Bind {
                    pod,
                    node: placement.node,
                    attempts: qp.attempts,
                    started,
                    queued: qp.queued,
                    profile: profile.name.clone(),
                });
            }
            Err(ScheduleError::Unschedulable(fit)) => {
                let (nomination, failure) = failures::conclude(profile, &pod, snapshot, &fit);
                if let (Some(shape), None) = (shape, &nomination) {
                    cycle
                        .failures
                        .remember(shape, snapshot, &nominated, &fit, &failure);
                }
                self.unschedulable(profile, qp, failure, nomination, started, tx);
            }
            Err(ScheduleError::Internal(e)) => {
                self.observe_failed(profile, Outcome::Error, started);
                tracing::warn!(pod = %pod.key, error = %e, "scheduling failed");
                self.queue
                    .with(|q, now| q.requeue_backoff(pod.clone(), qp.attempts, now));
                self.recorder.record_ref(
                    pod_ref(&pod),
                    EventType::Warning,
                    "FailedScheduling",
                    e.into(),
                );
            }
        }
    }

    /// No node fits `qp`'s pod: it waits in the queue, nominated where
    /// preemption made room, and is told why.
    fn unschedulable(
        &self,
        profile: &Profile,
        qp: QueuedPod,
        failure: Failure,
        nomination: Option<Nomination>,
        started: tokio::time::Instant,
        tx: &mpsc::UnboundedSender<Job>,
    ) {
        self.observe_failed(profile, Outcome::Unschedulable, started);
        let pod = qp.info;
        tracing::debug!(pod = %pod.key, message = %failure.message, "unschedulable");
        self.queue.with(|q, now| {
            q.requeue_unschedulable(&pod.key, qp.cycle, failure.plugins, now);
            if let Some(n) = &nomination {
                q.nominate(&pod.key, &n.node);
            }
        });
        let _ = tx.send(Job::Failed {
            pod,
            message: failure.message,
            nomination,
        });
    }

    async fn write(&self, job: Job) {
        match job {
            Job::Bind {
                pod,
                node,
                attempts,
                started,
                queued,
                profile,
            } => {
                let bound = self.bind(pod, node, attempts).await;
                if let Some(m) = &self.metrics {
                    let now = self.clock.instant();
                    if bound {
                        m.attempt(
                            &profile,
                            Outcome::Scheduled,
                            now - started,
                            Some((now - queued, attempts)),
                        );
                    } else {
                        m.attempt(&profile, Outcome::Error, now - started, None);
                    }
                }
            }
            Job::Failed {
                pod,
                message,
                nomination,
            } => self.failed(pod, message, nomination).await,
        }
    }

    /// Binds; true when the binding was written.
    async fn bind(&self, pod: Arc<PodInfo>, node: String, attempts: u32) -> bool {
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name(), "namespace": pod.namespace(), "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        });
        let res = self
            .api
            .create(
                &ResourceRef::core("bindings"),
                pod.namespace(),
                binding,
                &WriteOptions::default(),
            )
            .await;
        match res {
            Ok(_) => {
                self.recorder.record_ref(
                    pod_ref(&pod),
                    EventType::Normal,
                    "Scheduled",
                    format!(
                        "Successfully assigned {}/{} to {node}",
                        pod.namespace(),
                        pod.name()
                    )
                    .into(),
                );
                true
            }
            Err(e) => {
                self.cache.forget(&pod.key);
                // Gone, or bound by someone else: the informer will say.
                if e.code == 404 || e.code == 409 {
                    tracing::debug!(pod = %pod.key, error = %e.message, "binding not needed");
                    return false;
                }
                tracing::warn!(pod = %pod.key, error = %e.message, "binding failed");
                self.recorder.record_ref(
                    pod_ref(&pod),
                    EventType::Warning,
                    "FailedScheduling",
                    format!("Binding rejected: {}", e.message).into(),
                );
                self.queue
                    .with(|q, now| q.requeue_backoff(pod.clone(), attempts, now));
                false
            }
        }
    }

    async fn failed(&self, pod: Arc<PodInfo>, message: Arc<str>, nomination: Option<Nomination>) {
        self.recorder.record_ref(
            pod_ref(&pod),
            EventType::Warning,
            "FailedScheduling",
            message.clone(),
        );
        if let Some(n) = &nomination {
            for v in &n.victims {
                self.recorder.record_ref(
                    pod_ref(v),
                    EventType::Normal,
                    "Preempted",
                    format!("Preempted by pod {} on node {}", pod.uid, n.node).into(),
                );
                if let Err(e) = self
                    .api
                    .delete(
                        &pods_ref(),
                        v.namespace(),
                        v.name(),
                        &DeleteOptions {
                            precondition_uid: Some(v.uid.clone()),
                            ..Default::default()
                        },
                    )
                    .await
                {
                    if e.code != 404 {
                        tracing::warn!(victim = %v.key, error = %e.message, "preemption delete failed");
                    }
                }
            }
        }
        // Write the condition only when it changes, as upstream does, so an
        // unschedulable pod retried every few seconds is not rewritten.
        let same = pod.pod.scheduled.as_deref().is_some_and(|c| {
            &*c.status == "False" && &*c.reason == "Unschedulable" && *c.message == *message
        });
        let nominate = nomination
            .as_ref()
            .map(|n| n.node.as_str())
            .filter(|n| *n != pod.nominated_node());
        if same && nominate.is_none() {
            return;
        }
        let mut status = json!({"conditions": [{
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": &*message,
            "lastProbeTime": null,
            "lastTransitionTime": meta::format_time(self.clock.now()),
        }]});
        if let Some(n) = nominate {
            status["nominatedNodeName"] = json!(n);
        }
        let patch = json!({"status": status});
        if let Err(e) = self
            .api
            .patch(
                &pods_ref(),
                pod.namespace(),
                pod.name(),
                PatchType::Strategic,
                patch.to_string().into_bytes(),
                Some("status"),
                &WriteOptions::default(),
            )
            .await
        {
            if e.code != 404 {
                tracing::debug!(pod = %pod.key, error = %e.message, "status update failed");
            }
        }
    }
}
