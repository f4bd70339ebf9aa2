//! The run loop: an in-process cluster (store, API server, controllers,
//! scheduler, emulated kubelets) on a tokio runtime with time paused, so
//! the virtual clock jumps to the next timer whenever every component is
//! idle. Jobs become Pods at their submission times; the kubelet's Stages
//! run them for their duration; a recorder follows the pods. With
//! `serve`, the API is also served over HTTP and simulated time moves in
//! lockstep with the clients (`lockstep.rs`).

mod lockstep;
mod placement;
pub(crate) mod pods;
mod recorder;
mod serve;

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use kubesim_runtime::{Clock, ResourceRef, Rng, WriteOptions};
use kubesim_store::{MemStore, Options, Store};
use serde_json::Value;

pub use recorder::{FinalState, Outcome, Sample};
pub use serve::Serve;

/// One job as the run loop needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimJob {
    pub id: String,
    pub workload: String,
    pub profile: String,
    /// Seconds from the start of the simulation.
    pub submit: f64,
    /// Requested resources (Batsim's `res`), reported as such.
    pub res: u32,
    /// Seconds the job may run before it is killed.
    pub walltime: Option<f64>,
    /// Seconds the job runs when not killed.
    pub run_time: f64,
    /// The pods the job runs as, one per host, scheduled all together
    /// (a Batsim job on several hosts); 1 for a job of one pod.
    pub hosts: u32,
    /// The pod's cpu request and limit, in millicores (each pod's, for a
    /// job on several hosts).
    pub cpu_millis: u64,
    /// The pod's memory request and limit, in bytes (0: none).
    pub memory_bytes: u64,
    /// The pod's schedulerName (None: the default scheduler).
    pub scheduler: Option<String>,
    /// A manifest to create instead of a generated pod (a Pod, a Job, or
    /// any object, which is created but not followed).
    pub manifest: Option<Value>,
    /// What the job does, when its run time depends on the hosts it is
    /// placed on (then decided at placement, and `run_time` is 0 until).
    pub work: Option<Arc<crate::workload::work::Work>>,
}

impl SimJob {
    /// Seconds the job runs: its run time, or its walltime when that is
    /// shorter (it is then killed).
    pub fn planned_run(&self) -> f64 {
        match self.walltime {
            Some(w) if w < self.run_time => w,
            _ => self.run_time,
        }
        .max(0.0)
    }
}

/// What to simulate on.
pub struct Setup {
    /// The cluster's Node objects.
    pub nodes: Vec<Value>,
    pub scheduler: kubesim_scheduler::SchedulerConfig,
    pub seed: u64,
    /// Stop at this virtual time even if jobs are left.
    pub until: Option<Duration>,
    /// The virtual time the simulation starts at.
    pub epoch: Timestamp,
    /// Called with (jobs finished, jobs in all) as the run goes.
    pub progress: Option<Box<dyn Fn(usize, usize) + Send + Sync>>,
    /// Stages for the emulated kubelets (e.g. kwok's general pod stages,
    /// for realistic start-up delays), to which `pod-run-duration` is
    /// added; None: kubesim's built-in set.
    pub stages: Option<Vec<Value>>,
    /// Run kubesim's scheduler (off when an outside one is studied).
    pub builtin_scheduler: bool,
    /// Serve the API over HTTP, in lockstep with its clients.
    pub serve: Option<Serve>,
    /// Terminated pods kept before the pod garbage collector deletes the
    /// oldest (0: all are kept).
    pub terminated_pod_gc_threshold: usize,
    /// Which of kubesim's controllers run (kube-controller-manager's
    /// `--controllers`), so that a real controller manager can take over.
    pub controllers: kubesim_controllers::Controllers,
    /// The store the cluster keeps its objects in (None: a new one in
    /// memory). Given one, a test can write to it past the API while the
    /// run goes, as a store written by an older version may hold.
    pub store: Option<Arc<dyn Store>>,
    /// The SimGrid platform the nodes come from, which times the jobs
    /// whose run time depends on their hosts (`SimJob::work`).
    pub platform: Option<Arc<crate::routes::Platform>>,
}

impl Setup {
    /// `nodes` with the built-in default scheduler, seed 1, no time
    /// limit, no progress reports, the built-in stages, no HTTP and
    /// upstream's threshold of terminated pods, a new store in memory,
    /// starting at 2026-01-01T00:00:00Z.
    pub fn new(nodes: Vec<Value>) -> Setup {
        Setup {
            nodes,
            scheduler: Default::default(),
            seed: 1,
            until: None,
            epoch: Timestamp::constant(1_767_225_600, 0),
            progress: None,
            stages: None,
            builtin_scheduler: true,
            serve: None,
            terminated_pod_gc_threshold: kubesim_controllers::podgc::DEFAULT_THRESHOLD,
            controllers: Default::default(),
            store: None,
            platform: None,
        }
    }
}

