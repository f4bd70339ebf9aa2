//! Label and field selectors: parsing (apimachinery grammar) and matching.

// Selector errors are `ApiError`s because they go straight back to clients
// as 400s; its size is a crate-wide choice, not one to work around here.
#![allow(clippy::result_large_err)]

pub mod field;
pub mod label;
mod validate;

pub use field::{
    field_value, field_values, selectable_fields, FieldOp, FieldRequirement, FieldSelector,
};
pub use label::{LabelOp, LabelRequirement, LabelSelector};
