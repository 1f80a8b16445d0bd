//! Inspection requests any shard answers from its own copy of the control plane:
//! GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG, GET_BROKER_CONFIG and
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG.

use crate::broker::config::BrokerConfig;
use crate::broker::error::BrokerResult;
use crate::broker::shard::Shard;
use crate::protocol::body::subscription_group::SubscriptionGroupWrapper;
use crate::protocol::body::{self, DataVersion, TopicConfigSerializeWrapper};
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{GetAllTopicConfigResponseHeader, GetBrokerConfigResponseHeader};
use crate::server::Response;
use ringmq_shards::FlushMode;
use std::collections::BTreeMap;

/// What an inspection request asks for.
pub enum AdminRead {
    AllTopics,
    Topic(String),
    AllGroups,
    BrokerConfig,
}

pub fn serve(shard: &Shard, command: &RemotingCommand, read: AdminRead) -> BrokerResult<Response> {
    let ok = || RemotingCommand::response_to(command, response::SUCCESS, None);
    let snapshot = shard.snapshot();
    let answer = match read {
        AdminRead::AllTopics => {
            let wrapper = TopicConfigSerializeWrapper {
                data_version: snapshot.topics.data_version,
                topic_config_table: (*snapshot.topics.entries).clone(),
                ..Default::default()
            };
            let header = GetAllTopicConfigResponseHeader {
                total_topic_num: snapshot.topics.entries.len() as i32,
            };
            ok().with_header(&header).with_body(body::encode(&wrapper)?)
        }
        AdminRead::AllGroups => {
            let wrapper = SubscriptionGroupWrapper {
                subscription_group_table: (*snapshot.groups.entries).clone(),
                data_version: snapshot.groups.data_version,
                ..Default::default()
            };
            ok().with_body(body::encode(&wrapper)?)
        }
        // `TopicConfigAndQueueMapping`: the topic's config; no static-topic mapping here.
        AdminRead::Topic(topic) => match snapshot.topics.get(&topic) {
            Some(config) => ok().with_body(body::encode(config)?),
            None => RemotingCommand::response_to(
                command,
                response::TOPIC_NOT_EXIST,
                Some(format!("No topic in this broker. topic: {topic}")),
            ),
        },
        AdminRead::BrokerConfig => {
            let header = GetBrokerConfigResponseHeader {
                version: String::from_utf8(body::encode(&DataVersion {
                    timestamp: shard.boot_timestamp_ms(),
                    ..DataVersion::default()
                })?)
                .unwrap_or_default(),
            };
            ok().with_header(&header)
                .with_body(config_properties(shard.config()).into_bytes())
        }
    };
    Ok(answer.into())
}

/// GET_BROKER_CONFIG's body: the settings as Java's `key=value` lines, under Java's names
/// (Configuration.getAllConfigsFormatString); the broker.conf keys ringmq does not use are
/// listed as written, as Java lists every setting it has.
fn config_properties(config: &BrokerConfig) -> String {
    let flush = match config.flush_mode {
        FlushMode::SyncFlush => "SYNC_FLUSH",
        FlushMode::AsyncFlush => "ASYNC_FLUSH",
    };
    let mut lines = BTreeMap::from([
        ("brokerClusterName", config.broker_cluster_name.clone()),
        ("brokerName", config.broker_name.clone()),
        ("brokerId", config.broker_id.to_string()),
        ("brokerIP1", config.broker_ip1.to_string()),
        ("listenPort", config.listen.port().to_string()),
        ("namesrvAddr", config.namesrv_addrs.join(";")),
        (
            "storePathRootDir",
            config.store_path_root_dir.display().to_string(),
        ),
        ("flushDiskType", flush.to_owned()),
        (
            "autoCreateTopicEnable",
            config.auto_create_topic_enable.to_string(),
        ),
        (
            "defaultTopicQueueNums",
            config.default_topic_queue_nums.to_string(),
        ),
        (
            "autoCreateSubscriptionGroup",
            config.auto_create_subscription_group.to_string(),
        ),
        (
            "enablePropertyFilter",
            config.enable_property_filter.to_string(),
        ),
        (
            "mappedFileSizeCommitLog",
            config.commit_log_segment_bytes.to_string(),
        ),
        ("maxMessageSize", config.message_bytes_max.to_string()),
        (
            "registerNameServerPeriod",
            config.register_period.as_millis().to_string(),
        ),
        ("brokerPermission", config.broker_permission.to_string()),
        ("messageDelayLevel", config.message_delay_level.to_string()),
        ("shards", config.shards.to_string()),
    ]);
    lines.extend(config.retention.conf_lines());
    for (key, value) in &config.unknown_keys {
        lines.entry(key.as_str()).or_insert_with(|| value.clone());
    }
    lines
        .into_iter()
        .map(|(key, value)| format!("{key}={value}\n"))
        .collect()
}
