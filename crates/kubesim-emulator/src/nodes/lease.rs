//! The kubelet's heartbeat: a Lease per emulated node in `kube-node-lease`,
//! renewed every 10 s (a quarter of the 40 s lease, as a kubelet does).
//!
//! Renewals are staggered, not synchronised: each node has a fixed slot in
//! the period (from a hash of its name), and one task wakes only for slots
//! that hold nodes, renewing that slot's nodes together. At 10,000 nodes
//! that is 1,000 small writes a second spread evenly, with no thundering
//! herd at the top of the period and no task per node.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::stream::{self, StreamExt};
use kubesim_core::{meta, patch::PatchType};
use kubesim_runtime::{Api, Change, Clock, Informers, ResourceRef, WriteOptions};
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::managed::NodeSelector;
use crate::shard::Shards;

pub const LEASE_NAMESPACE: &str = "kube-node-lease";
/// Slots per period: renewals land every period/SLOTS at most.
const SLOTS: u64 = 100;

/// Decides, per node name, whether its heartbeat is currently suppressed
/// (a failed node, a failing heartbeat).
pub type Silenced = Arc<dyn Fn(&str) -> bool + Send + Sync>;

pub struct LeaseRenewer {
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    clock: Clock,
    selector: NodeSelector,
    period: Duration,
    lease_seconds: u64,
    silenced: Silenced,
}

/// The nodes to renew: node name → uid (for the lease's owner reference),
/// grouped by slot.
#[derive(Default)]
struct Slots {
    by_slot: BTreeMap<u64, BTreeSet<String>>,
    uids: BTreeMap<String, String>,
}

impl LeaseRenewer {
    pub fn new(
        api: Arc<dyn Api>,
        informers: Arc<Informers>,
        clock: Clock,
        selector: NodeSelector,
    ) -> Self {
        LeaseRenewer {
            api,
            informers,
            clock,
            selector,
            period: Duration::from_secs(10),
            lease_seconds: 40,
            silenced: Arc::new(|_| false),
        }
    }

    /// Renewal period and lease duration (defaults 10 s and 40 s).
    pub fn with_timing(mut self, period: Duration, lease_seconds: u64) -> Self {
        self.period = period.max(Duration::from_millis(SLOTS));
        self.lease_seconds = lease_seconds;
        self
    }

    pub fn with_silenced(mut self, silenced: Silenced) -> Self {
        self.silenced = silenced;
        self
    }

    pub async fn run(self) {
        let nodes = self.informers.get_metadata(&ResourceRef::core("nodes"));
        let slots: Arc<Mutex<Slots>> = Arc::default();
        let (s, selector) = (slots.clone(), self.selector.clone());
        nodes.on_change(move |c| {
            let node = c.object();
            let name = meta::name(node).to_string();
            let mut s = s.lock();
            let slot = slot_of(&name);
            // Selected by the rule; which shard owns it is asked at each
            // renewal, as ownership moves when shards come and go.
            if matches!(c, Change::Deleted(_)) || !selector.rule.selects(node) {
                if s.uids.remove(&name).is_some() {
                    if let Some(set) = s.by_slot.get_mut(&slot) {
                        set.remove(&name);
                    }
                }
            } else {
                s.uids.insert(name.clone(), meta::uid(node).to_string());
                s.by_slot.entry(slot).or_default().insert(name);
            }
        });
        nodes.wait_synced().await;
        let takeover = async {
            if let Some(shards) = self.selector.shards.clone() {
                self.renew_on_takeover(shards, &slots).await
            }
        };
        tokio::join!(takeover, self.renew_by_slot(&slots));
    }

