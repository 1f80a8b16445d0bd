//! Queue offsets and consumer offsets, served by the queue's owner shard: QUERY_CONSUMER_OFFSET,
//! UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET, GET_EARLIEST_MSG_STORETIME and
//! SEARCH_OFFSET_BY_TIMESTAMP.

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard_state::BrokerShard;
use crate::protocol::codes::{request as code, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{
    BoundaryType, GetEarliestMsgStoretimeResponseHeader, GetMaxOffsetRequestHeader,
    OffsetResponseHeader, QueryConsumerOffsetRequestHeader, QueueRequestHeader,
    SearchOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use crate::protocol::message::record::RecordView;
use ringmq_shards::QueueReadRequest;

impl BrokerShard {
    pub(crate) async fn serve_offsets(
        &self,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        let ok = |offset: i64| {
            RemotingCommand::response_to(request, response::SUCCESS, None)
                .with_header(&OffsetResponseHeader { offset })
        };
        let store = self.store();
        match request.code {
            code::QUERY_CONSUMER_OFFSET => {
                let h: QueryConsumerOffsetRequestHeader = request.decode_header()?;
                match store.consumer_offset(&h.consumer_group, &h.topic, h.queue_id) {
                    Some(offset) => Ok(ok(offset)),
                    // Java (4.9): a group that never committed starts at 0 while the queue
                    // still holds its first message; otherwise "not found" lets the client
                    // apply its consume-from-where policy. 5.x clients may ask for 0 outright.
                    None if store.min_offset(&h.topic, h.queue_id) <= 0
                        || h.set_zero_if_not_found == Some(true) =>
                    {
                        Ok(ok(0))
                    }
                    None => Err(BrokerError::QueryNotFound(
                        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first".into(),
                    )),
                }
            }
            code::UPDATE_CONSUMER_OFFSET => {
                let h: UpdateConsumerOffsetRequestHeader = request.decode_header()?;
                if self.topic(&h.topic).is_none() {
                    return Err(BrokerError::TopicNotExist(h.topic));
                }
                store.set_consumer_offset(
                    &h.consumer_group,
                    &h.topic,
                    h.queue_id,
                    h.commit_offset,
                )?;
                Ok(RemotingCommand::response_to(
                    request,
                    response::SUCCESS,
                    None,
                ))
            }
            code::GET_MAX_OFFSET => {
                let h: GetMaxOffsetRequestHeader = request.decode_header()?;
                Ok(ok(store.max_offset(&h.topic, h.queue_id)))
            }
            code::GET_MIN_OFFSET => {
                let h: QueueRequestHeader = request.decode_header()?;
                Ok(ok(store.min_offset(&h.topic, h.queue_id)))
            }
            code::GET_EARLIEST_MSG_STORETIME => {
                let h: QueueRequestHeader = request.decode_header()?;
                let read = store
                    .read_queue(QueueReadRequest {
                        topic: &h.topic,
                        queue_id: h.queue_id,
                        offset: store.min_offset(&h.topic, h.queue_id),
                        max_count: 1,
                        max_bytes: usize::MAX,
                        tag_filter: None,
                    })
                    .await?;
                let timestamp = match read.records.into_iter().next() {
                    Some(record) => RecordView::parse(record)
                        .map_err(ringmq_shards::StoreError::from)?
                        .store_timestamp_ms(),
                    None => -1,
                };
                Ok(
                    RemotingCommand::response_to(request, response::SUCCESS, None)
                        .with_header(&GetEarliestMsgStoretimeResponseHeader { timestamp }),
                )
            }
            code::SEARCH_OFFSET_BY_TIMESTAMP => {
                let h: SearchOffsetRequestHeader = request.decode_header()?;
                let first_at_or_after = store
                    .search_offset_by_time(&h.topic, h.queue_id, h.timestamp)
                    .await?;
                let offset = match h.boundary_type {
                    BoundaryType::Lower => first_at_or_after,
                    // The last one stored at or before: one before the first one after.
                    BoundaryType::Upper => {
                        let after = store
                            .search_offset_by_time(
                                &h.topic,
                                h.queue_id,
                                h.timestamp.saturating_add(1),
                            )
                            .await?;
                        (after - 1).max(store.min_offset(&h.topic, h.queue_id))
                    }
                };
                Ok(ok(offset))
            }
            other => Err(BrokerError::Internal(format!(
                "code {other} is not an offset request"
            ))),
        }
    }
}
