//! Queue offsets and consumer offsets, served by the queue's owner shard: QUERY_CONSUMER_OFFSET,
//! UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, GET_EARLIEST_MSG_STORETIME and
//! SEARCH_OFFSET_BY_TIMESTAMP.

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard::Shard;
use crate::broker::work::{OffsetRequest, Work};
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{
    BoundaryType, GetEarliestMsgStoretimeResponseHeader, OffsetResponseHeader,
    QueryConsumerOffsetRequestHeader, SearchOffsetRequestHeader,
};
use crate::protocol::message::record::RecordView;
use crate::server::Response;
use ringmq_shards::QueueReadRequest;

/// Serves an offset request on the connection's shard: the queue's owner answers.
pub async fn serve(
    shard: &Shard,
    command: &RemotingCommand,
    request: OffsetRequest,
) -> BrokerResult<Response> {
    let (topic, queue_id) = request.queue();
    let owner = shard.owner_of(topic, queue_id);
    let ok = RemotingCommand::response_to(command, response::SUCCESS, None);
    let answered = match &request {
        OffsetRequest::UpdateConsumer(_) => Answered::Nothing,
        OffsetRequest::EarliestStoreTime(_) => Answered::Timestamp,
        _ => Answered::Offset,
    };
    let value = if owner == shard.id() {
        answer(shard, request).await?
    } else {
        shard
            .ask(owner, |reply| Work::Offset { request, reply })
            .await?
    };
    Ok(match answered {
        Answered::Nothing => ok,
        Answered::Timestamp => {
            ok.with_header(&GetEarliestMsgStoretimeResponseHeader { timestamp: value })
        }
        Answered::Offset => ok.with_header(&OffsetResponseHeader { offset: value }),
    }
    .into())
}

/// Which response header carries an offset request's answer.
enum Answered {
    Nothing,
    Timestamp,
    Offset,
}

/// Owner half: the offset (or store time) the request asks for; 0 for an update.
pub async fn answer(shard: &Shard, request: OffsetRequest) -> BrokerResult<i64> {
    let store = shard.store();
    match request {
        OffsetRequest::QueryConsumer(h) => consumer_offset(shard, &h),
        OffsetRequest::UpdateConsumer(h) => {
            if shard.topic(&h.topic).is_none() {
                return Err(BrokerError::TopicNotExist(h.topic));
            }
            store.set_consumer_offset(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset)?;
            Ok(0)
        }
        OffsetRequest::Max(h) => Ok(store.max_offset(&h.topic, h.queue_id)),
        OffsetRequest::Min(h) => Ok(store.min_offset(&h.topic, h.queue_id)),
        OffsetRequest::EarliestStoreTime(h) => {
            let first = store.min_offset(&h.topic, h.queue_id);
            Ok(store_time_at(shard, &h.topic, h.queue_id, first)
                .await?
                .unwrap_or(-1))
        }
        OffsetRequest::SearchByTime(h) => search_by_time(shard, &h).await,
    }
}

/// Apache 5.x (`ConsumerManageProcessor.queryConsumerOffset`): a group that never committed
/// gets QUERY_NOT_FOUND when it asked not to be given 0 (`setZeroIfNotFound` false); else 0
/// while the queue's min offset is 0 and its first message is still in memory (ringmq: in the
/// hot tail, Apache: in the page cache); else QUERY_NOT_FOUND, so the client's
/// CONSUME_FROM_* decides where it starts.
fn consumer_offset(shard: &Shard, h: &QueryConsumerOffsetRequestHeader) -> BrokerResult<i64> {
    let store = shard.store();
    if let Some(offset) = store.consumer_offset(&h.consumer_group, &h.topic, h.queue_id) {
        return Ok(offset);
    }
    if h.set_zero_if_not_found == Some(false) {
        return Err(BrokerError::QueryNotFound(
            "Not found, do not set to zero, maybe this group boot first".into(),
        ));
    }
    if store.min_offset(&h.topic, h.queue_id) <= 0 && store.in_memory(&h.topic, h.queue_id, 0) {
        return Ok(0);
    }
    Err(BrokerError::QueryNotFound(
        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first".into(),
    ))
}

async fn search_by_time(shard: &Shard, h: &SearchOffsetRequestHeader) -> BrokerResult<i64> {
    let store = shard.store();
    let first_at_or_after = store
        .search_offset_by_time(&h.topic, h.queue_id, h.timestamp)
        .await?;
    Ok(match h.boundary_type {
        BoundaryType::Lower => first_at_or_after,
        // The last one stored at or before: one before the first one after.
        BoundaryType::Upper => {
            let after = store
                .search_offset_by_time(&h.topic, h.queue_id, h.timestamp.saturating_add(1))
                .await?;
            (after - 1).max(store.min_offset(&h.topic, h.queue_id))
        }
    })
}

/// Store time of the message at `offset` in a queue; `None` when there is none (or it does
/// not parse: the answer is informative).
pub async fn store_time_at(
    shard: &Shard,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> BrokerResult<Option<i64>> {
    if offset < 0 {
        return Ok(None);
    }
    let read = shard
        .store()
        .read_queue(QueueReadRequest {
            topic,
            queue_id,
            offset,
            max_count: 1,
            max_bytes: usize::MAX,
            tag_filter: None,
            record_filter: None,
        })
        .await?;
    Ok(read
        .records
        .into_iter()
        .next()
        .and_then(|record| RecordView::parse(record).ok())
        .map(|record| record.store_timestamp_ms()))
}