/// Completes pods after their run duration, whatever other stages say.
const RUN_DURATION_STAGE: &str = include_str!("../../stages/pod-run-duration.yaml");

/// What came of a run.
#[derive(Debug, Clone)]
pub struct Run {
    /// One per job, in the order given.
    pub outcomes: Vec<Outcome>,
    /// Node names in the order given (allocated resources index them).
    pub nodes: Vec<String>,
    /// Millicores of all nodes together.
    pub total_cpu_millis: u64,
    /// Queue length and cpu in use after every change.
    pub samples: Vec<Sample>,
    /// Virtual seconds simulated.
    pub simulated: f64,
    /// With `serve`: how the outside clients kept up.
    pub lockstep: Option<LockstepReport>,
    /// Timers that woke a component during the run (sleeps that ended,
    /// timeouts that ran out), from the first job on: the work the run
    /// did for time passing rather than for its jobs.
    pub timers_fired: u64,
}

impl Run {
    /// When none of the jobs that run pods ever started: "0 of N jobs ran:"
    /// and why, from what the run saw. A run that started nothing has no
    /// waiting times or makespan worth printing; its zeros would read as a
    /// perfect schedule. `builtin_scheduler` says whether kubesim's
    /// scheduler was running.
    pub fn nothing_ran(&self, builtin_scheduler: bool) -> Option<String> {
        let followed: Vec<&Outcome> = self
            .outcomes
            .iter()
            .filter(|o| o.state != FinalState::NotFollowed)
            .collect();
        if followed.is_empty() || followed.iter().any(|o| o.start.is_some()) {
            return None;
        }
        let n = followed.len();
        let submitted = followed.iter().filter(|o| o.submitted.is_some()).count();
        let bound = followed.iter().filter(|o| o.node.is_some()).count();
        let rejected = followed
            .iter()
            .filter(|o| o.state == FinalState::Rejected)
            .count();
        let why = if submitted == 0 {
            "none was submitted before the simulation ended".to_string()
        } else if rejected == submitted {
            "every job was rejected (no node could ever hold its pod)".to_string()
        } else if bound > 0 {
            format!("{bound} pods were bound to nodes but none started")
        } else if !builtin_scheduler {
            match self.lockstep {
                Some(l) if !l.connected => {
                    "no scheduler bound a pod (no client watched pods within --serve-timeout)"
                        .to_string()
                }
                _ => "no scheduler bound a pod".to_string(),
            }
        } else {
            "the scheduler bound no pod (no node fits them)".to_string()
        };
        Some(format!("0 of {n} jobs ran: {why}"))
    }
}

/// How a served run went for its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockstepReport {
    /// Without the built-in scheduler: a client watched pods before the
    /// first job (else the run started after `timeout`).
    pub connected: bool,
    /// Instants at which time moved on after `timeout`, without the
    /// clients settling.
    pub timeouts: u64,
}

/// Ends the holding of time however the run ends, so that shutting the
/// runtime down does not wait for a hold thread.
struct Closing(Option<Arc<lockstep::Policy>>);

impl Drop for Closing {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            p.gate.close();
        }
    }
}

/// Runs `jobs` on `setup` to completion (or `until`), in virtual time.
pub fn simulate(setup: Setup, jobs: Vec<SimJob>) -> anyhow::Result<Run> {
    // The runtime says when it runs out of work at an instant, so that a
    // batch policy plans all of an instant's events together.
    let idle = kubesim_runtime::Idle::default();
    let hook = idle.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .on_thread_park(move || hook.about_to_park())
        .build()?;
    let run = rt.block_on(run(setup, jobs, idle));
    // Shutting the runtime down drops the store and every cache, which
    // takes a while after a long run and changes nothing in its result:
    // done on another thread, it overlaps with writing the outputs.
    std::thread::spawn(move || drop(rt));
    run
}

/// How long nothing may change while pods wait and nothing runs before the
/// run is declared stuck (the scheduler retries unschedulable pods every
/// 5 minutes at most, so two of those).
const STUCK: Duration = Duration::from_secs(600);

