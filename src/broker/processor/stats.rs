//! Statistics every shard contributes to for the queues it owns, merged on the connection's
//! shard: GET_TOPIC_STATS_INFO, GET_CONSUME_STATS and QUERY_TOPIC_CONSUME_BY_WHO. Each
//! shard's part is a typed value (the protocol's own tables), merged without a JSON round trip.

use super::offsets::store_time_at;
use crate::broker::error::{BrokerError, BrokerResult};
use crate::broker::shard::Shard;
use crate::broker::work::Work;
use crate::protocol::body;
use crate::protocol::body::stats::{
    ConsumeStats, MessageQueue, OffsetWrapper, TopicOffset, TopicStatsTable,
};
use crate::protocol::codes::response;
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::GetConsumeStatsRequestHeader;
use crate::server::Response;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// `GroupList`, the body of QUERY_TOPIC_CONSUME_BY_WHO.
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct GroupList {
    group_list: BTreeSet<String>,
}

/// GET_TOPIC_STATS_INFO: min/max offset and last store time of every queue of a topic.
pub async fn serve_topic_stats(
    shard: &Shard,
    command: &RemotingCommand,
    topic: String,
) -> BrokerResult<Response> {
    let parts = shard
        .on_every_shard(|reply| Work::TopicStats {
            topic: topic.clone(),
            reply,
        })
        .await?;
    let mut table = TopicStatsTable::default();
    table
        .offset_table
        .extend(parts.into_iter().flat_map(|part| part.offset_table));
    Ok(ok(command).with_body(table.encode()?).into())
}

/// GET_CONSUME_STATS: broker and consumer offsets of every queue a group consumes.
pub async fn serve_consume_stats(
    shard: &Shard,
    command: &RemotingCommand,
    header: GetConsumeStatsRequestHeader,
) -> BrokerResult<Response> {
    let parts = shard
        .on_every_shard(|reply| Work::ConsumeStats {
            header: Box::new(header.clone()),
            reply,
        })
        .await?;
    let mut stats = ConsumeStats::default();
    stats
        .offset_table
        .extend(parts.into_iter().flat_map(|part| part.offset_table));
    Ok(ok(command).with_body(stats.encode()?).into())
}

/// QUERY_TOPIC_CONSUME_BY_WHO: as Java, the online groups subscribing the topic and the
/// groups holding an offset of it (those live in the stores of the shards owning its queues).
pub async fn serve_consumed_by(
    shard: &Shard,
    command: &RemotingCommand,
    topic: String,
) -> BrokerResult<Response> {
    let parts = shard
        .on_every_shard(|reply| Work::ConsumedBy {
            topic: topic.clone(),
            reply,
        })
        .await?;
    let mut groups = GroupList::default();
    groups.group_list.extend(parts.into_iter().flatten());
    groups.group_list.extend(
        shard
            .snapshot()
            .subscriptions
            .groups
            .iter()
            .filter(|(_, group)| group.subscriptions.contains_key(&topic))
            .map(|(name, _)| name.clone()),
    );
    Ok(ok(command).with_body(body::encode(&groups)?).into())
}

/// Owner half of GET_TOPIC_STATS_INFO: the queues of `topic` this shard owns.
pub async fn topic_stats_part(shard: &Shard, topic: &str) -> BrokerResult<TopicStatsTable> {
    let config = shard
        .topic(topic)
        .ok_or_else(|| BrokerError::TopicNotExist(topic.to_owned()))?;
    let mut table = TopicStatsTable::default();
    let queues = config.write_queue_nums.max(config.read_queue_nums);
    for queue_id in owned_queues(shard, topic, queues) {
        let max = shard.store().max_offset(topic, queue_id);
        let offsets = TopicOffset {
            min_offset: shard.store().min_offset(topic, queue_id),
            max_offset: max,
            last_update_timestamp: store_time_at(shard, topic, queue_id, max - 1)
                .await?
                .unwrap_or(0),
        };
        table
            .offset_table
            .insert(message_queue(shard, topic, queue_id), offsets);
    }
    Ok(table)
}

/// Owner half of GET_CONSUME_STATS.
pub async fn consume_stats_part(
    shard: &Shard,
    header: &GetConsumeStatsRequestHeader,
) -> BrokerResult<ConsumeStats> {
    let mut stats = ConsumeStats::default();
    for topic in consumed_topics(shard, header) {
        let Some(config) = shard.topic(&topic) else {
            continue;
        };
        for queue_id in owned_queues(shard, &topic, config.read_queue_nums) {
            let consumer_offset = shard
                .store()
                .consumer_offset(&header.consumer_group, &topic, queue_id)
                .unwrap_or(0);
            let wrapper = OffsetWrapper {
                broker_offset: shard.store().max_offset(&topic, queue_id),
                consumer_offset,
                pull_offset: consumer_offset,
                last_timestamp: store_time_at(shard, &topic, queue_id, consumer_offset - 1)
                    .await?
                    .unwrap_or(0),
            };
            stats
                .offset_table
                .insert(message_queue(shard, &topic, queue_id), wrapper);
        }
    }
    Ok(stats)
}

/// Owner half of QUERY_TOPIC_CONSUME_BY_WHO: the groups with offsets of `topic` here.
pub fn consumed_by_part(shard: &Shard, topic: &str) -> BTreeSet<String> {
    shard
        .store()
        .groups_with_offsets(topic)
        .into_iter()
        .collect()
}

fn ok(command: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(command, response::SUCCESS, None)
}

fn owned_queues<'a>(
    shard: &'a Shard,
    topic: &'a str,
    queues: i32,
) -> impl Iterator<Item = i32> + 'a {
    (0..queues).filter(move |&q| shard.owner_of(topic, q) == shard.id())
}

fn message_queue(shard: &Shard, topic: &str, queue_id: i32) -> MessageQueue {
    MessageQueue::new(topic, &shard.config().broker_name, queue_id)
}

/// The topics a GET_CONSUME_STATS covers: the one asked, or those the group subscribes
/// online or holds offsets of here (Java's `whichTopicByConsumer`).
fn consumed_topics(shard: &Shard, h: &GetConsumeStatsRequestHeader) -> BTreeSet<String> {
    if let Some(topic) = h.topic.as_ref().filter(|t| !t.is_empty()) {
        return BTreeSet::from([topic.clone()]);
    }
    let mut topics: BTreeSet<String> = shard
        .store()
        .topics_with_offsets(&h.consumer_group)
        .into_iter()
        .collect();
    if let Some(group) = shard.snapshot().subscriptions.group(&h.consumer_group) {
        topics.extend(group.subscriptions.keys().cloned());
    }
    topics
}
