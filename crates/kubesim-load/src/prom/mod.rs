//! A real Prometheus server for the measurements that are PromQL queries
//! (GenericPrometheusQuery and its kin), as ClusterLoader2 runs its own
//! Prometheus stack beside the cluster under test.
//!
//! [`server`] owns the `prometheus` process (its scrape configuration,
//! start, readiness and stop); [`query`] sends instant queries to it and
//! reads the answers. Measurements see only the [`Querier`] trait, so
//! their logic is tested against canned answers and the whole path
//! against the real server in the CLI's end-to-end tests.

pub mod query;
pub mod server;

pub use query::{PromSample, Querier, QueryClient};
pub use server::{PromServer, ServerOptions, Target};
