//! The control plane: topics, subscription groups, consumer-group membership and queue locks,
//! owned by one task on shard 0 (the pump in `broker::control_pump`) that applies operations
//! one at a time, in arrival order.
//!
//! An operation changes the tables (a change is on disk before it is applied, see
//! `crate::persist`) and returns its answer with its [`Effects`]: the snapshot the shards must
//! install, the clients to notify, the topic table to register. The plane never calls the
//! shards itself; its owner carries the effects out, then answers.

use super::consumers::{ConsumerGroups, Registered};
use super::ops::{ClientOrigin, ProducerChannel};
use super::queue_locks::QueueLocks;
use super::snapshot::ControlSnapshot;
use super::subscription_groups::{GroupError, SubscriptionGroupTable};
use super::topics::{TopicError, TopicTable, RETRY_GROUP_TOPIC_PREFIX};
use crate::broker::error::{BrokerError, BrokerResult};
use crate::protocol::body::consumer_group::ConsumerConnection;
use crate::protocol::body::heartbeat::{ConsumerData, HeartbeatData, MessageModel};
use crate::protocol::body::lock::{LockBatchRequestBody, UnlockBatchRequestBody};
use crate::protocol::body::stats::MessageQueue;
use crate::protocol::body::subscription_group::SubscriptionGroupConfig;
use crate::protocol::body::{TopicConfig, TopicConfigSerializeWrapper};
use crate::server::ConnectionId;
use std::sync::Arc;

/// A consumer group's members must rebalance: NOTIFY_CONSUMER_IDS_CHANGED to one of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdsChanged {
    /// The shard holding the member's connection.
    pub shard: usize,
    pub connection: ConnectionId,
    pub group: String,
}

/// What an applied operation asks its owner to carry out before answering.
#[derive(Default)]
pub struct Effects {
    /// Every shard installs this before the answer is given.
    pub publish: Option<Arc<ControlSnapshot>>,
    /// The topic table changed: register it with the NameServers now.
    pub register: Option<TopicConfigSerializeWrapper>,
    pub notify: Vec<IdsChanged>,
    /// A deleted topic: every shard drops its queues, index entries and consumer offsets.
    pub drop_topic: Option<String>,
}

/// An operation's answer and its effects.
pub struct Outcome<T> {
    pub answer: T,
    pub effects: Effects,
}

/// What changed, for [`ControlPlane::effects`].
#[derive(Default)]
struct Changed {
    /// Topics, groups or subscriptions: the shards need a new snapshot.
    snapshot: bool,
    /// The topic table: the NameServers need it.
    topics: bool,
    /// Groups whose members must rebalance.
    ids: Vec<String>,
}

/// Shard 0's control-plane state (see the module doc).
pub struct ControlPlane {
    topics: TopicTable,
    groups: SubscriptionGroupTable,
    consumers: ConsumerGroups,
    locks: QueueLocks,
    /// The version of the last snapshot made.
    version: u64,
    /// Turns through a producer group's members for transaction checks.
    producer_turn: usize,
}

/// The groups an UNREGISTER_CLIENT names.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientGroups<'a> {
    pub consumer: Option<&'a str>,
    pub producer: Option<&'a str>,
}

impl ControlPlane {
    /// The tables as loaded at start, whose snapshot the shards start with (version 1).
    pub fn new(topics: TopicTable, groups: SubscriptionGroupTable) -> Self {
        Self {
            topics,
            groups,
            consumers: ConsumerGroups::new(),
            locks: QueueLocks::new(),
            version: 1,
            producer_turn: 0,
        }
    }

    pub fn snapshot(&self) -> ControlSnapshot {
        ControlSnapshot::of(
            self.version,
            &self.topics,
            &self.groups,
            self.consumers.snapshot(),
        )
    }

    /// The topic table as REGISTER_BROKER carries it.
    pub fn topics_wrapper(&self) -> TopicConfigSerializeWrapper {
        self.topics.wrapper()
    }

