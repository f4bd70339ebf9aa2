//! The lifecycle of one kind: every change of an object picks the stage it
//! is in and schedules that stage's steps after its delay; a newer change
//! replaces the pending job. Emulated kubelets act only on managed nodes
//! and the pods bound to them, and obey the faults Apate scenarios set.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kubesim_core::{meta, ApiError, Registry};
use kubesim_runtime::{
    retryable, run_workers, Ahead, Api, Cache, Change, Clock, EventRecorder, ObjectKey, Promise,
    Requeue, Rng, WorkQueue,
};
use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::time::Instant;

use super::funcs::{ip_owner, AheadFuncs, FuncContext, Guess, KwokFuncs};
use super::jq::Input;
use super::resolve::Target;
use super::select::choose;
use super::spec::{Patch, Stage, Step};
use super::steps::{lean, patch_body, patch_options, Failed, Outcome, Rendered, Steps};
use super::window::{Place, Window};
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
    /// Where a stage's first patch is rendered ahead of its job.
    pub ahead: Option<Ahead>,
    /// Waiting jobs rendered ahead at most (see `window`).
    pub rendered_ahead: usize,
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
    /// completion) has it from its render ahead, read then by the helper
    /// thread, or reads it back when due: held for the whole wait, the
    /// decoded pods of a busy cluster were the largest part of the
    /// process's memory.
    obj: Option<Arc<Value>>,
    /// The stage's first patch rendered ahead for the object at `rv`,
    /// when due.
    rendered: Option<Arc<RenderedAhead>>,
}

/// A stage's first patch as rendered ahead, on another thread, for the
/// object a job was planned for and the time it is due at: the same
/// render a kubelet makes then, if it acts then, on that object, for that
/// node, and the functions that read other objects answer then as they
/// were guessed to.
struct RenderedAhead {
    node: String,
    now: String,
    made: Mutex<Made>,
    /// Its place in the window, held as long as the render is.
    _place: Place,
}

/// Where a render ahead stands.
enum Made {
    Promised(Promise<MadeAhead>),
    Ready(MadeAhead),
    /// Taken, or never begun.
    Gone,
}

/// A render made ahead.
struct MadeAhead {
    /// The object it was made from: the job's, when it is due, without a
    /// decode on the busy thread. None when it had changed.
    obj: Option<Arc<Value>>,
    body: Result<Rendered, String>,
    /// What the render rests on.
    guesses: Vec<Guess>,
}

/// The object a render ahead is made from.
enum Source {
    /// At hand, decoded.
    Decoded(Arc<Value>),
    /// In the cache, at the job's version: read on the helper thread, so
    /// that a job deferred by the window costs the busy thread no decode.
    Cached {
        cache: Arc<Cache>,
        key: ObjectKey,
        rv: String,
    },
}

impl Source {
    /// The object, if still at the version the job was planned for.
    fn object(self) -> Option<Arc<Value>> {
        match self {
            Source::Decoded(obj) => Some(obj),
            Source::Cached { cache, key, rv } => cache
                .get(&key.namespace, &key.name)
                .filter(|o| meta::resource_version(o) == rv),
        }
    }
}

impl RenderedAhead {
    /// What the helper made, once it has (waiting if it is making it);
    /// work it has not begun is dropped, left to the caller.
    fn settle(made: &mut Made) {
        *made = match std::mem::replace(made, Made::Gone) {
            Made::Promised(p) => p.try_get().map_or(Made::Gone, Made::Ready),
            other => other,
        };
    }

    /// The object the render was made from, if the helper read it.
    fn object(&self) -> Option<Arc<Value>> {
        let mut made = self.made.lock();
        Self::settle(&mut made);
        match &*made {
            Made::Ready(m) => m.obj.clone(),
            _ => None,
        }
    }

