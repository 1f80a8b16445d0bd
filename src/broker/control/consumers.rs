//! Who is online: the broker's table of consumer groups (members, what they consume) and
//! producer groups (members), fed by HEART_BEAT and UNREGISTER_CLIENT and emptied by closed
//! connections and silence (Java's `ConsumerManager`, `ConsumerGroupInfo`, `ProducerManager`).
//!
//! Owned by shard 0's executor and changed only there; the other shards read the consumer
//! groups' subscriptions through the [`SubscriptionSnapshot`] shard 0 sends them, so a pull on
//! any shard can filter by the group's tags and check its `subVersion`.
//!
//! Members are keyed by client id (one client instance keeps one connection per broker). A
//! client that reconnects and heartbeats on its new connection keeps its place, and the close
//! of its old connection, processed later, no longer removes it.

use crate::protocol::body::consumer_group::{Connection, ConsumerConnection, ProducerConnection};
use crate::protocol::body::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, HeartbeatV2, MessageModel, SubscriptionData,
};
use crate::protocol::command::LanguageCode;
use crate::server::ConnectionId;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

/// A member silent this long is dropped and its connection should be closed (Java's
/// `channelExpiredTimeout`; clients heartbeat every 30 s, so this is four missed beats).
pub const CHANNEL_EXPIRED_MS: i64 = 120_000;

/// Consumer groups with members at once. Java has no limit; ten thousand groups online on one
/// broker is far past what operators run (each costs a few hundred bytes plus its members).
pub const CONSUMER_GROUPS_MAX: usize = 10_000;

/// Members of one group (consumer or producer). A member is a client process with a connection
/// to this broker, so this is bounded in practice by `server::CONNECTIONS_MAX` per shard; a
/// broadcasting group of a large fleet is the largest real case.
pub const CLIENTS_PER_GROUP_MAX: usize = 16_384;

/// Topics one consumer may subscribe to in one group. Java has no limit; a push consumer also
/// subscribes its `%RETRY%` topic, and a thousand topics per group is far past real use.
pub const SUBSCRIPTIONS_PER_CLIENT_MAX: usize = 1_000;

/// Producer groups with members at once (every client instance also reports
/// `CLIENT_INNER_PRODUCER`, so this counts named groups of real applications).
pub const PRODUCER_GROUPS_MAX: usize = 10_000;

/// Why a heartbeat's group could not be registered; the broker answers SYSTEM_ERROR with this
/// text, the client logs it and retries with its next heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsumersError {
    #[error("heartbeat without a group name")]
    EmptyGroup,
    #[error("heartbeat without a client id")]
    EmptyClientId,
    #[error("too many consumer groups online (limit {CONSUMER_GROUPS_MAX})")]
    TooManyConsumerGroups,
    #[error("too many producer groups online (limit {PRODUCER_GROUPS_MAX})")]
    TooManyProducerGroups,
    #[error("group {group} has too many clients (limit {CLIENTS_PER_GROUP_MAX})")]
    TooManyClients { group: String },
    #[error("group {group} subscribes {count} topics (limit {SUBSCRIPTIONS_PER_CLIENT_MAX})")]
    TooManySubscriptions { group: String, count: usize },
}

/// One member of a group and how to reach it (for NOTIFY_CONSUMER_IDS_CHANGED,
/// CHECK_TRANSACTION_STATE, GET_CONSUMER_RUNNING_INFO and the connection lists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientChannel {
    /// The shard whose executor owns the connection.
    pub shard: usize,
    pub connection: ConnectionId,
    pub client_id: String,
    /// `ip:port` of the client's end.
    pub client_addr: String,
    /// From the heartbeat's frame header.
    pub language: LanguageCode,
    pub version: i32,
    /// When the last heartbeat arrived.
    pub last_update_ms: i64,
}

impl ClientChannel {
    fn connection_body(&self) -> Connection {
        Connection {
            client_addr: self.client_addr.clone(),
            client_id: self.client_id.clone(),
            language: self.language,
            version: self.version,
        }
    }
}

/// The members of one group, by client id (sorted, as clients sort the ids anyway).
#[derive(Debug, Clone, Default)]
struct Members {
    by_client_id: BTreeMap<String, ClientChannel>,
}