    pub async fn create_topic_for_send(
        &mut self,
        topic: &str,
        default_topic: &str,
        queue_nums: i32,
        now_ms: i64,
    ) -> Outcome<BrokerResult<Option<TopicConfig>>> {
        let ensured = match topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
            Some(group) => {
                let queues = self.groups.get(group).map_or(1, |g| g.retry_queue_nums);
                self.topics.create_retry_topic(group, queues, now_ms).await
            }
            None => {
                self.topics
                    .auto_create_for_send(topic, default_topic, queue_nums, now_ms)
                    .await
            }
        };
        match ensured {
            Ok(ensured) => self.outcome(Ok(Some(ensured.config)), Changed::topics(ensured.created)),
            Err(TopicError::NoAutoCreate { .. }) => self.unchanged(Ok(None)),
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    pub async fn find_or_create_group(
        &mut self,
        group: &str,
        now_ms: i64,
    ) -> Outcome<BrokerResult<Option<SubscriptionGroupConfig>>> {
        let existed = self.groups.get(group).is_some();
        match self.groups.find_or_auto_create(group, now_ms).await {
            Ok(config) => {
                let created = !existed && config.is_some();
                self.outcome(Ok(config), Changed::snapshot(created))
            }
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    pub async fn create_dlq_topic(
        &mut self,
        group: &str,
        now_ms: i64,
    ) -> Outcome<BrokerResult<TopicConfig>> {
        match self.topics.create_dlq_topic(group, now_ms).await {
            Ok(ensured) => self.outcome(Ok(ensured.config), Changed::topics(ensured.created)),
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    /// HEART_BEAT: registers each producer group of the client (where its transaction checks
    /// go) and each consumer group (creating the group and its retry topic on first sight, as
    /// Apache does).
    pub async fn heartbeat(
        &mut self,
        client: ClientOrigin,
        data: HeartbeatData,
        now_ms: i64,
    ) -> Outcome<BrokerResult<()>> {
        let mut changed = Changed::default();
        for producer in data
            .producer_data_set
            .iter()
            .filter(|p| !p.group_name.is_empty())
        {
            let channel = client.channel(&data.client_id, now_ms);
            if let Err(err) = self
                .consumers
                .register_producer(&producer.group_name, channel)
            {
                return self.outcome(Err(err.into()), changed);
            }
        }
        for consumer in &data.consumer_data_set {
            let channel = client.channel(&data.client_id, now_ms);
            if let Err(err) = self
                .register_consumer(consumer, channel, now_ms, &mut changed)
                .await
            {
                // What earlier groups of this heartbeat changed is kept, and published.
                return self.outcome(Err(err), changed);
            }
        }
        self.outcome(Ok(()), changed)
    }

    async fn register_consumer(
        &mut self,
        consumer: &ConsumerData,
        channel: super::consumers::ClientChannel,
        now_ms: i64,
        changed: &mut Changed,
    ) -> BrokerResult<()> {
        let group = &consumer.group_name;
        let had_group = self.groups.get(group).is_some();
        // As Apache 5.x: a group that is neither configured nor auto-creatable (auto creation
        // off, or a name TopicValidator rejects, which C++ clients never check, e.g.
        // `app.consumer`) is skipped; the heartbeat still succeeds for the client's other
        // groups (Apache 4.9 registers such a consumer even).
        let config = match self.groups.find_or_auto_create(group, now_ms).await {
            Ok(Some(config)) => config,
            Ok(None)
            | Err(GroupError::Blank | GroupError::IllegalChars(_) | GroupError::TooLong(_)) => {
                return Ok(())
            }
            Err(e) => return Err(e.into()),
        };
        // Every consumer group has its retry topic, made on its first heartbeat.
        let new_topic = self
            .topics
            .create_retry_topic(group, config.retry_queue_nums, now_ms)
            .await?
            .created;
        // V1 semantics: ringmq does not offer heartbeat V2, so every heartbeat carries the
        // full subscriptions.
        let registered: Registered = self.consumers.register(channel, consumer, None)?;
        // Java (5.x) notifies a CLUSTERING group's members of a change in its ids or topics;
        // BROADCASTING members do not share queues, so do not rebalance.
        let clustering = consumer.message_model != Some(MessageModel::Broadcasting);
        if (registered.ids_changed || registered.subscriptions_changed)
            && clustering
            && config.notify_consumer_ids_changed_enable
        {
            changed.ids.push(group.clone());
        }
        changed.snapshot |= registered.snapshot_changed || !had_group || new_topic;
        changed.topics |= new_topic;
        Ok(())
    }

    /// UNREGISTER_CLIENT: the client leaves its producer and consumer groups.
    pub fn unregister_client(
        &mut self,
        groups: ClientGroups<'_>,
        client_id: &str,
    ) -> Outcome<BrokerResult<()>> {
        if let Some(group) = groups.producer {
            self.consumers.unregister_producer(group, client_id);
        }
        let left = groups
            .consumer
            .filter(|group| self.consumers.unregister(group, client_id));
        let changed = Changed {
            ids: left.into_iter().map(str::to_owned).collect(),
            ..Changed::default()
        };
        self.outcome(Ok(()), changed)
    }

    /// A live producer of `group` for a transaction check: the group's members in turn, as
    /// Apache's `getAvailableChannel` takes them.
    pub fn producer_channel(&mut self, group: &str) -> Option<ProducerChannel> {
        let members = self.consumers.producer_channels(group).count();
        if members == 0 {
            return None;
        }
        self.producer_turn = self.producer_turn.wrapping_add(1);
        self.consumers
            .producer_channels(group)
            .nth(self.producer_turn % members)
            .map(|c| ProducerChannel {
                shard: c.shard,
                connection: c.connection,
            })
    }

    /// The connection of producer client `client_id`, for PUSH_REPLY_MESSAGE_TO_CLIENT.
    pub fn producer_of_client(&self, client_id: &str) -> Option<ProducerChannel> {
        self.consumers
            .producer_by_client_id(client_id)
            .map(|c| ProducerChannel {
                shard: c.shard,
                connection: c.connection,
            })
    }

    /// `TRANS_CHECK_MAX_TIME_TOPIC`, created on the first discard of a half message.
    pub async fn create_check_max_time_topic(
        &mut self,
        now_ms: i64,
    ) -> Outcome<BrokerResult<TopicConfig>> {
        match self.topics.create_check_max_time_topic(now_ms).await {
            Ok(ensured) => self.outcome(Ok(ensured.config), Changed::topics(ensured.created)),
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    /// GET_CONSUMER_LIST_BY_GROUP: the group's client ids.
    pub fn consumer_ids(&self, group: &str) -> BrokerResult<Vec<String>> {
        let ids = self.consumers.client_ids(group);
        if ids.is_empty() {
            return Err(BrokerError::Illegal(format!(
                "no consumer for this group, {group}"
            )));
        }
        Ok(ids)
    }

    /// GET_CONSUMER_CONNECTION_LIST.
    pub fn consumer_connection(&self, group: &str) -> BrokerResult<ConsumerConnection> {
        self.consumers
            .connection(group)
            .ok_or_else(|| BrokerError::ConsumerNotOnline(group.to_owned()))
    }

    /// LOCK_BATCH_MQ: the queues now locked by the client.
    pub fn lock_batch(&mut self, body: &LockBatchRequestBody, now_ms: i64) -> Vec<MessageQueue> {
        self.locks
            .lock_batch(&body.consumer_group, &body.client_id, &body.mq_set, now_ms)
    }

    pub fn unlock_batch(&mut self, body: &UnlockBatchRequestBody) {
        self.locks
            .unlock_batch(&body.consumer_group, &body.client_id, &body.mq_set);
    }

    /// UPDATE_AND_CREATE_TOPIC.
    pub async fn upsert_topic(
        &mut self,
        config: TopicConfig,
        now_ms: i64,
    ) -> Outcome<BrokerResult<()>> {
        match self.topics.upsert(config, now_ms).await {
            Ok(()) => self.outcome(Ok(()), Changed::topics(true)),
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    /// DELETE_TOPIC_IN_BROKER: the configuration goes here; its data goes on every shard
    /// (`Effects::drop_topic`), also when the topic had no configuration left (a retried
    /// deletion, or data of a topic deleted before its data was).
    pub async fn delete_topic(&mut self, topic: &str, now_ms: i64) -> Outcome<BrokerResult<()>> {
        match self.topics.delete(topic, now_ms).await {
            Ok(_) => {
                let mut outcome = self.outcome(Ok(()), Changed::topics(true));
                outcome.effects.drop_topic = Some(topic.to_owned());
                outcome
            }
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP.
    pub async fn upsert_group(
        &mut self,
        config: SubscriptionGroupConfig,
        now_ms: i64,
    ) -> Outcome<BrokerResult<()>> {
        match self.groups.upsert(config, now_ms).await {
            Ok(()) => self.outcome(Ok(()), Changed::snapshot(true)),
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    /// DELETE_SUBSCRIPTIONGROUP.
    pub async fn delete_group(&mut self, group: &str, now_ms: i64) -> Outcome<BrokerResult<()>> {
        match self.groups.delete(group, now_ms).await {
            Ok(_) => self.outcome(Ok(()), Changed::snapshot(true)),
            Err(err) => self.unchanged(Err(err.into())),
        }
    }

    /// A client connection closed: its members leave their groups, which rebalance.
    pub fn connection_closed(&mut self, connection: ConnectionId) -> Effects {
        let ids = self.consumers.connection_closed(connection);
        let changed = Changed {
            ids,
            ..Changed::default()
        };
        self.effects(changed)
    }

    /// Drops the clients that stopped heartbeating; their groups rebalance.
    pub fn expire_clients(&mut self, now_ms: i64) -> Effects {
        let expired = self.consumers.expire(now_ms);
        let changed = Changed {
            snapshot: !expired.groups.is_empty(),
            ids: expired.groups,
            ..Changed::default()
        };
        self.effects(changed)
    }

    fn unchanged<T>(&self, answer: T) -> Outcome<T> {
        Outcome {
            answer,
            effects: Effects::default(),
        }
    }

    fn outcome<T>(&mut self, answer: T, changed: Changed) -> Outcome<T> {
        Outcome {
            answer,
            effects: self.effects(changed),
        }
    }

    /// The effects of `changed`: a new snapshot version when the shards need one, every
    /// member of the groups to notify, the topic table when it changed.
    fn effects(&mut self, changed: Changed) -> Effects {
        let publish = changed.snapshot || changed.topics;
        if publish {
            self.version += 1;
        }
        let notify = changed
            .ids
            .iter()
            .flat_map(|group| {
                self.consumers.channels(group).map(|c| IdsChanged {
                    shard: c.shard,
                    connection: c.connection,
                    group: group.clone(),
                })
            })
            .collect();
        Effects {
            publish: publish.then(|| Arc::new(self.snapshot())),
            register: changed.topics.then(|| self.topics.wrapper()),
            notify,
            drop_topic: None,
        }
    }
}

impl Changed {
    fn snapshot(changed: bool) -> Self {
        Self {
            snapshot: changed,
            ..Self::default()
        }
    }

    fn topics(changed: bool) -> Self {
        Self {
            topics: changed,
            ..Self::default()
        }
    }
}

#[cfg(test)]
#[path = "plane_tests.rs"]
mod tests;
