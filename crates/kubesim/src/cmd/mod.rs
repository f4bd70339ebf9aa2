//! One module per subcommand.

pub mod bench;
mod bench_attach;
pub mod bench_bringup;
mod bench_family_runs;
mod bench_hold;
pub mod bench_load;
pub mod bench_scheduler;
pub mod bench_simulate;
pub mod client_cert;
pub mod emulate;
mod emulation;
mod kubelet_metrics;
pub mod load;
pub mod machine;
pub mod pki;
pub mod protection;
pub mod scenario;
pub mod simulate;
pub mod simulate_serve;
pub mod up;
pub mod workload;
