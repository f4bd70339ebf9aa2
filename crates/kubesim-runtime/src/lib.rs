//! What every kubesim control loop needs: the [`Clock`], the seeded
//! [`Rng`], and the [`Api`] through which components reach objects.

pub mod api;
pub mod clock;
pub mod rng;

pub use api::{
    Api, DeleteOptions, FieldValidation, ListOptions, ResourceRef, WatchEvent, WriteOptions,
};
pub use clock::Clock;
pub use rng::Rng;
