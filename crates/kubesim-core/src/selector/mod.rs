//! Label and field selectors: parsing (apimachinery grammar) and matching.

pub mod field;
pub mod label;
mod validate;

pub use field::{
    field_value, field_values, indexed_count, indexed_slot, selectable_fields, FieldOp,
    FieldRequirement, FieldSelector,
};
pub use label::{LabelOp, LabelRequirement, LabelSelector};
