//! Headers of consumption (REMOTING.md §4.3): pulls, consumer offsets, queue offset queries,
//! client (un)registration, group membership and consumption retry.

use super::{header, HeaderValue};
use crate::protocol::command::Text;

header! {
    /// PULL_MESSAGE / LITE_PULL_MESSAGE request (`PullMessageRequestHeader`).
    pub struct PullMessageRequestHeader {
        req consumer_group: String = "consumerGroup",
        req topic: String = "topic",
        req queue_id: i32 = "queueId",
        /// Logical offset to read from.
        req queue_offset: i64 = "queueOffset",
        req max_msg_nums: i32 = "maxMsgNums",
        /// Pull sysFlag: commit offset, suspend, subscription, class filter, lite pull bits.
        req sys_flag: i32 = "sysFlag",
        /// Consumer offset to commit, when the commit-offset bit is set.
        req commit_offset: i64 = "commitOffset",
        /// Long-poll hold time.
        req suspend_timeout_millis: i64 = "suspendTimeoutMillis",
        /// The subscription expression, when the subscription bit is set.
        opt subscription: String = "subscription",
        req sub_version: i64 = "subVersion",
        /// `TAG` (absent) or `SQL92`.
        opt expression_type: String = "expressionType",
        opt max_msg_bytes: i32 = "maxMsgBytes",
        opt request_source: i32 = "requestSource",
        /// (sic) the Java field name.
        opt proxy_forward_client_id: String = "proxyFrowardClientId",
    }
}

header! {
    /// Pull response (`PullMessageResponseHeader`). The four required fields must be present on
    /// codes 0/19/20/21: the Java client unboxes them (NPE otherwise).
    pub struct PullMessageResponseHeader {
        /// Broker id the client should pull this queue from next (0 = master).
        req suggest_which_broker_id: i64 = "suggestWhichBrokerId",
        req next_begin_offset: i64 = "nextBeginOffset",
        req min_offset: i64 = "minOffset",
        req max_offset: i64 = "maxOffset",
        opt offset_delta: i64 = "offsetDelta",
        opt topic_sys_flag: i32 = "topicSysFlag",
        opt group_sys_flag: i32 = "groupSysFlag",
        /// With NO_PERMISSION: 1 broker, 2 group, 3 topic, 4 broadcasting, 5 subscription.
        opt forbidden_type: i32 = "forbiddenType",
    }
}

header! {
    /// QUERY_CONSUMER_OFFSET request (`QueryConsumerOffsetRequestHeader`).
    pub struct QueryConsumerOffsetRequestHeader {
        req consumer_group: String = "consumerGroup",
        req topic: String = "topic",
        req queue_id: i32 = "queueId",
        opt set_zero_if_not_found: bool = "setZeroIfNotFound",
    }
}

header! {
    /// UPDATE_CONSUMER_OFFSET request (`UpdateConsumerOffsetRequestHeader`).
    pub struct UpdateConsumerOffsetRequestHeader {
        req consumer_group: String = "consumerGroup",
        req topic: String = "topic",
        req queue_id: i32 = "queueId",
        /// Next offset to consume.
        req commit_offset: i64 = "commitOffset",
    }
}

header! {
    /// Response of QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET, GET_MIN_OFFSET and
    /// SEARCH_OFFSET_BY_TIMESTAMP (`…ResponseHeader`: each has just `offset`).
    pub struct OffsetResponseHeader {
        req offset: i64 = "offset",
    }
}

header! {
    /// GET_MAX_OFFSET request (`GetMaxOffsetRequestHeader`).
    pub struct GetMaxOffsetRequestHeader {
        req topic: String = "topic",
        req queue_id: i32 = "queueId",
        /// Java's field defaults to `true` and is always sent.
        def committed: bool = "committed" or true,
    }
}

header! {
    /// GET_MIN_OFFSET and GET_EARLIEST_MSG_STORETIME request (`GetMinOffsetRequestHeader`,
    /// `GetEarliestMsgStoretimeRequestHeader`: the same two fields).
    pub struct QueueRequestHeader {
        req topic: String = "topic",
        req queue_id: i32 = "queueId",
    }
}

header! {
    /// GET_EARLIEST_MSG_STORETIME response (`GetEarliestMsgStoretimeResponseHeader`).
    pub struct GetEarliestMsgStoretimeResponseHeader {
        /// Store time of the message at the queue's min offset, -1 if none.
        req timestamp: i64 = "timestamp",
    }
}

/// Which offset SEARCH_OFFSET_BY_TIMESTAMP returns when several messages match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BoundaryType {
    /// The first offset stored at or after the timestamp.
    #[default]
    Lower,
    /// The last offset stored at or before the timestamp.
    Upper,
}

impl HeaderValue for BoundaryType {
    /// Case-insensitive, as Java's `BoundaryType.getType`.
    fn parse(text: &str) -> Option<Self> {
        if text.eq_ignore_ascii_case("lower") {
            Some(Self::Lower)
        } else if text.eq_ignore_ascii_case("upper") {
            Some(Self::Upper)
        } else {
            None
        }
    }
    fn format(&self) -> Text {
        Text::from(match self {
            Self::Lower => "LOWER",
            Self::Upper => "UPPER",
        })
    }
}

header! {
    /// SEARCH_OFFSET_BY_TIMESTAMP request (`SearchOffsetRequestHeader`).
    pub struct SearchOffsetRequestHeader {
        req topic: String = "topic",
        req queue_id: i32 = "queueId",
        /// Milliseconds since the epoch.
        req timestamp: i64 = "timestamp",
        def boundary_type: BoundaryType = "boundaryType",
    }
}

header! {
    /// UNREGISTER_CLIENT request (`UnregisterClientRequestHeader`).
    pub struct UnregisterClientRequestHeader {
        /// (sic) upper-case `ID` in the Java field name.
        req client_id: String = "clientID",
        opt producer_group: String = "producerGroup",
        opt consumer_group: String = "consumerGroup",
    }
}

header! {
    /// GET_CONSUMER_LIST_BY_GROUP, NOTIFY_CONSUMER_IDS_CHANGED and GET_CONSUMER_CONNECTION_LIST
    /// request (`GetConsumerListByGroupRequestHeader`, `NotifyConsumerIdsChangedRequestHeader`,
    /// `GetConsumerConnectionListRequestHeader`: each has just `consumerGroup`).
    pub struct ConsumerGroupRequestHeader {
        req consumer_group: String = "consumerGroup",
    }
}

header! {
    /// CONSUMER_SEND_MSG_BACK request (`ConsumerSendMsgBackRequestHeader`).
    pub struct ConsumerSendMsgBackRequestHeader {
        /// Commit-log offset of the message that failed.
        req offset: i64 = "offset",
        req group: String = "group",
        /// 0: the broker picks `3 + reconsumeTimes`; negative: straight to the DLQ.
        req delay_level: i32 = "delayLevel",
        /// The client-visible message id (UNIQ_KEY).
        opt origin_msg_id: String = "originMsgId",
        opt origin_topic: String = "originTopic",
        def unit_mode: bool = "unitMode",
        opt max_reconsume_times: i32 = "maxReconsumeTimes",
    }
}
