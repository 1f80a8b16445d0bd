//! The control plane: topics, subscription groups, consumer-group membership and queue locks.
//! Shard 0 owns the tables and is their only writer; every change that other shards need
//! (topics, groups, the groups' subscriptions) is published as a new versioned snapshot to
//! every shard before the request that caused it is answered, so a client that heartbeats and
//! then pulls through another shard finds its subscription there.

use super::control::consumers::{ClientChannel, ConsumerGroups, SubscriptionSnapshot};
use super::control::queue_locks::QueueLocks;
use super::control::subscription_groups::{GroupError, GroupSnapshot, SubscriptionGroupTable};
use super::control::topics::{
    retry_topic, TopicError, TopicSnapshot, TopicTable, RETRY_GROUP_TOPIC_PREFIX,
};
use super::error::{BrokerError, BrokerResult};
use super::now_ms;
use super::registration::NamesrvLinks;
use super::shard_state::BrokerShard;
use super::work::{Origin, Work};
use crate::protocol::body::consumer_group::GetConsumerListByGroupResponseBody;
use crate::protocol::body::heartbeat::{HeartbeatData, MessageModel, SubscriptionData};
use crate::protocol::body::lock::{
    LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody,
};
use crate::protocol::body::subscription_group::SubscriptionGroupConfig;
use crate::protocol::body::{self, TopicConfig, TopicFilterType};
use crate::protocol::codes::{request as code, response};
use crate::protocol::command::RemotingCommand;
use crate::protocol::header::{ConsumerGroupRequestHeader, UnregisterClientRequestHeader};
use crate::protocol::header::{
    CreateTopicRequestHeader, DeleteSubscriptionGroupRequestHeader, TopicRequestHeader,
};
use crate::server::ConnectionId;
use ringmq_shards::event::Event;
use std::cell::{Cell, RefCell};
use std::sync::Arc;
use std::time::Duration;

/// How often shard 0 looks for clients that stopped heartbeating (Java scans every 10 s and
/// drops a client silent for 120 s).
const CLIENT_SCAN_PERIOD: Duration = Duration::from_secs(10);

/// What every shard knows of the control plane: read-only, replaced whole.
#[derive(Clone)]
pub struct ControlSnapshot {
    pub version: u64,
    pub topics: TopicSnapshot,
    pub groups: GroupSnapshot,
    pub subscriptions: SubscriptionSnapshot,
}

/// The snapshot of the given tables at `version`.
pub fn snapshot_of(
    version: u64,
    topics: &TopicTable,
    groups: &SubscriptionGroupTable,
    subscriptions: &SubscriptionSnapshot,
) -> ControlSnapshot {
    ControlSnapshot {
        version,
        topics: topics.snapshot(),
        groups: groups.snapshot(),
        subscriptions: subscriptions.clone(),
    }
}

impl ControlSnapshot {
    pub fn subscription(&self, group: &str, topic: &str) -> Option<&SubscriptionData> {
        self.subscriptions.subscription(group, topic)
    }
}

/// A control-plane change asked by another shard.
pub enum ControlOp {
    /// A send to a topic this broker does not have: create it from its template (TBW102) when
    /// auto-creation is allowed, or a `%RETRY%` topic.
    CreateTopicForSend {
        topic: String,
        default_topic: String,
        queue_nums: i32,
    },
    FindOrCreateGroup(String),
    /// A message of the group goes to its dead-letter topic: create `%DLQ%group` (one queue,
    /// read-write) if it does not exist, and register it with the NameServers.
    CreateDlqTopic(String),
    ConnectionClosed(ConnectionId),
}

pub enum ControlReply {
    Topic(Option<TopicConfig>),
    Group(Option<SubscriptionGroupConfig>),
    Done,
}

struct Tables {
    topics: TopicTable,
    groups: SubscriptionGroupTable,
    consumers: ConsumerGroups,
    locks: QueueLocks,
}

