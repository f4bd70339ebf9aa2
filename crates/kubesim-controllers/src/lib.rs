//! The control loops upstream runs in kube-controller-manager that the API
//! server's own semantics depend on: without the namespace controller a
//! deleted namespace never goes away, and without the garbage collector
//! owner references and propagation policies mean nothing.
//!
//! Every loop reaches objects only through the `Api` and the shared
//! informers of its [`Context`], and must never poll or read wall time:
//! time-based work is re-queued on the `Clock`, so the same loops run
//! under `kubesim up` and in simulated time.

pub mod clusterrole_aggregation;
pub mod conditions;
pub mod cronjob;
pub mod daemonset;
pub mod default_storage_class;
pub mod deployment;
pub mod endpoints;
pub mod expectations;
pub mod gc;
pub mod hash;
pub mod history;
pub mod hpa;
pub mod intstr;
pub mod job;
pub mod namespace;
pub mod node_fit;
pub mod nodelifecycle;
pub mod ownership;
pub mod pdb;
pub mod pod_facts;
pub mod podgc;
pub mod podgroup;
pub mod pods;
pub mod replica_kind;
pub mod replicaset;
pub mod selection;
pub mod serviceaccount;
pub mod statefulset;
mod status_write;
pub mod storage_protection;
pub mod taint_eviction;
pub mod volume_release;

use std::sync::Arc;

use kubesim_core::{meta, ApiError, Registry, ResourceInfo};
use kubesim_runtime::{Api, Clock, EventRecorder, Informers, ResourceRef, WriteOptions};
use serde_json::Value;

pub use selection::Controllers;

/// What every controller shares: the Api, one set of informers (so each
/// resource is watched once per process), the registry, the clock and the
/// event recorder.
pub struct Context {
    pub api: Arc<dyn Api>,
    pub informers: Arc<Informers>,
    pub registry: Registry,
    pub clock: Clock,
    pub recorder: EventRecorder,
}

/// Which optional loops run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The node lifecycle controller (and so NoExecute taint eviction of
    /// unreachable nodes). A batch simulation whose nodes renew no Leases
    /// turns it off rather than watch every node go Unknown.
    pub node_lifecycle: bool,
    /// Terminated pods kept before the oldest are deleted
    /// (`--terminated-pod-gc-threshold`; 0 keeps them all).
    pub terminated_pod_gc_threshold: usize,
    /// Which controllers run, by kube-controller-manager's names
    /// (`--controllers`).
    pub controllers: Controllers,
}

/// Gives the Api a controller acts through, by the name of its
/// ServiceAccount in upstream's controller policy (`replicaset-controller`,
/// `generic-garbage-collector`, ...).
#[derive(Clone)]
pub struct Identities(pub Arc<ApiFor>);

/// A function from a ServiceAccount's name to the Api acting as it.
pub type ApiFor = dyn Fn(&str) -> Arc<dyn Api> + Send + Sync;

impl std::fmt::Debug for Identities {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identities")
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            node_lifecycle: true,
            terminated_pod_gc_threshold: podgc::DEFAULT_THRESHOLD,
            controllers: Controllers::default(),
        }
    }
}

/// Runs `f` when `on`; otherwise finishes at once, leaving the work to
/// whoever runs that controller instead.
async fn gated(on: bool, f: impl std::future::Future<Output = ()>) {
    if on {
        f.await
    }
}

/// Runs every controller until the returned future is dropped. `root_ca`
/// is the cluster CA (PEM) published into every namespace, if there is one.
pub async fn run_all(api: Arc<dyn Api>, registry: Registry, clock: Clock, root_ca: Option<String>) {
    let informers = Informers::new(api.clone(), clock.clone());
    run_with(api, informers, registry, clock, root_ca, Options::default()).await
}

/// [`run_all`] with a choice of optional loops.
///
/// `informers` may be shared with other components of the process (the
/// scheduler, the emulator): each object is then decoded and cached once
/// rather than once per component. Whichever component polls
/// [`Informers::run`] first drives them.
pub async fn run_with(
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    registry: Registry,
    clock: Clock,
    root_ca: Option<String>,
    options: Options,
) {
    run_as(api, None, informers, registry, clock, root_ca, options).await
}

