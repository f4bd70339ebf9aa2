//! A scheduler that decides as kube-scheduler does: a priority queue with
//! backoff, the framework's extension points, the default plugins with
//! upstream's formulas and weights, preemption, and profiles from a
//! KubeSchedulerConfiguration.

pub mod framework;
pub mod plugins;
pub mod preemption;
