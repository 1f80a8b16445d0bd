//! The broker: N shards, one glommio executor pinned per core, each owning its queues'
//! storage, offsets and long-poll waiters; a cross-shard router for requests that reach a
//! connection on a shard that does not own their queue; a control plane (topics,
//! subscription groups, consumer-group membership, queue locks) with one writer, shard 0,
//! and versioned read-only copies on every shard.
//!
//! `runtime` starts it; `shard_state` is one shard and decides where a request is served;
//! `processor/` serves each family of requests; `control_plane` is shard 0's writer;
//! `router` carries work between shards; `registration` talks to the NameServers.

pub mod config;
pub mod control;
pub mod control_plane;
pub mod error;
pub mod placement;
pub mod processor;
pub mod registration;
pub mod router;
pub mod runtime;
pub mod shard_state;
pub mod work;

/// Wall-clock milliseconds, as stored in records and compared with heartbeat and lock times.
pub(crate) fn now_ms() -> i64 {
    ringmq_shards::io::Clock::now_ms(&ringmq_shards::RealClock)
}
