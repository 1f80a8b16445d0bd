//! Route bodies: `TopicRouteData` (GET_ROUTEINFO_BY_TOPIC) and `ClusterInfo`
//! (GET_BROKER_CLUSTER_INFO), with the `QueueData` and `BrokerData` inside them.

use crate::protocol::fastjson::lenient;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The broker id of a master; clients send only to `brokerAddrs[0]`.
pub const MASTER_ID: i64 = 0;

/// `PermName` bits of a queue's `perm` (REMOTING.md §10.1).
pub const PERM_READ: i32 = 4;
pub const PERM_WRITE: i32 = 2;
/// The topic may serve as an auto-create template (`TBW102`).
pub const PERM_INHERIT: i32 = 1;

/// One broker's share of a topic.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueData {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::int")]
    pub perm: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub read_queue_nums: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub write_queue_nums: i32,
}

/// A broker group (one name, a master and its slaves) and where to reach each member.
/// `broker_addrs` has integer keys, so the legacy JSON style writes them unquoted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerData {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_addrs: BTreeMap<i64, String>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_name: String,
    #[serde(deserialize_with = "lenient::or_default")]
    pub cluster: String,
    #[serde(deserialize_with = "lenient::boolean")]
    pub enable_acting_master: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

impl BrokerData {
    /// The master's address, if a master is registered.
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&MASTER_ID).map(String::as_str)
    }
}

/// Where a topic lives: body of GET_ROUTEINFO_BY_TOPIC.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicRouteData {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_datas: Vec<BrokerData>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub queue_datas: Vec<QueueData>,
    /// Static-topic mapping; relayed, never interpreted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic_queue_mapping_by_broker: Option<Value>,
}

/// Every cluster and broker group the NameServer knows: body of GET_BROKER_CLUSTER_INFO.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterInfo {
    #[serde(deserialize_with = "lenient::or_default")]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::decode;
    use crate::protocol::fastjson::{to_vec, JsonStyle};

    /// VECTORS.md V9, standard form.
    const V9_STANDARD: &str = r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;
    /// VECTORS.md V9, legacy fastjson form.
    const V9_LEGACY: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#;

    fn v9_route() -> TopicRouteData {
        TopicRouteData {
            broker_datas: vec![BrokerData {
                broker_addrs: BTreeMap::from([(MASTER_ID, "127.0.0.1:10911".to_string())]),
                broker_name: "broker-a".into(),
                cluster: "DefaultCluster".into(),
                ..BrokerData::default()
            }],
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                perm: 6,
                read_queue_nums: 4,
                write_queue_nums: 4,
                ..QueueData::default()
            }],
            ..TopicRouteData::default()
        }
    }

    #[test]
    fn writes_vector_v9_in_both_styles() {
        let route = v9_route();
        assert_eq!(
            to_vec(&route, JsonStyle::Standard).unwrap(),
            V9_STANDARD.as_bytes()
        );
        assert_eq!(V9_STANDARD.len(), 262);
        assert_eq!(
            to_vec(&route, JsonStyle::Legacy).unwrap(),
            V9_LEGACY.as_bytes()
        );
        assert_eq!(V9_LEGACY.len(), 260);
    }

    #[test]
    fn reads_vector_v9_in_both_styles() {
        assert_eq!(
            decode::<TopicRouteData>(V9_STANDARD.as_bytes()).unwrap(),
            v9_route()
        );
        assert_eq!(
            decode::<TopicRouteData>(V9_LEGACY.as_bytes()).unwrap(),
            v9_route()
        );
    }

    #[test]
    fn reads_a_java_cluster_info_with_unquoted_ids() {
        let text = r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false}},"clusterAddrTable":{"C":["broker-a"]}}"#;
        let info: ClusterInfo = decode(text.as_bytes()).unwrap();
        let broker = &info.broker_addr_table["broker-a"];
        assert_eq!(broker.master_addr(), Some("10.0.0.1:10911"));
        assert_eq!(broker.broker_addrs[&1], "10.0.0.2:10911");
        assert!(info.cluster_addr_table["C"].contains("broker-a"));
    }
}
