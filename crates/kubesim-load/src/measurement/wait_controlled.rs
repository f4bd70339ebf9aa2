//! WaitForControlledPodsRunning: from `start` on, every object of one
//! controller kind (ReplicationController, ReplicaSet, Deployment,
//! StatefulSet, DaemonSet, Job, or a custom kind with `spec.replicas`) is
//! tracked until the pods it controls run; `gather` is the barrier that
//! waits for all of them, each within `operationTimeout` of its last
//! change.
//!
//! Pods belong to an object through their controller ownerReference
//! (a Deployment's through its ReplicaSets). An object is done when
//! between `desired - countErrorMargin` and `desired` of its pods are
//! Running, Ready and built from its current template, and every other
//! pod has finished; a deleted object is done when no pod of it is left
//! running or terminating. Like upstream's checkers, an outcome sticks
//! until the object's spec changes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::meta;
use kubesim_runtime::{Cache, Change, Clock, ListOptions, ObjectKey, ResourceRef, ShapeCheck};
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::params::{self, Params};
use crate::report::Summary;

use super::informer_pool::{Pooled, Subscription};
use super::wait_pods::{is_running_ready, node, phase, PodSelector};
use super::{Ctx, ErrorKind, Measurement, MeasurementError};
use kubesim_gocompat::duration::format_std;

const METHOD: &str = "WaitForControlledPodsRunning";
const DEFAULT_OPERATION_TIMEOUT: Duration = Duration::from_secs(600);
const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// How often objects are checked; fine enough for a barrier, cheap
/// enough at thousands of pods.
const CHECK_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    Pending,
    Running,
    Deleted,
    TimedOut,
    /// The desired count cannot be read from the object.
    Unknown(String),
}

struct Tracked {
    object: Arc<Value>,
    deleted: bool,
    /// When the spec last changed (or the object appeared or went).
    changed: Instant,
    timeout: Duration,
    status: Status,
    /// Every ReplicaSet seen under a Deployment, so that its pods are
    /// still found after the ReplicaSet itself is gone.
    replica_sets: BTreeSet<String>,
}

/// What the handlers and the checks share.
struct Shared {
    kind: String,
    operation_timeout: Duration,
    objects: BTreeMap<ObjectKey, Tracked>,
    /// Uids of the controllers (objects, or a Deployment's ReplicaSets)
    /// whose pods changed since the last check: only their objects need
    /// counting again, which keeps a check cheap at thousands of pods.
    dirty: BTreeSet<String>,
}

struct Running {
    resource: ResourceRef,
    selector: PodSelector,
    margin: i64,
    check_updated: bool,
    shared: Arc<Mutex<Shared>>,
    pods: Arc<Cache>,
    replica_sets: Option<Arc<Cache>>,
    clock: Clock,
}

struct Active {
    run: Arc<Running>,
    /// Its handlers on the shared informers; dropping them lets go.
    _subscriptions: Vec<Subscription>,
    /// The checker; dropping the set stops it.
    _tasks: JoinSet<()>,
}

#[derive(Default)]
pub struct WaitForControlledPodsRunning {
    active: Option<Active>,
}

#[async_trait::async_trait]
impl Measurement for WaitForControlledPodsRunning {
    async fn execute(
        &mut self,
        ctx: &Ctx,
        identifier: &str,
        p: &Params,
    ) -> Result<Vec<Summary>, MeasurementError> {
        match params::string_or(p, "action", "")?.as_str() {
            "start" => self.start(ctx, p).await.map(|()| Vec::new()),
            "gather" => {
                let active = self.active.as_ref().ok_or_else(|| {
                    MeasurementError::failed(format!("metric {METHOD} has not been started"))
                })?;
                let sync = params::duration_or(p, "syncTimeout", DEFAULT_SYNC_TIMEOUT)?;
                active.run.gather(ctx, identifier, sync).await
            }
            "stop" => {
                self.active = None;
                Ok(Vec::new())
            }
            other => Err(MeasurementError::unknown_action(METHOD, other)),
        }
    }
}

