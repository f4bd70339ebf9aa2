pub mod interpod_affinity;
pub mod topology_spread;
