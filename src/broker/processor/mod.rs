//! The broker's request processors, one file per family of request codes. Each adds methods
//! to [`BrokerShard`](super::shard_state::BrokerShard) that serve a request on the shard that
//! owns its data; `shard_state` decides which shard that is.

pub mod admin;
pub mod offsets;
pub mod pull;
pub mod query;
pub mod runtime_info;
pub mod send;
pub mod send_back;

use crate::protocol::codes::request as code;
use bytes::{Bytes, BytesMut};

/// Requests about the control plane (topics, groups, clients, locks): served by shard 0, the
/// tables' only writer.
pub fn is_control(request_code: i32) -> bool {
    matches!(
        request_code,
        code::HEART_BEAT
            | code::UNREGISTER_CLIENT
            | code::GET_CONSUMER_LIST_BY_GROUP
            | code::GET_CONSUMER_CONNECTION_LIST
            | code::LOCK_BATCH_MQ
            | code::UNLOCK_BATCH_MQ
            | code::UPDATE_AND_CREATE_TOPIC
            | code::DELETE_TOPIC_IN_BROKER
            | code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
            | code::DELETE_SUBSCRIPTIONGROUP
    )
}

/// The sends: checked on the connection's shard, stored by the queue's owner.
pub fn is_send(request_code: i32) -> bool {
    matches!(
        request_code,
        code::SEND_MESSAGE | code::SEND_MESSAGE_V2 | code::SEND_BATCH_MESSAGE
    )
}

/// Requests about one queue (`topic` + `queueId` in the header): served by its owner.
pub fn is_queue_request(request_code: i32) -> bool {
    matches!(
        request_code,
        code::PULL_MESSAGE
            | code::LITE_PULL_MESSAGE
            | code::QUERY_CONSUMER_OFFSET
            | code::UPDATE_CONSUMER_OFFSET
            | code::GET_MAX_OFFSET
            | code::GET_MIN_OFFSET
            | code::GET_EARLIEST_MSG_STORETIME
            | code::SEARCH_OFFSET_BY_TIMESTAMP
    )
}

/// Statistics every shard contributes to (for the queues it owns); merged by the asker.
pub fn is_stats(request_code: i32) -> bool {
    matches!(
        request_code,
        code::GET_TOPIC_STATS_INFO
            | code::GET_CONSUME_STATS
            | code::GET_BROKER_RUNTIME_INFO
            | code::QUERY_TOPIC_CONSUME_BY_WHO
    )
}

/// Stored records back to back, as pull, query and view bodies carry them.
pub fn concat_records(records: &[Bytes]) -> Bytes {
    if let [one] = records {
        return one.clone();
    }
    let mut body = BytesMut::with_capacity(records.iter().map(Bytes::len).sum());
    records.iter().for_each(|r| body.extend_from_slice(r));
    body.freeze()
}