impl WaitForControlledPodsRunning {
    async fn start(&mut self, ctx: &Ctx, p: &Params) -> Result<(), MeasurementError> {
        if self.active.is_some() {
            // Upstream keeps the running measurement on a second start.
            return Ok(());
        }
        let api_version = params::required_string(p, "apiVersion")?;
        let kind = params::required_string(p, "kind")?;
        let selector = PodSelector::parse(p)?;
        let operation_timeout =
            params::duration_or(p, "operationTimeout", DEFAULT_OPERATION_TIMEOUT)?;
        let check_updated = params::bool_or(p, "checkIfPodsAreUpdated", true)?;
        let margin = params::int_or(p, "countErrorMargin", 0)?;
        let (resource, _) = ctx.cluster.resolve(&api_version, &kind).await?;

        let shared = Arc::new(Mutex::new(Shared {
            kind: kind.clone(),
            operation_timeout,
            objects: BTreeMap::new(),
            dirty: BTreeSet::new(),
        }));
        let pool = |resource: ResourceRef, label: Option<String>, field: Option<String>| {
            ctx.informer(resource, &selector.namespace, label, field)
        };
        let objects = pool(
            resource.clone(),
            selector.label_selector.clone(),
            selector.field_selector.clone(),
        );
        let (sh, clock) = (shared.clone(), ctx.clock.clone());
        let mut subscriptions = vec![objects.subscribe(move |c| track(&sh, &clock, c))];
        // The controllers' label selectors say nothing of their pods'
        // labels: follow every pod of the namespace.
        let pods = pool(ResourceRef::core("pods"), None, None);
        let replica_sets = (kind == "Deployment")
            .then(|| pool(ResourceRef::new("apps", "v1", "replicasets"), None, None));
        for i in [Some(&pods), replica_sets.as_ref()].into_iter().flatten() {
            let sh = shared.clone();
            subscriptions.push(i.subscribe(move |c| mark_controllers(&sh, c)));
        }
        let informers: Vec<&Pooled> = [Some(&objects), Some(&pods), replica_sets.as_ref()]
            .into_iter()
            .flatten()
            .map(|p| p.as_ref())
            .collect();
        super::wait_synced(
            ctx,
            METHOD,
            &format!("{kind} objects and their pods"),
            &informers,
        )
        .await?;
        let run = Arc::new(Running {
            resource,
            selector,
            margin,
            check_updated,
            shared,
            pods: pods.informer().cache(),
            replica_sets: replica_sets.map(|i| i.informer().cache()),
            clock: ctx.clock.clone(),
        });
        let mut tasks = JoinSet::new();
        tasks.spawn(check_forever(run.clone()));
        self.active = Some(Active {
            run,
            _subscriptions: subscriptions,
            _tasks: tasks,
        });
        Ok(())
    }
}

/// Records a change of a controller object; a changed spec (or its
/// deletion) starts its wait over, as upstream replaces the checker.
fn track(shared: &Mutex<Shared>, clock: &Clock, change: &Change) {
    let now = clock.instant();
    let mut sh = shared.lock();
    let (op, kind) = (sh.operation_timeout, sh.kind.clone());
    let key = ObjectKey::of(change.object());
    sh.dirty.insert(meta::uid(change.object()).to_string());
    match change {
        Change::Added(o) => {
            sh.objects.insert(key, Tracked::new(o.clone(), now, op));
        }
        Change::Modified { old, new } => {
            let spec_changed = old.get("spec") != new.get("spec");
            let scaled_down = matches!(
                (desired(&kind, old), desired(&kind, new)),
                (Ok(Some(a)), Ok(Some(b))) if b < a
            );
            let t = sh
                .objects
                .entry(key)
                .or_insert_with(|| Tracked::new(new.clone(), now, op));
            t.object = new.clone();
            if spec_changed {
                t.changed = now;
                t.status = Status::Pending;
                // Removing pods takes about twice as long as making them,
                // upstream reckons.
                t.timeout = if scaled_down { op * 2 } else { op };
            }
        }
        Change::Deleted(o) => {
            let t = sh
                .objects
                .entry(key)
                .or_insert_with(|| Tracked::new(o.clone(), now, op));
            t.object = o.clone();
            t.deleted = true;
            t.changed = now;
            t.status = Status::Pending;
            t.timeout = op * 2;
        }
    }
}

