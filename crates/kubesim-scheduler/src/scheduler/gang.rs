//! The scheduling cycle of a pod whose profile enables Coscheduling and
//! whose PodGroup asks for more than one member: wait until `minMember`
//! members exist, then place all pending members at once and bind them
//! only if enough fit (see [`crate::coscheduling`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kubesim_runtime::ObjectKey;
use tokio::sync::mpsc;

use super::{Job, Shared};
use crate::algorithm::Algorithm;
use crate::coscheduling::{self, place, PodGroup};
use crate::framework::Snapshot;
use crate::profile::Profile;
use crate::queue::{QueuedPod, Rejecting};

/// The group a popped pod belongs to.
pub(super) struct Gang {
    pub key: ObjectKey,
    pub group: PodGroup,
    pub started: tokio::time::Instant,
}

fn coscheduling_only() -> BTreeSet<&'static str> {
    [coscheduling::NAME].into()
}

impl Shared {
    pub(super) fn schedule_group(
        &self,
        gang: Gang,
        qp: QueuedPod,
        profile: &Profile,
        algo: &mut Algorithm,
        snapshot: &mut Snapshot,
        tx: &mpsc::UnboundedSender<Job>,
    ) {
        let min = gang.group.min_member;
        let gk = &gang.key;
        let pending = self.queue.with(|q, _| q.group_pending(gk));
        let bound = self.cache.count_placed(&gk.namespace, |p| {
            coscheduling::group_of(p) == Some(gk.name.as_str())
        });
        if pending + bound < min {
            // Too few members exist yet: wait for the others, which arrive
            // as new pods and take this one along when they are popped.
            let message = coscheduling::too_few_message(&qp.info, pending + bound, min);
            tracing::debug!(pod = %qp.info.key, %message, "waiting for the pod group");
            self.queue.with(|q, now| {
                q.requeue_unschedulable(&qp.info.key, qp.cycle, coscheduling_only().into(), now)
            });
            let _ = tx.send(Job::Failed {
                pod: qp.info,
                message: message.into(),
                nomination: None,
            });
            return;
        }
        let mut members = vec![qp.clone()];
        members.extend(self.queue.with(|q, _| q.take_group(gk, &qp.info.key)));
        let cycles: BTreeMap<ObjectKey, QueuedPod> = members
            .iter()
            .map(|m| (m.info.key.clone(), m.clone()))
            .collect();
        let pods: Vec<_> = members.iter().map(|m| m.info.clone()).collect();
        self.cache.update_snapshot(snapshot);
        let nominated = self.queue.nominated();
        let out = place::place(algo, profile, &pods, snapshot, &nominated);
        let need = min.saturating_sub(bound);
        if out.fitted.len() >= need {
            for f in out.fitted {
                self.cache.assume(&f.pod, &f.node);
                self.queue.with(|q, _| q.done(&f.pod.key));
                let (attempts, queued) = cycles
                    .get(&f.pod.key)
                    .map_or((1, gang.started), |m| (m.attempts, m.queued));
                let _ = tx.send(Job::Bind {
                    pod: f.pod,
                    node: f.node,
                    attempts,
                    started: gang.started,
                    queued,
                    profile: profile.name.clone(),
                });
            }
            // Members beyond minMember that did not fit wait as lone pods.
            for u in out.unfit {
                self.requeue(&cycles, &u.pod.key, u.plugins.into());
                let _ = tx.send(Job::Failed {
                    pod: u.pod,
                    message: u.message.into(),
                    nomination: None,
                });
            }
            return;
        }
        let group = format!("{}/{}", gk.namespace, gk.name);
        let message = place::rejected_message(&group, &out, bound + out.fitted.len(), min);
        tracing::debug!(%group, %message, "pod group rejected");
        let mut plugins = coscheduling_only();
        for u in &out.unfit {
            plugins.extend(u.plugins.iter().cloned());
        }
        // One set for every member of the group.
        let plugins: Rejecting = plugins.into();
        let message: Arc<str> = message.into();
        for pod in pods {
            self.requeue(&cycles, &pod.key, plugins.clone());
            let _ = tx.send(Job::Failed {
                pod,
                message: message.clone(),
                nomination: None,
            });
        }
    }

    fn requeue(
        &self,
        cycles: &BTreeMap<ObjectKey, QueuedPod>,
        key: &ObjectKey,
        plugins: Rejecting,
    ) {
        let cycle = cycles.get(key).map_or(0, |m| m.cycle);
        self.queue
            .with(|q, now| q.requeue_unschedulable(key, cycle, plugins, now));
    }
}
