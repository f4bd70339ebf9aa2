//! The emulator as one component: it creates the `--nodes` pool, runs
//! Apate's configurations, publishes emulated usage and acts as the
//! kubelet of every emulated node.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kubesim_runtime::{Api, Clock, EventRecorder, Informers, ResourceRef, Rng};
use serde_json::Value;

use crate::apate::{self, Faults};
use crate::managed::NodeSelector;
use crate::nodes::{ensure_nodes, LeaseRenewer, NodeTemplate};
use crate::stage::{self, funcs::FuncContext, Shared};
use crate::usage::{follow, Model, UsagePublisher};

/// What `kubesim up` (or `simulate`) asks of the emulator.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Nodes to create from `template` (those that exist are kept).
    pub nodes: u64,
    pub template: NodeTemplate,
    pub selector: NodeSelector,
    /// Stage objects to create at startup (None: the built-in set).
    pub stages: Option<Vec<Value>>,
    /// Renew every emulated node's Lease (a batch simulation spanning
    /// months turns this off, with the node lifecycle controller).
    pub leases: bool,
    /// Publish emulated resource usage as metrics every 15 s.
    pub usage: bool,
    /// Publish a CSINode per emulated node, as kubelets do, for a real
    /// kube-scheduler and controller manager (a batch simulation with the
    /// built-in scheduler needs none, and skips the writes).
    pub csi_nodes: bool,
    /// Pods whose stages are played at once (kwok's
    /// `podPlayStageParallelism`): each step waits for the API's answer,
    /// so over a network this bounds the pods a shard moves a second.
    pub pod_parallelism: usize,
    /// Nodes whose stages are played at once (kwok's
    /// `nodePlayStageParallelism`).
    pub node_parallelism: usize,
}

/// kwok's default for both `...PlayStageParallelism` options.
pub const DEFAULT_PARALLELISM: usize = 4;

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            nodes: 0,
            template: NodeTemplate::default(),
            selector: NodeSelector::default(),
            stages: None,
            leases: true,
            usage: true,
            csi_nodes: true,
            pod_parallelism: DEFAULT_PARALLELISM,
            node_parallelism: DEFAULT_PARALLELISM,
        }
    }
}

/// Runs until the returned future is dropped.
pub async fn run(api: Arc<dyn Api>, clock: Clock, rng: Rng, config: EmulatorConfig) {
    let informers = Informers::new(api.clone(), clock.clone());
    run_shared(api, informers, clock, rng, config).await
}

/// [`run`] on informers shared with other components of the process, so
/// that each object is decoded and cached once.
pub async fn run_shared(
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    clock: Clock,
    rng: Rng,
    config: EmulatorConfig,
) {
    Emulator::new(api, informers, clock, rng, config)
        .run()
        .await
}

/// The emulator built but not yet running, so the process can hand its
/// usage model to the HTTP server (for kwok's Metric endpoints) first.
pub struct Emulator {
    api: Arc<dyn Api>,
    informers: Arc<Informers>,
    clock: Clock,
    rng: Rng,
    config: EmulatorConfig,
    faults: Arc<Faults>,
    recorder: EventRecorder,
    events: Pin<Box<dyn Future<Output = ()> + Send>>,
    usage: Arc<Model>,
}

impl Emulator {
    pub fn new(
        api: Arc<dyn Api>,
        informers: Arc<Informers>,
        clock: Clock,
        rng: Rng,
        config: EmulatorConfig,
    ) -> Emulator {
        let (recorder, events) = EventRecorder::new(api.clone(), clock.clone(), "kubesim-emulator");
        let faults = Arc::new(Faults::default());
        let usage = Model::new(
            clock.clone(),
            rng.clone(),
            faults.clone(),
            config.selector.clone(),
            informers.get(&ResourceRef::core("pods")).cache(),
            informers.get(&ResourceRef::core("nodes")).cache(),
            Some(recorder.clone()),
        );
        Emulator {
            api,
            informers,
            clock,
            rng,
            config,
            faults,
            recorder,
            events: Box::pin(events),
            usage,
        }
    }

    /// Emulated usage, as kwok's Metric endpoints serve it
    /// ([`crate::usage::metric::serve`]).
    pub fn usage(&self) -> Arc<Model> {
        self.usage.clone()
    }

    /// Runs until dropped.
    pub async fn run(self) {
        let Emulator {
            api,
            informers,
            clock,
            rng,
            config,
            faults,
            recorder,
            events,
            usage: model,
        } = self;
        let f = faults.clone();
        let renewer = LeaseRenewer::new(
            api.clone(),
            informers.clone(),
            clock.clone(),
            config.selector.clone(),
        )
        .with_silenced(Arc::new(move |node| f.silenced(node)));
        let usage = UsagePublisher {
            api: api.clone(),
            clock: clock.clone(),
            model: model.clone(),
        };
        let shared = Arc::new(Shared {
            api: api.clone(),
            clock: clock.clone(),
            rng,
            recorder: recorder.clone(),
            faults: faults.clone(),
            selector: config.selector.clone(),
            funcs: Arc::new(
                FuncContext::new(
                    clock.clone(),
                    kubesim_core::meta::format_time(clock.now()),
                    informers.get(&ResourceRef::core("nodes")).cache(),
                )
                .selecting(config.selector.rule.clone()),
            ),
            registry: kubesim_core::Registry::new(),
            pod_parallelism: config.pod_parallelism.max(1),
            node_parallelism: config.node_parallelism.max(1),
        });
        let stages = stage::engine::run(
            shared,
            informers.clone(),
            config
                .stages
                .clone()
                .unwrap_or_else(stage::default_stage_objects),
        );
        let create = async {
            match ensure_nodes(&api, &config.template, config.nodes, 64).await {
                Ok(n) if n > 0 => tracing::info!(created = n, "emulated nodes registered"),
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e.message, "cannot create emulated nodes"),
            }
        };
        tokio::join!(
            informers.run(),
            events,
            async {
                if config.leases {
                    renewer.run().await
                }
            },
            async {
                if config.usage {
                    usage.run().await
                }
            },
            follow::run(api.clone(), informers.clone(), model, recorder.clone()),
            apate::run(
                api.clone(),
                informers.clone(),
                clock.clone(),
                faults.clone(),
                recorder.clone()
            ),
            stages,
            create,
            async {
                if config.csi_nodes {
                    crate::nodes::csinode::run(
                        api.clone(),
                        informers.clone(),
                        config.selector.clone(),
                    )
                    .await
                }
            },
        );
    }
}
