//! Headers of the requests a NameServer serves (REMOTING.md §4.1, §4.8), with the Java class
//! each mirrors.

use super::header;

header! {
    /// REGISTER_BROKER request (`RegisterBrokerRequestHeader`).
    pub struct RegisterBrokerRequestHeader {
        req broker_name: String = "brokerName",
        /// `brokerIP1:listenPort`, the address clients connect to.
        req broker_addr: String = "brokerAddr",
        req cluster_name: String = "clusterName",
        req ha_server_addr: String = "haServerAddr",
        /// 0 = master, ≥ 1 slave.
        req broker_id: i64 = "brokerId",
        /// Only in slave-acting-master mode; otherwise the NameServer's 120 s applies.
        opt heartbeat_timeout_millis: i64 = "heartbeatTimeoutMillis",
        /// Sent by every 5.x broker; absent means an older broker.
        opt enable_acting_master: bool = "enableActingMaster",
        /// Whether the body is the DEFLATE form (Java brokers always send `false`).
        def compressed: bool = "compressed",
        /// `crc32(body) & 0x7FFFFFFF`; 0 means "not checked".
        def body_crc32: i32 = "bodyCrc32",
    }
}

header! {
    /// REGISTER_BROKER response (`RegisterBrokerResponseHeader`); filled for slaves.
    pub struct RegisterBrokerResponseHeader {
        opt ha_server_addr: String = "haServerAddr",
        opt master_addr: String = "masterAddr",
    }
}

header! {
    /// UNREGISTER_BROKER request (`UnRegisterBrokerRequestHeader`).
    pub struct UnregisterBrokerRequestHeader {
        req broker_name: String = "brokerName",
        req broker_addr: String = "brokerAddr",
        req cluster_name: String = "clusterName",
        req broker_id: i64 = "brokerId",
    }
}

header! {
    /// GET_ROUTEINFO_BY_TOPIC request (`GetRouteInfoRequestHeader`).
    pub struct GetRouteInfoRequestHeader {
        req topic: String = "topic",
        /// `true` asks for the standard-JSON route body whatever the request version.
        opt accept_standard_json_only: bool = "acceptStandardJsonOnly",
    }
}

header! {
    /// GET_TOPICS_BY_CLUSTER request (`GetTopicsByClusterRequestHeader`).
    pub struct GetTopicsByClusterRequestHeader {
        req cluster: String = "cluster",
    }
}

header! {
    /// DELETE_TOPIC_IN_NAMESRV request (`DeleteTopicFromNamesrvRequestHeader`).
    pub struct DeleteTopicFromNamesrvRequestHeader {
        req topic: String = "topic",
        /// When set, only that cluster's brokers lose the topic.
        opt cluster_name: String = "clusterName",
    }
}

header! {
    /// REGISTER_TOPIC_IN_NAMESRV request (`RegisterTopicRequestHeader`); body = TopicRouteData.
    pub struct RegisterTopicRequestHeader {
        req topic: String = "topic",
    }
}

header! {
    /// WIPE_WRITE_PERM_OF_BROKER request (`WipeWritePermOfBrokerRequestHeader`).
    pub struct WipeWritePermOfBrokerRequestHeader {
        req broker_name: String = "brokerName",
    }
}

header! {
    /// WIPE_WRITE_PERM_OF_BROKER response (`WipeWritePermOfBrokerResponseHeader`).
    pub struct WipeWritePermOfBrokerResponseHeader {
        req wipe_topic_count: i32 = "wipeTopicCount",
    }
}

header! {
    /// ADD_WRITE_PERM_OF_BROKER request (`AddWritePermOfBrokerRequestHeader`).
    pub struct AddWritePermOfBrokerRequestHeader {
        req broker_name: String = "brokerName",
    }
}

header! {
    /// ADD_WRITE_PERM_OF_BROKER response (`AddWritePermOfBrokerResponseHeader`).
    pub struct AddWritePermOfBrokerResponseHeader {
        req add_topic_count: i32 = "addTopicCount",
    }
}

header! {
    /// PUT_KV_CONFIG request (`PutKVConfigRequestHeader`).
    pub struct PutKvConfigRequestHeader {
        req namespace: String = "namespace",
        req key: String = "key",
        req value: String = "value",
    }
}

header! {
    /// GET_KV_CONFIG and DELETE_KV_CONFIG request (`GetKVConfigRequestHeader`,
    /// `DeleteKVConfigRequestHeader`: the same two fields).
    pub struct KvConfigKeyRequestHeader {
        req namespace: String = "namespace",
        req key: String = "key",
    }
}

header! {
    /// GET_KV_CONFIG response (`GetKVConfigResponseHeader`).
    pub struct GetKvConfigResponseHeader {
        opt value: String = "value",
    }
}

header! {
    /// GET_KVLIST_BY_NAMESPACE request (`GetKVListByNamespaceRequestHeader`).
    pub struct GetKvListByNamespaceRequestHeader {
        req namespace: String = "namespace",
    }
}

/// QUERY_DATA_VERSION request (`QueryDataVersionRequestHeader`): the same four fields as
/// UNREGISTER_BROKER; body = DataVersion JSON.
pub type QueryDataVersionRequestHeader = UnregisterBrokerRequestHeader;

header! {
    /// QUERY_DATA_VERSION response (`QueryDataVersionResponseHeader`).
    pub struct QueryDataVersionResponseHeader {
        req changed: bool = "changed",
    }
}

header! {
    /// BROKER_HEARTBEAT request (`BrokerHeartbeatRequestHeader`), slave-acting-master mode only.
    pub struct BrokerHeartbeatRequestHeader {
        req cluster_name: String = "clusterName",
        req broker_addr: String = "brokerAddr",
        req broker_name: String = "brokerName",
        opt broker_id: i64 = "brokerId",
        opt epoch: i32 = "epoch",
        opt max_offset: i64 = "maxOffset",
        opt confirm_offset: i64 = "confirmOffset",
        /// (sic) the Java field name.
        opt heartbeat_timeout_millis: i64 = "heartbeatTimeoutMills",
        opt election_priority: i32 = "electionPriority",
    }
}

header! {
    /// GET_BROKER_MEMBER_GROUP request (`GetBrokerMemberGroupRequestHeader`), acting-master mode.
    pub struct GetBrokerMemberGroupRequestHeader {
        req cluster_name: String = "clusterName",
        req broker_name: String = "brokerName",
    }
}
