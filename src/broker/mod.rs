//! The broker: N shards, one glommio executor pinned per core, each owning its queues'
//! storage, offsets and long-poll waiters; a cross-shard router for requests that reach a
//! connection on a shard that does not own their queue; a control plane (topics,
//! subscription groups, consumer-group membership, queue locks) with one writer, shard 0,
//! and versioned read-only copies on every shard.

pub mod config;
pub mod control;
