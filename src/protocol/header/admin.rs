//! Headers of administration and inspection requests (REMOTING.md §4.5, §4.6, §4.7): topics,
//! subscription groups, message lookup, statistics, offset reset, requests relayed to clients.

use super::header;

header! {
    /// UPDATE_AND_CREATE_TOPIC request (`CreateTopicRequestHeader`).
    pub struct CreateTopicRequestHeader {
        req topic: String = "topic",
        req default_topic: String = "defaultTopic",
        req read_queue_nums: i32 = "readQueueNums",
        req write_queue_nums: i32 = "writeQueueNums",
        /// `PermName` bits: 4 read, 2 write, 1 inherit.
        req perm: i32 = "perm",
        /// `SINGLE_TAG` or `MULTI_TAG`.
        req topic_filter_type: String = "topicFilterType",
        opt topic_sys_flag: i32 = "topicSysFlag",
        req order: bool = "order",
        /// Attribute changes, `+key=value,-key`.
        opt attributes: String = "attributes",
        def force: bool = "force",
    }
}

header! {
    /// Requests naming one topic: DELETE_TOPIC_IN_BROKER, GET_TOPIC_STATS_INFO,
    /// QUERY_TOPIC_CONSUME_BY_WHO, GET_TOPIC_CONFIG (`DeleteTopicRequestHeader`,
    /// `GetTopicStatsInfoRequestHeader`, `QueryTopicConsumeByWhoRequestHeader`,
    /// `GetTopicConfigRequestHeader`: each has just `topic`).
    pub struct TopicRequestHeader {
        req topic: String = "topic",
    }
}

header! {
    /// GET_ALL_TOPIC_CONFIG request (`GetAllTopicConfigRequestHeader`); mqadmin sends none of
    /// the fields and then gets every topic.
    pub struct GetAllTopicConfigRequestHeader {
        opt topic_seq: i32 = "topicSeq",
        opt data_version: String = "dataVersion",
        opt max_topic_num: i32 = "maxTopicNum",
    }
}

header! {
    /// GET_ALL_TOPIC_CONFIG response (`GetAllTopicConfigResponseHeader`).
    pub struct GetAllTopicConfigResponseHeader {
        req total_topic_num: i32 = "totalTopicNum",
    }
}

header! {
    /// GET_BROKER_CONFIG response (`GetBrokerConfigResponseHeader`).
    pub struct GetBrokerConfigResponseHeader {
        /// The broker's DataVersion as JSON.
        req version: String = "version",
    }
}

header! {
    /// VIEW_MESSAGE_BY_ID request (`ViewMessageRequestHeader`).
    pub struct ViewMessageRequestHeader {
        opt topic: String = "topic",
        /// Commit-log offset of the record.
        req offset: i64 = "offset",
    }
}

header! {
    /// QUERY_MESSAGE request (`QueryMessageRequestHeader`). The extFields key
    /// `_UNIQUE_KEY_QUERY` (`"true"`: `key` is a UNIQ_KEY) is not a Java field; read it with
    /// `RemotingCommand::ext`.
    pub struct QueryMessageRequestHeader {
        req topic: String = "topic",
        req key: String = "key",
        req max_num: i32 = "maxNum",
        req begin_timestamp: i64 = "beginTimestamp",
        req end_timestamp: i64 = "endTimestamp",
    }
}

header! {
    /// QUERY_MESSAGE response (`QueryMessageResponseHeader`).
    pub struct QueryMessageResponseHeader {
        req index_last_update_timestamp: i64 = "indexLastUpdateTimestamp",
        /// (sic) lower-case `o` in the Java field name.
        req index_last_update_phy_offset: i64 = "indexLastUpdatePhyoffset",
    }
}

header! {
    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG request: like GET_ALL_TOPIC_CONFIG, all optional.
    pub struct GetAllSubscriptionGroupConfigRequestHeader {
        opt group_seq: i32 = "groupSeq",
        opt data_version: String = "dataVersion",
        opt max_group_num: i32 = "maxGroupNum",
    }
}

header! {
    /// DELETE_SUBSCRIPTIONGROUP request (`DeleteSubscriptionGroupRequestHeader`).
    pub struct DeleteSubscriptionGroupRequestHeader {
        req group_name: String = "groupName",
        def clean_offset: bool = "cleanOffset",
    }
}

header! {
    /// GET_SUBSCRIPTIONGROUP_CONFIG request (`GetSubscriptionGroupConfigRequestHeader`).
    pub struct GetSubscriptionGroupConfigRequestHeader {
        req group: String = "group",
    }
}

header! {
    /// GET_PRODUCER_CONNECTION_LIST request (`GetProducerConnectionListRequestHeader`).
    pub struct GetProducerConnectionListRequestHeader {
        req producer_group: String = "producerGroup",
    }
}

header! {
    /// GET_CONSUME_STATS request (`GetConsumeStatsRequestHeader`).
    pub struct GetConsumeStatsRequestHeader {
        req consumer_group: String = "consumerGroup",
        opt topic: String = "topic",
        /// Topics separated by `;`.
        opt topic_list: String = "topicList",
    }
}

header! {
    /// INVOKE_BROKER_TO_RESET_OFFSET and RESET_CONSUMER_CLIENT_OFFSET request
    /// (`ResetOffsetRequestHeader`).
    pub struct ResetOffsetRequestHeader {
        req group: String = "group",
        req topic: String = "topic",
        /// -1: every queue of the topic.
        def queue_id: i32 = "queueId" or -1,
        opt offset: i64 = "offset",
        req timestamp: i64 = "timestamp",
        req is_force: bool = "isForce",
    }
}

header! {
    /// GET_CONSUMER_RUNNING_INFO request (`GetConsumerRunningInfoRequestHeader`).
    pub struct GetConsumerRunningInfoRequestHeader {
        req consumer_group: String = "consumerGroup",
        req client_id: String = "clientId",
        def jstack_enable: bool = "jstackEnable",
    }
}

header! {
    /// CONSUME_MESSAGE_DIRECTLY request (`ConsumeMessageDirectlyResultRequestHeader`).
    pub struct ConsumeMessageDirectlyResultRequestHeader {
        req consumer_group: String = "consumerGroup",
        opt client_id: String = "clientId",
        opt msg_id: String = "msgId",
        opt broker_name: String = "brokerName",
        opt topic: String = "topic",
        opt topic_sys_flag: i32 = "topicSysFlag",
        opt group_sys_flag: i32 = "groupSysFlag",
    }
}

header! {
    /// GET_CONSUMER_STATUS_FROM_CLIENT request (`GetConsumerStatusRequestHeader`).
    pub struct GetConsumerStatusRequestHeader {
        req topic: String = "topic",
        req group: String = "group",
        opt client_addr: String = "clientAddr",
    }
}
