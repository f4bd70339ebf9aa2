//! Serves kwok's ResourceUsage, ClusterResourceUsage and Metric kinds as
//! API objects and follows them live: any change recompiles the lot into
//! the model, and an object that does not compile is reported on itself
//! (a Warning event and a log line) and left out.

use std::collections::BTreeMap;
use std::sync::Arc;

use kubesim_core::meta;
use kubesim_runtime::{Api, EventRecorder, EventType, Informers};
use tokio::sync::Notify;

use super::metric::MetricSet;
use super::model::Model;
use super::rules::{Rule, Rules};
use crate::crd::{self, Definition};

const GROUP: &str = "kwok.x-k8s.io";
const VERSION: &str = "v1alpha1";

pub(crate) const RESOURCE_USAGE: Definition = Definition {
    group: GROUP,
    version: VERSION,
    kind: "ResourceUsage",
    plural: "resourceusages",
    short: "",
    namespaced: true,
};

pub(crate) const CLUSTER_RESOURCE_USAGE: Definition = Definition {
    group: GROUP,
    version: VERSION,
    kind: "ClusterResourceUsage",
    plural: "clusterresourceusages",
    short: "",
    namespaced: false,
};

pub(crate) const METRIC: Definition = Definition {
    group: GROUP,
    version: VERSION,
    kind: "Metric",
    plural: "metrics",
    short: "",
    namespaced: false,
};

/// Runs until dropped.
pub async fn run(
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    model: Arc<Model>,
    recorder: EventRecorder,
) {
    crd::ensure(&api, &[RESOURCE_USAGE, CLUSTER_RESOURCE_USAGE, METRIC]).await;
    let changed = Arc::new(Notify::new());
    let infs = [
        informers.get(&RESOURCE_USAGE.resource()),
        informers.get(&CLUSTER_RESOURCE_USAGE.resource()),
        informers.get(&METRIC.resource()),
    ];
    for inf in &infs {
        let n = changed.clone();
        inf.on_change(move |_| n.notify_one());
    }
    for inf in &infs {
        inf.wait_synced().await;
    }
    // What was last reported per object uid, so an unchanged bad object
    // is not reported again whenever another object changes.
    let mut reported: BTreeMap<String, String> = BTreeMap::new();
    loop {
        let mut report = |obj: &serde_json::Value, reason: &'static str, err: String| {
            let uid = meta::uid(obj).to_string();
            if reported.get(&uid) == Some(&err) {
                return;
            }
            tracing::warn!(error = %err, "usage object ignored");
            recorder.record(obj, EventType::Warning, reason, err.clone());
            reported.insert(uid, err);
        };
        let mut rules = Rules::default();
        for obj in sorted(infs[0].cache().list()) {
            match Rule::from_object(obj.clone(), false) {
                Ok(r) => {
                    let key = (
                        meta::namespace(&obj).to_string(),
                        meta::name(&obj).to_string(),
                    );
                    rules.by_pod.insert(key, r);
                }
                Err(e) => report(&obj, "InvalidResourceUsage", e),
            }
        }
        for obj in sorted(infs[1].cache().list()) {
            match Rule::from_object(obj.clone(), true) {
                Ok(r) => rules.cluster.push(r),
                Err(e) => report(&obj, "InvalidResourceUsage", e),
            }
        }
        let mut metrics = Vec::new();
        for obj in sorted(infs[2].cache().list()) {
            match MetricSet::from_object(obj.clone()) {
                Ok(m) => metrics.push(m),
                Err(e) => report(&obj, "InvalidMetric", e),
            }
        }
        model.set_rules(rules);
        model.set_metrics(metrics);
        changed.notified().await;
    }
}

/// Objects in namespace/name order: the order in which they take effect.
fn sorted(mut objs: Vec<Arc<serde_json::Value>>) -> Vec<Arc<serde_json::Value>> {
    objs.sort_by(|a, b| {
        (meta::namespace(a), meta::name(a)).cmp(&(meta::namespace(b), meta::name(b)))
    });
    objs
}
