//! kwok's Stage API (`kwok.x-k8s.io/v1alpha1`): selectors, weights,
//! delays and the steps that move an object along its lifecycle.

mod delay;
pub mod engine;
pub mod explain;
pub mod expr;
pub mod funcs;
pub mod ippool;
pub mod jq;
mod jq_native;
mod lifecycle;
mod resolve;
mod select;
pub mod spec;
mod steps;

pub use engine::{default_stage_objects, stage_objects_from_yaml, stages_resource};
pub use explain::{explain, Planned};
pub use lifecycle::Shared;
pub use select::choose;
pub use spec::Stage;
