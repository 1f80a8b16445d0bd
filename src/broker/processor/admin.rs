//! Inspection requests: GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG, GET_BROKER_CONFIG,
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG and QUERY_TOPIC_CONSUME_BY_WHO (from the shard's snapshot),
//! and the ones every shard contributes to — GET_TOPIC_STATS_INFO, GET_CONSUME_STATS and
//! GET_BROKER_RUNTIME_INFO (its keys: `runtime_info`) — each shard answering for what it owns
//! and the connection's shard merging.

use crate::broker::config::BrokerConfig;
use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard_state::BrokerShard;
use crate::protocol::body::stats::{
    ConsumeStats, MessageQueue, OffsetWrapper, TopicOffset, TopicStatsTable,
};
use crate::protocol::body::subscription_group::SubscriptionGroupWrapper;
use crate::protocol::body::{self, DataVersion, KvTable, TopicConfigSerializeWrapper};
use crate::protocol::codes::{request as code, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{
    GetAllTopicConfigResponseHeader, GetBrokerConfigResponseHeader, GetConsumeStatsRequestHeader,
    TopicRequestHeader,
};
use crate::protocol::message::record::RecordView;
use crate::server::not_supported;
use ringmq_shards::{FlushMode, QueueReadRequest};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// `GroupList`, the body of QUERY_TOPIC_CONSUME_BY_WHO.
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct GroupList {
    group_list: BTreeSet<String>,
}

impl BrokerShard {
    /// Requests any shard answers from its own copy of the control plane.
    pub(crate) fn serve_admin_read(
        &self,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        let ok = || RemotingCommand::response_to(request, response::SUCCESS, None);
        let snapshot = self.snapshot();
        match request.code {
            code::GET_ALL_TOPIC_CONFIG => {
                let wrapper = TopicConfigSerializeWrapper {
                    data_version: snapshot.topics.data_version,
                    topic_config_table: (*snapshot.topics.entries).clone(),
                    ..Default::default()
                };
                let header = GetAllTopicConfigResponseHeader {
                    total_topic_num: snapshot.topics.entries.len() as i32,
                };
                Ok(ok().with_header(&header).with_body(body::encode(&wrapper)?))
            }
            code::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => {
                let wrapper = SubscriptionGroupWrapper {
                    subscription_group_table: (*snapshot.groups.entries).clone(),
                    data_version: snapshot.groups.data_version,
                    ..Default::default()
                };
                Ok(ok().with_body(body::encode(&wrapper)?))
            }
            code::GET_TOPIC_CONFIG => {
                // `TopicConfigAndQueueMapping`: the topic's config; no static-topic mapping here.
                let h: TopicRequestHeader = request.decode_header()?;
                Ok(match self.topic(&h.topic) {
                    Some(config) => ok().with_body(body::encode(&config)?),
                    None => RemotingCommand::response_to(
                        request,
                        response::TOPIC_NOT_EXIST,
                        Some(format!("No topic in this broker. topic: {}", h.topic)),
                    ),
                })
            }
            code::GET_BROKER_CONFIG => {
                let header = GetBrokerConfigResponseHeader {
                    version: String::from_utf8(body::encode(&DataVersion {
                        timestamp: self.boot_timestamp_ms(),
                        ..DataVersion::default()
                    })?)
                    .unwrap_or_default(),
                };
                Ok(ok()
                    .with_header(&header)
                    .with_body(config_properties(self.config()).into_bytes()))
            }
            _ => Ok(not_supported(request)),
        }
    }

    /// This shard's part of a statistics request: the queues it owns.
    pub(crate) async fn serve_stats_part(
        &self,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        let ok = || RemotingCommand::response_to(request, response::SUCCESS, None);
        match request.code {
            code::GET_TOPIC_STATS_INFO => {
                let h: TopicRequestHeader = request.decode_header()?;
                let topic = self
                    .topic(&h.topic)
                    .ok_or_else(|| BrokerError::TopicNotExist(h.topic.clone()))?;
                let mut table = TopicStatsTable::default();
                for queue_id in
                    self.owned_queues(&h.topic, topic.write_queue_nums.max(topic.read_queue_nums))
                {
                    let max = self.store().max_offset(&h.topic, queue_id);
                    let offsets = TopicOffset {
                        min_offset: self.store().min_offset(&h.topic, queue_id),
                        max_offset: max,
                        last_update_timestamp: self
                            .store_time_at(&h.topic, queue_id, max - 1)
                            .await?,
                    };
                    table
                        .offset_table
                        .insert(self.message_queue(&h.topic, queue_id), offsets);
                }
                Ok(ok().with_body(table.encode()?))
            }
            code::GET_CONSUME_STATS => {
                let h: GetConsumeStatsRequestHeader = request.decode_header()?;
                let topics = self.consumed_topics(&h);
                let mut stats = ConsumeStats::default();
                for topic in topics {
                    let Some(config) = self.topic(&topic) else {
                        continue;
                    };
                    for queue_id in self.owned_queues(&topic, config.read_queue_nums) {
                        let consumer_offset = self
                            .store()
                            .consumer_offset(&h.consumer_group, &topic, queue_id)
                            .unwrap_or(0);
                        let wrapper = OffsetWrapper {
                            broker_offset: self.store().max_offset(&topic, queue_id),
                            consumer_offset,
                            pull_offset: consumer_offset,
                            last_timestamp: self
                                .store_time_at(&topic, queue_id, consumer_offset - 1)
                                .await?,
                        };
                        stats
                            .offset_table
                            .insert(self.message_queue(&topic, queue_id), wrapper);
                    }
                }
                Ok(ok().with_body(stats.encode()?))
            }
            code::QUERY_TOPIC_CONSUME_BY_WHO => {
                // Java: the online groups subscribing the topic, and the groups holding an
                // offset of it (those live in the stores of the shards owning its queues).
                let h: TopicRequestHeader = request.decode_header()?;
                let mut groups = GroupList::default();
                groups
                    .group_list
                    .extend(self.store().groups_with_offsets(&h.topic));
                groups.group_list.extend(
                    self.snapshot()
                        .subscriptions
                        .groups
                        .iter()
                        .filter(|(_, group)| group.subscriptions.contains_key(&h.topic))
                        .map(|(name, _)| name.clone()),
                );
                Ok(ok().with_body(body::encode(&groups)?))
            }
            code::GET_BROKER_RUNTIME_INFO => {
                Ok(ok().with_body(body::encode(&self.runtime_info_part().await?)?))
            }
            _ => Ok(not_supported(request)),
        }
    }

    fn owned_queues<'a>(&'a self, topic: &'a str, queues: i32) -> impl Iterator<Item = i32> + 'a {
        (0..queues).filter(move |&q| self.owner_of(topic, q) == self.id())
    }

    fn message_queue(&self, topic: &str, queue_id: i32) -> MessageQueue {
        MessageQueue::new(topic, &self.config().broker_name, queue_id)
    }

    /// The topics a GET_CONSUME_STATS covers: the one asked, or those the group subscribes
    /// online or holds offsets of here (Java's `whichTopicByConsumer`).
    fn consumed_topics(&self, h: &GetConsumeStatsRequestHeader) -> BTreeSet<String> {
        if let Some(topic) = h.topic.as_ref().filter(|t| !t.is_empty()) {
            return BTreeSet::from([topic.clone()]);
        }
        let mut topics: BTreeSet<String> = self
            .store()
            .topics_with_offsets(&h.consumer_group)
            .into_iter()
            .collect();
        if let Some(group) = self.snapshot().subscriptions.group(&h.consumer_group) {
            topics.extend(group.subscriptions.keys().cloned());
        }
        topics
    }

    /// Store time of the message at `offset` in a queue, 0 when there is none.
    async fn store_time_at(&self, topic: &str, queue_id: i32, offset: i64) -> BrokerResult<i64> {
        if offset < 0 {
            return Ok(0);
        }
        let read = self
            .store()
            .read_queue(QueueReadRequest {
                topic,
                queue_id,
                offset,
                max_count: 1,
                max_bytes: usize::MAX,
                tag_filter: None,
            })
            .await?;
        Ok(match read.records.into_iter().next() {
            Some(record) => RecordView::parse(record)
                .map(|v| v.store_timestamp_ms())
                .unwrap_or(0),
            None => 0,
        })
    }
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
        (
            "fileReservedTime",
            (config.file_reserved_time.as_secs() / SECONDS_PER_HOUR).to_string(),
        ),
        ("shards", config.shards.to_string()),
    ]);
    for (key, value) in &config.unknown_keys {
        lines.entry(key.as_str()).or_insert_with(|| value.clone());
    }
    lines
        .into_iter()
        .map(|(key, value)| format!("{key}={value}\n"))
        .collect()
}

