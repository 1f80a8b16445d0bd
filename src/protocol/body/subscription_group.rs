//! Consumer-group settings a broker keeps: `SubscriptionGroupConfig` and the table of them,
//! `SubscriptionGroupWrapper` (the body of GET_ALL_SUBSCRIPTIONGROUP_CONFIG and the shape of
//! the broker's subscriptionGroup.json).
//!
//! Fields carry Java's defaults and are declared alphabetically, as fastjson writes them.
//! 5.x fields (`consumeMessageOrderly`, `groupRetryPolicy`, `groupSysFlag`, ...) are absent
//! from 4.9 files and take their defaults; 4.9 peers ignore them when we write them.

use crate::protocol::body::{DataVersion, MASTER_ID};
use crate::protocol::fastjson::lenient;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Java's `SubscriptionGroupConfig` defaults.
const RETRY_QUEUE_NUMS_DEFAULT: i32 = 1;
/// Deliveries to the retry topic before a message goes to the DLQ.
const RETRY_MAX_TIMES_DEFAULT: i32 = 16;
/// The slave a consumer is redirected to when it falls behind.
const WHICH_BROKER_WHEN_CONSUME_SLOWLY_DEFAULT: i64 = 1;
/// Push consumers' per-message consume timeout (5.x).
const CONSUME_TIMEOUT_MINUTE_DEFAULT: i32 = 15;

/// One consumer group's settings on a broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    #[serde(deserialize_with = "lenient::or_default")]
    pub attributes: BTreeMap<String, String>,
    #[serde(deserialize_with = "lenient::int")]
    pub broker_id: i64,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_broadcast_enable: bool,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_enable: bool,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_from_min_enable: bool,
    #[serde(deserialize_with = "lenient::boolean")]
    pub consume_message_orderly: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub consume_timeout_minute: i32,
    #[serde(deserialize_with = "lenient::or_default")]
    pub group_name: String,
    /// 5.x retry policy (`{"type":"CUSTOMIZED"}` by default); carried, not interpreted.
    pub group_retry_policy: Value,
    #[serde(deserialize_with = "lenient::int")]
    pub group_sys_flag: i32,
    #[serde(deserialize_with = "lenient::boolean")]
    pub notify_consumer_ids_changed_enable: bool,
    #[serde(deserialize_with = "lenient::int")]
    pub retry_max_times: i32,
    #[serde(deserialize_with = "lenient::int")]
    pub retry_queue_nums: i32,
    /// 5.x subscriptions declared on the group; null (omitted) unless an admin set them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_data_set: Option<Value>,
    #[serde(deserialize_with = "lenient::int")]
    pub which_broker_when_consume_slowly: i64,
}

impl Default for SubscriptionGroupConfig {
    fn default() -> Self {
        Self {
            attributes: BTreeMap::new(),
            broker_id: MASTER_ID,
            consume_broadcast_enable: true,
            consume_enable: true,
            consume_from_min_enable: true,
            consume_message_orderly: false,
            consume_timeout_minute: CONSUME_TIMEOUT_MINUTE_DEFAULT,
            group_name: String::new(),
            group_retry_policy: serde_json::json!({"type": "CUSTOMIZED"}),
            group_sys_flag: 0,
            notify_consumer_ids_changed_enable: true,
            retry_max_times: RETRY_MAX_TIMES_DEFAULT,
            retry_queue_nums: RETRY_QUEUE_NUMS_DEFAULT,
            subscription_data_set: None,
            which_broker_when_consume_slowly: WHICH_BROKER_WHEN_CONSUME_SLOWLY_DEFAULT,
        }
    }
}

impl SubscriptionGroupConfig {
    /// A group with Java's defaults.
    pub fn new(group_name: impl Into<String>) -> Self {
        Self {
            group_name: group_name.into(),
            ..Self::default()
        }
    }
}

/// A broker's subscription groups with their version. `forbiddenTable` (5.x: per group, per
/// topic, forbidden-permission bits) is carried for round trips.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupWrapper {
    #[serde(deserialize_with = "lenient::or_default")]
    pub data_version: DataVersion,
    #[serde(deserialize_with = "lenient::or_default")]
    pub forbidden_table: BTreeMap<String, BTreeMap<String, i32>>,
    #[serde(deserialize_with = "lenient::or_default")]
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::body::{decode, encode};

    /// subscriptionGroup.json as Apache RocketMQ 4.9 writes it: fastjson's pretty form (tabs)
    /// of `SubscriptionGroupManager`, which has no 5.x fields.
    const APACHE_49_FILE: &str = r#"{
	"dataVersion":{
		"counter":2,
		"timestamp":1700000000123
	},
	"subscriptionGroupTable":{
		"CID_ONSAPI_OWNER":{
			"brokerId":0,
			"consumeBroadcastEnable":true,
			"consumeEnable":true,
			"consumeFromMinEnable":true,
			"groupName":"CID_ONSAPI_OWNER",
			"notifyConsumerIdsChangedEnable":true,
			"retryMaxTimes":16,
			"retryQueueNums":1,
			"whichBrokerWhenConsumeSlowly":1
		},
		"orders":{
			"brokerId":0,
			"consumeBroadcastEnable":false,
			"consumeEnable":false,
			"consumeFromMinEnable":true,
			"groupName":"orders",
			"notifyConsumerIdsChangedEnable":true,
			"retryMaxTimes":3,
			"retryQueueNums":1,
			"whichBrokerWhenConsumeSlowly":1
		}
	}
}"#;

    #[test]
    fn reads_an_apache_49_file_with_5x_defaults_filled_in() {
        let wrapper: SubscriptionGroupWrapper = decode(APACHE_49_FILE.as_bytes()).unwrap();
        assert_eq!(wrapper.data_version.counter, 2);
        assert_eq!(wrapper.data_version.timestamp, 1_700_000_000_123);
        let orders = &wrapper.subscription_group_table["orders"];
        assert_eq!((orders.consume_enable, orders.retry_max_times), (false, 3));
        assert_eq!(
            orders.consume_timeout_minute,
            CONSUME_TIMEOUT_MINUTE_DEFAULT
        );
        assert!(wrapper.subscription_group_table["CID_ONSAPI_OWNER"].consume_broadcast_enable);
        assert!(wrapper.forbidden_table.is_empty());
    }

    #[test]
    fn writes_java_5x_shape() {
        let mut wrapper = SubscriptionGroupWrapper::default();
        wrapper
            .subscription_group_table
            .insert("g".into(), SubscriptionGroupConfig::new("g"));
        let text = String::from_utf8(encode(&wrapper).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"forbiddenTable":{},"subscriptionGroupTable":{"g":{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"g","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}"#
        );
        let back: SubscriptionGroupWrapper = decode(text.as_bytes()).unwrap();
        assert_eq!(back, wrapper);
    }

    #[test]
    fn decodes_leniently_and_rejects_nonsense() {
        let text =
            r#"{"groupName":"g","retryMaxTimes":"5","consumeEnable":"false","brokerId":null}"#;
        let group: SubscriptionGroupConfig = decode(text.as_bytes()).unwrap();
        assert_eq!((group.retry_max_times, group.consume_enable), (5, false));
        assert_eq!(group.broker_id, 0);
        assert!(decode::<SubscriptionGroupConfig>(br#"{"retryMaxTimes":"many"}"#).is_err());
    }
}
