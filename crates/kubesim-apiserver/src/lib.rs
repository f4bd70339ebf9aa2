//! The Kubernetes API of kubesim: the transport-independent verbs
//! ([`service`]) and the HTTP server on top of them ([`http`]).

pub mod http;
pub mod inprocess;
pub mod service;

pub use service::Server;