/// [`run_with`], each controller acting through the Api `identities`
/// gives it (as kube-controller-manager's
/// `--use-service-account-credentials`), events included; `api` watches
/// namespaces for the per-namespace defaults. None: every loop uses `api`.
pub async fn run_as(
    api: Arc<dyn Api>,
    identities: Option<Identities>,
    informers: Arc<Informers>,
    registry: Registry,
    clock: Clock,
    root_ca: Option<String>,
    options: Options,
) {
    let on = |name: &str| options.controllers.enabled(name);
    // Each loop's Api: its upstream controller's own, when given.
    let api_as = |account: &str| -> Arc<dyn Api> {
        match &identities {
            Some(ids) => (ids.0)(account),
            None => api.clone(),
        }
    };
    // Each loop records its events as upstream's controller does: through
    // its own client, under its own source component (the FROM column of
    // `kubectl get events`), with repeats counted per recorder.
    let writers = std::sync::Mutex::new(Vec::new());
    let ctx_from = |account: &str, source: &str| -> Arc<Context> {
        let api = api_as(account);
        let (recorder, writer) = EventRecorder::new(api.clone(), clock.clone(), source);
        writers.lock().expect("not poisoned").push(writer);
        Arc::new(Context {
            api,
            informers: informers.clone(),
            registry: registry.clone(),
            clock: clock.clone(),
            recorder,
        })
    };
    let ctx_as = |account: &str| ctx_from(account, event_source(account));
    let ns = namespace::NamespaceController::new(
        api_as("namespace-controller"),
        registry.clone(),
        clock.clone(),
    );
    // One loop does the work of two upstream controllers: the default
    // ServiceAccount of each namespace, and its copy of the cluster CA.
    let root_ca = root_ca.filter(|_| on("root-ca-certificate-publisher-controller"));
    let defaults = serviceaccount::NamespaceDefaults::new(api.clone(), clock.clone(), root_ca)
        .with_service_accounts(on("serviceaccount-controller"))
        .with_writers(
            api_as("service-account-controller"),
            api_as("root-ca-cert-publisher"),
        );
    let gc = gc::GarbageCollector::new(
        api_as("generic-garbage-collector"),
        registry.clone(),
        informers.clone(),
    );
    let jobs = job::JobController::new_as(
        ctx_as("job-controller"),
        on("ttl-after-finished-controller").then(|| ctx_as("ttl-after-finished-controller")),
    );
    let cronjobs = cronjob::CronJobController::new(ctx_as("cronjob-controller"));
    let hpas = hpa::HpaController::new(ctx_as("horizontal-pod-autoscaler"));
    let pdbs = pdb::PdbController::new(ctx_as("disruption-controller"));
    let replicasets = replicaset::ReplicaController::new(
        ctx_as("replicaset-controller"),
        &replica_kind::REPLICA_SET,
    );
    let replication_controllers = replicaset::ReplicaController::new(
        ctx_as("replication-controller"),
        &replica_kind::REPLICATION_CONTROLLER,
    );
    let deployments = deployment::DeploymentController::new(ctx_as("deployment-controller"));
    let statefulsets = statefulset::StatefulSetController::new(ctx_as("statefulset-controller"));
    let daemonsets = daemonset::DaemonSetController::new(ctx_as("daemon-set-controller"));
    let podgroups = podgroup::PodGroupController::new(ctx_as(podgroup::ACCOUNT));
    // The loops whose contexts are made as they start, built here so that
    // every recorder exists before the event writers are gathered.
    let endpoints = gated(
        on("endpoints-controller"),
        endpoints::legacy::run(ctx_as("endpoint-controller")),
    );
    let slices = gated(
        on("endpointslice-controller"),
        endpoints::slices::run(ctx_as("endpointslice-controller")),
    );
    let node_lifecycle = gated(
        options.node_lifecycle && on("node-lifecycle-controller"),
        nodelifecycle::run(ctx_as("node-controller")),
    );
    // Upstream's taint eviction acts with the node controller's role.
    let taint_eviction = gated(
        on("taint-eviction-controller"),
        taint_eviction::run(ctx_from("node-controller", "taint-eviction-controller")),
    );
    let podgc = gated(
        on("pod-garbage-collector-controller"),
        podgc::run(
            ctx_as("pod-garbage-collector"),
            options.terminated_pod_gc_threshold,
        ),
    );
    let protection = gated(
        on("persistentvolumeclaim-protection-controller")
            || on("persistentvolume-protection-controller"),
        storage_protection::run_as(
            ctx_as("pvc-protection-controller"),
            ctx_as("pv-protection-controller"),
            on("persistentvolumeclaim-protection-controller"),
            on("persistentvolume-protection-controller"),
        ),
    );
    let volume_release = gated(
        on("persistentvolume-binder-controller"),
        volume_release::run(ctx_as("persistent-volume-binder")),
    );
    // Upstream's binder also gives waiting claims the default class.
    let default_class = gated(
        on("persistentvolume-binder-controller"),
        default_storage_class::run(ctx_as("persistent-volume-binder")),
    );
    let aggregation = gated(
        on("clusterrole-aggregation-controller"),
        clusterrole_aggregation::run(ctx_as("clusterrole-aggregation-controller")),
    );
    let events = futures::future::join_all(writers.into_inner().expect("not poisoned"));
    // Joined rather than spawned so that dropping (or aborting) this future
    // stops every loop together. Each loop runs under the upstream
    // controller whose work it does.
    tokio::join!(
        informers.run(),
        events,
        gated(on("namespace-controller"), ns.run()),
        gated(
            on("serviceaccount-controller") || on("root-ca-certificate-publisher-controller"),
            defaults.run()
        ),
        gated(on("garbage-collector-controller"), gc.run()),
        endpoints,
        slices,
        node_lifecycle,
        taint_eviction,
        podgc,
        protection,
        volume_release,
        default_class,
        aggregation,
        gated(on("job-controller"), jobs.run()),
        gated(on("cronjob-controller"), cronjobs.run()),
        gated(on("horizontal-pod-autoscaler-controller"), hpas.run()),
        gated(on("disruption-controller"), pdbs.run()),
        gated(on("replicaset-controller"), replicasets.run()),
        gated(
            on("replicationcontroller-controller"),
            replication_controllers.run()
        ),
        gated(on("deployment-controller"), deployments.run()),
        gated(on("statefulset-controller"), statefulsets.run()),
        gated(on("daemonset-controller"), daemonsets.run()),
        // scheduler-plugins' controller, not kube-controller-manager's:
        // idle until the PodGroup kind is defined.
        gated(on(podgroup::CONTROLLER), podgroups.run()),
    );
}

