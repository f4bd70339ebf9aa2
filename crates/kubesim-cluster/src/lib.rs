//! One way to assemble an in-process cluster: the API server on a store,
//! one set of shared informers, and the components chosen by options
//! (kube-controller-manager's loops, the scheduler, the emulated
//! kubelets).
//!
//! `kubesim up` (and `kubesim load` through it), `kubesim simulate` and the
//! benchmarks that run components in process all build their cluster here,
//! so a component is wired the same way whichever mode runs it: the same
//! identity, the same informers, started in the same order.
//!
//! Owns: the order in which components start and what each is handed.
//! Must never: serve HTTP, read flags or files, or decide anything about a
//! workload; callers bring a store, a clock and options, and do the rest.

use std::sync::Arc;

use kubesim_apiserver::auth::UserInfo;
use kubesim_apiserver::inprocess::InProcess;
use kubesim_apiserver::Server;
use kubesim_runtime::{Api, Clock, Informers, ResourceRef, Rng};
use kubesim_store::Store;
use tokio::task::JoinSet;

const CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// What the API server is built on.
pub struct ClusterOptions {
    pub store: Arc<dyn Store>,
    pub clock: Clock,
    pub rng: Rng,
}

/// The API server, bootstrapped, with no component running yet: callers
/// may set it up further (RBAC, keys, objects a benchmark needs) before
/// [`Cluster::start`].
pub struct Cluster {
    pub server: Arc<Server>,
}

/// The components to run; `None` leaves that part to a process outside
/// (a real kube-scheduler, `kubesim emulate`, ...).
#[derive(Default)]
pub struct Components {
    pub controllers: Option<ControllerManager>,
    pub scheduler: Option<SchedulerPart>,
    pub emulator: Option<kubesim_emulator::EmulatorConfig>,
}

/// kube-controller-manager's loops.
#[derive(Default)]
pub struct ControllerManager {
    pub options: kubesim_controllers::Options,
    /// The cluster CA (PEM) published into every namespace.
    pub root_ca: Option<String>,
}

/// The scheduler, and the PodGroup kind when its configuration asks for
/// Coscheduling.
pub struct SchedulerPart {
    pub config: kubesim_scheduler::SchedulerConfig,
    /// Run the built-in scheduler; false when an outside one binds pods
    /// (its configuration still decides whether PodGroups are served).
    pub builtin: bool,
    /// Where the built-in scheduler records (a fresh set when None).
    pub metrics: Option<Arc<kubesim_scheduler::Metrics>>,
}

/// The running components.
pub struct Running {
    pub informers: Arc<Informers>,
    /// The emulated kubelets' usage, for kwok's Metric endpoints.
    pub usage: Option<Arc<kubesim_emulator::usage::Model>>,
    /// The built-in scheduler's metrics, for `/metrics`.
    pub scheduler_metrics: Option<Arc<kubesim_scheduler::Metrics>>,
    /// Every component's task; dropping the set stops them. Callers may
    /// add tasks of their own.
    pub tasks: JoinSet<()>,
}

impl Cluster {
    /// Builds the API server and bootstraps it (default namespaces,
    /// policy, priority classes, ...).
    pub async fn bootstrap(options: ClusterOptions) -> anyhow::Result<Cluster> {
        let server = Server::new(options.store, options.clock, options.rng);
        server
            .bootstrap()
            .await
            .map_err(|e| anyhow::anyhow!("bootstrap failed: {}", e.message))?;
        Ok(Cluster { server })
    }

    /// A trusted in-process client naming itself `component`, as the real
    /// API server's loopback client is.
    pub fn api(&self, component: &str) -> Arc<dyn Api> {
        Arc::new(InProcess::new(self.server.clone(), component))
    }

    /// A client acting as `user` when the server enforces RBAC (held to
    /// that user's rights), trusted otherwise.
    fn api_as(&self, component: &str, user: &str) -> Arc<dyn Api> {
        self.api_as_user(component, UserInfo::authenticated(user, vec![]))
    }

