//! Emulated nodes: a template that stamps out N of them, the pool that
//! creates them, and the kubelet heartbeat (Leases) for every emulated node.

pub(crate) mod cidr;
pub mod csinode;
pub mod lease;
pub mod pool;
pub mod template;

pub use lease::LeaseRenewer;
pub use pool::ensure_nodes;
pub use template::NodeTemplate;

/// FNV-1a: a stable hash of a name, independent of process and platform,
/// for placing a node in time (lease slots) or address space.
pub(crate) fn fnv1a(name: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}
