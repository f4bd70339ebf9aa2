//! A scheduler that decides as kube-scheduler does: a priority queue with
//! backoff, the framework's extension points, the default plugins with
//! upstream's formulas and weights, preemption, and profiles from a
//! KubeSchedulerConfiguration.
//!
//! # Layout
//!
//! - [`info`]: pods' effective requests and nodes' allocatable, from JSON;
//! - [`cache`]: nodes with their bound and assumed pods, cheap snapshots;
//! - [`queue`]: activeQ / backoffQ / unschedulable pods;
//! - [`plugins`]: the Filter and Score plugins and the registry by name;
//! - [`config`] and [`profile`]: `KubeSchedulerConfiguration` and the
//!   plugin lists it yields per `schedulerName`;
//! - [`algorithm`]: one scheduling attempt on a snapshot;
//! - [`failures`]: unschedulable verdicts kept by pod shape, so a retry
//!   with nothing changed where the pod could fit looks only at the nodes
//!   that changed;
//! - [`coscheduling`]: gang scheduling (scheduler-plugins' Coscheduling
//!   with its PodGroup kind), run by the loop when a profile enables it;
//! - [`batsim`]: Batsim's reference batch policies, FCFS and EASY
//!   backfilling, which plan every waiting job of a profile at once;
//! - [`scheduler`]: the process ([`run`]): informers, loop, binding,
//!   events and the PodScheduled condition.
//!
//! # Adding a policy
//!
//! A plugin is a type implementing [`framework::Plugin`]: give it a
//! `name`, declare its extension points in `points`, and implement the
//! methods of those points (`filter` returns a [`framework::Status`] whose
//! reasons appear in `FailedScheduling` messages; `score` returns a raw
//! score that `normalize` maps to 0..=100). Register a constructor under
//! its name in [`plugins::registry`]; it then can be enabled in a
//! configuration file, with its args from `pluginConfig`:
//!
//! ```yaml
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//! - schedulerName: my-scheduler
//!   plugins:
//!     score:
//!       disabled: [{name: "*"}]
//!       enabled: [{name: MyPlugin, weight: 1}]
//!   pluginConfig:
//!   - name: MyPlugin
//!     args: {knob: 3}
//! ```
//!
//! Pods choose the profile with `spec.schedulerName`. The shipped
//! alternative policy [`plugins::round_robin::RoundRobin`] is such a
//! plugin: the profile in [`config::ProfileConfig::round_robin`] (the same
//! as the YAML above with `RoundRobin` and `percentageOfNodesToScore: 100`)
//! places pods on the feasible nodes in turn.

pub mod algorithm;
pub mod batsim;
pub mod cache;
pub mod config;
pub mod coscheduling;
pub mod failures;
pub mod framework;
pub mod info;
pub mod metrics;
pub mod plugins;
pub mod preemption;
pub mod profile;
pub mod queue;
pub mod scheduler;
pub mod view;

pub use config::SchedulerConfig;
pub use metrics::Metrics;
pub use scheduler::{run, run_with_metrics};