/// Bytes of replaced and deleted records the store's history keeps alive.
/// The history serves watchers that fell behind their channel: here the
/// components in the process, and the clients of `--serve`, which get 410
/// and list again when they fall further. Simulated time passes hours of
/// churn in seconds, so a bound sized for wall-clock churn would keep
/// hundreds of MiB of old pods (the short-jobs member at 20,000 jobs: 805
/// MiB peak RSS with no bound on bytes, 740 MiB with 128 MiB, 598 MiB
/// with 32 MiB; docs/performance.md). Since every in-process write spends
/// the writing task's cooperative budget (`kubesim-apiserver`'s
/// `inprocess.rs`), the components keep up with their channels: at
/// 20,000 jobs the short-jobs member falls behind once and the narrow one
/// never (`RUST_LOG=kubesim_store=debug` shows each time). At 100,000
/// jobs the short one falls behind 26 times, and this bound serves each
/// catch-up; 8 MiB did not (26 lists again, 1,350 MiB peak RSS), nor did
/// this bound without the budget (26, 1,329 MiB).
const HISTORY_BYTES: usize = 16 << 20;

/// The scheduler configuration to run: the given one, with Coscheduling
/// enabled in every profile when a job runs on several hosts, since such
/// a job is a PodGroup whose pods must start together, as in Batsim.
fn scheduler_for(
    given: &kubesim_scheduler::SchedulerConfig,
    jobs: &[Arc<SimJob>],
) -> kubesim_scheduler::SchedulerConfig {
    let mut config = given.clone();
    if jobs.iter().any(|j| j.hosts > 1) {
        for p in &mut config.profiles {
            if !p.enables(kubesim_scheduler::coscheduling::NAME) {
                p.multi_point
                    .enabled
                    .push((kubesim_scheduler::coscheduling::NAME.to_string(), None));
            }
        }
    }
    config
}

