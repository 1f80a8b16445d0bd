//! What the other shards (and shard 0's own connections) ask of the control plane. Each
//! operation carries the handle its typed answer goes back through, so the answer's type is
//! fixed by the operation: there is no reply enum to match and no "unexpected reply".

use super::consumers::ClientChannel;
use crate::broker::error::BrokerResult;
use crate::protocol::body::consumer_group::ConsumerConnection;
use crate::protocol::body::heartbeat::HeartbeatData;
use crate::protocol::body::lock::{LockBatchRequestBody, UnlockBatchRequestBody};
use crate::protocol::body::stats::MessageQueue;
use crate::protocol::body::subscription_group::SubscriptionGroupConfig;
use crate::protocol::body::TopicConfig;
use crate::protocol::command::LanguageCode;
use crate::server::ConnectionId;
use ringmq_bus::ReplyTo;
use std::net::SocketAddr;

/// The connection a heartbeat arrived on: where the client's members are reached later.
#[derive(Clone, Copy, Debug)]
pub struct ClientOrigin {
    pub shard: usize,
    pub connection: ConnectionId,
    pub peer: SocketAddr,
    /// From the heartbeat's frame header.
    pub language: LanguageCode,
    pub version: i32,
}

impl ClientOrigin {
    pub fn channel(&self, client_id: &str, now_ms: i64) -> ClientChannel {
        ClientChannel {
            shard: self.shard,
            connection: self.connection,
            client_id: client_id.to_owned(),
            client_addr: self.peer.to_string(),
            language: self.language,
            version: self.version,
            last_update_ms: now_ms,
        }
    }
}

/// Where a producer is reached: the shard holding its connection, and the connection (for
/// transaction checks and reply pushes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerChannel {
    pub shard: usize,
    pub connection: ConnectionId,
}

/// One control-plane operation, applied by shard 0 in arrival order.
pub enum ControlOp {
    /// A send to a topic this broker does not have: create it from its template (TBW102)
    /// when auto-creation is allowed, or a `%RETRY%` topic; `None` when it may not be made.
    CreateTopicForSend {
        topic: String,
        default_topic: String,
        queue_nums: i32,
        reply: ReplyTo<BrokerResult<Option<TopicConfig>>>,
    },
    /// A group's config, created on first use when the broker allows it; `None` when not.
    FindOrCreateGroup {
        group: String,
        reply: ReplyTo<BrokerResult<Option<SubscriptionGroupConfig>>>,
    },
    /// `%DLQ%group` (one queue, read-write), created if it does not exist yet.
    CreateDlqTopic {
        group: String,
        reply: ReplyTo<BrokerResult<TopicConfig>>,
    },
    Heartbeat {
        client: ClientOrigin,
        data: HeartbeatData,
        reply: ReplyTo<BrokerResult<()>>,
    },
    UnregisterClient {
        consumer_group: Option<String>,
        producer_group: Option<String>,
        client_id: String,
        reply: ReplyTo<BrokerResult<()>>,
    },
    /// A live producer of `group` to send CHECK_TRANSACTION_STATE to (round-robin over the
    /// group's members, as Apache's `getAvailableChannel`); `None` when none is online.
    ProducerChannel {
        group: String,
        reply: ReplyTo<BrokerResult<Option<ProducerChannel>>>,
    },
    /// The connection of the producer client `client_id` (a request's REPLY_TO_CLIENT), to
    /// push a reply to; `None` when that client is not connected as a producer.
    ProducerOfClient {
        client_id: String,
        reply: ReplyTo<BrokerResult<Option<ProducerChannel>>>,
    },
    /// `TRANS_CHECK_MAX_TIME_TOPIC`, created if it does not exist yet.
    CreateCheckMaxTimeTopic {
        reply: ReplyTo<BrokerResult<TopicConfig>>,
    },
    /// GET_CONSUMER_LIST_BY_GROUP.
    ConsumerIds {
        group: String,
        reply: ReplyTo<BrokerResult<Vec<String>>>,
    },
    /// GET_CONSUMER_CONNECTION_LIST.
    ConsumerConnection {
        group: String,
        reply: ReplyTo<BrokerResult<ConsumerConnection>>,
    },
    LockBatch {
        body: LockBatchRequestBody,
        reply: ReplyTo<BrokerResult<Vec<MessageQueue>>>,
    },
    UnlockBatch {
        body: UnlockBatchRequestBody,
        reply: ReplyTo<BrokerResult<()>>,
    },
    UpsertTopic {
        config: TopicConfig,
        reply: ReplyTo<BrokerResult<()>>,
    },
    DeleteTopic {
        topic: String,
        reply: ReplyTo<BrokerResult<()>>,
    },
    UpsertGroup {
        config: SubscriptionGroupConfig,
        reply: ReplyTo<BrokerResult<()>>,
    },
    DeleteGroup {
        group: String,
        reply: ReplyTo<BrokerResult<()>>,
    },
    /// A client connection closed: its memberships and locks go (no answer).
    ConnectionClosed(ConnectionId),
    /// Shard 0's periodic scan for clients that stopped heartbeating (no answer).
    ExpireClients,
}
