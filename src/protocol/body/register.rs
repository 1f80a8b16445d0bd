//! What a broker tells the NameServer about itself: `RegisterBrokerBody` and the topic
//! configurations and `DataVersion` inside it (REMOTING.md §4.8, §5.2).

use crate::protocol::fastjson::lenient;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Version stamp of a broker's topic configuration; the NameServer re-reads a broker's topics
/// only when it changes. Equality uses all three fields, as Java's `DataVersion.equals`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataVersion {
    #[serde(deserialize_with = "lenient::int")]
    pub counter: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub state_version: i64,
    #[serde(deserialize_with = "lenient::int")]
    pub timestamp: i64,
}

/// How tags are filtered for a topic; carried but not interpreted by the NameServer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TopicFilterType {
    #[default]
    SingleTag,
    MultiTag,
}

impl<'de> Deserialize<'de> for TopicFilterType {
    /// Accepts the Java enum name (fastjson's output) or its ordinal (what some non-Java
    /// peers send).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Null => Ok(Self::default()),
            Value::String(name) if name == "SINGLE_TAG" => Ok(Self::SingleTag),
            Value::String(name) if name == "MULTI_TAG" => Ok(Self::MultiTag),
            Value::Number(n) if n.as_i64() == Some(0) => Ok(Self::SingleTag),
            Value::Number(n) if n.as_i64() == Some(1) => Ok(Self::MultiTag),
            other => Err(D::Error::custom(format!("unknown topicFilterType {other}"))),
        }
    }
}

/// Java's defaults for a topic created without explicit settings (`TopicConfig`).
const TOPIC_QUEUE_NUMS_DEFAULT: i32 = 16;
/// PERM_READ | PERM_WRITE.
const TOPIC_PERM_DEFAULT: i32 = 6;

/// One topic as a broker configures it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    #[serde(deserialize_with = "lenient::or_default")]
    pub attributes: BTreeMap<String, String>,
    #[serde(deserialize_with = "lenient::boolean")]
    pub order: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub perm: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub read_queue_nums: i32,
    pub topic_filter_type: TopicFilterType,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_name: String,
    #[serde(deserialize_with = "lenient::int")]
    pub topic_sys_flag: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub write_queue_nums: i32,
}

impl Default for TopicConfig {
    fn default() -> Self {
        Self {
            attributes: BTreeMap::new(),
            order: false,
            perm: TOPIC_PERM_DEFAULT,
            read_queue_nums: TOPIC_QUEUE_NUMS_DEFAULT,
            topic_filter_type: TopicFilterType::SingleTag,
            topic_name: String::new(),
            topic_sys_flag: 0,
            write_queue_nums: TOPIC_QUEUE_NUMS_DEFAULT,
        }
    }
}

impl TopicConfig {
    /// A topic with Java's defaults and the given queue counts.
    pub fn new(topic_name: impl Into<String>, queue_nums: i32) -> Self {
        Self {
            topic_name: topic_name.into(),
            read_queue_nums: queue_nums,
            write_queue_nums: queue_nums,
            ..Self::default()
        }
    }
}

/// A broker's topic table with its version (`TopicConfigAndMappingSerializeWrapper`; the
/// mapping parts only matter for static topics, which ringmq carries but does not interpret).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfigSerializeWrapper {
    #[serde(deserialize_with = "lenient::or_default")]
    pub data_version: DataVersion,
    #[serde(deserialize_with = "lenient::or_default")]
    pub mapping_data_version: DataVersion,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_queue_mapping_detail_map: BTreeMap<String, Value>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_queue_mapping_info_map: BTreeMap<String, Value>,
}

/// Body of REGISTER_BROKER.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RegisterBrokerBody {
    #[serde(deserialize_with = "lenient::or_default")]
    pub filter_server_list: Vec<String>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::{decode, encode};

    /// What a Java 5.x broker sends (fastjson output, alphabetical; the topic map is a
    /// ConcurrentHashMap in Java, so its order is arbitrary and here chosen sorted).
    const JAVA_BODY: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000001},"topicConfigTable":{"T1":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T1","topicSysFlag":0,"writeQueueNums":4},"TBW102":{"attributes":{},"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;

    #[test]
    fn decodes_a_java_register_body_and_writes_it_back_identically() {
        let body: RegisterBrokerBody = decode(JAVA_BODY.as_bytes()).unwrap();
        let wrapper = &body.topic_config_serialize_wrapper;
        assert_eq!(
            wrapper.data_version,
            DataVersion {
                counter: 3,
                state_version: 0,
                timestamp: 1_700_000_000_000
            }
        );
        assert_eq!(wrapper.topic_config_table["TBW102"].perm, 7);
        assert_eq!(wrapper.topic_config_table["T1"].write_queue_nums, 4);
        assert_eq!(
            String::from_utf8(encode(&body).unwrap()).unwrap(),
            JAVA_BODY
        );
    }

    #[test]
    fn decodes_sparse_bodies_with_strings_and_ordinals() {
        let text = r#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"9","timestamp":"5"},
            "topicConfigTable":{"T":{"topicName":"T","perm":"4","topicFilterType":1,"order":"true"}}}}"#;
        let body: RegisterBrokerBody = decode(text.as_bytes()).unwrap();
        let wrapper = body.topic_config_serialize_wrapper;
        assert_eq!(
            wrapper.data_version,
            DataVersion {
                counter: 9,
                state_version: 0,
                timestamp: 5
            }
        );
        let topic = &wrapper.topic_config_table["T"];
        assert_eq!(
            (topic.perm, topic.read_queue_nums, topic.order),
            (4, TOPIC_QUEUE_NUMS_DEFAULT, true)
        );
        assert_eq!(topic.topic_filter_type, TopicFilterType::MultiTag);
        assert!(body.filter_server_list.is_empty());
    }

    #[test]
    fn rejects_an_unknown_filter_type() {
        let text = r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicFilterType":"BOGUS"}}}}"#;
        assert!(decode::<RegisterBrokerBody>(text.as_bytes()).is_err());
    }
}
