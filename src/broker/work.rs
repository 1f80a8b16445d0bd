//! What one shard asks of another, as typed values: each kind of work carries the handle its
//! answer goes back through (`ReplyTo<T>`), so the answer's type is fixed by the kind of work.
//! No `RemotingCommand` and no JSON crosses a shard, and an "unexpected reply" cannot be
//! written. Bodies and records cross as `Bytes`, which share their buffers.
//!
//! The shard that serves a piece of work asserts it owns what the work is about (the queue,
//! the offset); see `broker::inbox`.

use super::control::ops::ControlOp;
use super::control::snapshot::ControlSnapshot;
use super::error::BrokerResult;
use crate::protocol::body::stats::{ConsumeStats, TopicStatsTable};
use crate::protocol::header::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader, GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader, PullMessageRequestHeader, QueryConsumerOffsetRequestHeader,
    QueueRequestHeader, ReplyMessageRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
};
use crate::protocol::message::record::Message;
use crate::server::ConnectionId;
use bytes::Bytes;
use ringmq_bus::ReplyTo;
use ringmq_shards::AppendResult;
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// Where a client request came from: the shard and connection that answer it.
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    pub shard: usize,
    pub connection: ConnectionId,
    pub peer: SocketAddr,
}

/// A unit of work for another shard.
pub enum Work {
    /// Store messages in queues the receiving shard owns (a send's, a send-back's copy).
    Append {
        append: Append,
        reply: ReplyTo<BrokerResult<Vec<AppendResult>>>,
    },
    /// A pull of a queue the receiving shard owns, long poll included.
    Pull {
        origin: Origin,
        header: Box<PullMessageRequestHeader>,
        reply: ReplyTo<BrokerResult<Pulled>>,
    },
    /// An offset question or commit about a queue the receiving shard owns.
    Offset {
        request: OffsetRequest,
        reply: ReplyTo<BrokerResult<i64>>,
    },
    /// The stored record at a client-visible physical offset the receiving shard wrote.
    ReadAt {
        offset: i64,
        reply: ReplyTo<BrokerResult<Bytes>>,
    },
    /// The receiving shard's records matching a key query.
    QueryKey {
        query: Box<KeyQueryOwned>,
        reply: ReplyTo<BrokerResult<Vec<Bytes>>>,
    },
    /// The receiving shard's part of GET_TOPIC_STATS_INFO: the queues it owns.
    TopicStats {
        topic: String,
        reply: ReplyTo<BrokerResult<TopicStatsTable>>,
    },
    /// The receiving shard's part of GET_CONSUME_STATS.
    ConsumeStats {
        header: Box<GetConsumeStatsRequestHeader>,
        reply: ReplyTo<BrokerResult<ConsumeStats>>,
    },
    /// The groups holding offsets of `topic` on the receiving shard.
    ConsumedBy {
        topic: String,
        reply: ReplyTo<BrokerResult<BTreeSet<String>>>,
    },
    /// The receiving shard's part of GET_BROKER_RUNTIME_INFO.
    RuntimeInfo {
        reply: ReplyTo<BrokerResult<RuntimePart>>,
    },
    /// DELETE_TOPIC_IN_BROKER's data half, from shard 0: drop the topic's queues, index
    /// entries and consumer offsets; answers how many queues the shard had.
    DropTopic {
        topic: String,
        reply: ReplyTo<BrokerResult<usize>>,
    },
    /// A newer control-plane snapshot, from shard 0.
    Snapshot {
        snapshot: Arc<ControlSnapshot>,
        reply: ReplyTo<BrokerResult<()>>,
    },
    /// NOTIFY_CONSUMER_IDS_CHANGED for `group` to one of the receiving shard's connections,
    /// decided on shard 0 (no answer).
    NotifyIdsChanged {
        connection: ConnectionId,
        group: String,
    },
    /// END_TRANSACTION for a half message the receiving shard stored (the shard named in the
    /// header's commitLogOffset).
    EndTransaction {
        header: Box<EndTransactionRequestHeader>,
        reply: ReplyTo<BrokerResult<()>>,
    },
    /// CHECK_TRANSACTION_STATE to a producer on one of the receiving shard's connections,
    /// decided by the shard holding the half message (no answer: the producer's
    /// END_TRANSACTION is the answer).
    CheckTransaction {
        connection: ConnectionId,
        check: Box<CheckRequest>,
    },
    /// PUSH_REPLY_MESSAGE_TO_CLIENT to a requester on one of the receiving shard's
    /// connections, from the shard the responder's SEND_REPLY_MESSAGE arrived on; answers
    /// whether the requester took it.
    PushReply {
        connection: ConnectionId,
        push: Box<ReplyPush>,
        reply: ReplyTo<BrokerResult<()>>,
    },
    /// For shard 0's control plane.
    Control(Box<ControlOp>),
}

