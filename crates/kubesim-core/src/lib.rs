//! The object model of kubesim.
//!
//! Everything here is transport- and storage-independent: it works on
//! `serde_json::Value` objects and plain strings, so the API server, the
//! controllers and the simulator share one definition of what a Kubernetes
//! object is and how it behaves.

mod borrowed_key;
pub mod convert;
pub mod defaults;
pub mod error;
pub mod meta;
pub mod patch;
pub mod proto;
pub mod quantity;
pub mod resource;
pub mod same;
pub mod schema;
pub mod selector;
pub mod structural;
pub mod table;
pub mod validation;

pub use error::{ApiError, Cause};
pub use resource::{Registry, ResourceInfo, Scope};