    /// [`api_as`](Self::api_as) for a user with groups (a ServiceAccount's).
    fn api_as_user(&self, component: &str, user: UserInfo) -> Arc<dyn Api> {
        if self.server.rbac_enabled() {
            Arc::new(InProcess::as_user(self.server.clone(), component, user))
        } else {
            self.api(component)
        }
    }

    /// With RBAC on, each controller acts as its own ServiceAccount, held
    /// to its `system:controller:*` role, as kube-controller-manager does
    /// with `--use-service-account-credentials`.
    fn controller_identities(&self) -> Option<kubesim_controllers::Identities> {
        if !self.server.rbac_enabled() {
            return None;
        }
        let server = self.server.clone();
        Some(kubesim_controllers::Identities(Arc::new(
            move |account: &str| -> Arc<dyn Api> {
                Arc::new(InProcess::as_user(
                    server.clone(),
                    CONTROLLER_MANAGER,
                    kubesim_apiserver::auth::rbac::bootstrap::controller_user(account),
                ))
            },
        )))
    }

    /// Starts the shared informers and the chosen components on the
    /// current runtime, in the order the API's semantics need: informers,
    /// controllers, the PodGroup kind, the scheduler, the kubelets.
    pub async fn start(&self, components: Components) -> anyhow::Result<Running> {
        let clock = self.server.clock.clone();
        let rng = self.server.rng.clone();
        // One set of informers for every component, so each change is
        // decoded and cached once. They list and watch as
        // kube-controller-manager's user, as upstream's shared informers do.
        let informers = Informers::new(
            self.api_as("kubesim-informers", "system:kube-controller-manager"),
            clock.clone(),
        );
        // Pods are followed in full (the scheduler, the kubelets): asked
        // for before any component starts, that informer also serves the
        // garbage collector's narrower view, whichever component asks first.
        informers.get(&ResourceRef::core("pods"));
        let mut tasks = JoinSet::new();
        tasks.spawn({
            let i = informers.clone();
            async move { i.run().await }
        });
        if let Some(cm) = components.controllers {
            // The manager's own user records the events and watches
            // namespaces; each loop acts as its own account.
            tasks.spawn(kubesim_controllers::run_as(
                self.api_as(CONTROLLER_MANAGER, "system:kube-controller-manager"),
                self.controller_identities(),
                informers.clone(),
                self.server.registry.clone(),
                clock.clone(),
                cm.root_ca,
                cm.options,
            ));
        }
        let mut scheduler_metrics = None;
        if let Some(s) = components.scheduler {
            // Gang scheduling reads PodGroups, a kind upstream installs as
            // a CRD beside scheduler-plugins: defined before any scheduler
            // lists it and before any client creates groups.
            if s.config.uses_coscheduling() {
                kubesim_scheduler::coscheduling::crd::ensure(&self.api("kubesim"))
                    .await
                    .map_err(|e| anyhow::anyhow!(e))?;
            }
            if s.builtin {
                let metrics = s.metrics.unwrap_or_default();
                scheduler_metrics = Some(metrics.clone());
                tasks.spawn(kubesim_scheduler::run_with_metrics(
                    self.api_as("default-scheduler", "system:kube-scheduler"),
                    informers.clone(),
                    clock.clone(),
                    rng.clone(),
                    s.config,
                    Some(metrics),
                ));
            }
        }
        let mut usage = None;
        if let Some(config) = components.emulator {
            // The kubelets, Stages and Apate act as the emulator's own
            // ServiceAccount, held to its role as kwok's controller is in a
            // real cluster, rather than as a trusted loopback client.
            let emulator = kubesim_emulator::Emulator::new(
                self.api_as_user(
                    "kubesim-emulator",
                    kubesim_apiserver::auth::rbac::bootstrap::emulator_user(),
                ),
                informers.clone(),
                clock.clone(),
                rng.clone(),
                config,
            );
            usage = Some(emulator.usage());
            tasks.spawn(emulator.run());
        }
        Ok(Running {
            informers,
            usage,
            scheduler_metrics,
            tasks,
        })
    }
}