/// Shard 0's control-plane state.
pub struct ControlPlane {
    tables: RefCell<Tables>,
    /// Interim, until the control plane is a single-task pump owning the tables: the changes
    /// of the topic and group tables, which await their file writes, take turns (see
    /// [`ControlPlane::change`]).
    table_changes: glommio::sync::Semaphore,
    version: Cell<u64>,
    /// Notified when the topic table changes: registration runs at once.
    topics_changed: Event,
    namesrvs: NamesrvLinks,
}

impl ControlPlane {
    pub fn new(topics: TopicTable, groups: SubscriptionGroupTable) -> Self {
        Self {
            tables: RefCell::new(Tables {
                topics,
                groups,
                consumers: ConsumerGroups::new(),
                locks: QueueLocks::new(),
            }),
            table_changes: glommio::sync::Semaphore::new(1),
            version: Cell::new(1),
            topics_changed: Event::default(),
            namesrvs: NamesrvLinks::default(),
        }
    }

    /// The current state as a snapshot for the shards.
    pub fn snapshot(&self) -> ControlSnapshot {
        let tables = self.tables.borrow();
        snapshot_of(
            self.version.get(),
            &tables.topics,
            &tables.groups,
            &tables.consumers.snapshot(),
        )
    }

    /// Applies `change` to a copy of one persisted table (`table` picks it) and installs the
    /// copy once the change's file write is done: no `RefCell` borrow spans the write, and
    /// readers meanwhile see the table as its file holds it. Changes take turns, so none is
    /// lost. Interim: the single-task pump will own the tables and change them in place.
    async fn change<Table: Clone, T>(
        &self,
        table: fn(&mut Tables) -> &mut Table,
        change: impl AsyncFnOnce(&mut Table) -> T,
    ) -> BrokerResult<T> {
        let _turn = self
            .table_changes
            .acquire_permit(1)
            .await
            .map_err(|e| BrokerError::Internal(e.to_string()))?;
        let mut copy = table(&mut self.tables.borrow_mut()).clone();
        let changed = change(&mut copy).await;
        *table(&mut self.tables.borrow_mut()) = copy;
        Ok(changed)
    }

    /// Installs a new snapshot here and on every other shard, returning when all hold it.
    async fn publish(&self, shard: &BrokerShard) -> BrokerResult<()> {
        self.version.set(self.version.get() + 1);
        let snapshot = Arc::new(self.snapshot());
        shard.install_snapshot(snapshot.clone());
        shard.broadcast(|| Work::Snapshot(snapshot.clone())).await?;
        Ok(())
    }

    async fn topics_changed(&self, shard: &BrokerShard) -> BrokerResult<()> {
        self.publish(shard).await?;
        self.topics_changed.notify();
        Ok(())
    }

