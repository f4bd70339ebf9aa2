//! The lifecycle of one kind: every change of an object picks the stage it
//! is in and schedules that stage's steps after its delay; a newer change
//! replaces the pending job. Emulated kubelets act only on managed nodes
//! and the pods bound to them, and obey the faults Apate scenarios set.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, ApiError, Registry};
use kubesim_runtime::{
    retryable, run_workers, Api, Cache, Change, Clock, EventRecorder, ObjectKey, Requeue, Rng,
    WorkQueue,
};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::time::Instant;

use super::funcs::{ip_owner, FuncContext, KwokFuncs};
use super::jq::Input;
use super::resolve::Target;
use super::select::choose;
use super::spec::{Stage, Step};
use super::steps::{Failed, Outcome, Steps};
use crate::apate::{fail_creation, Faults, Gate, PodAction};
use crate::managed::NodeSelector;

/// How often a hung kubelet's action is tried again.
const HUNG_RETRY: Duration = Duration::from_secs(10);
/// Concurrent step runners for a kind other than pods and nodes.
const WORKERS: usize = 4;

/// What every kind's lifecycle shares.
pub struct Shared {
    pub api: Arc<dyn Api>,
    pub clock: Clock,
    pub rng: Rng,
    pub recorder: EventRecorder,
    pub faults: Arc<Faults>,
    pub selector: NodeSelector,
    pub funcs: Arc<FuncContext>,
    pub registry: Registry,
    /// Concurrent step runners for pods, and for nodes.
    pub pod_parallelism: usize,
    pub node_parallelism: usize,
}

#[derive(Clone)]
struct Job {
    /// The resourceVersion the job was planned for.
    rv: String,
    stage: Arc<Stage>,
    due: Instant,
    /// The step to start from (after a failure).
    step: usize,
    /// Whether the node's network latency has been waited out.
    latency_paid: bool,
    /// The object as the informer showed it at `rv`, already decoded, for
    /// a job due at once: reading it back from the cache would decode its
    /// bytes again. A job that waits (a running pod waits for its
    /// completion) reads it back when due: held for the whole wait, the
    /// decoded pods of a busy cluster were the largest part of the
    /// process's memory.
    obj: Option<Arc<Value>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pod,
    Node,
    Other,
}

pub struct Lifecycle {
    shared: Arc<Shared>,
    target: Target,
    kind: Kind,
    cache: Arc<Cache>,
    stages: RwLock<Arc<Vec<Arc<Stage>>>>,
    pending: Mutex<BTreeMap<ObjectKey, Job>>,
    queue: Arc<WorkQueue<ObjectKey>>,
}

impl Lifecycle {
    pub fn new(shared: Arc<Shared>, target: Target, cache: Arc<Cache>) -> Arc<Self> {
        let kind = match (
            target.resource.group.as_str(),
            target.resource.plural.as_str(),
        ) {
            ("", "pods") => Kind::Pod,
            ("", "nodes") => Kind::Node,
            _ => Kind::Other,
        };
        let queue = WorkQueue::new(shared.clock.clone());
        Arc::new(Lifecycle {
            shared,
            target,
            kind,
            cache,
            stages: RwLock::new(Arc::new(Vec::new())),
            pending: Mutex::new(BTreeMap::new()),
            queue,
        })
    }

    /// Replaces the stages and reconsiders every object.
    pub fn set_stages(&self, stages: Vec<Arc<Stage>>) {
        *self.stages.write() = Arc::new(stages);
        self.pending.lock().clear();
        for obj in self.cache.list() {
            self.plan(&obj, Some(&obj));
        }
    }

    pub fn on_change(&self, change: &Change) {
        match change {
            Change::Deleted(obj) => {
                self.pending.lock().remove(&ObjectKey::of(obj));
                if self.kind == Kind::Pod {
                    self.shared.funcs.pools.release(&pod_owner(obj));
                }
            }
            Change::Added(obj) => {
                if self.kind == Kind::Pod {
                    self.remember_ips(obj);
                }
                self.plan(obj, Some(obj));
            }
            Change::Modified { new, .. } => self.plan(new, Some(new)),
        }
    }

