//! The Kubernetes API of kubesim: the transport-independent verbs
//! ([`service`]) and the HTTP server on top of them ([`http`]).
//!
//! It owns the verbs' semantics (decoding, defaulting, admission,
//! validation, managedFields, commits, watches, conversion between served
//! versions) and [`inprocess::InProcess`], the `Api` for components in the
//! same process. It must never depend on the controllers, the scheduler
//! or the emulator: extra HTTP paths reach it through
//! [`http::ExtraRoutes`], handed in by the binary.

pub mod audit;
pub mod auth;
pub mod http;
pub mod inprocess;
pub mod service;

pub use service::Server;
