//! `kubesim simulate`: workloads replayed through the real control plane
//! (API server, controllers, scheduler, emulated kubelets) under the
//! virtual clock, and what came of them in Batsim's formats.

pub mod cluster;
pub mod engine;
pub mod output;
pub mod workload;
