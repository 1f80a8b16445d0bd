//! VIEW_MESSAGE_BY_ID (on the shard whose id is in the offset) and QUERY_MESSAGE (every shard
//! searches its own index; the connection's shard merges the answers).

use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard_state::BrokerShard;
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{
    QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use crate::protocol::message::record::RecordView;
use crate::protocol::message::split_records;
use bytes::BytesMut;
use ringmq_shards::KeyQuery;

/// Most messages one QUERY_MESSAGE returns in all (Java's `defaultQueryMaxNum` is 32 per
/// request, `maxMsgsNumBatch` 64 per store).
pub const QUERY_MESSAGES_MAX: usize = 64;

impl BrokerShard {
    pub(crate) async fn serve_view_message(
        &self,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        let header: ViewMessageRequestHeader = request.decode_header()?;
        let record = self.store().read_at(header.offset).await.map_err(|_| {
            BrokerError::Illegal(format!(
                "can not find message by the offset, {}",
                header.offset
            ))
        })?;
        Ok(RemotingCommand::response_to(request, response::SUCCESS, None).with_body(record))
    }

    /// This shard's part of a QUERY_MESSAGE: the matching records, concatenated.
    pub(crate) async fn serve_query_message_part(
        &self,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        let header: QueryMessageRequestHeader = request.decode_header()?;
        let records = self
            .store()
            .query_by_key(KeyQuery {
                topic: &header.topic,
                key: &header.key,
                begin_ms: header.begin_timestamp,
                end_ms: header.end_timestamp,
                max: query_limit(header.max_num),
            })
            .await?;
        Ok(
            RemotingCommand::response_to(request, response::SUCCESS, None)
                .with_body(super::concat_records(&records)),
        )
    }
}

fn query_limit(max_num: i32) -> usize {
    usize::try_from(max_num)
        .unwrap_or(0)
        .clamp(1, QUERY_MESSAGES_MAX)
}

/// Joins the shards' parts of a QUERY_MESSAGE into the client's answer (QUERY_NOT_FOUND when
/// none matched, as Java answers).
pub(crate) fn merge_query_parts(
    request: &RemotingCommand,
    parts: Vec<RemotingCommand>,
) -> BrokerResult<RemotingCommand> {
    let header: QueryMessageRequestHeader = request.decode_header()?;
    let mut found: Vec<RecordView> = parts
        .into_iter()
        .flat_map(|part| split_records(part.body).flatten())
        .collect();
    // As Java's index query: the newest `limit` matches, oldest first (DefaultMessageStore
    // sorts the found commit-log offsets). Across shards the store time orders them; the
    // physical offset (shard id in its high bits) breaks ties the same way every time.
    found.sort_by_key(|record| (record.store_timestamp_ms(), record.physical_offset()));
    let taken = found.len().min(query_limit(header.max_num));
    let mut body = BytesMut::new();
    for record in &found[found.len() - taken..] {
        body.extend_from_slice(record.as_bytes());
    }
    if taken == 0 {
        return Err(BrokerError::QueryNotFound(
            "can not find message, maybe time range not correct".into(),
        ));
    }
    let response_header = QueryMessageResponseHeader {
        index_last_update_timestamp: 0,
        index_last_update_phy_offset: 0,
    };
    Ok(
        RemotingCommand::response_to(request, response::SUCCESS, None)
            .with_header(&response_header)
            .with_body(body.freeze()),
    )
}
