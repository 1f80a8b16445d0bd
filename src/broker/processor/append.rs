//! The one owner-side store: every message a client sends, and every copy a consumer hands
//! back, is appended by the shard that owns its queue, here.
//!
//! Per append: one `append_batch` into the shard's log (one copy of each body into the log's
//! buffer); a cross-shard hop when the connection's shard does not own the queue (the
//! messages move, their bodies are not copied).

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard::Shard;
use crate::broker::work::{Append, Work};
use ringmq_shards::AppendResult;

/// Stores `append` on shard `owner`: here, or through the bus.
pub async fn append_on(
    shard: &Shard,
    owner: usize,
    append: Append,
) -> BrokerResult<Vec<AppendResult>> {
    if owner == shard.id() {
        return store(shard, append).await;
    }
    shard
        .ask(owner, |reply| Work::Append { append, reply })
        .await
}

/// Owner half: appends messages to queues this shard owns. A message asking for a delay
/// level (where `delayable`) is stored as its SCHEDULE_TOPIC_XXXX record on this shard,
/// which delivers it to its queue when due.
pub async fn store(shard: &Shard, append: Append) -> BrokerResult<Vec<AppendResult>> {
    if shard.is_stopping() {
        return Err(BrokerError::ShuttingDown);
    }
    let Append {
        mut messages,
        delayable,
    } = append;
    for message in &mut messages {
        // Routing is decided before the work is sent; storing elsewhere would lose the
        // message for every reader of its queue.
        assert_eq!(
            shard.owner_of(&message.topic, message.queue_id),
            shard.id(),
            "queue {}:{} stored by a shard that does not own it",
            message.topic,
            message.queue_id
        );
        if delayable {
            shard
                .store()
                .config()
                .delay_levels
                .schedule(message)
                .map_err(|e| BrokerError::MessageIllegal(e.to_string()))?;
        }
    }
    let results = shard.store().append_batch(&messages).await?;
    shard.count_put(results.len(), results.iter().map(|r| r.wrote_bytes).sum());
    Ok(results)
}
