//! The object model of kubesim.
//!
//! Everything here is transport- and storage-independent: it works on
//! `serde_json::Value` objects and plain strings, so the API server, the
//! controllers and the simulator share one definition of what a Kubernetes
//! object is and how it behaves.
//!
//! This crate owns the object model: the resource registry (built-in kinds
//! and CRDs), API errors, metadata helpers, selectors, quantities, the
//! patch engines, defaulting, validation, OpenAPI schemas, Tables,
//! protobuf body decoding and version conversion.
//!
//! It must never do I/O, spawn tasks, read the time or draw random numbers
//! (callers pass in what they need), and it depends on no other kubesim
//! crate.

mod borrowed_key;
pub mod convert;
pub mod defaults;
pub mod error;
pub mod meta;
pub mod patch;
pub mod proto;
pub mod quantity;
pub mod rbac;
pub mod resource;
pub mod same;
pub mod schema;
pub mod selector;
pub mod structural;
pub mod table;
pub mod validation;

pub use error::{ApiError, Cause};
pub use resource::{Registry, ResourceInfo, Scope};