impl Tracked {
    fn new(object: Arc<Value>, now: Instant, timeout: Duration) -> Self {
        Tracked {
            object,
            deleted: false,
            changed: now,
            timeout,
            status: Status::Pending,
            replica_sets: BTreeSet::new(),
        }
    }
}

/// Notes that the controller of a changed pod (or ReplicaSet) must be
/// counted again.
fn mark_controllers(shared: &Mutex<Shared>, change: &Change) {
    let mut sh = shared.lock();
    if let Some(uid) = controller(change.object())
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
    {
        sh.dirty.insert(uid.to_string());
    }
    if let Change::Modified { old, .. } = change {
        if let Some(uid) = old.controller() {
            sh.dirty.insert(uid.to_string());
        }
    }
}

/// How many pods `obj` wants running; None while it cannot tell yet (a
/// DaemonSet its controller has not counted nodes for).
fn desired(kind: &str, obj: &Value) -> Result<Option<i64>, String> {
    let int = |path: &str| obj.pointer(path).and_then(Value::as_i64);
    match kind {
        "Job" => Ok(Some(int("/spec/parallelism").unwrap_or(1))),
        "DaemonSet" => Ok(int("/status/desiredNumberScheduled")),
        // The API server defaults spec.replicas of these to 1.
        "ReplicationController" | "ReplicaSet" | "Deployment" | "StatefulSet" => {
            Ok(Some(int("/spec/replicas").unwrap_or(1)))
        }
        _ => int("/spec/replicas")
            .map(Some)
            .ok_or_else(|| format!("{kind} {} has no spec.replicas", ObjectKey::of(obj))),
    }
}

/// Checks objects every second, so that an outcome is settled when it
/// happens rather than at gather; aborted with the measurement.
async fn check_forever(run: Arc<Running>) {
    loop {
        run.clock.sleep(CHECK_INTERVAL).await;
        run.check();
    }
}

impl Running {
    /// Settles every pending object that is done or out of time.
    fn check(&self) {
        let now = self.clock.instant();
        let mut sh = self.shared.lock();
        let kind = sh.kind.clone();
        let dirty = std::mem::take(&mut sh.dirty);
        for t in sh.objects.values_mut() {
            if t.status != Status::Pending {
                continue;
            }
            // Nothing of it changed since it was last found not done.
            let changed = dirty.contains(meta::uid(&t.object))
                || t.replica_sets.iter().any(|u| dirty.contains(u));
            let done = if changed {
                self.is_done(&kind, t)
            } else {
                Ok(false)
            };
            match done {
                Ok(true) => {
                    t.status = if t.deleted {
                        Status::Deleted
                    } else {
                        Status::Running
                    }
                }
                Ok(false) if now >= t.changed + t.timeout => t.status = Status::TimedOut,
                Ok(false) => {}
                Err(e) => t.status = Status::Unknown(e),
            }
        }
    }

    fn is_done(&self, kind: &str, t: &mut Tracked) -> Result<bool, String> {
        let want = if t.deleted {
            0
        } else {
            match desired(kind, &t.object)? {
                Some(n) => n,
                None => return Ok(false),
            }
        };
        let pods = self.pods_of(kind, &t.object, &mut t.replica_sets);
        let template = t.object.pointer("/spec/template/spec");
        let mut running = 0;
        for p in &pods {
            let updated = !self.check_updated
                || template.is_none_or(|tpl| {
                    is_derivative(tpl, p.pointer("/spec").unwrap_or(&Value::Null))
                });
            if is_running_ready(p) && updated {
                running += 1;
            } else if meta::is_deleting(p) || !matches!(phase(p), "Succeeded" | "Failed") {
                // Anything else still on its way up or down.
                return Ok(false);
            }
        }
        Ok(want - self.margin <= running && running <= want)
    }