    /// The render, if it was made for `due`'s node at `now`, is ready (or
    /// being made) and its guesses hold; None leaves it to the caller.
    /// Checking the guesses calls their functions as the render when due
    /// would, so that render may still be made after a failed check.
    fn take(&self, due: &KwokFuncs, now: &str) -> Option<Rendered> {
        if self.node != due.node || self.now != now {
            return None;
        }
        let mut made = self.made.lock();
        Self::settle(&mut made);
        let Made::Ready(m) = std::mem::replace(&mut *made, Made::Gone) else {
            return None;
        };
        m.guesses
            .iter()
            .all(|g| g.holds(due))
            .then_some(m.body.ok()?)
    }
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
    window: Window,
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
        let window = Window::new(shared.rendered_ahead);
        Arc::new(Lifecycle {
            shared,
            target,
            kind,
            cache,
            stages: RwLock::new(Arc::new(Vec::new())),
            pending: Mutex::new(BTreeMap::new()),
            queue,
            window,
        })
    }

    /// Replaces the stages and reconsiders every object.
    pub fn set_stages(&self, stages: Vec<Arc<Stage>>) {
        *self.stages.write() = Arc::new(stages);
        self.pending.lock().clear();
        self.window.clear();
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
        let Some(node) = self.kubelet_node(obj) else {
            return;
        };
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
        let rendered = match cached {
            Some(obj) if self.renders_ahead(&stage, delay) => match self.window.place() {
                Some(place) => {
                    let source = Source::Decoded(obj.clone());
                    self.render_ahead(&stage, node, source, due, place)
                }
                None => {
                    self.window.defer(due, key.clone(), node);
                    None
                }
            },
            _ => None,
        };
        let job = Job {
            rv: rv.to_string(),
            stage,
            due,
            step: 0,
            latency_paid: false,
            obj: cached.filter(|_| delay.is_zero()).cloned(),
            rendered,
        };
        self.pending.lock().insert(key.clone(), job);
        self.queue.add_after(key, delay);
        self.refill();
    }

    /// Whether a job of `stage` due after `delay` is worth a render ahead:
    /// it waits, and its stage starts with a patch. (A render for a stage
    /// due at once was found to be still in the making when due, so it
    /// only took the helper from other work.)
    fn renders_ahead(&self, stage: &Stage, delay: Duration) -> bool {
        self.shared.ahead.is_some() && !delay.is_zero() && first_patch(stage).is_some()
    }

    /// Renders ahead for the deferred jobs due soonest, while the window
    /// has room.
    fn refill(&self) {
        if self.shared.ahead.is_none() {
            return;
        }
        let now = self.shared.clock.instant();
        while let Some((due, key, node, place)) = self.window.next() {
            if due <= now {
                continue;
            }
            let mut pending = self.pending.lock();
            // The entry is stale if the job was replaced, ran or is gone.
            let Some(job) = pending
                .get_mut(&key)
                .filter(|j| j.due == due && j.step == 0 && j.rendered.is_none())
            else {
                continue;
            };
            let source = Source::Cached {
                cache: self.cache.clone(),
                key: key.clone(),
                rv: job.rv.clone(),
            };
            job.rendered = self.render_ahead(&job.stage, &node, source, due, place);
        }
    }

    /// Renders the first patch of `stage` on the helper thread, as it will
    /// render at `due`, for `node`'s kubelet: most stages that wait (a pod
    /// starting after its delay, running for its duration) come to one
    /// patch, whose render is then off this thread.
    fn render_ahead(
        &self,
        stage: &Arc<Stage>,
        node: &str,
        source: Source,
        due: Instant,
        place: Place,
    ) -> Option<Arc<RenderedAhead>> {
        let ahead = self.shared.ahead.as_ref()?;
        let at = self.shared.clock.at(due);
        let funcs = AheadFuncs {
            node: node.to_string(),
            now: meta::format_time(at),
            start_time: self.shared.funcs.start_time.clone(),
            guess_from: Some(self.shared.funcs.clone()),
            guessed: Default::default(),
        };
        let (node, now) = (funcs.node.clone(), funcs.now.clone());
        let stage = stage.clone();
        let (api, resource) = (self.shared.api.clone(), self.target.resource.clone());
        let body = ahead.spawn(move || {
            let (Some((i, p)), Some(obj)) = (first_patch(&stage), source.object()) else {
                return MadeAhead {
                    obj: None,
                    body: Err("nothing to render ahead".into()),
                    guesses: Vec::new(),
                };
            };
            let body = patch_body(&stage, p, &obj, &funcs);
            // The server may prepare the update too; it checks when the
            // patch comes that it is this one, and the object unchanged.
            if let Ok(Some((kind, body))) = &body {
                let opts = patch_options(lean(&stage, i));
                let (ns, name) = (meta::namespace(&obj), meta::name(&obj));
                let sub = p.subresource.as_deref();
                api.patch_ahead(&resource, ns, name, *kind, body, sub, &opts, &funcs.now);
            }
            MadeAhead {
                obj: Some(obj),
                body,
                guesses: funcs.guessed.into_inner(),
            }
        });
        Some(Arc::new(RenderedAhead {
            node,
            now,
            made: Mutex::new(Made::Promised(body)),
            _place: place,
        }))
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
        // A job due at once holds its object; one that waited may have it
        // from its render ahead.
        let ahead = job.rendered.as_ref().filter(|_| job.step == 0);
        let read_ahead = ahead.and_then(|r| r.object());
        let obj = match job.obj.as_ref().or(read_ahead.as_ref()).filter(unchanged) {
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
        // The render made ahead holds for the version it was made for.
        let first = ahead
            .filter(|_| meta::resource_version(&obj) == job.rv)
            .and_then(|r| r.take(&steps.funcs, &meta::format_time(self.shared.clock.now())));
        let ran = steps.run(&job.stage, &obj, job.step, first).await;
        match ran {
            Ok(outcome) => {
                self.finish(&key, &job);
                if let (Outcome::Written(Some(o)), true) = (outcome, job.stage.immediate_next_stage)
                {
                    self.consider(&o);
                }
                // The object as the job saw it is often the last copy of
                // that version: freed on the helper thread, when there is
                // one.
                if let Some(ahead) = &self.shared.ahead {
                    ahead.drop_later((job, obj));
                }
                self.refill();
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

/// The first step of `stage` when it is a patch or only events come
/// before it: the patch a job starts with, on the object as planned.
fn first_patch(stage: &Stage) -> Option<(usize, &Patch)> {
    match stage
        .steps
        .iter()
        .enumerate()
        .find(|(_, s)| !matches!(s, Step::Event(_)))?
    {
        (i, Step::Patch(p)) => Some((i, p)),
        _ => None,
    }
}

fn pod_owner(pod: &Value) -> String {
    ip_owner(meta::uid(pod), meta::namespace(pod), meta::name(pod))
}
