//! The broker's request processors, one file per family of request codes. Each adds methods
//! to [`BrokerShard`](super::shard_state::BrokerShard) that serve a request on the shard that
//! owns its data; `shard_state` decides which shard that is.

pub mod admin;
pub mod offsets;
pub mod pull;
pub mod query;
pub mod runtime_info;
pub mod send;

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

/// Stored records back to back, as pull, query and view bodies carry them.
pub fn concat_records(records: &[Bytes]) -> Bytes {
    if let [one] = records {
        return one.clone();
    }
    let mut body = BytesMut::with_capacity(records.iter().map(Bytes::len).sum());
    records.iter().for_each(|r| body.extend_from_slice(r));
    body.freeze()
}