    /// The pods `obj` controls, directly or (a Deployment) through its
    /// ReplicaSets, the current ones added to `seen`.
    fn pods_of(&self, kind: &str, obj: &Value, seen: &mut BTreeSet<String>) -> Vec<Arc<Value>> {
        let uid = meta::uid(obj);
        match (&self.replica_sets, kind) {
            (Some(rs), "Deployment") => {
                for r in rs.controlled_by(uid) {
                    seen.insert(meta::uid(&r).to_string());
                }
                seen.iter()
                    .flat_map(|u| self.pods.controlled_by(u))
                    .collect()
            }
            _ => self.pods.controlled_by(uid),
        }
    }

    async fn gather(
        &self,
        ctx: &Ctx,
        identifier: &str,
        sync_timeout: Duration,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let listed = self.list(ctx).await?;
        // First see every object the API server has now, at least at its
        // listed version, so that nothing created just before is missed.
        let deadline = ctx.clock.instant() + sync_timeout;
        while !self.seen_all(&listed) {
            if ctx.clock.instant() >= deadline {
                return Err(MeasurementError::failed(format!(
                    "{METHOD}: timed out after {} while waiting for the {} objects to be observed",
                    format_std(sync_timeout),
                    self.shared.lock().kind
                )));
            }
            ctx.clock.sleep(CHECK_INTERVAL).await;
        }
        // Then wait until each object is done or out of time; every wait
        // ends, as each has its own timeout.
        loop {
            self.check();
            let pending = self
                .shared
                .lock()
                .objects
                .values()
                .any(|t| t.status == Status::Pending);
            if !pending {
                break;
            }
            ctx.clock.sleep(CHECK_INTERVAL).await;
        }
        self.outcome(ctx, identifier, &listed)
    }

