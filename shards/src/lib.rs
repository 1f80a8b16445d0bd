//! ringmq-shards: the storage engine one shard owns alone (commit log, consume queues,
//! index, consumer offsets, recovery). It knows records and files, nothing of connections.
//!
//! Entry point: [`Shard::open`] with a [`ShardConfig`], a [`Disk`] and a [`Clock`] — the
//! real ones ([`RealDisk`], [`RealClock`], inside a glommio executor) or the simulated,
//! fault-injecting ones ([`SimDisk`], [`SimClock`]).

mod append_file;
mod checkpoint;
pub mod commit_log;
pub mod config;
mod consume_queue;
mod consumer_offsets;
mod dsync_ring;
pub mod error;
pub mod event;
mod file_replace;
pub mod io;
mod key_index;
mod meta_file;
pub mod offset;
mod read_cache;
pub mod real_io;
pub mod record;
mod recovery;
pub mod schedule;
pub mod shard;
pub mod sim_io;
pub mod timer;
pub mod transaction;

pub use config::{FlushMode, LogConfig, RetentionConfig, ShardConfig};
pub use consume_queue::pages::{PageCacheStats, PAGE_BYTES};
pub use consume_queue::{FILE_ENTRIES, PAGE_ENTRIES};

/// The maps every append and pull goes through (queues by topic, the key index, consumer
/// offsets). std's SipHash of every UNIQ_KEY and topic name was 7 % of the broker's CPU on
/// async sends; foldhash is several times faster and seeded per process, so a client cannot
/// prepare colliding keys without seeing this process's seed.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
pub use error::{DiskFull, StoreError};
pub use file_replace::{replace_file, tmp_path, REPLACE_BYTES_MAX};
pub use io::{Clock, Disk, DiskFile};
pub use key_index::KeyQuery;
pub use offset::PhysicalOffset;
pub use real_io::{Durability, RealClock, RealDisk};
pub use schedule::DelayLevels;
pub use shard::{
    AppendResult, DeliveryTurn, Lag, QueueEntry, QueueRead, QueueReadRequest, RecordFilter,
    Removal, RemovalReason, RetentionStats, Scheduled, Shard,
};
pub use sim_io::{SimClock, SimDisk, SimRng};