/// `fileReservedTime` is in hours.
const SECONDS_PER_HOUR: u64 = 3600;

/// Joins the shards' parts of a statistics request into the client's answer.
pub(crate) fn merge_stats_parts(
    shard: &BrokerShard,
    request: &RemotingCommand,
    parts: Vec<RemotingCommand>,
) -> BrokerResult<RemotingCommand> {
    if let Some(failed) = parts.iter().find(|p| p.code != response::SUCCESS) {
        return Ok(RemotingCommand::response_to(
            request,
            failed.code,
            failed.remark.clone(),
        ));
    }
    let ok = RemotingCommand::response_to(request, response::SUCCESS, None);
    match request.code {
        code::GET_TOPIC_STATS_INFO => {
            let mut table = TopicStatsTable::default();
            for part in parts {
                let piece: TopicStatsTable = body::decode(&part.body)?;
                table.offset_table.extend(piece.offset_table);
            }
            Ok(ok.with_body(table.encode()?))
        }
        code::GET_CONSUME_STATS => {
            let mut stats = ConsumeStats::default();
            for part in parts {
                let piece: ConsumeStats = body::decode(&part.body)?;
                stats.offset_table.extend(piece.offset_table);
            }
            Ok(ok.with_body(stats.encode()?))
        }
        code::QUERY_TOPIC_CONSUME_BY_WHO => {
            let mut groups = GroupList::default();
            for part in parts {
                let piece: GroupList = body::decode(&part.body)?;
                groups.group_list.extend(piece.group_list);
            }
            Ok(ok.with_body(body::encode(&groups)?))
        }
        code::GET_BROKER_RUNTIME_INFO => {
            let tables = parts
                .iter()
                .map(|part| body::decode::<KvTable>(&part.body))
                .collect::<Result<Vec<_>, _>>()?;
            let table =
                super::runtime_info::merge_runtime_info(shard, tables, crate::broker::now_ms());
            Ok(ok.with_body(body::encode(&table)?))
        }
        _ => Ok(not_supported(request)),
    }
}
