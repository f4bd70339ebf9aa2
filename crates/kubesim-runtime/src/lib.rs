//! What every kubesim control loop needs: the [`Clock`], the seeded
//! [`Rng`], the [`Api`] through which components reach objects, shared
//! [`Informer`]s, [`WorkQueue`]s and the [`EventRecorder`].
//!
//! It owns time and randomness for the whole workspace: no other crate
//! reads the wall clock, sleeps on tokio directly or seeds its own
//! generator, and nothing outside the clock module reads time here
//! either. That is what lets one control plane run under the wall clock
//! and under the simulated one. The [`Api`] trait is the boundary
//! components may not cross: this crate must never depend on the API
//! server, so that controllers reach objects in process and over HTTP
//! alike.

pub mod api;
pub mod cache;
pub mod client_limits;
pub mod clock;
pub mod decode;
pub mod events;
pub mod histogram;
pub mod informer;
mod panics;
#[cfg(feature = "remote")]
pub mod remote;
#[cfg(feature = "remote")]
mod remote_answer;
#[cfg(feature = "remote")]
pub mod remote_transport;
pub mod rng;
pub mod shape_check;
mod spam;
pub mod workqueue;
pub mod workqueue_metrics;

pub use api::{
    version_answer, Api, DeleteOptions, FieldValidation, ListOptions, ResourceRef, WatchEvent,
    WriteOptions,
};
pub use cache::Lazy;
pub use clock::{Clock, Idle, Lockstep};
pub use events::{EventRecorder, EventStyle, EventType, ObjectRef};
pub use informer::{
    metadata_only, ownership_only, Cache, Change, HandlerId, Informer, Informers, KeyRef, KeyedMap,
    ObjectKey, Shape,
};
pub use panics::panic_message;
#[cfg(feature = "remote")]
pub use remote::RemoteApi;
pub use rng::Rng;
pub use shape_check::ShapeCheck;
pub use workqueue::{retryable, run_workers, Requeue, WorkQueue};
