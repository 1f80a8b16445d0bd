//! The broker: N shards, one glommio executor pinned per core, each owning its queues'
//! storage, offsets and long-poll waiters; a control plane (topics, subscription groups,
//! consumer-group membership, queue locks) with one writer, shard 0, and versioned read-only
//! copies on every shard; a bus carrying typed work between shards.
//!
//! The request path, top to bottom: `dispatch` classifies a client request once (the one
//! request table) and hands the typed request to its family in `processor/`; what another
//! shard must do travels as `work` and is served there by `inbox`; control operations are
//! applied by `control_pump` on shard 0 with the `control` tables. `shard` is one shard's
//! state; `runtime` starts and stops it all; `registration` talks to the NameServers.

pub mod config;
pub mod control;
pub mod control_pump;
pub mod dispatch;
pub mod error;
pub mod filter;
pub mod inbox;
pub mod names;
pub mod placement;
pub mod processor;
pub mod registration;
pub mod runtime;
pub mod shard;
pub mod transaction;
pub mod work;

/// Wall-clock milliseconds, as stored in records and compared with heartbeat and lock times.
pub(crate) fn now_ms() -> i64 {
    ringmq_shards::io::Clock::now_ms(&ringmq_shards::RealClock)
}
