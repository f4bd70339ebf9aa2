//! What every kubesim control loop needs: the [`Clock`], the seeded
//! [`Rng`], the [`Api`] through which components reach objects, shared
//! [`Informer`]s, [`WorkQueue`]s and the [`EventRecorder`].

pub mod ahead;
pub mod api;
pub mod cache;
pub mod clock;
pub mod decode;
pub mod events;
pub mod informer;
#[cfg(feature = "remote")]
pub mod remote;
pub mod rng;
mod spam;
pub mod workqueue;

pub use ahead::{Ahead, Promise};
pub use api::{
    Api, DeleteOptions, FieldValidation, ListOptions, ResourceRef, WatchEvent, WriteOptions,
};
pub use cache::Lazy;
pub use clock::{Clock, Lockstep};
pub use events::{EventRecorder, EventStyle, EventType};
pub use informer::{
    metadata_only, ownership_only, Cache, Change, Informer, Informers, KeyRef, KeyedMap, ObjectKey,
    Shape,
};
#[cfg(feature = "remote")]
pub use remote::RemoteApi;
pub use rng::Rng;
pub use workqueue::{retryable, run_workers, Requeue, WorkQueue};
