//! The workload controllers (ReplicaSet, ReplicationController, Deployment,
//! StatefulSet, DaemonSet) against a real in-memory API server, in simulated time.

mod daemonset;
mod deployment;
mod replicaset;
mod replicationcontroller;
mod statefulset;
mod statefulset_storage;
mod support;