impl Members {
    /// Adds or refreshes a member; true if the client id is new. A known client on a new
    /// connection (it reconnected) takes the new one.
    fn upsert(&mut self, channel: ClientChannel, group: &str) -> Result<bool, ConsumersError> {
        if let Some(known) = self.by_client_id.get_mut(&channel.client_id) {
            *known = channel;
            return Ok(false);
        }
        if self.by_client_id.len() >= CLIENTS_PER_GROUP_MAX {
            return Err(ConsumersError::TooManyClients {
                group: group.to_string(),
            });
        }
        self.by_client_id.insert(channel.client_id.clone(), channel);
        Ok(true)
    }

    /// Removes the members on this connection; true if any was.
    fn remove_connection(&mut self, connection: ConnectionId) -> bool {
        let before = self.by_client_id.len();
        self.by_client_id.retain(|_, c| c.connection != connection);
        self.by_client_id.len() != before
    }

    /// Removes the members silent for longer than [`CHANNEL_EXPIRED_MS`] into `expired`.
    fn remove_expired(&mut self, now_ms: i64, expired: &mut Vec<ClientChannel>) -> bool {
        let before = expired.len();
        self.by_client_id.retain(|_, c| {
            let live = now_ms - c.last_update_ms <= CHANNEL_EXPIRED_MS;
            if !live {
                expired.push(c.clone());
            }
            live
        });
        expired.len() != before
    }

    fn connections(&self) -> Vec<Connection> {
        self.by_client_id
            .values()
            .map(ClientChannel::connection_body)
            .collect()
    }
}

/// One consumer group online: its members and, from their latest heartbeat, how it consumes.
#[derive(Debug, Clone, Default)]
pub struct ConsumerGroup {
    members: Members,
    consume_from_where: Option<ConsumeFromWhere>,
    /// What the shards read. Shared with the snapshots taken since it last changed and copied
    /// on write, so a snapshot costs a pointer per group, not a copy of every subscription.
    view: Arc<GroupSubscriptions>,
    /// Fingerprint of the latest heartbeat (0 for V1), to tell a V2 client its subscriptions
    /// changed on the broker's side.
    heartbeat_fingerprint: i32,
}

impl ConsumerGroup {
    pub fn consume_type(&self) -> Option<ConsumeType> {
        self.view.consume_type
    }

    pub fn message_model(&self) -> Option<MessageModel> {
        self.view.message_model
    }

    pub fn consume_from_where(&self) -> Option<ConsumeFromWhere> {
        self.consume_from_where
    }

    pub fn channels(&self) -> impl Iterator<Item = &ClientChannel> {
        self.members.by_client_id.values()
    }

    /// topic → subscription; the topic set is the latest heartbeat's.
    pub fn subscriptions(&self) -> &BTreeMap<String, SubscriptionData> {
        &self.view.subscriptions
    }

    /// Takes the latest heartbeat's consume type and message model; true if either changed.
    fn update_kind(&mut self, data: &ConsumerData) -> bool {
        if self.view.consume_type == data.consume_type
            && self.view.message_model == data.message_model
        {
            return false;
        }
        let view = Arc::make_mut(&mut self.view);
        view.consume_type = data.consume_type;
        view.message_model = data.message_model;
        true
    }

    /// Java's `updateSubscription`: a new topic is added, a known one replaced only by a newer
    /// `subVersion`, topics missing from `latest` dropped. Returns (topic set changed,
    /// anything stored changed).
    fn update_subscriptions(&mut self, latest: &[SubscriptionData]) -> (bool, bool) {
        let kept: HashSet<&str> = latest.iter().map(|s| s.topic.as_str()).collect();
        let stored = &self.view.subscriptions;
        let unchanged = stored.keys().all(|topic| kept.contains(topic.as_str()))
            && latest.iter().all(|sub| {
                stored
                    .get(&sub.topic)
                    .is_some_and(|old| sub.sub_version <= old.sub_version)
            });
        if unchanged {
            // The common heartbeat: leave the shared view (and the snapshots) alone.
            return (false, false);
        }
        let subscriptions = &mut Arc::make_mut(&mut self.view).subscriptions;
        let mut topics_changed = false;
        for sub in latest {
            let mut sub = sub.clone();
            sub.normalize_codes();
            match subscriptions.get_mut(&sub.topic) {
                None => {
                    topics_changed = true;
                    subscriptions.insert(sub.topic.clone(), sub);
                }
                Some(old) if sub.sub_version > old.sub_version => *old = sub,
                Some(_) => {}
            }
        }
        let before = subscriptions.len();
        subscriptions.retain(|topic, _| kept.contains(topic.as_str()));
        topics_changed |= subscriptions.len() != before;
        (topics_changed, true)
    }
}

