//! Emulated nodes: a template that stamps out N of them, the pool that
//! creates them, and the kubelet heartbeat (Leases) for every emulated node.

mod cidr;
pub mod lease;
pub mod pool;
pub mod template;

pub use lease::LeaseRenewer;
pub use pool::ensure_nodes;
pub use template::NodeTemplate;
