//! The broker's one error type and the one place it becomes a RocketMQ response code.

use crate::broker::control::consumers::ConsumersError;
use crate::broker::control::subscription_groups::GroupError;
use crate::broker::control::topics::TopicError;
use crate::broker::filter::CompileError;
use crate::broker::processor::reply::ReplyError;
use crate::persist::PersistError;
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::fastjson::FastjsonError;
use crate::protocol::header::HeaderError;
use crate::protocol::message::MessageError;
use ringmq_shards::timer::TimerError;
use ringmq_shards::StoreError;

/// Why a broker request failed. Every variant says which response code the client gets
/// (see [`BrokerError::response_code`]); the text becomes the response's remark.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    #[error("malformed body: {0}")]
    Body(#[from] FastjsonError),
    #[error(transparent)]
    Message(#[from] MessageError),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A control-plane table could not be written; the change was not made.
    #[error(transparent)]
    Persist(#[from] PersistError),
    #[error(transparent)]
    Topic(#[from] TopicError),
    #[error(transparent)]
    Group(#[from] GroupError),
    #[error(transparent)]
    Consumers(#[from] ConsumersError),
    /// A reply that did not reach its requester.
    #[error(transparent)]
    Reply(#[from] ReplyError),
    #[error("topic[{0}] not exist, apply first please!")]
    TopicNotExist(String),
    #[error("{0}")]
    NoPermission(String),
    #[error("{0}")]
    MessageIllegal(String),
    #[error(transparent)]
    Timer(#[from] TimerError),
    #[error("{0}")]
    InvalidParameter(String),
    /// A request the Java broker refuses with SYSTEM_ERROR and an explanation (a queue id out
    /// of range, an unknown message offset, no consumer for a group).
    #[error("{0}")]
    Illegal(String),
    #[error("subscription group [{0}] does not exist")]
    SubscriptionGroupNotExist(String),
    #[error("the consumer's subscription not exist, group: {group} topic: {topic}")]
    SubscriptionNotExist { group: String, topic: String },
    #[error("the consumer's subscription not latest")]
    SubscriptionNotLatest,
    #[error("parse the consumer's subscription failed: {0}")]
    SubscriptionParseFailed(String),
    /// An SQL92 expression (of CHECK_CLIENT_CONFIG, or sent with a pull) that does not
    /// compile.
    #[error("Invalid MessageSelector. {0}")]
    InvalidSelector(CompileError),
    /// The group's subscription from its heartbeats has an expression that does not compile
    /// (Apache registers no filter data for it).
    #[error("The broker's consumer filter data is not exist!Your expression may be wrong! ({0})")]
    FilterDataNotExist(CompileError),
    /// `enablePropertyFilter` is off.
    #[error("The broker does not support consumer to filter message by {0}")]
    PropertyFilterDisabled(String),
    #[error("no message found: {0}")]
    QueryNotFound(String),
    #[error("the consumer group[{0}] not online")]
    ConsumerNotOnline(String),
    /// A request refused for its timing or state, as Apache answers ILLEGAL_OPERATION (a
    /// transaction decided after its CHECK_IMMUNITY_TIME_IN_SECONDS: left to the check-back).
    #[error("{0}")]
    IllegalOperation(String),
    /// A bounded queue or table is full: the client should back off and retry.
    #[error("[TOO_MANY_REQUESTS] broker busy: {0}")]
    Busy(&'static str),
    #[error("the broker is shutting down")]
    ShuttingDown,
    #[error("{0}")]
    Internal(String),
}

impl BrokerError {
    /// The RocketMQ response code for this error, as the Java broker answers the same case.
    pub fn response_code(&self) -> i32 {
        use BrokerError::*;
        match self {
            Header(_) | Body(_) | Illegal(_) | Persist(_) | Internal(_) => response::SYSTEM_ERROR,
            // Apache answers every failed reply push with SYSTEM_ERROR and its remark.
            Reply(_) => response::SYSTEM_ERROR,
            Timer(TimerError::NotEnabled) => response::SYSTEM_ERROR,
            Message(MessageError::BodyTooLarge { .. })
            | MessageIllegal(_)
            | Timer(TimerError::Illegal { .. }) => response::MESSAGE_ILLEGAL,
            Message(_) => response::MESSAGE_ILLEGAL,
            Store(StoreError::LimitReached(_)) | Busy(_) => response::SYSTEM_BUSY,
            Store(StoreError::Record(_)) | Store(StoreError::RecordTooLarge { .. }) => {
                response::MESSAGE_ILLEGAL
            }
            // Java answers a full disk with SERVICE_NOT_AVAILABLE so producers try another broker.
            Store(StoreError::DiskFull(_)) | ShuttingDown => response::SERVICE_NOT_AVAILABLE,
            Store(_) => response::SYSTEM_ERROR,
            TopicNotExist(_) | Topic(TopicError::NoAutoCreate { .. }) => response::TOPIC_NOT_EXIST,
            Topic(TopicError::Full) | Group(GroupError::Full) => response::SYSTEM_BUSY,
            // Java refuses a bad name, a system topic or queue count with SYSTEM_ERROR + remark.
            Topic(_) | Group(_) | Consumers(_) => response::SYSTEM_ERROR,
            NoPermission(_) => response::NO_PERMISSION,
            InvalidParameter(_) => response::INVALID_PARAMETER,
            SubscriptionGroupNotExist(_) => response::SUBSCRIPTION_GROUP_NOT_EXIST,
            SubscriptionNotExist { .. } => response::SUBSCRIPTION_NOT_EXIST,
            SubscriptionNotLatest => response::SUBSCRIPTION_NOT_LATEST,
            SubscriptionParseFailed(_) | InvalidSelector(_) => response::SUBSCRIPTION_PARSE_FAILED,
            FilterDataNotExist(_) => response::FILTER_DATA_NOT_EXIST,
            PropertyFilterDisabled(_) => response::SYSTEM_ERROR,
            QueryNotFound(_) => response::QUERY_NOT_FOUND,
            ConsumerNotOnline(_) => response::CONSUMER_NOT_ONLINE,
            IllegalOperation(_) => response::ILLEGAL_OPERATION,
        }
    }

    /// The response a client gets for this error.
    pub fn response_to(&self, request: &RemotingCommand) -> RemotingCommand {
        RemotingCommand::response_to(request, self.response_code(), Some(self.to_string()))
    }
}

pub type BrokerResult<T> = Result<T, BrokerError>;

impl From<ringmq_bus::BusError> for BrokerError {
    /// A full inbox or too many calls waiting is the client's SYSTEM_BUSY; an answer dropped
    /// unsent means the other shard is stopping.
    fn from(err: ringmq_bus::BusError) -> Self {
        match err {
            ringmq_bus::BusError::Busy(why) => Self::Busy(why),
            ringmq_bus::BusError::Dropped => Self::ShuttingDown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_and_store_limits_answer_system_busy() {
        assert_eq!(
            BrokerError::Busy("x").response_code(),
            response::SYSTEM_BUSY
        );
        let limit = BrokerError::Store(StoreError::LimitReached("flush waiters"));
        assert_eq!(limit.response_code(), response::SYSTEM_BUSY);
    }

    #[test]
    fn message_problems_answer_message_illegal() {
        let big = BrokerError::Message(MessageError::BodyTooLarge { bytes: 9, max: 1 });
        assert_eq!(big.response_code(), response::MESSAGE_ILLEGAL);
        let missing = BrokerError::TopicNotExist("T".into());
        assert_eq!(missing.response_code(), response::TOPIC_NOT_EXIST);
        assert!(missing.to_string().contains("topic[T] not exist"));
    }
}
