//! A ClusterLoader2-compatible load-test runner: test configs rendered as
//! Go templates with ClusterLoader2's functions, steps of declarative
//! phases paced by tuning sets, measurements checked against the
//! Kubernetes SLOs, and ClusterLoader2's report files.
//!
//! The runner reaches the cluster only through a [`Cluster`] (the `Api`
//! plus discovery and `/metrics`), so it drives kubesim and a real API
//! server alike, and reads time only through the `Clock`, so its pacing
//! can be checked in simulated time.
//!
//! It must never reach into kubesim's internals to drive a test: an
//! in-process kubesim is driven over HTTP like any other cluster, so the
//! API server's request metrics see every call.

pub mod cluster;
pub mod config;
pub mod measurement;
pub mod objects;
pub mod params;
pub mod phase;
pub mod prom;
pub mod report;
pub mod runner;
pub mod template;
pub mod tuning;

pub use cluster::Cluster;
