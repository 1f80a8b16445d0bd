//! The control plane: its tables (topics, subscription groups, online clients, queue locks),
//! the plane that applies operations to them and returns their effects, the operations the
//! shards send it and the snapshot every shard reads. Owned by shard 0's control pump.

pub mod consumers;
pub mod ops;
pub mod plane;
pub mod queue_locks;
pub mod snapshot;
pub mod subscription_groups;
pub mod topics;
