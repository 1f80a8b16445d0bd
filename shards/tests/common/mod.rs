//! Helpers shared by the storage integration tests.
#![allow(dead_code)] // Each test binary uses a different subset.

use bytes::Bytes;
use ringmq_shards::record::{format_properties, Message};
use ringmq_shards::{FlushMode, QueueReadRequest, ShardConfig};
use std::path::Path;

pub const STORE_HOST: &str = "127.0.0.1:10911";

/// A message for `topic`/`queue_id` with `body` and optional tag and keys.
pub fn message(
    topic: &str,
    queue_id: i32,
    body: &[u8],
    tag: Option<&str>,
    keys: Option<&str>,
) -> Message {
    let mut props = Vec::new();
    if let Some(tag) = tag {
        props.push(("TAGS", tag));
    }
    if let Some(keys) = keys {
        props.push(("KEYS", keys));
    }
    Message {
        topic: topic.into(),
        queue_id,
        flag: 0,
        sys_flag: 0,
        born_timestamp_ms: 1_700_000_000_000,
        born_host: "127.0.0.1:50000".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: Bytes::copy_from_slice(body),
        properties: Bytes::from(format_properties(props)),
    }
}

/// A small-segment configuration for tests.
pub fn config(dir: &Path, mode: FlushMode, segment_bytes: u64) -> ShardConfig {
    let mut config = ShardConfig::new(dir, 1, STORE_HOST.parse().unwrap());
    config.log.flush_mode = mode;
    config.log.segment_bytes = segment_bytes;
    config.log.hot_tail_bytes_max = 64 << 10;
    config.log.group_commit_bytes_max = 16 << 10;
    config
}

/// A read of a whole (small) queue from its start.
pub fn all(topic: &str, queue_id: i32) -> QueueReadRequest<'_> {
    QueueReadRequest {
        topic,
        queue_id,
        offset: 0,
        max_count: 1000,
        max_bytes: usize::MAX,
        tag_filter: None,
        record_filter: None,
    }
}