/// What a consumer heartbeat changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Registered {
    /// The client joined the group: its members must re-balance.
    pub ids_changed: bool,
    /// A topic was added to or dropped from the group's subscriptions (Java's other reason
    /// to send NOTIFY_CONSUMER_IDS_CHANGED to a CLUSTERING group).
    pub subscriptions_changed: bool,
    /// The [`SubscriptionSnapshot`] changed (new group, new model, any subscription, newer
    /// `subVersion` included): send the shards a new one.
    pub snapshot_changed: bool,
    /// For a V2 heartbeat, the response's `IS_SUB_CHANGE`: the client must send its
    /// subscriptions again (its fingerprint differs from the stored one, or the broker holds
    /// none for the group, e.g. after a restart).
    pub sub_change: bool,
}

/// What [`ConsumerGroups::expire`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expired {
    /// Consumer groups that lost members (also those left empty and removed).
    pub groups: Vec<String>,
    /// The silent members' channels, one per connection: Java closes them.
    pub channels: Vec<ClientChannel>,
}

/// The consumer groups' subscriptions as every shard reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupSubscriptions {
    pub consume_type: Option<ConsumeType>,
    pub message_model: Option<MessageModel>,
    pub subscriptions: BTreeMap<String, SubscriptionData>,
}

/// A versioned, read-only copy of every online group's subscriptions (immutable data behind
/// `Arc`, so `Send` and cheap to clone), for pulls on any shard. A shard ignores a snapshot
/// older than the one it holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubscriptionSnapshot {
    /// Grows with every change of the table it was taken from.
    pub version: u64,
    pub groups: HashMap<String, Arc<GroupSubscriptions>>,
}

impl SubscriptionSnapshot {
    pub fn group(&self, group: &str) -> Option<&GroupSubscriptions> {
        self.groups.get(group).map(Arc::as_ref)
    }

    pub fn subscription(&self, group: &str, topic: &str) -> Option<&SubscriptionData> {
        self.groups.get(group)?.subscriptions.get(topic)
    }

    /// Whether this copy should replace `held`.
    pub fn is_newer_than(&self, held: &SubscriptionSnapshot) -> bool {
        self.version > held.version
    }
}

/// The broker's membership table (see the module doc).
#[derive(Debug, Default)]
pub struct ConsumerGroups {
    consumers: HashMap<String, ConsumerGroup>,
    producers: HashMap<String, Members>,
    /// Bumped whenever something a [`SubscriptionSnapshot`] holds changes.
    snapshot_version: u64,
}

impl ConsumerGroups {
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers one consumer group of a heartbeat (`data.group_name`) for `channel`, whose
    /// `last_update_ms` is the heartbeat's arrival. `v2` is the heartbeat's V2 fields; with
    /// `without_sub` the stored subscriptions are kept (Java's `registerConsumerWithoutSub`).
    pub fn register(
        &mut self,
        channel: ClientChannel,
        data: &ConsumerData,
        v2: Option<HeartbeatV2>,
    ) -> Result<Registered, ConsumersError> {
        let group_name = data.group_name.as_str();
        if group_name.is_empty() {
            return Err(ConsumersError::EmptyGroup);
        }
        if channel.client_id.is_empty() {
            return Err(ConsumersError::EmptyClientId);
        }
        let without_sub = v2.is_some_and(|v2| v2.without_sub);
        if !without_sub && data.subscription_data_set.len() > SUBSCRIPTIONS_PER_CLIENT_MAX {
            return Err(ConsumersError::TooManySubscriptions {
                group: group_name.to_string(),
                count: data.subscription_data_set.len(),
            });
        }
        let is_new_group = !self.consumers.contains_key(group_name);
        if is_new_group && self.consumers.len() >= CONSUMER_GROUPS_MAX {
            return Err(ConsumersError::TooManyConsumerGroups);
        }
        let group = self.consumers.entry(group_name.to_string()).or_default();
        let ids_changed = match group.members.upsert(channel, group_name) {
            Ok(ids_changed) => ids_changed,
            Err(full) => {
                if is_new_group {
                    self.consumers.remove(group_name);
                }
                return Err(full);
            }
        };
        let kind_changed = group.update_kind(data);
        group.consume_from_where = data.consume_from_where;

        let fingerprint = v2.map_or(0, |v2| v2.fingerprint);
        let mut sub_change = group.heartbeat_fingerprint != fingerprint && !is_new_group;
        group.heartbeat_fingerprint = fingerprint;
        let (subscriptions_changed, stored_changed) = if without_sub {
            // Keep what is stored; if nothing is (a new group, a restarted broker), ask the
            // client for its subscriptions.
            sub_change |= group.subscriptions().is_empty();
            (false, false)
        } else {
            group.update_subscriptions(&data.subscription_data_set)
        };
        let snapshot_changed = is_new_group || kind_changed || stored_changed;
        if snapshot_changed {
            self.snapshot_version += 1;
        }
        Ok(Registered {
            ids_changed,
            subscriptions_changed,
            snapshot_changed,
            sub_change: v2.is_some() && sub_change,
        })
    }