    pub async fn apply(&self, shard: &BrokerShard, op: ControlOp) -> BrokerResult<ControlReply> {
        match op {
            ControlOp::CreateTopicForSend {
                topic,
                default_topic,
                queue_nums,
            } => {
                let now = now_ms();
                let ensured = if let Some(group) = topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) {
                    let group_config = self.tables.borrow().groups.get(group).cloned();
                    let queues = group_config.map_or(1, |g| g.retry_queue_nums);
                    self.change(topics, async |t| {
                        t.create_retry_topic(group, queues, now).await
                    })
                    .await?
                } else {
                    self.change(topics, async |t| {
                        t.auto_create_for_send(&topic, &default_topic, queue_nums, now)
                            .await
                    })
                    .await?
                };
                let ensured = match ensured {
                    Ok(ensured) => ensured,
                    Err(TopicError::NoAutoCreate { .. }) => return Ok(ControlReply::Topic(None)),
                    Err(err) => return Err(err.into()),
                };
                if ensured.created {
                    self.topics_changed(shard).await?;
                }
                Ok(ControlReply::Topic(Some(ensured.config)))
            }
            ControlOp::FindOrCreateGroup(group) => {
                let before = self.tables.borrow().groups.get(&group).is_some();
                let now = now_ms();
                let config = self
                    .change(groups, async |g| g.find_or_auto_create(&group, now).await)
                    .await??;
                let created = !before;
                if created && config.is_some() {
                    self.publish(shard).await?;
                }
                Ok(ControlReply::Group(config))
            }
            ControlOp::CreateDlqTopic(group) => {
                let now = now_ms();
                let ensured = self
                    .change(topics, async |t| t.create_dlq_topic(&group, now).await)
                    .await??;
                if ensured.created {
                    self.topics_changed(shard).await?;
                }
                Ok(ControlReply::Topic(Some(ensured.config)))
            }
            ControlOp::ConnectionClosed(connection) => {
                let changed = self
                    .tables
                    .borrow_mut()
                    .consumers
                    .connection_closed(connection);
                for group in changed {
                    self.notify_ids_changed(shard, &group);
                }
                Ok(ControlReply::Done)
            }
        }
    }

    /// Serves a client request whose subject is the control plane.
    pub async fn serve_request(
        &self,
        shard: &BrokerShard,
        origin: Origin,
        request: &RemotingCommand,
    ) -> BrokerResult<RemotingCommand> {
        let ok = || RemotingCommand::response_to(request, response::SUCCESS, None);
        match request.code {
            code::HEART_BEAT => {
                self.heartbeat(shard, origin, request).await?;
                Ok(ok())
            }
            code::UNREGISTER_CLIENT => {
                let h: UnregisterClientRequestHeader = request.decode_header()?;
                if let Some(group) = h.consumer_group.as_deref() {
                    let changed = self
                        .tables
                        .borrow_mut()
                        .consumers
                        .unregister(group, &h.client_id);
                    if changed {
                        self.notify_ids_changed(shard, group);
                    }
                }
                Ok(ok())
            }
            code::GET_CONSUMER_LIST_BY_GROUP => {
                let h: ConsumerGroupRequestHeader = request.decode_header()?;
                let ids = self.tables.borrow().consumers.client_ids(&h.consumer_group);
                if ids.is_empty() {
                    return Err(BrokerError::Illegal(format!(
                        "no consumer for this group, {}",
                        h.consumer_group
                    )));
                }
                let body = body::encode(&GetConsumerListByGroupResponseBody {
                    consumer_id_list: ids,
                })?;
                Ok(ok().with_body(body))
            }
            code::GET_CONSUMER_CONNECTION_LIST => {
                let h: ConsumerGroupRequestHeader = request.decode_header()?;
                let connection = self.tables.borrow().consumers.connection(&h.consumer_group);
                let connection =
                    connection.ok_or(BrokerError::ConsumerNotOnline(h.consumer_group))?;
                Ok(ok().with_body(body::encode(&connection)?))
            }
            code::LOCK_BATCH_MQ => {
                let body: LockBatchRequestBody = body::decode(&request.body)?;
                let now = now_ms();
                let locked = self.tables.borrow_mut().locks.lock_batch(
                    &body.consumer_group,
                    &body.client_id,
                    &body.mq_set,
                    now,
                );
                let answer = LockBatchResponseBody {
                    lock_ok_mq_set: locked,
                };
                Ok(ok().with_body(body::encode(&answer)?))
            }
            code::UNLOCK_BATCH_MQ => {
                let body: UnlockBatchRequestBody = body::decode(&request.body)?;
                self.tables.borrow_mut().locks.unlock_batch(
                    &body.consumer_group,
                    &body.client_id,
                    &body.mq_set,
                );
                Ok(ok())
            }
            code::UPDATE_AND_CREATE_TOPIC => {
                let h: CreateTopicRequestHeader = request.decode_header()?;
                let topic = topic_from_header(&h)?;
                let now = now_ms();
                self.change(topics, async |t| t.upsert(topic, now).await)
                    .await??;
                self.topics_changed(shard).await?;
                Ok(ok())
            }
            code::DELETE_TOPIC_IN_BROKER => {
                let h: TopicRequestHeader = request.decode_header()?;
                let now = now_ms();
                self.change(topics, async |t| t.delete(&h.topic, now).await)
                    .await??;
                self.topics_changed(shard).await?;
                Ok(ok())
            }
            code::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => {
                let config: SubscriptionGroupConfig = body::decode(&request.body)?;
                let now = now_ms();
                self.change(groups, async |g| g.upsert(config, now).await)
                    .await??;
                self.publish(shard).await?;
                Ok(ok())
            }
            code::DELETE_SUBSCRIPTIONGROUP => {
                let h: DeleteSubscriptionGroupRequestHeader = request.decode_header()?;
                let now = now_ms();
                self.change(groups, async |g| g.delete(&h.group_name, now).await)
                    .await??;
                self.publish(shard).await?;
                Ok(ok())
            }
            other => Err(BrokerError::Internal(format!(
                "code {other} is not a control request"
            ))),
        }
    }

    async fn heartbeat(
        &self,
        shard: &BrokerShard,
        origin: Origin,
        request: &RemotingCommand,
    ) -> BrokerResult<()> {
        let data: HeartbeatData = body::decode(&request.body)?;
        let now = now_ms();
        let mut publish = false;
        for consumer in &data.consumer_data_set {
            let group = &consumer.group_name;
            // Most heartbeats find their group and its retry topic: nothing to write.
            let (had_group, known) = {
                let tables = self.tables.borrow();
                let group_config = tables.groups.get(group).cloned();
                let has_retry_topic = tables.topics.get(&retry_topic(group)).is_some();
                (
                    group_config.is_some(),
                    group_config.filter(|_| has_retry_topic),
                )
            };
            let (group_config, new_topic) = match known {
                Some(config) => (config, false),
                None => {
                    // As Apache 5.x: a group that is neither configured nor auto-creatable
                    // (auto creation off, or a name TopicValidator rejects, which C++ clients
                    // never check, e.g. `app.consumer`) is skipped; the heartbeat still
                    // succeeds for the client's other groups (Apache 4.9 registers such a
                    // consumer even).
                    let found = self
                        .change(groups, async |g| g.find_or_auto_create(group, now).await)
                        .await?;
                    let group_config = match found {
                        Ok(Some(config)) => config,
                        Ok(None)
                        | Err(
                            GroupError::Blank
                            | GroupError::IllegalChars(_)
                            | GroupError::TooLong(_),
                        ) => continue,
                        Err(e) => return Err(e.into()),
                    };
                    // Every consumer group has its retry topic, made on its first heartbeat.
                    let queues = group_config.retry_queue_nums;
                    let new_topic = self
                        .change(topics, async |t| {
                            t.create_retry_topic(group, queues, now).await
                        })
                        .await??
                        .created;
                    (group_config, new_topic)
                }
            };
            let (ids_changed, subscriptions_changed) = {
                let mut tables = self.tables.borrow_mut();
                let channel = ClientChannel {
                    shard: origin.shard,
                    connection: origin.connection,
                    client_id: data.client_id.clone(),
                    client_addr: origin.peer.to_string(),
                    language: request.language,
                    version: request.version,
                    last_update_ms: now,
                };
                // V1 semantics: ringmq does not offer heartbeat V2, so every heartbeat carries
                // the full subscriptions.
                let registered = tables.consumers.register(channel, consumer, None)?;
                // Java (5.x) notifies a CLUSTERING group's members of a change in its ids or
                // topics; BROADCASTING members do not share queues, so do not rebalance.
                let changed = registered.ids_changed || registered.subscriptions_changed;
                let clustering = consumer.message_model != Some(MessageModel::Broadcasting);
                let notify =
                    changed && clustering && group_config.notify_consumer_ids_changed_enable;
                (notify, registered.snapshot_changed || !had_group)
            };
            if ids_changed {
                self.notify_ids_changed(shard, group);
            }
            if new_topic {
                self.topics_changed.notify();
            }
            publish |= subscriptions_changed || new_topic;
        }
        if publish {
            self.publish(shard).await?;
        }
        Ok(())
    }

    /// Tells every client of `group` to rebalance (NOTIFY_CONSUMER_IDS_CHANGED, oneway), on
    /// whichever shard holds its connection.
    fn notify_ids_changed(&self, shard: &BrokerShard, group: &str) {
        let channels: Vec<(usize, ConnectionId)> = self
            .tables
            .borrow()
            .consumers
            .channels(group)
            .map(|c| (c.shard, c.connection))
            .collect();
        let header = ConsumerGroupRequestHeader {
            consumer_group: group.to_owned(),
        };
        for (target, connection) in channels {
            let request = RemotingCommand::request(code::NOTIFY_CONSUMER_IDS_CHANGED)
                .with_header(&header)
                .oneway();
            if target == shard.id() {
                shard.notify_connection(connection, request);
            } else if let Some(this) = shard.rc() {
                glommio::spawn_local(async move {
                    let _ = this
                        .call_shard(
                            target,
                            Work::Notify {
                                connection,
                                request,
                            },
                        )
                        .await;
                })
                .detach();
            }
        }
    }

    /// Registers with the NameServers now, every registration period and whenever the topic
    /// table changes. Never returns.
    pub async fn run_registration(&self, shard: &BrokerShard) {
        let period = shard.config().register_period;
        loop {
            let seen = self.topics_changed.version();
            let wrapper = self.tables.borrow().topics.wrapper();
            if let Err(err) = self.namesrvs.register_all(shard.config(), &wrapper).await {
                tracing::warn!(%err, "registration failed");
            }
            let timer = async {
                glommio::timer::Timer::new(period).await;
            };
            futures_lite::future::or(timer, self.topics_changed.changed(seen)).await;
        }
    }

    /// Drops clients that stopped heartbeating, and tells their groups. Never returns.
    pub async fn run_client_expiry(&self, shard: &BrokerShard) {
        loop {
            glommio::timer::Timer::new(CLIENT_SCAN_PERIOD).await;
            let expired = self.tables.borrow_mut().consumers.expire(now_ms());
            for group in &expired.groups {
                self.notify_ids_changed(shard, group);
            }
            if !expired.groups.is_empty() {
                if let Err(err) = self.publish(shard).await {
                    tracing::warn!(%err, "could not publish after client expiry");
                }
            }
        }
    }

    /// Clean stop: the NameServers drop this broker at once instead of after 120 s.
    pub async fn unregister(&self, shard: &BrokerShard) {
        self.namesrvs.unregister_all(shard.config()).await;
    }
}

/// Pickers of [`ControlPlane::change`]'s table.
fn topics(tables: &mut Tables) -> &mut TopicTable {
    &mut tables.topics
}

fn groups(tables: &mut Tables) -> &mut SubscriptionGroupTable {
    &mut tables.groups
}

/// The topic an UPDATE_AND_CREATE_TOPIC asks for.
fn topic_from_header(h: &CreateTopicRequestHeader) -> BrokerResult<TopicConfig> {
    let filter = match h.topic_filter_type.as_str() {
        "MULTI_TAG" => TopicFilterType::MultiTag,
        "SINGLE_TAG" | "" => TopicFilterType::SingleTag,
        other => {
            return Err(BrokerError::InvalidParameter(format!(
                "unknown topicFilterType {other}"
            )))
        }
    };
    Ok(TopicConfig {
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        topic_filter_type: filter,
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order,
        ..TopicConfig::new(&h.topic, h.write_queue_nums)
    })
}
