//! kwok's Stage API (`kwok.x-k8s.io/v1alpha1`): selectors, weights,
//! delays and the steps that move an object along its lifecycle.

mod delay;
pub mod funcs;
pub mod ippool;
pub mod jq;
mod select;
pub mod spec;

pub use select::choose;
pub use spec::{load_yaml, Stage};
