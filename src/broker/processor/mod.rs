//! The broker's request handlers, one file per family of requests: free functions over a
//! [`Shard`](super::shard::Shard). A family's file holds both halves of its requests: the
//! connection shard's (route, then encode the answer) and the owner's (serve the typed work).
//! Which request goes to which family is decided once, in `broker::dispatch`.

pub mod admin;
pub mod append;
pub mod client_config;
pub mod control;
pub mod offsets;
pub mod pull;
pub mod query;
pub mod reply;
pub mod runtime_info;
pub mod send;
pub mod send_back;
pub mod stats;
pub mod transaction;