    /// UNREGISTER_CLIENT for a consumer group: removes the client; a group left empty is
    /// removed with its subscriptions. Returns whether the group's ids changed.
    pub fn unregister(&mut self, group: &str, client_id: &str) -> bool {
        let Some(info) = self.consumers.get_mut(group) else {
            return false;
        };
        let removed = info.members.by_client_id.remove(client_id).is_some();
        if info.members.by_client_id.is_empty() {
            self.consumers.remove(group);
            self.snapshot_version += 1;
        }
        removed
    }

    /// A connection closed: its members leave every consumer and producer group. Returns the
    /// consumer groups whose ids changed (including those left empty and removed).
    pub fn connection_closed(&mut self, connection: ConnectionId) -> Vec<String> {
        let mut changed = Vec::new();
        for (name, group) in &mut self.consumers {
            if group.members.remove_connection(connection) {
                changed.push(name.clone());
            }
        }
        self.remove_empty_consumer_groups(&changed);
        self.producers.retain(|_, members| {
            !(members.remove_connection(connection) && members.by_client_id.is_empty())
        });
        changed.sort_unstable();
        changed
    }

    /// Drops every member (consumer and producer) silent for longer than
    /// [`CHANNEL_EXPIRED_MS`] at `now_ms`, as Java's 10-second scan does.
    pub fn expire(&mut self, now_ms: i64) -> Expired {
        let mut expired = Expired::default();
        for (name, group) in &mut self.consumers {
            if group.members.remove_expired(now_ms, &mut expired.channels) {
                expired.groups.push(name.clone());
            }
        }
        self.remove_empty_consumer_groups(&expired.groups);
        self.producers.retain(|_, members| {
            !(members.remove_expired(now_ms, &mut expired.channels)
                && members.by_client_id.is_empty())
        });
        expired.groups.sort_unstable();
        expired.channels.sort_by_key(|c| c.connection.0);
        expired.channels.dedup_by_key(|c| c.connection);
        expired
    }

    fn remove_empty_consumer_groups(&mut self, candidates: &[String]) {
        for name in candidates {
            if self
                .consumers
                .get(name)
                .is_some_and(|g| g.members.by_client_id.is_empty())
            {
                self.consumers.remove(name);
                self.snapshot_version += 1;
            }
        }
    }

    pub fn group(&self, group: &str) -> Option<&ConsumerGroup> {
        self.consumers.get(group)
    }

    /// The group's live client ids, sorted (GET_CONSUMER_LIST_BY_GROUP).
    pub fn client_ids(&self, group: &str) -> Vec<String> {
        self.channels(group).map(|c| c.client_id.clone()).collect()
    }

    /// The group's members (empty for an unknown group).
    pub fn channels(&self, group: &str) -> impl Iterator<Item = &ClientChannel> {
        self.consumers
            .get(group)
            .into_iter()
            .flat_map(ConsumerGroup::channels)
    }

    /// One member by client id: where to relay GET_CONSUMER_RUNNING_INFO and
    /// CONSUME_MESSAGE_DIRECTLY (Java's `findChannel(group, clientId)`).
    pub fn channel(&self, group: &str, client_id: &str) -> Option<&ClientChannel> {
        self.consumers
            .get(group)?
            .members
            .by_client_id
            .get(client_id)
    }