/// The source component upstream's controller acting as `account`
/// records its events under, where it differs from the account's name.
fn event_source(account: &str) -> &str {
    match account {
        "daemon-set-controller" => "daemonset-controller",
        "disruption-controller" => "controllermanager",
        "persistent-volume-binder" => "persistentvolume-controller",
        "endpointslice-controller" => "endpoint-slice-controller",
        other => other,
    }
}

pub(crate) fn resource_ref(r: &ResourceInfo) -> ResourceRef {
    ResourceRef::new(&r.group, &r.version, &r.plural)
}

/// The resources a controller can list and delete, one version of each
/// stored resource (the registry may serve one store under several
/// versions, and handling both would act twice on every object).
pub(crate) fn manageable(registry: &Registry) -> Vec<Arc<ResourceInfo>> {
    let mut seen = std::collections::BTreeSet::new();
    registry
        .all()
        .into_iter()
        .filter(|r| {
            !(r.group.is_empty() && r.plural == "bindings")
                && r.verbs.contains(&"list")
                && r.verbs.contains(&"delete")
                // The storage version, which needs no conversion.
                && !kubesim_core::convert::is_converted(r)
        })
        .filter(|r| seen.insert(r.storage_key()))
        .collect()
}

/// The items of a list object.
pub(crate) fn items(list: Value) -> Vec<Value> {
    match list {
        Value::Object(mut m) => match m.remove("items") {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Changes an object with optimistic concurrency: reads it, lets `change`
/// edit it (returning false when nothing needs doing), and writes it back
/// with the read resourceVersion, retrying on conflicts. Acts only on the
/// object with `uid`, so a namesake created meanwhile is left alone.
pub(crate) async fn edit(
    api: &dyn Api,
    r: &ResourceRef,
    ns: &str,
    name: &str,
    uid: &str,
    change: &(dyn Fn(&mut Value) -> bool + Send + Sync),
) -> Result<(), ApiError> {
    for _ in 0..8 {
        let mut obj = match api.get(r, ns, name).await {
            Ok(o) => o,
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        };
        if meta::uid(&obj) != uid || !change(&mut obj) {
            return Ok(());
        }
        match api.update(r, ns, obj, None, &WriteOptions::default()).await {
            Ok(_) => return Ok(()),
            Err(e) if e.code == 409 => continue,
            Err(e) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Err(ApiError::conflict(
        &r.plural,
        &r.group,
        name,
        "too many concurrent updates",
    ))
}

/// Removes `finalizer` from `metadata.finalizers`; false when absent.
pub(crate) fn drop_finalizer(obj: &mut Value, finalizer: &str) -> bool {
    let Some(Value::Array(fins)) = obj
        .get_mut("metadata")
        .and_then(|m| m.get_mut("finalizers"))
    else {
        return false;
    };
    let before = fins.len();
    fins.retain(|f| f.as_str() != Some(finalizer));
    before != fins.len()
}