/// A PUSH_REPLY_MESSAGE_TO_CLIENT request to write to a requester.
pub struct ReplyPush {
    pub header: ReplyMessageRequestHeader,
    /// The reply's body as the responder sent it (compressed if its sysFlag says so).
    pub body: Bytes,
    /// The requester's client id (REPLY_TO_CLIENT), for the error remark.
    pub client_id: String,
}

/// A CHECK_TRANSACTION_STATE request to write to a producer.
pub struct CheckRequest {
    pub header: CheckTransactionStateRequestHeader,
    /// The half message's newest copy as stored, in its real topic and queue.
    pub body: Bytes,
}

/// The bus holds `shards² × INBOX_DEPTH` work items in place (8 shards: 64 Ki of them), so
/// work stays small: the large and rare kinds are boxed.
pub const WORK_BYTES_MAX: usize = 80;
const _: () = assert!(std::mem::size_of::<Work>() <= WORK_BYTES_MAX);

/// Messages to store, each in a queue the storing shard owns.
pub struct Append {
    pub messages: Vec<Message>,
    /// Whether a message's DELAY property is honoured (single sends and send-back copies).
    /// Apache stores a batch's entries as they came: a delayed batch is refused before.
    pub delayable: bool,
    /// A single prepared send: stored as a half record until its producer decides.
    pub half: bool,
}

/// What a pull found, before it becomes a response (PullMessageResponseHeader and body).
pub struct Pulled {
    /// PULL_* or SUCCESS.
    pub code: i32,
    /// Apache's store status when it is not FOUND (the response's remark).
    pub status: Option<&'static str>,
    pub next_begin_offset: i64,
    pub min_offset: i64,
    pub max_offset: i64,
    pub topic_sys_flag: i32,
    pub group_sys_flag: i32,
    /// The stored records, each a slice of the store's buffers.
    pub records: Vec<Bytes>,
}

/// The requests about one queue's offsets, decoded once on the connection's shard.
pub enum OffsetRequest {
    QueryConsumer(QueryConsumerOffsetRequestHeader),
    UpdateConsumer(UpdateConsumerOffsetRequestHeader),
    Max(GetMaxOffsetRequestHeader),
    Min(QueueRequestHeader),
    EarliestStoreTime(QueueRequestHeader),
    SearchByTime(SearchOffsetRequestHeader),
}

impl OffsetRequest {
    /// The queue the request is about: (topic, queue id).
    pub fn queue(&self) -> (&str, i32) {
        match self {
            Self::QueryConsumer(h) => (&h.topic, h.queue_id),
            Self::UpdateConsumer(h) => (&h.topic, h.queue_id),
            Self::Max(h) => (&h.topic, h.queue_id),
            Self::Min(h) | Self::EarliestStoreTime(h) => (&h.topic, h.queue_id),
            Self::SearchByTime(h) => (&h.topic, h.queue_id),
        }
    }
}

/// `ringmq_shards::KeyQuery` with owned strings, to cross shards.
#[derive(Clone, Debug)]
pub struct KeyQueryOwned {
    pub topic: String,
    pub key: String,
    pub begin_ms: i64,
    pub end_ms: i64,
    pub max: usize,
}

/// One shard's numbers for GET_BROKER_RUNTIME_INFO; the asker merges them.
#[derive(Clone, Debug, Default)]
pub struct RuntimePart {
    pub messages_put: u64,
    pub bytes_put: u64,
    pub messages_got: u64,
    /// Bytes appended to the shard's commit log.
    pub log_end: u64,
    /// Where its oldest segment starts: the bytes retention removed.
    pub log_min: u64,
    /// Appended but not yet durable.
    pub unflushed: u64,
    /// Store time of the shard's first message; `None` when it has none.
    pub earliest_ms: Option<i64>,
    /// Per delay level in use: (level, delivered offset, max offset).
    pub schedule: Vec<(usize, i64, i64)>,
    /// The shard's directory and its partition's used ratio.
    pub disk: (PathBuf, f64),
}
