//! `kubesim simulate`: workloads replayed through the real control plane
//! (API server, controllers, scheduler, emulated kubelets) under the
//! virtual clock, and what came of them in Batsim's formats.
//!
//! It owns the workload readers ([`workload`]), cluster files and Batsim
//! platforms ([`cluster`]), the run loop ([`engine`]) and the outputs
//! ([`output`]). It must never re-implement a component as a model: it
//! wires the ones `kubesim up` runs. Without `--serve` a run must stay a
//! function of its inputs and seed, so nothing here reads wall time or
//! iterates an unordered map into an output.

pub mod cluster;
pub mod engine;
pub mod output;
pub mod routes;
pub mod workload;
