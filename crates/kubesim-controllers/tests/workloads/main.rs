//! The workload controllers (ReplicaSet, Deployment, StatefulSet,
//! DaemonSet) against a real in-memory API server, in simulated time.

mod daemonset;
mod deployment;
mod replicaset;
mod statefulset;
mod support;