    /// The keys and resourceVersions of the objects the API serves now.
    async fn list(&self, ctx: &Ctx) -> Result<BTreeMap<ObjectKey, String>, MeasurementError> {
        let opts = ListOptions {
            label_selector: self.selector.label_selector.clone(),
            field_selector: self.selector.field_selector.clone(),
            ..Default::default()
        };
        let list = ctx
            .cluster
            .api()
            .list(&self.resource, &self.selector.namespace, &opts)
            .await?;
        // The informer skips objects of the wrong shape: waiting to see
        // them there would never end.
        let check = ShapeCheck::new(&self.resource);
        Ok(list
            .get("items")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter(|o| check.admits(o))
                    .map(|o| (ObjectKey::of(o), meta::resource_version(o).to_string()))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The live tracked objects are exactly `listed`, each seen at its
    /// listed version or later.
    fn seen_all(&self, listed: &BTreeMap<ObjectKey, String>) -> bool {
        let sh = self.shared.lock();
        let live: BTreeMap<&ObjectKey, &Tracked> =
            sh.objects.iter().filter(|(_, t)| !t.deleted).collect();
        live.len() == listed.len()
            && listed.iter().all(|(k, rv)| {
                live.get(k)
                    .is_some_and(|t| not_older(meta::resource_version(&t.object), rv))
            })
    }

    fn outcome(
        &self,
        ctx: &Ctx,
        identifier: &str,
        listed: &BTreeMap<ObjectKey, String>,
    ) -> Result<Vec<Summary>, MeasurementError> {
        let sh = self.shared.lock();
        let timed_out: Vec<&ObjectKey> = sh
            .objects
            .iter()
            .filter(|(_, t)| t.status == Status::TimedOut)
            .map(|(k, _)| k)
            .collect();
        // Objects made after the list are not the gather's business.
        let running = listed
            .keys()
            .filter(|k| {
                sh.objects
                    .get(*k)
                    .is_some_and(|t| t.status == Status::Running)
            })
            .count();
        let expected = listed.len();
        let unknown: Vec<&str> = sh
            .objects
            .values()
            .filter_map(|t| match &t.status {
                Status::Unknown(e) => Some(e.as_str()),
                _ => None,
            })
            .collect();
        let kind = &sh.kind;
        let message = if !timed_out.is_empty() {
            let keys: Vec<String> = timed_out.iter().map(|k| k.to_string()).collect();
            format!(
                "{} objects timed out: {kind}s: {}",
                timed_out.len(),
                keys.join(", ")
            )
        } else if running != expected {
            format!(
                "incorrect objects number: {running}/{expected} {kind}s are running with all pods"
            )
        } else if !unknown.is_empty() {
            format!("unknown objects statuses: {}", unknown.join("; "))
        } else {
            return Ok(Vec::new());
        };
        let failed = self.failed_pods(&sh);
        let summary = Summary::json(
            format!("{METHOD}_{identifier}_failedpods"),
            ctx.clock.now(),
            &failed,
        );
        Err(MeasurementError {
            kind: ErrorKind::Failed,
            message,
            summaries: vec![summary],
        })
    }

    /// The pods of unfinished objects that are not running.
    fn failed_pods(&self, sh: &Shared) -> Vec<FailedPod> {
        let mut out = Vec::new();
        for t in sh.objects.values() {
            if matches!(t.status, Status::Running | Status::Deleted) {
                continue;
            }
            let mut seen = t.replica_sets.clone();
            for p in self.pods_of(&sh.kind, &t.object, &mut seen) {
                if is_running_ready(&p) && !t.deleted {
                    continue;
                }
                out.push(FailedPod {
                    namespace: meta::namespace(&p).to_string(),
                    controlled_by: controller_name(&p),
                    name: meta::name(&p).to_string(),
                    host: node(&p).to_string(),
                    status: pod_state(&p),
                });
            }
        }
        out
    }
}

/// One entry of the `_failedpods` report.
#[derive(Debug, Serialize)]
struct FailedPod {
    namespace: String,
    #[serde(rename = "controlledBy")]
    controlled_by: String,
    name: String,
    host: String,
    status: String,
}

/// The controller ownerReference of an object.
fn controller(obj: &Value) -> Option<&Value> {
    obj.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

fn controller_name(pod: &Value) -> String {
    controller(pod)
        .and_then(|r| r.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The pod's phase, or what keeps a Running pod from counting.
fn pod_state(pod: &Value) -> String {
    if meta::is_deleting(pod) {
        return "Terminating".into();
    }
    match phase(pod) {
        "" => "Pending".into(),
        "Running" if !is_running_ready(pod) => "RunningButNotReady".into(),
        p => p.into(),
    }
}

/// Whether resourceVersion `seen` is at least `listed` (they are
/// numbers on every API server kubesim talks to; otherwise only equal
/// versions count).
fn not_older(seen: &str, listed: &str) -> bool {
    match (seen.parse::<u64>(), listed.parse::<u64>()) {
        (Ok(a), Ok(b)) => a >= b,
        _ => seen == listed,
    }
}

/// Upstream's `equality.Semantic.DeepDerivative(template, pod)`: every
/// field the template sets has the same value in the pod, which may set
/// more (defaults, injected volumes); lists compare as a prefix.
fn is_derivative(template: &Value, pod: &Value) -> bool {
    match template {
        Value::Null => true,
        Value::String(s) if s.is_empty() => true,
        Value::Object(t) => t.iter().all(|(k, tv)| match pod.get(k) {
            Some(pv) => is_derivative(tv, pv),
            None => is_zero(tv),
        }),
        Value::Array(t) => match pod.as_array() {
            _ if t.is_empty() => true,
            Some(p) => t.len() <= p.len() && t.iter().zip(p).all(|(a, b)| is_derivative(a, b)),
            None => false,
        },
        Value::Number(a) => match pod.as_number() {
            Some(b) => a == b || a.as_f64() == b.as_f64(),
            None => false,
        },
        other => other == pod,
    }
}

/// A value Go would omit from JSON when empty: absent in the pod means
/// the same.
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_zero),
    }
}

#[cfg(test)]
mod tests;