    /// Renews each slot's nodes at its time in the period, forever.
    async fn renew_by_slot(&self, slots: &Mutex<Slots>) {
        let tick = self.period / SLOTS as u32;
        let start = self.clock.instant();
        let mut round: u64 = 0;
        loop {
            // The next occupied slot at or after the current position.
            let next = {
                let s = slots.lock();
                let pos = round % SLOTS;
                s.by_slot
                    .range(pos..)
                    .chain(s.by_slot.range(..pos))
                    .find(|(_, names)| !names.is_empty())
                    .map(|(slot, names)| (*slot, names.iter().cloned().collect::<Vec<_>>()))
            };
            let Some((slot, names)) = next else {
                // Nothing to renew yet: look again a period later.
                round += SLOTS;
                self.clock.sleep_until(start + at(tick, round)).await;
                continue;
            };
            let pos = round % SLOTS;
            round += (slot + SLOTS - pos) % SLOTS;
            self.clock.sleep_until(start + at(tick, round)).await;
            self.renew(slots, names).await;
            round += 1;
        }
    }

    /// Renews at once the leases of nodes this shard has just taken over:
    /// their last renewal, by the shard that died, may be most of a lease
    /// ago, and waiting for their slots could let them expire.
    async fn renew_on_takeover(&self, shards: Arc<Shards>, slots: &Mutex<Slots>) {
        let mut changes = shards.changes();
        let mut owned: BTreeSet<String> = BTreeSet::new();
        loop {
            let now_owned: BTreeSet<String> = slots
                .lock()
                .uids
                .keys()
                .filter(|n| shards.owns(n))
                .cloned()
                .collect();
            let gained: Vec<String> = now_owned.difference(&owned).cloned().collect();
            if !gained.is_empty() {
                tracing::info!(
                    nodes = gained.len(),
                    "renewing the leases of nodes taken over"
                );
                self.renew(slots, gained).await;
            }
            owned = now_owned;
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    async fn renew(&self, slots: &Mutex<Slots>, names: Vec<String>) {
        let leases = ResourceRef::new("coordination.k8s.io", "v1", "leases");
        let now = meta::format_micro_time(self.clock.now());
        let work: Vec<(String, String)> = {
            let s = slots.lock();
            names
                .into_iter()
                .filter(|n| !(self.silenced)(n) && self.selector.owns(n))
                .filter_map(|n| s.uids.get(&n).map(|u| (n, u.clone())))
                .collect()
        };
        stream::iter(work)
            .for_each_concurrent(16, |(name, uid)| {
                let (leases, now) = (&leases, &now);
                async move {
                    let body = json!({"spec": {"holderIdentity": name, "renewTime": now,
                        "leaseDurationSeconds": self.lease_seconds}});
                    let patched = self
                        .api
                        .patch(
                            leases,
                            LEASE_NAMESPACE,
                            &name,
                            PatchType::Merge,
                            body.to_string().into_bytes(),
                            None,
                            &WriteOptions::default(),
                        )
                        .await;
                    match patched {
                        Err(e) if e.code == 404 => {
                            let lease = self.lease(&name, &uid, now);
                            if let Err(e) = self
                                .api
                                .create(leases, LEASE_NAMESPACE, lease, &WriteOptions::default())
                                .await
                            {
                                if e.code != 409 {
                                    tracing::debug!(node = %name, error = %e.message, "lease create failed");
                                }
                            }
                        }
                        Err(e) => tracing::debug!(node = %name, error = %e.message, "lease renewal failed"),
                        Ok(_) => {}
                    }
                }
            })
            .await;
    }

    fn lease(&self, name: &str, uid: &str, now: &str) -> Value {
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": LEASE_NAMESPACE,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": self.lease_seconds,
                "renewTime": now},
        })
    }
}

/// The offset of tick number `round` from the start.
fn at(tick: Duration, round: u64) -> Duration {
    Duration::from_nanos((tick.as_nanos() as u64).saturating_mul(round))
}

/// A node's slot in the period: FNV-1a of its name, so it is stable across
/// restarts and independent of the order nodes appear in.
fn slot_of(name: &str) -> u64 {
    super::fnv1a(name) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_spread_nodes() {
        let mut counts = [0u32; SLOTS as usize];
        for i in 0..10_000 {
            counts[slot_of(&format!("kubesim-node-{i:05}")) as usize] += 1;
        }
        // 100 per slot on average; no slot badly overloaded.
        assert!(counts.iter().all(|&c| (50..200).contains(&c)), "{counts:?}");
    }
}
