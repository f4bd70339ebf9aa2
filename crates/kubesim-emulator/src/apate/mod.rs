//! Apate's emulation model (`apate.opendc.org/v1`): NodeConfigurations
//! that create emulated nodes and script their failures, PodConfigurations
//! that script pods, both planned (tasks timed from the scenario start or
//! the pod's start) and direct (state inline in the spec).
//!
//! The scenario starts when the ConfigMap `kube-system/kubesim-scenario`
//! holds a `startTime` (RFC 3339), which `kubesim scenario start` writes.
//! The state in force is kept in [`Faults`], which the kubelet's actions
//! consult: leases stop for failed nodes, stage actions hang, fail or wait
//! out the node's network latency.

pub mod crds;
mod faults;
mod nodes;
mod pods;
mod schedule;
pub mod types;

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{
    run_workers, Api, Clock, EventRecorder, Informers, ObjectKey, ResourceRef, WorkQueue,
};
use parking_lot::Mutex;
use serde_json::Value;

pub use faults::{Faults, Gate, PodAction};
pub use nodes::{NAMESPACE_LABEL, NAME_LABEL};
pub use pods::{fail_creation, APATE_LABEL};

pub const SCENARIO_NAMESPACE: &str = "kube-system";
pub const SCENARIO_CONFIGMAP: &str = "kubesim-scenario";
pub const SCENARIO_KEY: &str = "startTime";

/// Runs the Apate controllers until dropped. `informers` must be run by
/// the caller.
pub async fn run(
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    clock: Clock,
    faults: Arc<Faults>,
    recorder: EventRecorder,
) {
    crds::ensure(&api).await;
    let nc_inf = informers.get(&crds::node_configurations());
    let pc_inf = informers.get(&crds::pod_configurations());
    let pod_inf = informers.get(&ResourceRef::core("pods"));
    let node_inf = informers.get_metadata(&ResourceRef::core("nodes"));
    let cm_inf = informers.get(&ResourceRef::core("configmaps"));

    let nc_queue: Arc<WorkQueue<ObjectKey>> = WorkQueue::new(clock.clone());
    let pod_queue: Arc<WorkQueue<ObjectKey>> = WorkQueue::new(clock.clone());
    let q = nc_queue.clone();
    nc_inf.on_change(move |c| q.add(ObjectKey::of(c.object())));
    // A node of a configuration going away (deleted by hand) is recreated.
    let q = nc_queue.clone();
    node_inf.on_change(move |c| {
        let labels = meta::labels(c.object());
        if let (Some(n), Some(ns)) = (labels.get(NAME_LABEL), labels.get(NAMESPACE_LABEL)) {
            q.add(ObjectKey::new(ns, n));
        }
    });
    let q = pod_queue.clone();
    pod_inf.on_change(move |c| {
        if meta::labels(c.object()).contains_key(APATE_LABEL) {
            q.add(ObjectKey::of(c.object()));
        }
    });
    let (q, pods) = (pod_queue.clone(), pod_inf.cache());
    pc_inf.on_change(move |c| {
        let pc = c.object();
        for p in pods.list_namespace(meta::namespace(pc)) {
            if meta::labels(&p).get(APATE_LABEL).map(String::as_str) == Some(meta::name(pc)) {
                q.add(ObjectKey::of(&p));
            }
        }
    });
    // The scenario start re-times every configuration.
    let (f, nq, pq, ncs, pods) = (
        faults.clone(),
        nc_queue.clone(),
        pod_queue.clone(),
        nc_inf.cache(),
        pod_inf.cache(),
    );
    cm_inf.on_change(move |c| {
        let cm = c.object();
        if meta::namespace(cm) != SCENARIO_NAMESPACE || meta::name(cm) != SCENARIO_CONFIGMAP {
            return;
        }
        let start = if matches!(c, kubesim_runtime::Change::Deleted(_)) {
            None
        } else {
            scenario_start(cm)
        };
        if f.set_scenario_start(start) {
            tracing::info!(?start, "scenario start set");
            for k in ncs.keys() {
                nq.add(k);
            }
            for p in pods.list() {
                if meta::labels(&p).contains_key(APATE_LABEL) {
                    pq.add(ObjectKey::of(&p));
                }
            }
        }
    });
    informers.wait_synced().await;
    let ncs = nodes::NodeConfigurations {
        api: api.clone(),
        clock: clock.clone(),
        faults: faults.clone(),
        recorder: recorder.clone(),
        configs: nc_inf.cache(),
        nodes: node_inf.cache(),
        announced: Mutex::new(BTreeMap::new()),
    };
    let pcs = pods::PodConfigurations {
        api,
        clock,
        faults,
        recorder,
        configs: pc_inf.cache(),
        pods: pod_inf.cache(),
    };
    tokio::join!(
        run_workers(nc_queue, 1, "apate-nodes", |k| ncs.reconcile(k)),
        run_workers(pod_queue, 2, "apate-pods", |k| pcs.reconcile(k)),
    );
}

fn scenario_start(cm: &Value) -> Option<jiff::Timestamp> {
    cm.get("data")
        .and_then(|d| d.get(SCENARIO_KEY))
        .and_then(Value::as_str)
        .and_then(meta::parse_time)
}
