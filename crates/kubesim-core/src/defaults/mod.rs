//! Defaulting applied on create and update, as the real API server does.

use serde_json::Value;

use crate::resource::ResourceInfo;

/// What defaulting may need from the server.
pub struct Context<'a> {
    /// A random 5-character DNS-safe suffix, from the server's seeded RNG.
    pub random_suffix: &'a mut dyn FnMut() -> String,
}

/// Fills in defaults for `obj` of `resource`.
pub fn apply(_resource: &ResourceInfo, _obj: &mut Value, _ctx: &mut Context<'_>) {}