async fn run(setup: Setup, jobs: Vec<SimJob>, idle: kubesim_runtime::Idle) -> anyhow::Result<Run> {
    // One copy of the jobs for the submitter, the placement task and the
    // record of outcomes: copies of 100,000 jobs were 55 MB.
    let jobs: Arc<[Arc<SimJob>]> = jobs.into_iter().map(Arc::new).collect();
    let clock = Clock::simulated(setup.epoch).with_idle(idle);
    let rng = Rng::seeded(setup.seed);
    let store: Arc<dyn Store> = setup.store.clone().unwrap_or_else(|| {
        Arc::new(MemStore::ephemeral(Options {
            history_bytes: HISTORY_BYTES,
            ..Options::default()
        }))
    });
    // Every component runs on this one thread. A helper thread that
    // decoded stored objects and rendered Stage patches ahead on the other
    // core made no member of the benchmark family faster and cost a third
    // more CPU (docs/decisions/dropped-work-ahead.md).
    let cluster = kubesim_cluster::Cluster::bootstrap(kubesim_cluster::ClusterOptions {
        store,
        clock: clock.clone(),
        rng: rng.clone(),
    })
    .await?;
    let server = cluster.server.clone();
    let api = |who: &str| cluster.api(who);
    // A batch simulation spans months: no leases or heartbeats (nodes do
    // not fail unless told to), no usage metrics.
    let stages: Vec<Value> = match setup.stages {
        None => kubesim_emulator::stage::default_stage_objects()
            .into_iter()
            .filter(|s| s["metadata"]["name"] != "node-heartbeat-with-lease")
            .collect(),
        Some(mut given) => {
            given.extend(
                kubesim_emulator::stage::stage_objects_from_yaml(RUN_DURATION_STAGE)
                    .map_err(|e| anyhow::anyhow!(e))?,
            );
            // Nodes still need to become Ready.
            if !given
                .iter()
                .any(|s| s["spec"]["resourceRef"]["kind"] == "Node")
            {
                given.extend(
                    kubesim_emulator::stage::default_stage_objects()
                        .into_iter()
                        .filter(|s| s["metadata"]["name"] == "node-initialize"),
                );
            }
            given
        }
    };
    let kubesim_cluster::Running {
        informers,
        mut tasks,
        ..
    } = cluster
        .start(kubesim_cluster::Components {
            controllers: Some(kubesim_cluster::ControllerManager {
                options: kubesim_controllers::Options {
                    node_lifecycle: false,
                    terminated_pod_gc_threshold: setup.terminated_pod_gc_threshold,
                    controllers: setup.controllers.clone(),
                },
                root_ca: None,
            }),
            // PodGroups are served for a profile enabling Coscheduling or
            // for jobs on several hosts, whose groups an outside scheduler
            // reads too.
            scheduler: Some(kubesim_cluster::SchedulerPart {
                config: scheduler_for(&setup.scheduler, &jobs),
                builtin: setup.builtin_scheduler,
                metrics: None,
            }),
            emulator: Some(kubesim_emulator::EmulatorConfig {
                selector: kubesim_emulator::managed::NodeSelector::all(),
                stages: Some(stages),
                leases: false,
                usage: false,
                // Only a scheduler outside the process reads CSINodes; the
                // built-in one would be given writes that change nothing.
                csi_nodes: setup.serve.is_some(),
                ..Default::default()
            }),
        })
        .await?;

    // The API over HTTP, from the start: clients may connect while the
    // nodes come up.
    let (policy, before_start) = match setup.serve {
        Some(s) => {
            let policy = lockstep::Policy::new(s.quiet, s.timeout);
            policy.follow(&informers);
            tasks.spawn({
                let (server, policy) = (server.clone(), policy.clone());
                async move {
                    if let Err(e) = serve::run(s.listener, server, policy, s.audit).await {
                        tracing::error!(error = %e, "the API server stopped");
                    }
                }
            });
            (Some(policy), Some((s.ready, s.timeout)))
        }
        None => (None, None),
    };
    let _closing = Closing(policy.clone());
    let client = api("kubesim-simulate");
    let node_names: Vec<String> = setup
        .nodes
        .iter()
        .map(|n| kubesim_core::meta::name(n).to_string())
        .collect();
    let total_cpu_millis = setup.nodes.iter().map(pods::node_cpu_millis).sum();
    for n in setup.nodes.iter() {
        client
            .create(
                &ResourceRef::core("nodes"),
                "",
                n.clone(),
                &WriteOptions::default(),
            )
            .await
            .map_err(|e| anyhow::anyhow!("node {}: {}", kubesim_core::meta::name(n), e.message))?;
    }
    let recorder = recorder::Recorder::new(&jobs, &node_names, clock.clone());
    let rec = recorder.clone();
    informers
        .get(&ResourceRef::core("pods"))
        .on_change(move |c| rec.on_pod(c));
    let nodes_inf = informers.get(&ResourceRef::core("nodes"));
    // Every node Ready before the first job arrives (the emulator needs no
    // virtual time for it; a minute means it cannot).
    let mut waited = Duration::ZERO;
    loop {
        let ready = nodes_inf
            .cache()
            .list()
            .iter()
            .filter(|n| pods::is_ready(n))
            .count();
        if ready == setup.nodes.len() {
            break;
        }
        if waited >= Duration::from_secs(60) {
            anyhow::bail!("only {ready} of {} nodes became Ready", setup.nodes.len());
        }
        clock.sleep(Duration::from_millis(10)).await;
        waited += Duration::from_millis(10);
    }
    let mut connected = false;
    if let (Some(policy), Some((ready, timeout))) = (&policy, before_start) {
        if let Some(ready) = ready {
            ready();
        }
        // Jobs at time 0 would be gone past before an outside scheduler
        // started: wait for one to watch pods, with time standing still.
        if !setup.builtin_scheduler {
            connected = policy.gate.hold_while(policy.connected()).await.is_some();
        }
        if !connected && !setup.builtin_scheduler {
            tracing::warn!(
                ?timeout,
                "no client watched pods in time; the jobs start without one"
            );
        }
    }
    let start = clock.instant();
    recorder.start_at(start);
    let timers_at_start = clock.timers_fired();

    let names = Arc::new(pods::unique_names(&jobs));
    if jobs.iter().any(|j| j.work.is_some()) {
        let platform = setup.platform.clone().ok_or_else(|| {
            anyhow::anyhow!("jobs timed at placement need the platform their nodes come from")
        })?;
        let placement = placement::Placement {
            jobs: jobs.clone(),
            names: names.clone(),
            platform,
        };
        let (rec, client) = (recorder.clone(), client.clone());
        let pods_inf = informers.get(&ResourceRef::core("pods"));
        tasks.spawn(async move { placement.run(rec, client, pods_inf).await });
    }
    let fits = pods::Fits::new(&setup.nodes);
    let registry = server.registry.clone();
    let submitter = {
        let (client, clock, rec) = (client.clone(), clock.clone(), recorder.clone());
        let (jobs, names) = (jobs.clone(), names.clone());
        async move {
            // In order of submission (input order among equals).
            let mut order: Vec<usize> = (0..jobs.len()).collect();
            order.sort_by(|a, b| jobs[*a].submit.total_cmp(&jobs[*b].submit));
            let mut rank = vec![0; jobs.len()];
            for (r, &i) in order.iter().enumerate() {
                rank[i] = r;
            }
            let submit_at = |i: usize| start + Duration::from_secs_f64(jobs[i].submit.max(0.0));
            let opts = WriteOptions::answer_version_only();
            for &i in &order {
                let job = &jobs[i];
                clock.sleep_until(submit_at(i)).await;
                if job.hosts > 1 && job.manifest.is_none() {
                    if !fits.fits(job) {
                        rec.reject(i);
                        continue;
                    }
                    // The PodGroup first: a member created before it would
                    // be scheduled alone.
                    let (group, mut members) = pods::gang(job, i, &names[i]);
                    for m in &mut members {
                        pods::set_submit_order(m, rank[i]);
                    }
                    rec.submitted(i);
                    let mut created = client
                        .create(
                            &kubesim_scheduler::coscheduling::crd::resource(),
                            "default",
                            group,
                            &opts,
                        )
                        .await;
                    for pod in members {
                        if created.is_err() {
                            break;
                        }
                        created = client
                            .create(&ResourceRef::core("pods"), "default", pod, &opts)
                            .await;
                    }
                    if let Err(e) = created {
                        tracing::warn!(job = %job.id, error = %e.message, "job not submitted");
                        rec.reject(i);
                    }
                    continue;
                }
                let prepared = match &job.manifest {
                    Some(m) => pods::manifest(m, i, rank[i], &registry),
                    None if !fits.fits(job) => {
                        rec.reject(i);
                        continue;
                    }
                    None => {
                        let mut object = pods::pod(job, i, &names[i]);
                        pods::set_submit_order(&mut object, rank[i]);
                        Ok(pods::Prepared {
                            resource: ResourceRef::core("pods"),
                            namespace: "default".into(),
                            object,
                            followed: true,
                        })
                    }
                };
                let p = match prepared {
                    Ok(p) => p,
                    Err(e) => {
                        tracing::warn!(job = %job.id, error = %e, "job not submitted");
                        rec.reject(i);
                        continue;
                    }
                };
                let followed = p.followed;
                if followed {
                    rec.submitted(i);
                }
                match client
                    .create(&p.resource, &p.namespace, p.object, &opts)
                    .await
                {
                    Ok(_) if !followed => rec.not_followed(i),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(job = %job.id, error = %e.message, "job not submitted");
                        rec.reject(i);
                    }
                }
            }
        }
    };
    let watch = async {
        let deadline = setup.until.map(|u| start + u);
        loop {
            let changed = recorder.changed();
            // The stuck timer runs only while the run could be stuck: an
            // idle cluster between jobs waits for the next change alone,
            // however long, rather than waking every ten minutes.
            let could_stick = {
                let (_, a) = recorder.progress();
                a.running == 0 && a.all_submitted && a.pending > 0
            };
            let timed_out = tokio::select! {
                biased;
                _ = changed => false,
                _ = async {
                    if could_stick {
                        clock.sleep(STUCK).await
                    } else {
                        std::future::pending().await
                    }
                } => true,
                _ = async {
                    match deadline {
                        Some(d) => clock.sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                } => return,
            };
            let (done, active) = recorder.progress();
            if let Some(p) = &setup.progress {
                p(done, jobs.len());
            }
            if done == jobs.len() {
                return;
            }
            if timed_out && active.running == 0 && active.all_submitted {
                if setup.builtin_scheduler {
                    tracing::warn!(
                        pending = active.pending,
                        "jobs can never be placed; stopping"
                    );
                } else {
                    tracing::warn!(
                        pending = active.pending,
                        "no scheduler placed the pending jobs for ten simulated minutes; stopping"
                    );
                }
                return;
            }
        }
    };
    tokio::select! {
        biased;
        _ = watch => {}
        _ = async { submitter.await; std::future::pending::<()>().await } => {}
    }
    let simulated = (clock.instant() - start).as_secs_f64();
    let timers_fired = clock.timers_fired() - timers_at_start;
    tasks.abort_all();
    let lockstep = policy.map(|p| LockstepReport {
        connected,
        timeouts: p.gate.timeouts(),
    });
    Ok(Run {
        outcomes: recorder.outcomes(),
        nodes: node_names,
        total_cpu_millis,
        samples: recorder.samples(),
        simulated,
        lockstep,
        timers_fired,
    })
}
