//! Emulated kubelets: what makes nodes and pods look real without running
//! anything. Nodes come from a pool (`--nodes`) or from any Node object the
//! emulator is told to manage; their leases are renewed in batches; pods
//! and nodes move through their lifecycles by kwok-compatible Stages
//! (`kwok.x-k8s.io/v1alpha1`), whose status templates are Go templates.
//!
//! It also owns Apate's NodeConfiguration and PodConfiguration with their
//! scenarios, emulated resource usage (PodMetrics, NodeMetrics and kwok's
//! Metric endpoints).
//!
//! It must never touch a pod that is not bound to an emulated node, and
//! must draw every random choice and timestamp from the shared `Rng` and
//! `Clock`, so that a Stage behaves alike under both clocks. It reaches
//! the cluster only through the `Api`.

pub mod apate;
mod crd;
mod emulator;
pub mod managed;
pub mod nodes;
pub mod shard;
pub mod stage;
pub mod usage;

pub use emulator::{run, run_shared, Emulator, EmulatorConfig, DEFAULT_PARALLELISM};