    /// The online consumer groups subscribed to `topic`, sorted (QUERY_TOPIC_CONSUME_BY_WHO).
    pub fn groups_consuming(&self, topic: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .consumers
            .iter()
            .filter(|(_, group)| group.subscriptions().contains_key(topic))
            .map(|(name, _)| name.clone())
            .collect();
        names.sort_unstable();
        names
    }

    pub fn subscription(&self, group: &str, topic: &str) -> Option<&SubscriptionData> {
        self.consumers.get(group)?.subscriptions().get(topic)
    }

    /// GET_CONSUMER_CONNECTION_LIST's body, or `None` for a group with no member online
    /// (the broker answers CONSUMER_NOT_ONLINE).
    pub fn connection(&self, group: &str) -> Option<ConsumerConnection> {
        let info = self.consumers.get(group)?;
        Some(ConsumerConnection {
            connection_set: info.members.connections(),
            consume_from_where: info.consume_from_where,
            consume_type: info.consume_type(),
            message_model: info.message_model(),
            subscription_table: info.subscriptions().clone(),
        })
    }

    /// Version of the current subscriptions; compare to decide whether to send a snapshot.
    pub fn snapshot_version(&self) -> u64 {
        self.snapshot_version
    }

    /// A copy of every online group's subscriptions for the other shards.
    pub fn snapshot(&self) -> SubscriptionSnapshot {
        SubscriptionSnapshot {
            version: self.snapshot_version,
            groups: self
                .consumers
                .iter()
                .map(|(name, group)| (name.clone(), Arc::clone(&group.view)))
                .collect(),
        }
    }

    /// Registers `channel` as a member of producer group `group` (a heartbeat's
    /// `producerDataSet`); refreshes it if known.
    pub fn register_producer(
        &mut self,
        group: &str,
        channel: ClientChannel,
    ) -> Result<(), ConsumersError> {
        if group.is_empty() {
            return Err(ConsumersError::EmptyGroup);
        }
        if channel.client_id.is_empty() {
            return Err(ConsumersError::EmptyClientId);
        }
        if !self.producers.contains_key(group) && self.producers.len() >= PRODUCER_GROUPS_MAX {
            return Err(ConsumersError::TooManyProducerGroups);
        }
        let members = self.producers.entry(group.to_string()).or_default();
        let result = members.upsert(channel, group).map(|_| ());
        if members.by_client_id.is_empty() {
            self.producers.remove(group);
        }
        result
    }

    /// UNREGISTER_CLIENT for a producer group; true if the client was a member.
    pub fn unregister_producer(&mut self, group: &str, client_id: &str) -> bool {
        let Some(members) = self.producers.get_mut(group) else {
            return false;
        };
        let removed = members.by_client_id.remove(client_id).is_some();
        if members.by_client_id.is_empty() {
            self.producers.remove(group);
        }
        removed
    }

    /// The producer group's members (for CHECK_TRANSACTION_STATE).
    pub fn producer_channels(&self, group: &str) -> impl Iterator<Item = &ClientChannel> {
        self.producers
            .get(group)
            .into_iter()
            .flat_map(|members| members.by_client_id.values())
    }

    /// The connection of the producer client `client_id`, whichever group it heartbeats for
    /// (Java's `ProducerManager.findChannel`): where PUSH_REPLY_MESSAGE_TO_CLIENT goes. The
    /// newest heartbeat wins, as Java's client-id table keeps the last registration. Cost: a
    /// map lookup per online producer group (every client also reports
    /// `CLIENT_INNER_PRODUCER`, so that group alone usually answers).
    pub fn producer_by_client_id(&self, client_id: &str) -> Option<&ClientChannel> {
        self.producers
            .values()
            .filter_map(|members| members.by_client_id.get(client_id))
            .max_by_key(|channel| channel.last_update_ms)
    }

    /// GET_PRODUCER_CONNECTION_LIST's body, or `None` for a group with no member online.
    pub fn producer_connection(&self, group: &str) -> Option<ProducerConnection> {
        Some(ProducerConnection {
            connection_set: self.producers.get(group)?.connections(),
        })
    }
}

#[cfg(test)]
#[path = "consumers_tests.rs"]
mod tests;
