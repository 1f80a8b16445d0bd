//! The control plane's tables. Shard 0 owns and writes them; the other shards read the
//! versioned snapshots it sends.

pub mod consumers;
pub mod queue_locks;
pub mod subscription_groups;
pub mod topics;
