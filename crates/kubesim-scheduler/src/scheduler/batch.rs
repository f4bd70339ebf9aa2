//! The scheduling cycle of a profile running a batch policy
//! ([`crate::batsim`]): every pending pod of the profile is taken from
//! the queue, grouped into jobs, and planned at once; the jobs the plan
//! starts are bound, the others wait for the next event (a job ending or
//! arriving).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_runtime::ObjectKey;
use tokio::sync::mpsc;

use super::{Job, Shared};
use crate::algorithm::Algorithm;
use crate::batsim::{self, Ends, Wait};
use crate::coscheduling;
use crate::framework::{PodInfo, Snapshot};
use crate::profile::Profile;
use crate::queue::QueuedPod;

impl Shared {
    pub(super) fn schedule_batch(
        &self,
        started: tokio::time::Instant,
        qp: QueuedPod,
        profile: &Profile,
        algo: &mut Algorithm,
        snapshot: &mut Snapshot,
        tx: &mpsc::UnboundedSender<Job>,
    ) {
        let Some(policy) = profile.policy else {
            return;
        };
        let name = profile.name.clone();
        let mut taken = vec![qp];
        taken.extend(
            self.queue
                .with(|q, _| q.take_where(|p| p.scheduler_name() == &*name)),
        );
        let cycles: BTreeMap<ObjectKey, QueuedPod> = taken
            .iter()
            .map(|m| (m.info.key.clone(), m.clone()))
            .collect();
        // Jobs: a PodGroup's members together (when the profile gangs and
        // the group asks for more than one), other pods alone.
        // Keyed by (is a group, key): a pod and a group may share a name.
        let mut by_job: BTreeMap<(bool, ObjectKey), Vec<Arc<PodInfo>>> = BTreeMap::new();
        let mut need: BTreeMap<(bool, ObjectKey), usize> = BTreeMap::new();
        for m in &taken {
            let group = profile
                .gang
                .then(|| coscheduling::group_key(&m.info))
                .flatten()
                .and_then(|gk| {
                    let g = self.groups.lock().get(&gk).cloned()?;
                    (g.min_member > 1).then_some((gk, g.min_member))
                });
            let (key, n) = match group {
                Some((gk, min)) => ((true, gk), min),
                None => ((false, m.info.key.clone()), 1),
            };
            need.insert(key.clone(), n);
            by_job.entry(key).or_default().push(m.info.clone());
        }
        let mut jobs = Vec::new();
        for (job_key, mut pods) in by_job {
            pods.sort_by(|a, b| a.key.cmp(&b.key));
            let min = need[&job_key];
            let key = job_key.1;
            if min > 1 {
                let bound = self.cache.count_placed(&key.namespace, |p| {
                    coscheduling::group_of(p) == Some(key.name.as_str())
                });
                let members = pods.len() + bound;
                if members < min {
                    // The rest of the group has not arrived: it is not a
                    // job yet, and the members to come take these along.
                    for p in pods {
                        let message = coscheduling::too_few_message(&p, members, min);
                        self.requeue_batch(&cycles, &p.key, [coscheduling::NAME]);
                        self.tell(&cycles, tx, p, message);
                    }
                    continue;
                }
                jobs.push(batsim::Job::new(pods, min - bound));
            } else {
                jobs.push(batsim::Job::new(pods, 1));
            }
        }
        jobs.sort_by_key(|j| j.key());
        self.cache.update_snapshot(snapshot);
        let ends = self.ends(snapshot);
        let nominated = self.queue.nominated();
        let plan = batsim::plan(policy, algo, profile, &jobs, snapshot, &ends, &nominated);
        let now = self.clock.instant();
        for (i, fitted) in plan.start {
            let placed: BTreeSet<&ObjectKey> = fitted.iter().map(|f| &f.pod.key).collect();
            let unfit: Vec<Arc<PodInfo>> = jobs[i]
                .pods
                .iter()
                .filter(|p| !placed.contains(&p.key))
                .cloned()
                .collect();
            for f in fitted {
                self.cache.assume(&f.pod, &f.node);
                self.queue.with(|q, _| q.done(&f.pod.key));
                self.started.lock().insert(f.pod.uid.clone(), now);
                let (attempts, queued) = cycles
                    .get(&f.pod.key)
                    .map_or((1, started), |m| (m.attempts, m.queued));
                let _ = tx.send(Job::Bind {
                    pod: f.pod,
                    node: f.node,
                    attempts,
                    started,
                    queued,
                    profile: profile.name.clone(),
                });
            }
            // Members beyond minMember that did not fit wait as lone pods.
            for p in unfit {
                self.requeue_batch(&cycles, &p.key, [policy.name()]);
                let message = format!("{}: more members than the group needs", policy.name());
                self.tell(&cycles, tx, p, message);
            }
        }
        for (i, why) in plan.wait {
            let message = match why {
                Wait::NoFit(m) => m,
                Wait::Behind => format!(
                    "{}: waiting for the jobs submitted before it",
                    policy.name()
                ),
                Wait::WouldDelay => format!(
                    "{}: starting it would delay the first waiting job",
                    policy.name()
                ),
            };
            for p in &jobs[i].pods {
                self.requeue_batch(&cycles, &p.key, [policy.name()]);
                self.tell(&cycles, tx, p.clone(), message.clone());
            }
        }
    }

    /// When each running pod with a requested time ends, from when it was
    /// bound (or started, or now when neither is known).
    fn ends(&self, snapshot: &Snapshot) -> Ends {
        let (now, instant) = (self.clock.now(), self.clock.instant());
        let mut started = self.started.lock();
        let mut seen = BTreeSet::new();
        let mut ends = Ends::new();
        for (node, pod) in snapshot.pods() {
            seen.insert(pod.uid.clone());
            let Some(w) = batsim::walltime(pod) else {
                continue;
            };
            let ran = match started.get(&pod.uid) {
                Some(at) => (instant - *at).as_secs_f64(),
                None => kubesim_core::meta::parse_time(&pod.pod.start_time)
                    .map_or(0.0, |s| now.duration_since(s).as_secs_f64()),
            };
            ends.push((w.as_secs_f64() - ran, node.name.clone(), pod.uid.clone()));
        }
        // Forget the pods that have gone.
        started.retain(|uid, _| seen.contains(uid));
        ends
    }

    fn requeue_batch<const N: usize>(
        &self,
        cycles: &BTreeMap<ObjectKey, QueuedPod>,
        key: &ObjectKey,
        plugins: [&'static str; N],
    ) {
        let cycle = cycles.get(key).map_or(0, |m| m.cycle);
        self.queue.with(|q, now| {
            q.requeue_unschedulable(key, cycle, Arc::new(plugins.into_iter().collect()), now)
        });
    }

    /// Reports why `pod` waits, the first time it does (a waiting job is
    /// planned again at every event; its condition is not rewritten each
    /// time).
    fn tell(
        &self,
        cycles: &BTreeMap<ObjectKey, QueuedPod>,
        tx: &mpsc::UnboundedSender<Job>,
        pod: Arc<PodInfo>,
        message: String,
    ) {
        if cycles.get(&pod.key).is_some_and(|m| m.attempts > 1) {
            return;
        }
        let _ = tx.send(Job::Failed {
            pod,
            message: message.into(),
            nomination: None,
        });
    }
}
