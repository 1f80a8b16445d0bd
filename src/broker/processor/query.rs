//! VIEW_MESSAGE_BY_ID (on the shard whose id is in the offset) and QUERY_MESSAGE (every shard
//! searches its own index; the connection's shard merges the answers). The records found are
//! written to the client as they are, one vectored write.

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::placement::owner_of_offset;
use crate::broker::shard::Shard;
use crate::broker::work::{KeyQueryOwned, Work};
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{QueryMessageRequestHeader, QueryMessageResponseHeader};
use crate::protocol::message::record::RecordView;
use crate::server::Response;
use bytes::Bytes;
use ringmq_shards::KeyQuery;

/// Most messages one QUERY_MESSAGE returns in all (Java's `defaultQueryMaxNum` is 32 per
/// request, `maxMsgsNumBatch` 64 per store).
pub const QUERY_MESSAGES_MAX: usize = 64;

/// VIEW_MESSAGE_BY_ID: the record at the physical offset of an offsetMsgId.
pub async fn serve_view(
    shard: &Shard,
    command: &RemotingCommand,
    offset: i64,
) -> BrokerResult<Response> {
    let record = record_at(shard, offset).await.map_err(|_| {
        BrokerError::Illegal(format!("can not find message by the offset, {offset}"))
    })?;
    let ok = RemotingCommand::response_to(command, response::SUCCESS, None);
    Ok(Response::gathered(ok, vec![record]))
}

/// The stored record at a client-visible physical offset, read on the shard that wrote it.
pub async fn record_at(shard: &Shard, offset: i64) -> BrokerResult<Bytes> {
    let owner = owner_of_offset(offset, shard.shards()).ok_or_else(|| {
        BrokerError::Illegal(format!("can not find message by the offset, {offset}"))
    })?;
    if owner == shard.id() {
        return read_at(shard, offset).await;
    }
    shard
        .ask(owner, |reply| Work::ReadAt { offset, reply })
        .await
}

/// Owner half of [`record_at`].
pub async fn read_at(shard: &Shard, offset: i64) -> BrokerResult<Bytes> {
    debug_assert_eq!(owner_of_offset(offset, shard.shards()), Some(shard.id()));
    Ok(shard.store().read_at(offset).await?)
}

/// QUERY_MESSAGE: the newest matches of a key over every shard.
pub async fn serve_query(
    shard: &Shard,
    command: &RemotingCommand,
    header: QueryMessageRequestHeader,
) -> BrokerResult<Response> {
    let query = KeyQueryOwned {
        topic: header.topic,
        key: header.key,
        begin_ms: header.begin_timestamp,
        end_ms: header.end_timestamp,
        max: query_limit(header.max_num),
    };
    let parts = shard
        .on_every_shard(|reply| Work::QueryKey {
            query: Box::new(query.clone()),
            reply,
        })
        .await?;
    let mut found: Vec<RecordView> = parts
        .into_iter()
        .flatten()
        .filter_map(|record| RecordView::parse(record).ok())
        .collect();
    // As Java's index query: the newest `limit` matches, oldest first (DefaultMessageStore
    // sorts the found commit-log offsets). Across shards the store time orders them; the
    // physical offset (shard id in its high bits) breaks ties the same way every time.
    found.sort_by_key(|record| (record.store_timestamp_ms(), record.physical_offset()));
    let taken = found.len().min(query.max);
    if taken == 0 {
        return Err(BrokerError::QueryNotFound(
            "can not find message, maybe time range not correct".into(),
        ));
    }
    let records = found[found.len() - taken..]
        .iter()
        .map(|record| record.as_bytes().clone())
        .collect();
    let response_header = QueryMessageResponseHeader {
        index_last_update_timestamp: 0,
        index_last_update_phy_offset: 0,
    };
    let ok = RemotingCommand::response_to(command, response::SUCCESS, None)
        .with_header(&response_header);
    Ok(Response::gathered(ok, records))
}

/// Owner half of a QUERY_MESSAGE: this shard's matches.
pub async fn query_part(shard: &Shard, query: &KeyQueryOwned) -> BrokerResult<Vec<Bytes>> {
    Ok(shard
        .store()
        .query_by_key(KeyQuery {
            topic: &query.topic,
            key: &query.key,
            begin_ms: query.begin_ms,
            end_ms: query.end_ms,
            max: query.max,
        })
        .await?)
}

fn query_limit(max_num: i32) -> usize {
    usize::try_from(max_num)
        .unwrap_or(0)
        .clamp(1, QUERY_MESSAGES_MAX)
}
