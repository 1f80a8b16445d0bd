//! ringmq-shards: the storage engine one shard owns alone (commit log, consume queues,
//! index, consumer offsets, recovery). It knows records and files, nothing of connections.

pub mod record;