    /// Keeps addresses pods already show from being handed out again.
    fn remember_ips(&self, pod: &Value) {
        let node = meta::path(pod, "spec.nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let ips = meta::path(pod, "status.podIPs").and_then(Value::as_array);
        let (Some(ips), false) = (ips, node.is_empty()) else {
            return;
        };
        let owner = pod_owner(pod);
        for cidr in self.shared.funcs.pod_cidrs(node) {
            for ip in ips
                .iter()
                .filter_map(|i| i.get("ip").and_then(Value::as_str))
            {
                self.shared.funcs.pools.mark(&cidr, ip, &owner);
            }
        }
    }

    /// The node whose kubelet acts on this object, if it is emulated
    /// ("" for kinds no kubelet owns).
    fn kubelet_node<'v>(&self, obj: &'v Value) -> Option<&'v str> {
        match self.kind {
            Kind::Other => Some(""),
            Kind::Node => self.shared.selector.manages(obj).then(|| meta::name(obj)),
            Kind::Pod => {
                let node = meta::path(obj, "spec.nodeName").and_then(Value::as_str)?;
                let managed = self.shared.selector.manages_known(&self.shared.funcs, node);
                managed.then_some(node)
            }
        }
    }

    /// Plans the object's next stage, replacing any job pending for an
    /// older version of it.
    pub fn consider(&self, obj: &Value) {
        self.plan(obj, None)
    }

    /// [`consider`](Self::consider); `cached` is the object as the cache
    /// holds it, when the caller has it.
    fn plan(&self, obj: &Value, cached: Option<&Arc<Value>>) {
        if self.kubelet_node(obj).is_none() {
            return;
        }
        let key = ObjectKey::of(obj);
        let rv = meta::resource_version(obj);
        if self.pending.lock().get(&key).is_some_and(|j| j.rv == rv) {
            return;
        }
        let stages = self.stages.read().clone();
        let input = Input::new(obj);
        let Some(stage) = choose(&stages, obj, &input, &self.shared.rng).cloned() else {
            return;
        };
        let delay = stage
            .delay
            .compute(&input, self.shared.clock.now(), &self.shared.rng);
        let due = self.shared.clock.instant() + delay;
        let job = Job {
            rv: rv.to_string(),
            stage,
            due,
            step: 0,
            latency_paid: false,
            obj: cached.filter(|_| delay.is_zero()).cloned(),
        };
        self.pending.lock().insert(key.clone(), job);
        self.queue.add_after(key, delay);
    }

    pub async fn run(self: Arc<Self>) {
        let workers = match self.kind {
            Kind::Pod => self.shared.pod_parallelism,
            Kind::Node => self.shared.node_parallelism,
            Kind::Other => WORKERS,
        };
        let this = self.clone();
        run_workers(self.queue.clone(), workers, "stages", move |key| {
            let this = this.clone();
            async move { this.execute(key).await }
        })
        .await;
    }

    /// What the kubelet does about this job now.
    fn gate(&self, obj: &Value, stage: &Stage) -> Gate {
        let faults = &self.shared.faults;
        match self.kind {
            Kind::Other => Gate::Proceed(Duration::ZERO),
            Kind::Node => faults.node_gate(meta::name(obj)),
            Kind::Pod => {
                let action = if stage.steps.iter().any(|s| matches!(s, Step::Delete))
                    || meta::is_deleting(obj)
                {
                    PodAction::Delete
                } else if meta::path(obj, "status.containerStatuses").is_none() {
                    PodAction::Create
                } else {
                    PodAction::Update
                };
                match faults.pod_gate(obj, action) {
                    Gate::Fail if action != PodAction::Create => Gate::Hang,
                    g => g,
                }
            }
        }
    }

    async fn execute(&self, key: ObjectKey) -> Result<Requeue, ApiError> {
        let now = self.shared.clock.instant();
        let Some(mut job) = self.pending.lock().get(&key).cloned() else {
            return Ok(None);
        };
        if job.due > now {
            // An older job's timer; this job has its own.
            return Ok(None);
        }
        let unchanged = |o: &&Arc<Value>| {
            self.cache.resource_version(&key.namespace, &key.name) == Some(job.rv.clone())
                && meta::resource_version(o) == job.rv
        };
        // A job due at once holds its object; one that waited reads it.
        let obj = match job.obj.as_ref().filter(unchanged) {
            Some(o) => o.clone(),
            None => match self.cache.get(&key.namespace, &key.name) {
                Some(o) => o,
                None => {
                    self.pending.lock().remove(&key);
                    return Ok(None);
                }
            },
        };
        // The node may have moved to another shard since the job was
        // planned: its kubelet is now elsewhere.
        if self.kubelet_node(&obj).is_none() {
            self.finish(&key, &job);
            return Ok(None);
        }
        // A change no stage matched left the job in place; it must still
        // fit the object as it is now.
        if meta::resource_version(&obj) != job.rv
            && !job.stage.selector.matches(&obj, &Input::new(&obj))
        {
            self.finish(&key, &job);
            return Ok(None);
        }
        match self.gate(&obj, &job.stage) {
            Gate::Hang => {
                job.due = now + HUNG_RETRY;
                self.pending.lock().insert(key.clone(), job);
                return Ok(Some(HUNG_RETRY));
            }
            Gate::Fail => {
                self.finish(&key, &job);
                fail_creation(&self.shared.api, &self.shared.clock, &obj).await?;
                return Ok(None);
            }
            Gate::Proceed(latency) if !latency.is_zero() && !job.latency_paid => {
                job.latency_paid = true;
                job.due = now + latency;
                self.pending.lock().insert(key.clone(), job);
                return Ok(Some(latency));
            }
            Gate::Proceed(_) => {}
        }
        let steps = Steps {
            api: &self.shared.api,
            recorder: &self.shared.recorder,
            funcs: KwokFuncs {
                ctx: &self.shared.funcs,
                node: self.kubelet_node(&obj).unwrap_or(""),
            },
            target: &self.target,
            registry: &self.shared.registry,
        };
        let ran = steps.run(&job.stage, &obj, job.step).await;
        match ran {
            Ok(outcome) => {
                self.finish(&key, &job);
                if let (Outcome::Written(Some(o)), true) = (outcome, job.stage.immediate_next_stage)
                {
                    self.consider(&o);
                }
                Ok(None)
            }
            Err(Failed { step, error }) => {
                if retryable(&error) {
                    job.step = step;
                    self.pending.lock().insert(key, job);
                    return Err(error);
                }
                tracing::warn!(stage = %job.stage.name, object = %key, error = %error.message,
                    "stage step failed");
                self.finish(&key, &job);
                Ok(None)
            }
        }
    }

    /// Drops the job unless a newer one has replaced it meanwhile.
    fn finish(&self, key: &ObjectKey, job: &Job) {
        let mut pending = self.pending.lock();
        if pending
            .get(key)
            .is_some_and(|j| j.rv == job.rv && Arc::ptr_eq(&j.stage, &job.stage))
        {
            pending.remove(key);
        }
    }

    /// Plans every object again (jobs already planned for an object's
    /// current version are kept): after the shards changed, for the nodes
    /// and pods this emulator has just taken over.
    pub fn reconsider(&self) {
        for obj in self.cache.list() {
            self.plan(&obj, Some(&obj));
        }
    }

    /// Reconsiders the pods bound to a node that has just appeared.
    pub fn node_added(&self, node: &str) {
        if self.kind == Kind::Pod {
            for pod in self.cache.on_node(node) {
                self.plan(&pod, Some(&pod));
            }
        }
    }
}

fn pod_owner(pod: &Value) -> String {
    ip_owner(meta::uid(pod), meta::namespace(pod), meta::name(pod))
}
